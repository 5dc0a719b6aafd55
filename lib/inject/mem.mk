# mem.mk - the allocation sampler dlprof record --memory preloads into workloads (one of
# the HELPERS the Makefile names).
# Frame pointers kept (record -g walks them through the library to the workload), but
# not in leaf functions: the probed event functions must start with their nop.
$(O)/libdlprof-mem.so: lib/inject/mem-interpose.c include/memevent.h lib/inject/mem.mk | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) -D_GNU_SOURCE -Iinclude -fPIC -shared \
		-fvisibility=hidden -ftls-model=initial-exec -fno-omit-frame-pointer \
		-momit-leaf-frame-pointer -o $@ lib/inject/mem-interpose.c -lpthread -lm
