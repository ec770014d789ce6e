#!/bin/sh
# make-root.sh OUT.tar: a Debian bookworm arm64 root with Debian's python3,
# python3-torch (1.13), python3-numpy, python3-pil and pip, from the archive
# this machine's apt already uses, as a tarball.
#
# mmdebstrap's extract variant unpacks the packages natively, in about a
# minute; installing them (dpkg and the maintainer scripts under qemu) takes
# nine. The maintainer scripts' work that matters here is done below: the
# BLAS/LAPACK alternatives numpy and torch load, the loader's cache, and
# Python's bytecode, compiled natively (the same CPython 3.11 as the root's:
# .pyc files do not depend on the machine).
set -eu
out=$1
root=$(mktemp -d "${TMPDIR:-/tmp}/arm64-root.XXXXXX")
trap 'rm -rf "$root"' EXIT
sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || sources=/etc/apt/sources.list
mmdebstrap --quiet --arch=arm64 --variant=extract --mode=root \
	--include=dash,libc-bin,python3,python3-torch,python3-numpy,python3-pil,python3-pip \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	bookworm "$root" "$sources"
mkdir -p "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
chmod 1777 "$root/tmp"
lib=$root/usr/lib/aarch64-linux-gnu
for l in blas lapack; do
	[ -e "$lib/$l/lib$l.so.3" ] || { echo "make-root.sh: no $lib/$l/lib$l.so.3" >&2; exit 1; }
	ln -sf "$l/lib$l.so.3" "$lib/lib$l.so.3"
done
chroot "$root" /sbin/ldconfig
py=$(chroot "$root" /usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "$py" ] ||
	{ echo "make-root.sh: the root's python3 is $py; compile its bytecode with that version" >&2; exit 1; }
/usr/bin/python3 -m compileall -q -j0 -s "$root" -p / "$root/usr/lib/python3/dist-packages" "$root/usr/lib/python$py" >/dev/null || true
chroot "$root" /usr/bin/python3 -c 'import numpy, torch, PIL, pip'
tar --numeric-owner -C "$root" -cf "$out.tmp" .
mv "$out.tmp" "$out"
