#!/bin/sh
# binfmt.sh: makes sure the kernel runs arm64 programs through Debian's
# qemu-user-static (binfmt_misc mounted, its qemu-aarch64 entry enabled).
set -eu
entry=/proc/sys/fs/binfmt_misc/qemu-aarch64
[ -e /proc/sys/fs/binfmt_misc/status ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
[ -e $entry ] || update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || update-binfmts --import qemu-aarch64
grep -q '^enabled' $entry || { echo "binfmt.sh: $entry is not enabled" >&2; exit 1; }
grep -q '^flags: .*F' $entry || { echo "binfmt.sh: $entry lacks the F flag (chroots need it)" >&2; exit 1; }
