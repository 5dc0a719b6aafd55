#!/bin/sh
# bootstrap.sh - install the Debian packages dlprof needs to build and test, only when missing.
# Run as root (make and .ci/run call it); a non-root user gets the apt-get line to run.
set -e

# build: headers and libraries, and clang, libbpf and bpftool for the BPF program
# (lib/record/python/pybpf.mk); tests: real DL workloads and the reference profiler
BUILD_PKGS="gcc make pkg-config libelf-dev libdw-dev libpfm4-dev zlib1g-dev libcapstone-dev libstdc++-12-dev clang libbpf-dev bpftool"
TEST_PKGS="libdnnl-dev libblas3 libopenblas-openmp-dev libomp-dev python3-torch linux-perf elfutils perl binutils protobuf-compiler tmux"
# tests that skip without them (real-browser checks of the SVG and speedscope output;
# t9600's mpirun and srun scenarios, which start munged, slurmctld and slurmd themselves;
# the container tests' Debian 13 root, Podman and Docker, scripts/trixie-root.sh; the source of a
# free-threaded CPython, scripts/python-ft.sh): installed when possible, never a reason
# to stop
OPTIONAL_PKGS="chromium openmpi-bin slurm-wlm munge mmdebstrap podman runc docker.io curl xz-utils"
[ "${DLPROF_BOOTSTRAP:-}" = "build" ] && TEST_PKGS= && OPTIONAL_PKGS=

missing=
for p in $BUILD_PKGS $TEST_PKGS; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = "installed" ] || missing="$missing $p"
done
optional=
for p in $OPTIONAL_PKGS; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = "installed" ] || optional="$optional $p"
done
[ -z "$missing" ] && [ -z "$optional" ] && exit 0
if [ -z "$missing" ]; then
	# only the optional ones: try once, quietly, as root
	[ "$(id -u)" = 0 ] || exit 0
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get update -q && apt-get install -y -q --no-install-recommends $optional; } >&2 ||
		echo "bootstrap: could not install$optional: the tests that need it skip" >&2
	exit 0
fi

echo "bootstrap: installing missing packages:$missing" >&2
if [ "$(id -u)" != 0 ]; then
	echo "bootstrap: not root; run: sudo apt-get install -y$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
apt-get install -y -q --no-install-recommends $missing >&2
if [ -n "$optional" ]; then
	apt-get install -y -q --no-install-recommends $optional >&2 ||
		echo "bootstrap: could not install$optional: the tests that need it skip" >&2
fi
