#!/bin/sh
# fetch-source.sh PACKAGE VERSION DIR: Debian's source package PACKAGE at
# VERSION (e.g. libjpeg-turbo 1:2.1.5-2), checked against
# packaging/PACKAGE.sha256 and unpacked with Debian's patches applied into
# DIR. The wheels link these libraries statically (libjpeg-turbo, and the
# audio codecs: flac, libogg, opus, opusfile), and core/jpeg's region decoder
# includes libjpeg-turbo's private jpegint.h, so each version is pinned here
# (with the Makefile's *_VERSION) and nowhere else.
#
# apt needs a deb-src entry for the archive the machine already uses; as
# root, one is added beside the deb entries when none is there.
set -eu
package=$1 version=$2 dir=$3
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$(apt-cache showsrc "$package" 2>/dev/null)" ]; then
	[ "$(id -u)" = 0 ] || { echo "no deb-src entry for $package: add one, or run as root" >&2; exit 1; }
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -e "$f" ] && grep -q '^Types: deb$' "$f" || continue
		sed 's/^Types: deb$/Types: deb-src/' "$f" >"/etc/apt/sources.list.d/src-$(basename "$f")"
	done
	if [ -f /etc/apt/sources.list ] && grep -q '^deb ' /etc/apt/sources.list; then
		sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >/etc/apt/sources.list.d/src-sources.list
	fi
	apt-get update -qq
fi
dl=$dir.download
rm -rf "$dl" "$dir"
mkdir -p "$dl"
# apt's sandbox user must be able to write the download directory.
chmod 777 "$dl"
(cd "$dl" && apt-get source -qq --download-only "$package=$version" >/dev/null)
(cd "$dl" && sha256sum -c --quiet "$here/$package.sha256")
dpkg-source --no-check -x "$dl"/"$package"_*.dsc "$dir.tmp" >/dev/null
mv "$dir.tmp" "$dir"
rm -rf "$dl"
