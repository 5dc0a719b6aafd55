#!/bin/sh
# t5000: unit tests of the DL view: family rules, operators, ITT collector and reader,
# the fast-path findings from FP operations counted by width, counters scaled where they
# shared the PMU
. "$(dirname "$0")/lib.sh"

export DLPROF_DATADIR="$TOP/share"

test_unit test-family	# family rules, classification and operators
test_unit test-itt	# the ITT collector through an emulated static stub
test_unit test-fastpath	# FP width by primitive (record --metrics fp), made counts
test_unit test-metview	# report --metrics: counters that shared the PMU scaled, said

test_expect_success 'collector exports the version-1 protocol and no libdlprof symbols' '
	nm -D --defined-only "$BUILD/libdlprof-itt.so" >syms &&
	test_grep -q " __itt_api_version$" syms &&
	test_grep -q " __itt_task_begin$" syms &&
	! grep -q " __itt_api_init$" syms &&
	! grep -q " error$" syms
'

test_have DNNL && test_have TORCH && test_expect_success 'collector records oneDNN primitives of a real torch run' '
	mkdir itt &&
	INTEL_LIBITTNOTIFY64="$BUILD/libdlprof-itt.so" INTEL_ITTNOTIFY_GROUPS=all DLPROF_ITT_DIR="$TRASH/itt" \
	/usr/bin/python3 -c "
import torch
torch.set_num_threads(2)
m = torch.nn.Conv2d(3, 16, 3)
x = torch.randn(4, 3, 32, 32)
for i in range(3):
    m(x).sum().backward()
" &&
	ls itt/itt-*.bin >files && test -s files &&
	cat itt/itt-*.bin | tr -c "a-z\n" "\n" | sort -u >names &&
	test_grep -qx convolution names
'
test_done
