#!/bin/sh
# bench/container.sh - what recording costs the CNN in a container against on the host:
# examples/cnn_train.py trained in the Debian 13 Podman container (scripts/trixie-root.sh)
# and on the host (Debian 12), each bare and under `dlprof record`, in interleaved rounds
# (the order turns each round).  The workload's own training time is the measure; the
# slowdown of each place is recorded/bare, and the goal (issue 47) is container/host
# <= 1 (recording in a container costs no more than on the host).  Beside it, the same of
# the workload's CPU time in its steps (its own count: what the kernel's sampling costs
# its threads, without the wait for a core record's threads take on 2 cores), and
# record's own CPU a sample while the workload ran (META record_run_cpu_ns).
# -r docker: the container run by Docker (a daemon must answer; record follows the run
# through its cgroup parent) in place of Podman.
#   bench/container.sh [-n ROUNDS] [-s STEPS] [-r podman|docker]
set -e
cd "$(dirname "$0")/.."
DLPROF=${DLPROF:-$PWD/dlprof}
RECDUMP=${RECDUMP:-$PWD/build/tests/recdump}
rounds=5 steps=40 runtime=podman
while [ $# -gt 0 ]; do
	case "$1" in
	-n) rounds=$2; shift 2 ;;
	-s) steps=$2; shift 2 ;;
	-r) runtime=$2; shift 2 ;;
	*) echo "usage: bench/container.sh [-n ROUNDS] [-s STEPS] [-r podman|docker]" >&2; exit 64 ;;
	esac
done
case $runtime in
podman) scripts/trixie-root.sh --image >/dev/null ;;
docker) docker info >/dev/null 2>&1 || { echo "bench/container.sh: no Docker daemon answers" >&2; exit 1; }
	scripts/trixie-root.sh --docker-image >/dev/null ;;
*) echo "bench/container.sh: -r podman or docker" >&2; exit 64 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '[containers]\ndefault_ulimits = []\n' >"$tmp/containers.conf"
export CONTAINERS_CONF="$tmp/containers.conf"
ex=$PWD/examples
if [ "$runtime" = docker ]; then
	ct="docker run --rm --network none -v $ex:$ex:ro dlprof-trixie python3"
else
	ct="podman --runtime runc --cgroup-manager cgroupfs run --rm -v $ex:$ex:ro dlprof-trixie python3"
fi
run() {	# PLACE MODE
	if [ "$1" = ct ]; then cmd="$ct"; else cmd=/usr/bin/python3; fi
	if [ "$2" = rec ]; then
		"$DLPROF" record -q -o "$tmp/b.data" -- $cmd "$ex/cnn_train.py" --steps "$steps"
	else
		$cmd "$ex/cnn_train.py" --steps "$steps"
	fi >"$tmp/out" 2>&1
	t=$(sed -n 's/.* steps in \([0-9.]*\) s.*/\1/p' "$tmp/out")
	c=$(sed -n 's/.* \([0-9.]*\) s of CPU in the steps/\1/p' "$tmp/out")
	r=-
	if [ "$2" = rec ]; then
		r=$("$RECDUMP" "$tmp/b.data" | awk -F= '/^META record_run_cpu_ns=/ { c = $2 }
			/^STATS samples=/ { split($2, a, " "); n = a[1] } END { printf "%.2f", c / n / 1000 }')
	fi
	echo "$1 $2 $i train_s=$t cpu_s=$c rec_us=$r"
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
t, c, r = {}, {}, {}
for line in open(sys.argv[1]):
    place, mode, _, tv, cv, rv = line.split()
    t.setdefault((place, mode), []).append(float(tv.split("=")[1]))
    c.setdefault((place, mode), []).append(float(cv.split("=")[1]))
    if mode == "rec":
        r.setdefault(place, []).append(float(rv.split("=")[1]))
med = statistics.median
for k in sorted(t):
    print("%-4s %-4s median train %.3f s (%s), CPU %.3f s" %
          (k[0], k[1], med(t[k]), " ".join("%.2f" % x for x in t[k]), med(c[k])))
for name, v in (("train time", t), ("its CPU", c)):
    ct = med(v[("ct", "rec")]) / med(v[("ct", "bare")])
    host = med(v[("host", "rec")]) / med(v[("host", "bare")])
    print("%s, recorded/bare: container %.3f, host %.3f; container/host %.3f" %
          (name, ct, host, ct / host))
print("record's CPU a sample while the workload ran: container %.2f us, host %.2f us" %
      (med(r["ct"]), med(r["host"])))
PY
