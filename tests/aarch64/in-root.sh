#!/bin/sh
# in-root.sh ROOT COMMAND...: runs COMMAND (a shell command line) in the arm64
# root, under qemu-user through binfmt_misc, with /proc, /sys and /dev bound
# in a mount namespace of its own (nothing stays mounted afterwards).
set -eu
root=$(cd "$1" && pwd)
shift
exec unshare --mount --propagation private sh -c '
	root=$1; shift
	mount --rbind /proc "$root/proc" && mount --rbind /sys "$root/sys" && mount --rbind /dev "$root/dev"
	exec chroot "$root" /bin/sh -c "$*"' in-root "$root" "$@"
