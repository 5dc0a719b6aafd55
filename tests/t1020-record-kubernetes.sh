#!/bin/sh
# t1020: a Kubernetes pod's container, met on its node as Kubernetes users meet it.
# kubelet asks containerd (its CRI plugin) for each container: the cgroup
# /kubepods/<qos>/pod<uid>/<64-hex id>, and an OCI bundle whose annotations name the
# pod, its namespace and the container (io.kubernetes.cri.*).  No kubelet runs here:
# ctr starts the containers in containerd's k8s.io namespace with what the CRI gives
# them (that cgroup, those annotations), and no runtime CLI knows them: podman, docker
# and nerdctl inspect find nothing.  Before, the rows named such a container by its
# id's first 12 digits and --container could not find it.  Known truths: the names the
# test gave, the pid containerd's shim wrote, a spinning process's CPU time.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
containerd_setup || test_skip_all "$CTRD_WHY"
RECDUMP="$BUILD/tests/recdump"
UID1=$(cat /proc/sys/kernel/random/uuid)
ID1=$(head -c 32 /dev/urandom | sha256sum | cut -c1-64)
ID2=$(head -c 32 /dev/urandom | sha256sum | cut -c1-64)

# pod_run ID POD CONTAINER UID: a container as the CRI makes it, running a Python spin
pod_run() {
	ctr -n k8s.io run -d --rootfs --read-only --env PATH=/usr/bin:/bin \
		--cgroup /kubepods/burstable/pod$4/$1 \
		--annotation io.kubernetes.cri.container-type=container \
		--annotation io.kubernetes.cri.container-name=$3 \
		--annotation io.kubernetes.cri.sandbox-name=$2 \
		--annotation io.kubernetes.cri.sandbox-namespace=ml \
		"$CT_ROOT" $1 python3 -c "while True: pass" >/dev/null
}
pod_rm() {
	ctr -n k8s.io task kill -s KILL $1 >/dev/null 2>&1
	i=0
	while ctr -n k8s.io task ls -q 2>/dev/null | grep -q "^$1\$" && [ $i -lt 50 ]; do
		ctr -n k8s.io task rm $1 >/dev/null 2>&1; sleep 0.1; i=$((i + 1)); done
	ctr -n k8s.io container rm $1 >/dev/null 2>&1
	for m in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
		rmdir $m/burstable/pod$2 $m/burstable $m 2>/dev/null || :; done
}

test_expect_success 'a pod'"'"'s container: --container POD/CONTAINER records it, its rows named so' '
	pod_run $ID1 cnn-0 trainer $UID1 &&
	pid=$(cat /run/containerd/io.containerd.runtime.v2.task/k8s.io/$ID1/init.pid) && echo "pid $pid" &&
	rc=0 && "$DLPROF" record -q -o k.data --container ml/cnn-0/trainer --duration 1.5 2>err || rc=$?;
	cat err; test $rc = 0 &&
	"$DLPROF" report -i k.data --sort pid >pid 2>/dev/null && sed -n "/Share/,\$p" pid &&
	grep -E " $pid .* ml/cnn-0/trainer +python3 -c " pid &&
	n=$("$RECDUMP" k.data | grep -c "^PERF SAMPLE pid=$pid ") && echo "$n samples" &&
	test "$n" -ge 1300
'

test_expect_success 'by its container'"'"'s name alone, by its id, and its pod by cgroup' '
	pid=$(cat /run/containerd/io.containerd.runtime.v2.task/k8s.io/$ID1/init.pid) &&
	"$DLPROF" record -q -o n.data --container trainer --duration 0.5 2>/dev/null &&
	"$DLPROF" record -q -o i.data --container $(echo $ID1 | cut -c1-12) --duration 0.5 2>/dev/null &&
	"$DLPROF" record -q -o c.data --cgroup /kubepods/burstable/pod$UID1 --duration 0.5 2>/dev/null &&
	for f in n i c; do
		"$RECDUMP" $f.data | grep "^META attach=" | tee attach &&
		grep -q "^META attach=$pid\$" attach || exit 1
	done &&
	"$DLPROF" report -i c.data --sort pid >cpid 2>/dev/null && grep -E " $pid .* ml/cnn-0/trainer " cpid
'

test_expect_success 'two pods with a container of that name: one line, exit 2' '
	pod_run $ID2 cnn-1 trainer $UID1-b &&
	rc=0 && "$DLPROF" record -q -o t.data --container trainer --duration 0.5 2>err || rc=$?;
	cat err; test $rc = 2 && test $(wc -l <err) = 1 &&
	test_grep "^dlprof: error: 2 containers are named .trainer.: give POD/CONTAINER or its id" err &&
	"$DLPROF" record -q -o t.data --container ml/cnn-1/trainer --duration 0.5 2>/dev/null &&
	pid2=$(cat /run/containerd/io.containerd.runtime.v2.task/k8s.io/$ID2/init.pid) &&
	"$RECDUMP" t.data | grep "^META attach=$pid2\$"
'

pod_rm $ID1 $UID1
pod_rm $ID2 $UID1-b
test_done
