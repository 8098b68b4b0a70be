#!/usr/bin/env bash
# `make demo`: write a small model with NetBuilder, load it, inspect it; then
# a real model (MediaPipe selfie segmentation, from npm) converted and run on
# a photo (from a Debian package) on Vulkan, OpenCL and the host, with the
# segmentation overlaid on the photo as a PNG.
set -euo pipefail
build=${1:-build}
out="$build/demo"
mkdir -p "$out"
bin="$build/bin"
echo "== 1. write and load a small CNN (inline and external weights)"
"$bin/kiln-demo-model" "$out"
echo
echo "== 2. kiln-inspect: summary"
"$bin/kiln-inspect" "$out/tiny_cnn.kiln"
echo
echo "== 3. kiln-inspect --map: where every byte lives (first 25 lines and the totals)"
"$bin/kiln-inspect" --map "$out/tiny_cnn.kiln" > "$out/tiny_cnn.map.txt"
head -n 25 "$out/tiny_cnn.map.txt"
echo "   ..."
tail -n 3 "$out/tiny_cnn.map.txt"
echo "   (full map: $out/tiny_cnn.map.txt)"
echo
echo "== 4. kiln-inspect --locate: find the conv1 bias values and a conv param in the file"
"$bin/kiln-inspect" --locate 'tensors[2].data' "$out/tiny_cnn.kiln"
"$bin/kiln-inspect" --locate 'ops[0].params.strides' "$out/tiny_cnn.kiln"
echo
echo "== 5. the same model with its weights in an external file"
"$bin/kiln-inspect" "$out/tiny_cnn_ext.kiln"
echo
echo "== 6. kiln-run: run it, asking for the GPU first (--backend auto)"
"$bin/kiln-run" "$out/tiny_cnn.kiln" --input "image=$out/image.npy" --output-dir "$out/run" --backend auto
echo
echo "== 7. a real model: MediaPipe selfie segmentation (npm pack @mediapipe/selfie_segmentation)"
mp="$out/mediapipe"
mkdir -p "$mp"
if [ ! -f "$mp/package/selfie_segmentation.tflite" ]; then
  command -v npm > /dev/null || tools/setup/install-deps.sh <(echo npm)
  (cd "$mp" && npm pack --silent @mediapipe/selfie_segmentation > /dev/null && tar xzf mediapipe-selfie_segmentation-*.tgz) || {
    echo "   cannot fetch the model from npm (offline?); the rest of the demo is skipped"; exit 0; }
fi
"$bin/kiln-convert" "$mp/package/selfie_segmentation.tflite" "$mp/selfie.kiln" | tail -n 2
echo
echo "== 8. a photo from a Debian package (scikit-image's astronaut.png, unpacked, not installed)"
if [ ! -f "$mp/astronaut.png" ]; then
  (cd "$mp" && apt-get download python3-skimage > /dev/null 2>&1 && dpkg -x python3-skimage_*.deb deb &&
   cp deb/usr/lib/python3/dist-packages/skimage/data/astronaut.png . && rm -rf deb python3-skimage_*.deb) || {
    echo "   cannot download python3-skimage (offline?); the rest of the demo is skipped"; exit 0; }
fi
/usr/bin/python3 tools/demo/selfie.py prepare "$mp/astronaut.png" "$mp/input.npy"
echo "   $mp/astronaut.png -> $mp/input.npy (1x3x256x256, RGB in [0, 1])"
echo
echo "== 9. run it on each backend (a backend that cannot start falls back to the host and says why)"
for backend in vulkan opencl host; do
  echo "-- $backend"
  "$bin/kiln-run" "$mp/selfie.kiln" --input "input_1=$mp/input.npy" --output-dir "$mp/$backend" --backend "$backend" \
    --threads "$(nproc)" 2>&1 | grep -E '^(placement|  op|run:)' | awk 'NR <= 6 || /^run:/'
  /usr/bin/python3 tools/demo/selfie.py overlay "$mp/astronaut.png" "$mp/$backend/activation_10.npy" "$mp/selfie_$backend.png"
done
echo
echo "== the segmentation overlaid on the photo: $mp/selfie_vulkan.png, selfie_opencl.png, selfie_host.png"
