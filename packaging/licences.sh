#!/bin/sh
# licences.sh OUT JPEG FLAC OGG OPUS OPUSFILE: the licence texts of what the
# wheels' _ffcv_go.so links in, into OUT, one file each, named after the
# library (setup.py puts them in the wheel's .dist-info, whose files have no
# directories): libjpeg-turbo, libFLAC, libogg, libopus and libopusfile from
# the source trees the wheels build them from; minimp3 from core/audio; Go's
# standard library and runtime from GOROOT; and each Go module ./export
# imports, from the module cache, less a nested module's text that repeats
# its parent's (the AWS SDK's modules each carry the SDK's Apache-2.0 text).
# Run in the repository's root.
set -eu
out=$1 jpeg=$2 flac=$3 ogg=$4 opus=$5 opusfile=$6
rm -rf "$out" "$out.tmp"
mkdir -p "$out.tmp"
cp "$jpeg/LICENSE.md" "$out.tmp/libjpeg-turbo-LICENSE.md"
# libjpeg-turbo's LICENSE.md points to README.ijg for the IJG licence.
cp "$jpeg/README.ijg" "$out.tmp/libjpeg-turbo-README.ijg"
# libFLAC is BSD-3-Clause (COPYING.Xiph); the GPL and LGPL texts beside it
# cover flac's programs and libFLAC++, which are not built.
cp "$flac/COPYING.Xiph" "$out.tmp/flac-COPYING.Xiph"
cp "$ogg/COPYING" "$out.tmp/libogg-COPYING"
cp "$opus/COPYING" "$out.tmp/opus-COPYING"
cp "$opusfile/COPYING" "$out.tmp/opusfile-COPYING"
cp core/audio/minimp3/LICENSE "$out.tmp/minimp3-LICENSE"
goroot=$(go env GOROOT)
cp "$goroot/LICENSE" "$out.tmp/go-LICENSE"
cp "$goroot/PATENTS" "$out.tmp/go-PATENTS"
modules=
go list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Dir}}{{end}}{{end}}' ./export | sort -u |
	while read -r path dir; do
		found=
		for f in "$dir"/LICENSE* "$dir"/LICENCE* "$dir"/COPYING* "$dir"/NOTICE*; do
			[ -f "$f" ] || continue
			found=1
			for parent in $modules; do
				case $path in "$parent"/*)
					cmp -s "$f" "$out.tmp/go-$(echo "$parent" | tr / _)-$(basename "$f")" && continue 2 ;;
				esac
			done
			cp "$f" "$out.tmp/go-$(echo "$path" | tr / _)-$(basename "$f")"
		done
		[ -n "$found" ] || { echo "licences: no licence file in $dir ($path)" >&2; exit 1; }
		modules="$modules $path"
	done
mv "$out.tmp" "$out"
