#!/bin/sh
# check-wheel.sh AUDITWHEEL WHEEL...: each wheel's _ffcv_go.so is for the
# machine its tag names, asks for no GLIBC symbol version newer than 2.17 and
# for no shared library outside glibc, and exports none of the symbols of
# libjpeg-turbo or the audio codecs (they are linked in, hidden); the wheel
# carries no other library, and the licence texts of those it links in; and
# `auditwheel show` finds it consistent with manylinux_2_17 on that machine.
# Prints one line per wheel; exits non-zero on the first failure.
set -eu
auditwheel=$1
shift
[ $# -gt 0 ] && [ -e "$1" ] || { echo "check-wheel: no wheels given (make wheel)" >&2; exit 1; }
# glibc's own libraries, as the manylinux policies list them.
allowed="libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-wheel: $whl: $*" >&2; exit 1; }
for whl; do
	name=$(basename "$whl" .whl)
	arch=${name##*manylinux2014_}
	case $arch in
	x86_64) machine="Advanced Micro Devices X86-64" ;;
	aarch64) machine="AArch64" ;;
	*) fail "no manylinux2014 architecture in the name" ;;
	esac
	rm -rf "$tmp/w" && mkdir "$tmp/w"
	(cd "$tmp/w" && python3 -m zipfile -e "$whl" . 2>/dev/null) || unzip -q "$whl" -d "$tmp/w"
	libs=$(cd "$tmp/w" && find . -name '*.so*' -type f | sort)
	[ "$libs" = "./ffcv_go/_ffcv_go.so" ] || fail "libraries in the wheel: $libs (want ffcv_go/_ffcv_go.so only)"
	so=$tmp/w/ffcv_go/_ffcv_go.so
	readelf -h "$so" | grep -q "Machine: *$machine" || fail "_ffcv_go.so is not for $arch: $(readelf -h "$so" | grep Machine)"
	needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
	for lib in $needed; do
		case " $allowed " in *" $lib "*) ;; *) fail "NEEDED $lib is not part of glibc" ;; esac
	done
	newest=$(readelf -V -W "$so" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -u -V | tail -1)
	[ -n "$newest" ] || fail "no GLIBC symbol versions found"
	[ "$(printf '%s\nGLIBC_2.17\n' "$newest" | sort -V | tail -1)" = GLIBC_2.17 ] || fail "needs $newest (> GLIBC_2.17)"
	exported=$(readelf --dyn-syms -W "$so" | awk '$7 != "UND" {print $8}')
	if echo "$exported" | grep -qE '^(jpeg_|jinit_|jsimd_|jcopy_|jdiv_round_up|jround_up)'; then
		fail "exports libjpeg symbols"
	fi
	leak=$(echo "$exported" | grep -E '^(FLAC__|op_|opus_|ogg_|oggpack_|mp3dec_|ffa_)' | head -3 | tr '\n' ' ')
	[ -z "$leak" ] || fail "exports audio codec symbols: $leak"
	for l in libjpeg-turbo-LICENSE.md libjpeg-turbo-README.ijg flac-COPYING.Xiph libogg-COPYING opus-COPYING \
		opusfile-COPYING minimp3-LICENSE go-LICENSE; do
		ls "$tmp"/w/ffcv_go-*.dist-info/"$l" >/dev/null 2>&1 || fail "no licence text $l in its .dist-info"
	done
	show=$("$auditwheel" show "$whl" 2>&1) || fail "auditwheel show failed: $show"
	echo "$show" | tr -s ' \n' ' ' | grep -q "consistent with the following platform tag: \"manylinux_2_17_$arch\"" ||
		fail "auditwheel does not find it manylinux_2_17_$arch: $show"
	echo "$(basename "$whl"): $(du -k "$whl" | cut -f1) KiB, $machine, newest $newest, NEEDED: $needed"
done
