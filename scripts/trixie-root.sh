#!/bin/sh
# trixie-root.sh - build (once) and print the path of a Debian 13 root with today's
# PyTorch stack: torch 2.6, oneDNN 3.7, Python 3.13, and g++ for torch.compile.
# Made by mmdebstrap from Debian's own packages and cached; a later call only prints
# the path.  Tests and benches use it as a container root (Podman) or a chroot.
#
#   scripts/trixie-root.sh            build when missing, print the root's path
#   scripts/trixie-root.sh --image    also import it as the Podman image dlprof-trixie
#   scripts/trixie-root.sh --docker-image   ... as the Docker image (a daemon must answer)
#   scripts/trixie-root.sh --check    print the path when built, exit 1 otherwise
#
# DLPROF_ROOTS picks the cache folder (default /var/cache/dlprof/roots).
set -e
cache=${DLPROF_ROOTS:-/var/cache/dlprof/roots}
root=$cache/trixie-torch
# libdnnl-dev: oneDNN 3.x's headers, which the tests hold dlprof's reading of its ABI to
pkgs=python3-torch,python3-torchvision,python3-setuptools,libtorch-dev,g++,procps,libdnnl-dev

# built with another package list: built again
if [ -f "$root/.complete" ] && [ "$(cat "$root/.complete")" != "$pkgs" ]; then
	[ "$1" = "--check" ] && exit 1
	rm -f "$root/.complete"
fi
if [ "$1" = "--check" ]; then
	[ -f "$root/.complete" ] || exit 1
	echo "$root"
	exit 0
fi

if [ ! -f "$root/.complete" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "trixie-root: building $root needs root" >&2
		exit 1
	fi
	command -v mmdebstrap >/dev/null 2>&1 || {
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap >&2
	}
	mkdir -p "$cache"
	# one builder at a time: a second caller waits for the first
	exec 9>"$cache/.lock"
	flock 9
	if [ ! -f "$root/.complete" ]; then
		rm -rf "$root" "$root.tmp"
		echo "trixie-root: building $root with mmdebstrap (about 2 minutes, once)" >&2
		mmdebstrap --variant=apt --include="$pkgs" trixie "$root.tmp" >&2
		mv "$root.tmp" "$root"
		echo "$pkgs" >"$root/.complete"
	fi
	exec 9>&-
fi

# import_image TOOL LABEL: the root as TOOL's image dlprof-trixie, labelled with the
# time it was built (LABEL: where TOOL's inspect finds that label), unless it has it
import_image() {
	command -v "$1" >/dev/null 2>&1 || { echo "trixie-root: $1 is not installed" >&2; exit 1; }
	stamp=$(stat -c %Y "$root/.complete")
	have=$("$1" image inspect --format "{{index $2 \"dlprof.root\"}}" dlprof-trixie 2>/dev/null || true)
	if [ "$have" != "$stamp" ]; then
		echo "trixie-root: importing $root as the $1 image dlprof-trixie" >&2
		tar -C "$root" -c . | "$1" import --change "LABEL dlprof.root=$stamp" - dlprof-trixie >&2
	fi
}
if [ "$1" = "--image" ]; then
	import_image podman .Labels
elif [ "$1" = "--docker-image" ]; then
	import_image docker .Config.Labels
fi
echo "$root"
