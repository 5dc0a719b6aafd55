# itt.mk - the ITT collector library loaded into workloads by dlprof record (one of the
# HELPERS the Makefile names): the ITT collector and the oneDNN primitive interposer
ITT_LIB_SRC := lib/inject/itt-collector.c lib/inject/dnnl-hook.c
$(O)/libdlprof-itt.so: $(ITT_LIB_SRC) lib/inject/collector.h lib/inject/dnnl-abi.h include/itt-format.h \
		lib/inject/itt.mk | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) -D_GNU_SOURCE -Iinclude -fPIC -shared \
		-fvisibility=hidden -o $@ $(ITT_LIB_SRC) -lpthread -ldl
