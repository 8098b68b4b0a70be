#!/bin/sh
# ctest install_consumer: installs the build tree into a temporary prefix,
# moves it (the package must be relocatable), checks what was installed, and
# builds and runs tests/install/consumer (the C++ API on the host backend)
# against it twice: through find_package(kiln) (kiln::kiln, the shared
# library, and kiln::kiln_static) and through pkg-config with the compiler
# alone.
#
# usage: consumer_test.sh BUILD_DIR RELU_MODEL CMAKE CXX [EXTRA_FLAGS]
#   RELU_MODEL  the relu_model test helper (writes the model the app runs)
#   EXTRA_FLAGS compile and link flags the library needs from its users
#               (a sanitizer build's -fsanitize=...)
set -eu
build=$1
relu_model=$2
cmake=$3
cxx=$4
extra=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "$build" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kiln-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install_consumer: FAIL: $*" >&2; exit 1; }

echo "== cmake --install $build --prefix <tmp>/stage"
"$cmake" --install "$build" --prefix "$tmp/stage" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
mv "$tmp/stage" "$tmp/prefix"
prefix=$tmp/prefix
(cd "$prefix" && find . -type f -o -type l | sort)

# The package files name no build-tree or source-tree path (and not the
# staging prefix: everything is relative to where they lie).
for f in $(find "$prefix" -name '*.cmake' -o -name '*.pc'); do
  for p in "$build" "$src" "$tmp/stage"; do
    if grep -q "$p" "$f"; then fail "$f names $p"; fi
  done
done
pc=$(find "$prefix" -name kiln.pc)
[ -n "$pc" ] || fail "no kiln.pc installed"
libdir=$(dirname "$(dirname "$pc")")
for f in "$libdir/libkiln.a" "$libdir/libkiln.so" "$libdir/libkiln.so.0"; do
  [ -e "$f" ] || fail "$f not installed"
done
[ -f "$(dirname "$pc")/../cmake/kiln/kilnConfig.cmake" ] || fail "kilnConfig.cmake not next to pkgconfig/"
[ -f "$(dirname "$pc")/../cmake/kiln/kilnConfigVersion.cmake" ] || fail "kilnConfigVersion.cmake not installed"

# Every installed header stands alone on the installed include dir (no
# generated or private header behind it); kiln.h is C as well.
for h in "$prefix"/include/kiln/*.h; do
  echo "#include <kiln/$(basename "$h")>" > "$tmp/header.cpp"
  "$cxx" -std=c++17 -fsyntax-only $extra -I"$prefix/include" "$tmp/header.cpp" || fail "$h does not compile alone"
done
"$cxx" -x c -std=c99 -fsyntax-only -I"$prefix/include" "$prefix/include/kiln/kiln.h" || fail "kiln.h is not C"

"$relu_model" "$tmp/relu.kiln" || fail "relu_model"

check_run() {  # check_run EXE: runs it on the model, wants "consumer: ok"
  echo "== $(basename "$1")"
  "$1" "$tmp/relu.kiln" > "$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; fail "$1 failed"; }
  cat "$tmp/out.txt"
  grep -q '^consumer: ok$' "$tmp/out.txt" || fail "$1: wrong output"
}
needs_libkiln() { readelf -d "$1" | grep -q 'NEEDED.*libkiln\.so'; }

echo "== find_package(kiln): tests/install/consumer"
"$cmake" -S "$here/consumer" -B "$tmp/cmake-build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="$extra" -DCMAKE_EXE_LINKER_FLAGS="$extra" \
  > "$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "consumer configure"; }
grep "kiln 0" "$tmp/configure.log"
grep -q "kiln .*: $prefix/" "$tmp/configure.log" || fail "find_package found another kiln"
"$cmake" --build "$tmp/cmake-build" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "consumer build"; }
check_run "$tmp/cmake-build/app"
needs_libkiln "$tmp/cmake-build/app" || fail "app (kiln::kiln) does not use libkiln.so"
check_run "$tmp/cmake-build/app_static"
if needs_libkiln "$tmp/cmake-build/app_static"; then fail "app_static (kiln::kiln_static) uses libkiln.so"; fi

echo "== pkg-config"
flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs kiln) || fail "pkg-config --cflags --libs kiln"
echo "pkg-config --cflags --libs kiln: $flags"
echo "pkg-config --static --libs kiln: $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --static --libs kiln)"
"$cxx" -std=c++17 $extra "$here/consumer/main.cpp" $flags -Wl,-rpath,"$libdir" -o "$tmp/app_pc" || fail "pkg-config build"
check_run "$tmp/app_pc"
needs_libkiln "$tmp/app_pc" || fail "app_pc does not use libkiln.so"
echo "install_consumer: ok"
