# Cross build for 64-bit Arm Linux with Debian's g++-aarch64-linux-gnu; the
# binaries (tests included, through CMAKE_CROSSCOMPILING_EMULATOR) run under
# qemu-aarch64 (Debian qemu-user) against the cross sysroot's libraries.
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
# Used by `make test-arm64`. A cross build is host-only (KILN_HOST_ONLY, see
# CMakeLists.txt): no GPU backends, no tools that need protobuf.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(KILN_CROSS_SYSROOT /usr/aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Libraries, headers and packages from the target's sysroot only; programs
# (flatc, protoc) from the build machine.
set(CMAKE_FIND_ROOT_PATH ${KILN_CROSS_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

find_program(KILN_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${KILN_QEMU_AARCH64} -L ${KILN_CROSS_SYSROOT})
