# report.mk - test workloads of the report side (known hot functions and stacks)
REP_WL_CFLAGS := -O0 -g -fno-omit-frame-pointer -fno-inline

$(O)/tests/workloads/rep-split: tests/workloads/rep-split.c
	@mkdir -p $(dir $@)
	$(CC) $(REP_WL_CFLAGS) -o $@ $<
$(O)/tests/workloads/rep-deep: tests/workloads/rep-deep.c
	@mkdir -p $(dir $@)
	$(CC) $(REP_WL_CFLAGS) -o $@ $<
$(O)/tests/workloads/rep-cxx: tests/workloads/rep-cxx.cc
	@mkdir -p $(dir $@)
	g++ $(REP_WL_CFLAGS) -o $@ $<

# -O2 -g: an always_inline hot loop inside a real function (fold --inline, --srcline)
$(O)/tests/workloads/rep-inline: tests/workloads/rep-inline.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -fno-omit-frame-pointer -o $@ $<

TEST_PROGS += $(O)/tests/workloads/rep-inline
TEST_PROGS += $(O)/tests/workloads/rep-split $(O)/tests/workloads/rep-deep $(O)/tests/workloads/rep-cxx

# -O2: a loop of system calls that run with interrupts off (t2111)
$(O)/tests/workloads/rep-irqoff: tests/workloads/rep-irqoff.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -o $@ $<
TEST_PROGS += $(O)/tests/workloads/rep-irqoff

# a fake CPython for the Python reader (t8003): named python3.X, symbols exported, one
# binary a version (its Py_Version from exec on)
$(O)/tests/workloads/fakepy/python3.11: tests/workloads/py-fake.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g -rdynamic -pthread -o $@ $<
$(O)/tests/workloads/fakepy312/python3.12: FAKE_VERSION = 0x030c03f0
$(O)/tests/workloads/fakepy313/python3.13: FAKE_VERSION = 0x030d00f0
$(O)/tests/workloads/fakepy314/python3.14: FAKE_VERSION = 0x030e00f0
$(O)/tests/workloads/fakepy312/python3.12 $(O)/tests/workloads/fakepy313/python3.13 \
$(O)/tests/workloads/fakepy314/python3.14: tests/workloads/py-fake.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g -rdynamic -pthread -DFAKE_VERSION=$(FAKE_VERSION) -o $@ $<
TEST_PROGS += $(O)/tests/workloads/fakepy/python3.11 $(O)/tests/workloads/fakepy312/python3.12 \
	$(O)/tests/workloads/fakepy313/python3.13 $(O)/tests/workloads/fakepy314/python3.14

# an interpreter that loads its libpython late (t8004): named python3.12
$(O)/tests/workloads/latepy/python3.12: tests/workloads/py-late.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g -o $@ $< -ldl
TEST_PROGS += $(O)/tests/workloads/latepy/python3.12

# waits of known length (t9002: off-CPU)
$(O)/tests/workloads/rep-waits: tests/workloads/rep-waits.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g -pthread -o $@ $<
TEST_PROGS += $(O)/tests/workloads/rep-waits
# a thread whose last stretch on the CPU ends at its exit (t9002: the thread table)
$(O)/tests/workloads/rep-tail: tests/workloads/rep-tail.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g -pthread -o $@ $<
TEST_PROGS += $(O)/tests/workloads/rep-tail

# two libraries of one code under other names, opened in turn at (usually) the same
# address (t2113: stacks of the same addresses, named by their mapping at the time)
$(O)/tests/workloads/librep-swapa.so: SWAP_OUTER = swap_a_outer
$(O)/tests/workloads/librep-swapb.so: SWAP_OUTER = swap_b_outer
$(O)/tests/workloads/librep-swapa.so $(O)/tests/workloads/librep-swapb.so: tests/workloads/rep-swaplib.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g -fPIC -shared -DSWAP_OUTER=$(SWAP_OUTER) -o $@ $<
$(O)/tests/workloads/rep-swap: tests/workloads/rep-swap.c
	@mkdir -p $(dir $@)
	$(CC) -O0 -g -o $@ $< -ldl
TEST_PROGS += $(O)/tests/workloads/rep-swap $(O)/tests/workloads/librep-swapa.so \
	$(O)/tests/workloads/librep-swapb.so

# a native thread that calls into Python after spinning in C (t8001)
$(O)/tests/workloads/libpy-late-thread.so: tests/workloads/py-late-thread.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g -fPIC -shared -pthread -o $@ $<
TEST_PROGS += $(O)/tests/workloads/libpy-late-thread.so
