#!/bin/sh
# ct-chroot.sh ROOT CMD...: run CMD under ROOT as a container would, where Podman cannot
# start: run it under "unshare --mount --pid --fork" (tests/lib.sh's container_setup).
# Mounts (private to that namespace, gone with it): a new /proc, /dev, the host's /tmp (so
# record's folders there are the same paths inside, as its -v gives a Podman container)
# and the source tree at its own path (its workloads and dlprof's libraries).
set -e
root=$1
shift
top=$(cd "$(dirname "$0")/.." && pwd)
mount --make-rprivate /
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /tmp "$root/tmp"
mkdir -p "$root$top"
mount --bind "$top" "$root$top"
exec chroot "$root" "$@"
