#!/bin/bash
# launch-ranks.sh - what torchrun does for a static job, in a few lines (Debian's torchrun
# 1.13 fails under Python 3.11): start N copies of CMD with the variables torchrun sets,
# wait for all, exit non-zero when any failed (and stop the others at once, as torchrun
# does, rather than leave them blocked in a collective until gloo's timeout).
#
#   launch-ranks.sh N [--port P] [--master-addr A] [--nnodes M --node-rank K] -- CMD...
#
# Every copy gets MASTER_ADDR (127.0.0.1 unless --master-addr), MASTER_PORT, RANK
# (K*N + local rank), LOCAL_RANK, WORLD_SIZE (M*N), LOCAL_WORLD_SIZE (N), GROUP_RANK (K),
# GROUP_WORLD_SIZE (M), ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME=default,
# TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT=0, TORCHELASTIC_MAX_RESTARTS=0 and
# TORCHELASTIC_USE_AGENT_STORE=False (rank 0 hosts the rendezvous store itself, as
# torch.distributed's env:// does without an agent), and OMP_NUM_THREADS=1 when N > 1
# and it is unset (torchrun's default).  Without --port the port is one the kernel hands
# out for MASTER_ADDR at that moment (bind to port 0): never one in use or left in
# TIME_WAIT by the last run.  With several nodes, node 0 picks it and the others must be
# given it (--port).  The exit status: the first failing copy's (128+signal when killed).
set -u
usage() {
	echo "usage: launch-ranks.sh N [--port P] [--master-addr A] [--nnodes M --node-rank K] -- CMD..." >&2
	exit 64
}
[ $# -ge 1 ] || usage
N=$1
shift
case $N in '' | *[!0-9]* | 0) usage ;; esac
PORT= ADDR=127.0.0.1 NNODES=1 NODE_RANK=0
while [ $# -gt 0 ]; do
	case $1 in
	--port) [ $# -ge 2 ] || usage; PORT=$2; shift 2 ;;
	--master-addr) [ $# -ge 2 ] || usage; ADDR=$2; shift 2 ;;
	--nnodes) [ $# -ge 2 ] || usage; NNODES=$2; shift 2 ;;
	--node-rank) [ $# -ge 2 ] || usage; NODE_RANK=$2; shift 2 ;;
	--) shift; break ;;
	*) usage ;;
	esac
done
[ $# -ge 1 ] || usage
if [ -z "$PORT" ]; then
	[ "$NODE_RANK" = 0 ] || { echo "launch-ranks.sh: --node-rank $NODE_RANK needs node 0's --port" >&2; exit 64; }
	PORT=$(/usr/bin/python3 -c 'import socket, sys
s = socket.socket()
s.bind((sys.argv[1], 0))
print(s.getsockname()[1])' "$ADDR") || { echo "launch-ranks.sh: no free port on $ADDR" >&2; exit 1; }
fi

export MASTER_ADDR=$ADDR MASTER_PORT=$PORT
export WORLD_SIZE=$((NNODES * N)) LOCAL_WORLD_SIZE=$N GROUP_RANK=$NODE_RANK GROUP_WORLD_SIZE=$NNODES
export ROLE_NAME=default ROLE_WORLD_SIZE=$((NNODES * N))
export TORCHELASTIC_RUN_ID=${TORCHELASTIC_RUN_ID:-launch-ranks-$$} TORCHELASTIC_RESTART_COUNT=0
export TORCHELASTIC_MAX_RESTARTS=0 TORCHELASTIC_USE_AGENT_STORE=False
[ "$N" -gt 1 ] && export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

pids=()
stop() {	# the copies still running: TERM, as torchrun does
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
}
trap 'stop; exit 143' TERM
trap 'stop; exit 130' INT
for ((l = 0; l < N; l++)); do
	RANK=$((NODE_RANK * N + l)) LOCAL_RANK=$l ROLE_RANK=$((NODE_RANK * N + l)) "$@" &
	pids+=($!)
done
rc=0
left=$N
while [ "$left" -gt 0 ]; do
	done_pid=
	wait -n -p done_pid	# the copies are this shell's only jobs
	st=$?
	[ -n "${done_pid:-}" ] || break	# none left to wait for
	left=$((left - 1))
	if [ "$st" != 0 ] && [ "$rc" = 0 ]; then
		rc=$st
		echo "launch-ranks.sh: rank pid $done_pid exited $st; stopping the others" >&2
		stop
	fi
done
exit "$rc"
