#!/bin/sh
# toolchain.sh ZIG TARGET DIR: writes DIR/cc, DIR/ar and DIR/ranlib, wrappers
# around Zig's clang and archiver that build for TARGET (e.g.
# aarch64-linux-gnu.2.17: that CPU, glibc 2.17's symbols). CMake wants a
# compiler path without arguments; Go's CC takes them but gets the same
# wrapper, so both build with one compiler and one set of flags. Zig's caches
# go to DIR/../zig-cache, so nothing is written outside build/.
#
# cc drops -Wl,-S: Go's linker passes it with -ldflags=-w to drop the C
# objects' DWARF (GNU ld's --strip-debug), but Zig takes it for strip-all and
# would drop the symbol table that stack traces and perf use. The C code is
# compiled with -g0, so there is no DWARF to drop.
set -eu
zig=$1 target=$2 dir=$3
mkdir -p "$dir"
cache=$(cd "$dir/.." && pwd)/zig-cache
for tool in cc ar ranlib; do
	case $tool in
	cc) cmd="\"$zig\" cc -target $target" ;;
	*) cmd="\"$zig\" $tool" ;;
	esac
	filter=
	[ $tool = cc ] && filter='for a; do shift; [ "$a" = -Wl,-S ] || set -- "$@" "$a"; done'
	cat >"$dir/$tool.tmp" <<EOT
#!/bin/sh
export ZIG_GLOBAL_CACHE_DIR="$cache" ZIG_LOCAL_CACHE_DIR="$cache"
$filter
exec $cmd "\$@"
EOT
	chmod +x "$dir/$tool.tmp"
	mv "$dir/$tool.tmp" "$dir/$tool"
done
