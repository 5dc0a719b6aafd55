#!/bin/sh
# bootstrap.sh - install the Debian packages dlprof needs to build and test, only when missing.
# Run as root (make and .ci/run call it); a non-root user gets the apt-get line to run.
set -e

# build: headers and libraries; tests: real DL workloads and the reference profiler
BUILD_PKGS="gcc make pkg-config libelf-dev libdw-dev libpfm4-dev zlib1g-dev libcapstone-dev libstdc++-12-dev"
TEST_PKGS="libdnnl-dev libopenblas-openmp-dev libomp-dev python3-torch linux-perf elfutils perl binutils protobuf-compiler"
[ "${DLPROF_BOOTSTRAP:-}" = "build" ] && TEST_PKGS=

missing=
for p in $BUILD_PKGS $TEST_PKGS; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = "installed" ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "bootstrap: installing missing packages:$missing" >&2
if [ "$(id -u)" != 0 ]; then
	echo "bootstrap: not root; run: sudo apt-get install -y$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
apt-get install -y -q --no-install-recommends $missing >&2
