#!/bin/sh
# make-root.sh OUT.tar: a Debian bookworm arm64 root with Debian's python3,
# python3-torch (1.13), python3-numpy, python3-pil and pip, from the archive
# this machine's apt already uses, as a tarball. Its maintainer scripts run
# under qemu-user-static through binfmt_misc.
#
# Emulated dpkg is what takes the time: it runs without fsync (eatmydata,
# unsafe-io), and Python's bytecode is compiled here, natively (the same
# CPython 3.11 as the root's; .pyc files do not depend on the machine), not by
# each package's postinst under emulation.
set -eu
out=$1
root=$(mktemp -d "${TMPDIR:-/tmp}/arm64-root.XXXXXX")
trap 'rm -rf "$root"' EXIT
sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || sources=/etc/apt/sources.list
mmdebstrap --arch=arm64 --variant=essential --mode=root \
	--include=python3,python3-torch,python3-numpy,python3-pil,python3-pip \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt=force-unsafe-io \
	--hook-dir=/usr/share/mmdebstrap/hooks/eatmydata \
	--essential-hook='chroot "$1" dpkg-divert --quiet --local --rename --add /usr/bin/py3compile' \
	--customize-hook='chroot "$1" dpkg-divert --quiet --local --rename --remove /usr/bin/py3compile' \
	bookworm "$root" "$sources"
py=$(chroot "$root" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "$py" ] ||
	{ echo "make-root.sh: the root's python3 is $py; compile its bytecode with that version" >&2; exit 1; }
/usr/bin/python3 -m compileall -q -j0 -s "$root" -p / "$root/usr/lib/python3/dist-packages" "$root/usr/lib/python$py" >/dev/null || true
tar --numeric-owner -C "$root" -cf "$out.tmp" .
mv "$out.tmp" "$out"
