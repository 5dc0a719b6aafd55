# recsize.mk - workload of t1006 (dwarf stack copies cut at a thread's TCB)
$(O)/tests/workloads/rec-tstack: tests/workloads/rec-tstack.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -fno-omit-frame-pointer -no-pie -o $@ $< -lpthread

TEST_PROGS += $(O)/tests/workloads/rec-tstack
