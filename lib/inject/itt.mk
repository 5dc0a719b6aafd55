# itt.mk - the ITT collector library loaded into workloads by dlprof record (one of the
# HELPERS the Makefile names)
$(O)/libdlprof-itt.so: lib/inject/itt-collector.c include/itt.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) -D_GNU_SOURCE -Iinclude -fPIC -shared \
		-fvisibility=hidden -o $@ lib/inject/itt-collector.c -lpthread
