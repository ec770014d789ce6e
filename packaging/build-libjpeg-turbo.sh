#!/bin/sh
# build-libjpeg-turbo.sh SRC TOOLCHAIN CPU OUT: builds the libjpeg-turbo
# source tree SRC into a static, position-independent libjpeg.a with its SIMD
# (nasm for x86-64, NEON intrinsics for aarch64; REQUIRE_SIMD makes a
# missing one an error), installed under OUT/{include,lib}. TOOLCHAIN is a
# directory from toolchain.sh; CPU is CMake's processor name (x86_64, aarch64).
#
# Its symbols are hidden: linked into _ffcv_go.so they stay private to it, so
# a process that also loads another libjpeg (Pillow's, torchvision's) calls
# each library's own functions.
set -eu
src=$1 tc=$(cd "$2" && pwd) cpu=$3 out=$4
work=$out.work
rm -rf "$work" "$out"
mkdir -p "$work"
cmake -S "$src" -B "$work" -G "Unix Makefiles" -Wno-dev \
	-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="$cpu" \
	-DCMAKE_C_COMPILER="$tc/cc" -DCMAKE_AR="$tc/ar" -DCMAKE_RANLIB="$tc/ranlib" \
	-DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="-fvisibility=hidden -g0" \
	-DCMAKE_POSITION_INDEPENDENT_CODE=ON \
	-DENABLE_SHARED=OFF -DENABLE_STATIC=ON -DWITH_TURBOJPEG=OFF \
	-DWITH_SIMD=ON -DREQUIRE_SIMD=ON \
	-DCMAKE_INSTALL_PREFIX="$out.tmp" -DCMAKE_INSTALL_LIBDIR=lib \
	>"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
make -C "$work" -j"$(nproc)" jpeg-static >"$work/build.log" 2>&1 || { tail -50 "$work/build.log"; exit 1; }
mkdir -p "$out.tmp/lib" "$out.tmp/include"
cp "$work/libjpeg.a" "$out.tmp/lib/"
# Nothing may depend on where the tree is: Zig's clang writes DWARF unless
# told -g0 (above), and nasm names each object's source file by its absolute
# path in a local symbol, dropped here.
files=$(readelf -sW "$work/libjpeg.a" | awk '$4 == "FILE" && $8 ~ /^\// {print "--strip-symbol=" $8}' | sort -u)
[ -z "$files" ] || objcopy $files "$out.tmp/lib/libjpeg.a"
# The public headers, and jpegint.h, which core/jpeg's region decoder
# includes: the same tree the library was built from.
cp "$src/jpeglib.h" "$src/jmorecfg.h" "$src/jerror.h" "$src/jpegint.h" "$work/jconfig.h" "$out.tmp/include/"
grep -q "SIMD" "$work/configure.log" && grep -E "SIMD extensions|NEON" "$work/configure.log" >"$out.tmp/simd.txt" || true
mv "$out.tmp" "$out"
rm -rf "$work"
