#!/bin/sh
# bench/container.sh - what recording costs the CNN in a container against on the host:
# examples/cnn_train.py trained in the Debian 13 Podman container (scripts/trixie-root.sh)
# and on the host (Debian 12), each bare and under `dlprof record`, in interleaved rounds
# (the order turns each round).  The workload's own training time is the measure; the
# slowdown of each place is recorded/bare, and the goal (issue 47) is container/host
# <= 1 (recording in a container costs no more than on the host).
#   bench/container.sh [-n ROUNDS] [-s STEPS]
set -e
cd "$(dirname "$0")/.."
DLPROF=${DLPROF:-$PWD/dlprof}
rounds=5 steps=20
while [ $# -gt 0 ]; do
	case "$1" in
	-n) rounds=$2; shift 2 ;;
	-s) steps=$2; shift 2 ;;
	*) echo "usage: bench/container.sh [-n ROUNDS] [-s STEPS]" >&2; exit 64 ;;
	esac
done
scripts/trixie-root.sh --image >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '[containers]\ndefault_ulimits = []\n' >"$tmp/containers.conf"
export CONTAINERS_CONF="$tmp/containers.conf"
ex=$PWD/examples
ct="podman --runtime runc --cgroup-manager cgroupfs run --rm -v $ex:$ex:ro dlprof-trixie python3"
run() {	# PLACE MODE
	if [ "$1" = ct ]; then cmd="$ct"; else cmd=/usr/bin/python3; fi
	if [ "$2" = rec ]; then
		"$DLPROF" record -q -o "$tmp/b.data" -- $cmd "$ex/cnn_train.py" --steps "$steps"
	else
		$cmd "$ex/cnn_train.py" --steps "$steps"
	fi >"$tmp/out" 2>&1
	t=$(sed -n 's/.* steps in \([0-9.]*\) s.*/\1/p' "$tmp/out")
	echo "$1 $2 $i train_s=$t"
}
i=0
while [ $i -lt "$rounds" ]; do
	i=$((i + 1))
	if [ $((i % 2)) = 1 ]; then order="ct:bare ct:rec host:bare host:rec"
	else order="host:rec host:bare ct:rec ct:bare"; fi
	for x in $order; do
		run "${x%%:*}" "${x#*:}"
	done
done | tee "$tmp/res"
python3 - "$tmp/res" <<'PY'
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    place, mode, _, v = line.split()
    t.setdefault((place, mode), []).append(float(v.split("=")[1]))
med = {k: statistics.median(v) for k, v in t.items()}
for k in sorted(med):
    print("%-4s %-4s median train %.3f s (%s)" % (k[0], k[1], med[k], " ".join("%.2f" % x for x in t[k])))
ct = med[("ct", "rec")] / med[("ct", "bare")]
host = med[("host", "rec")] / med[("host", "bare")]
print("slowdown recorded/bare: container %.3f, host %.3f; container/host %.3f" % (ct, host, ct / host))
PY
