# mem.mk - the allocation sampler dlprof record --memory preloads into workloads
$(O)/libdlprof-mem.so: lib/mem/interpose.c include/memevent.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) -D_GNU_SOURCE -Iinclude -fPIC -shared \
		-fvisibility=hidden -ftls-model=initial-exec -o $@ lib/mem/interpose.c -lpthread -lm
HELPERS += $(O)/libdlprof-mem.so
INSTALL_LIBS += $(O)/libdlprof-mem.so
