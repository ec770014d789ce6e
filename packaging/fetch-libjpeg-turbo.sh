#!/bin/sh
# fetch-libjpeg-turbo.sh VERSION DIR: Debian's libjpeg-turbo source package
# VERSION (e.g. 1:2.1.5-2), checked against packaging/libjpeg-turbo.sha256
# and unpacked with Debian's patches applied into DIR. The wheels link this
# library statically, and core/jpeg's region decoder includes its private
# jpegint.h, so the version is pinned here and nowhere else.
#
# apt needs a deb-src entry for the archive the machine already uses; as
# root, one is added beside the deb entries when none is there.
set -eu
version=$1 dir=$2
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$(apt-cache showsrc libjpeg-turbo 2>/dev/null)" ]; then
	[ "$(id -u)" = 0 ] || { echo "no deb-src entry for libjpeg-turbo: add one, or run as root" >&2; exit 1; }
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
(cd "$dl" && apt-get source -qq --download-only "libjpeg-turbo=$version" >/dev/null)
(cd "$dl" && sha256sum -c --quiet "$here/libjpeg-turbo.sha256")
dpkg-source --no-check -x "$dl"/libjpeg-turbo_*.dsc "$dir.tmp" >/dev/null
mv "$dir.tmp" "$dir"
rm -rf "$dl"
