# Sourced by the device scripts: unpacks the Vulkan and OpenCL loaders
# (debs in BIN_DIR/deb) and points them at NVIDIA's driver files.
# usage: . gpu_env.sh BIN_DIR   (sets nvlib and icd for the caller's log)
# --- the loaders (Vulkan, OpenCL ICD) and the driver's files -----------------
for f in "$1"/deb/*.deb; do dpkg -x "$f" /; done
ldconfig
nvlib=$(find / -xdev -name 'libnvidia-opencl.so.1' 2>/dev/null | head -n 1)
if [ -n "$nvlib" ]; then
  export LD_LIBRARY_PATH="$(dirname "$nvlib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  mkdir -p /tmp/ocl-vendors
  echo "$nvlib" > /tmp/ocl-vendors/nvidia.icd
  export OCL_ICD_VENDORS=/tmp/ocl-vendors
fi
icd=$(ls /usr/share/vulkan/icd.d/nvidia*.json /etc/vulkan/icd.d/nvidia*.json \
         /usr/local/nvidia/share/vulkan/icd.d/nvidia*.json 2>/dev/null | head -n 1)
if [ -n "$icd" ]; then
  # The ICD names libGLX_nvidia.so.0, which on some images returns no
  # vkCreateInstance (no X server; the stop-44 lease); the driver's EGL
  # library carries the same Vulkan entry points and needs no display. The
  # manifest is rewritten with the full path of the library used.
  vklib=$(sed -n 's/.*"library_path" *: *"\([^"]*\)".*/\1/p' "$icd")
  if [ -n "$vklib" ]; then
    found=$(find / -xdev -name libEGL_nvidia.so.0 2>/dev/null | head -n 1)
    [ -n "$found" ] || found=$(find / -xdev -name "$(basename "$vklib")" 2>/dev/null | head -n 1)
    if [ -n "$found" ]; then
      mkdir -p /tmp/vk-icd
      sed "s|\"library_path\" *: *\"[^\"]*\"|\"library_path\": \"$found\"|" "$icd" > /tmp/vk-icd/nvidia_icd.json
      icd=/tmp/vk-icd/nvidia_icd.json
      export LD_LIBRARY_PATH="$(dirname "$found"):$LD_LIBRARY_PATH"
    fi
  fi
  export VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd"
fi
