#!/bin/sh
# memory.sh - what record --memory costs on the CNN: three interleaved rounds of record
# without and with --memory on tests/workloads/dl_torch_cnn.py (runs 8 s; its steps count
# the speed), recording sizes.  Run alone: no other timing on the machine.
cd "$(dirname "$0")/.." && W=tests/workloads/dl_torch_cnn.py
for r in 1 2 3; do
  for m in plain mem; do
    opt=""; [ $m = mem ] && opt="--memory"
    s=$(date +%s.%N)
    ./dlprof record -q $opt -o /tmp/ov.$m.$r.data -- /usr/bin/python3 $W 8 >/tmp/ov.$m.$r.out 2>&1
    e=$(date +%s.%N)
    echo "$m $r $(echo "$e - $s" | bc) $(stat -c %s /tmp/ov.$m.$r.data) $(grep -o 'steps=[0-9]*\|step[s]* [0-9]*' /tmp/ov.$m.$r.out | head -1)"
  done
done
