# mem.mk - workloads of the memory tests (tests/t95*-mem-*.sh)
MEM_WORKLOADS := $(O)/tests/workloads/mem-known $(O)/tests/workloads/mem-known-static \
		 $(O)/tests/workloads/libmemknown.so

$(O)/tests/workloads/mem-known: tests/workloads/mem-known.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -o $@ $< -lpthread

# a static program: LD_PRELOAD means nothing to it (record names it)
$(O)/tests/workloads/mem-known-static: tests/workloads/mem-known.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -static -o $@ $< -lpthread

# the same functions for Python (tests/workloads/mem_py.py, through ctypes)
$(O)/tests/workloads/libmemknown.so: tests/workloads/mem-known.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -fPIC -shared -DMEMKNOWN_LIB -o $@ $< -lpthread

TEST_PROGS += $(MEM_WORKLOADS)
