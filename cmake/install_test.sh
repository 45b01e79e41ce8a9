#!/usr/bin/env bash
# install_test.sh BUILD_DIR SOURCE_DIR: installs the build into a temporary prefix, builds
# cmake/consumer against it twice (find_package(topocoll), then pkg-config topocoll) and runs it.
set -euo pipefail
build="$1"
src="$2"
tmp=$(mktemp -d /tmp/topocoll-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
test -f "$tmp/prefix/lib/cmake/topocoll/topocollConfig.cmake"
test -f "$tmp/prefix/lib/pkgconfig/topocoll.pc"
test -x "$tmp/prefix/bin/topocoll"

# 1. CMake package.
cmake -S "$src/cmake/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure.log" ||
  { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/consumer" >"$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
out=$("$tmp/consumer/consumer")
echo "find_package: $out"
case "$out" in *"verify OK"*) ;; *) echo "FAIL: the CMake consumer did not verify the ring"; exit 1 ;; esac

# 2. pkg-config.
flags=$(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs topocoll)
# shellcheck disable=SC2086
g++ -O1 -o "$tmp/consumer-pc" "$src/cmake/consumer/main.cpp" $flags
out=$("$tmp/consumer-pc")
echo "pkg-config: $out"
case "$out" in *"verify OK"*) ;; *) echo "FAIL: the pkg-config consumer did not verify the ring"; exit 1 ;; esac
echo "install: 2 passed, 0 failed"
