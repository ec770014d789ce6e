#!/bin/sh
# build-audio-codecs.sh TOOLCHAIN CPU OUT FLAC OGG OPUS OPUSFILE: builds the
# source trees of Debian's flac, libogg, opus and opusfile into static,
# position-independent libFLAC.a, libogg.a, libopus.a and libopusfile.a with
# their headers, under OUT/{include,lib}: the decoders and encoders
# core/audio links (codecs.go). TOOLCHAIN is a directory from toolchain.sh;
# CPU is CMake's processor name (x86_64, aarch64).
#
# Lean on purpose (a CI machine builds them from scratch): libFLAC only (no
# libFLAC++, programs, Ogg FLAC, docs or tests), libogg and libopus (with its
# SIMD picked at run time) as their CMake builds make them, configured in
# parallel; opusfile, which has no CMake build, is its four C files compiled
# directly: libopusfile alone (its HTTP code is the separate libopusurl),
# with the float API and lrintf, as its configure would define.
#
# Their symbols are hidden, as libjpeg-turbo's: -fvisibility=hidden, and the
# macros each library's headers mark their API with emptied (FLAC_API,
# OPUS_EXPORT, opusfile's visibility pragma), so that linked into
# _ffcv_go.so they stay private to it and a process may load other copies.
set -eu
tc=$(cd "$1" && pwd) cpu=$2 out=$3
flac=$(cd "$4" && pwd) ogg=$(cd "$5" && pwd) opus=$(cd "$6" && pwd) opusfile=$(cd "$7" && pwd)
work=$out.work
rm -rf "$work" "$out" "$out.tmp"
mkdir -p "$work" "$out.tmp/lib" "$out.tmp/include"
work=$(cd "$work" && pwd)
cflags="-g0 -fvisibility=hidden -DFLAC__NO_DLL -DOPUS_EXPORT="
# Nothing may depend on where the tree is: opus names its source files in
# its assertion messages (__FILE__), so the trees' paths are mapped to their
# names.
for d in "$flac" "$ogg" "$opus" "$opusfile"; do cflags="$cflags -ffile-prefix-map=$d=$(basename "$d")"; done
cflags="$cflags -ffile-prefix-map=$work=build"

# cmake_lib NAME SRC TARGET ARGS...: configures SRC and builds TARGET only.
cmake_lib() {
	name=$1 src=$2 target=$3
	shift 3
	b=$work/$name
	{ cmake -S "$src" -B "$b" -G "Unix Makefiles" -Wno-dev \
		-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="$cpu" \
		-DCMAKE_C_COMPILER="$tc/cc" -DCMAKE_AR="$tc/ar" -DCMAKE_RANLIB="$tc/ranlib" \
		-DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$cflags" \
		-DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF \
		-DCMAKE_DISABLE_FIND_PACKAGE_Git=ON "$@" &&
		make -C "$b" -j"$(nproc)" "$target"; } >"$work/$name.log" 2>&1 ||
		{ tail -50 "$work/$name.log"; echo "build-audio-codecs: $name failed" >&2; return 1; }
}

# Git would have opus and flac take their version from the repository the
# build directory is in (above: CMAKE_DISABLE_FIND_PACKAGE_Git;
# flac: HAVE_GIT). Opus
# 1.3.1's release leaves out opus_buildtype.cmake, which its CMakeLists.txt
# includes to pick a default build type; this build names its own.
[ -f "$opus/opus_buildtype.cmake" ] || : >"$opus/opus_buildtype.cmake"

cmake_lib ogg "$ogg" ogg -DINSTALL_DOCS=OFF -DINSTALL_PKG_CONFIG_MODULE=OFF \
	-DINSTALL_CMAKE_PACKAGE_MODULE=OFF -DBUILD_TESTING=OFF &
p_ogg=$!
cmake_lib flac "$flac" FLAC -DBUILD_CXXLIBS=OFF -DBUILD_PROGRAMS=OFF -DBUILD_EXAMPLES=OFF \
	-DBUILD_TESTING=OFF -DBUILD_DOCS=OFF -DINSTALL_MANPAGES=OFF -DINSTALL_PKGCONFIG_MODULES=OFF \
	-DINSTALL_CMAKE_CONFIG_MODULE=OFF -DWITH_OGG=OFF -DHAVE_GIT=OFF &
p_flac=$!
cmake_lib opus "$opus" opus -DOPUS_BUILD_PROGRAMS=OFF -DOPUS_BUILD_TESTING=OFF -DBUILD_TESTING=OFF \
	-DOPUS_INSTALL_PKG_CONFIG_MODULE=OFF -DOPUS_INSTALL_CMAKE_CONFIG_MODULE=OFF &
p_opus=$!
status=0
wait $p_ogg || status=1
wait $p_flac || status=1
wait $p_opus || status=1
[ $status = 0 ] || exit 1

find "$work/ogg" "$work/flac" "$work/opus" -name 'lib*.a' -exec cp {} "$out.tmp/lib/" \;
mkdir -p "$out.tmp/include/ogg" "$out.tmp/include/opus" "$out.tmp/include/FLAC"
cp "$ogg"/include/ogg/ogg.h "$ogg"/include/ogg/os_types.h "$work"/ogg/include/ogg/config_types.h "$out.tmp/include/ogg/"
cp "$flac"/include/FLAC/*.h "$out.tmp/include/FLAC/"
cp "$opus"/include/*.h "$out.tmp/include/opus/"
cp "$opusfile"/include/opusfile.h "$out.tmp/include/opus/"

mkdir -p "$work/opusfile"
for f in info internal opusfile stream; do
	"$tc/cc" -c -O2 -w -fPIC $cflags '-DOP_GNUC_PREREQ(_maj,_min)=0' -DOP_HAVE_LRINTF -I"$opusfile/include" -I"$out.tmp/include" \
		-I"$out.tmp/include/opus" -o "$work/opusfile/$f.o" "$opusfile/src/$f.c"
done
"$tc/ar" rcs "$out.tmp/lib/libopusfile.a" "$work"/opusfile/*.o
for l in FLAC ogg opus opusfile; do
	[ -f "$out.tmp/lib/lib$l.a" ] || { echo "build-audio-codecs: no lib$l.a" >&2; exit 1; }
done
mv "$out.tmp" "$out"
rm -rf "$work"
