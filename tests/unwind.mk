# unwind.mk - workloads of the unwinder tests (tests/t3*-unwind-*.sh): built -O2 -g without
# frame pointers (CFI only); libunw-lib.so is stripped (.dynsym + .eh_frame only);
# libunw-dbg.so is the same library with its CFI in .debug_frame alone (no unwind
# tables: an empty .eh_frame), not stripped.
UNW_CFLAGS := -O2 -g -fomit-frame-pointer

$(O)/tests/unw-jit: tests/workloads/unw-jit.c tests/workloads/jit-sse.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(UNW_CFLAGS) -o $@ $<

$(O)/tests/jit-chain: tests/workloads/jit-chain.c tests/workloads/jit-sse.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(UNW_CFLAGS) -pthread -o $@ $<

$(O)/tests/libunw-lib.so: tests/workloads/unw-lib.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(UNW_CFLAGS) -fPIC -shared -fvisibility=hidden -o $@.tmp $<
	strip --strip-all $@.tmp && mv $@.tmp $@

$(O)/tests/libunw-dbg.so: tests/workloads/unw-lib.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(UNW_CFLAGS) -fno-asynchronous-unwind-tables -fno-unwind-tables -fPIC -shared \
		-fvisibility=hidden -o $@ $<

# ... and with that .debug_frame compressed (SHF_COMPRESSED, as Go's linker writes it)
$(O)/tests/libunw-dbgz.so: tests/workloads/unw-lib.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(UNW_CFLAGS) -gz=zlib -fno-asynchronous-unwind-tables -fno-unwind-tables -fPIC \
		-shared -fvisibility=hidden -o $@ $<

$(O)/tests/unw-libmain: tests/workloads/unw-libmain.c $(O)/tests/libunw-lib.so | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(UNW_CFLAGS) -o $@ $< -L$(O)/tests -lunw-lib -Wl,-rpath,'$$ORIGIN'

$(O)/tests/unw-execspin: tests/workloads/unw-execspin.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(UNW_CFLAGS) -o $@ $<

$(O)/tests/unw-join: tests/workloads/unw-join.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(UNW_CFLAGS) -pthread -o $@ $<

$(O)/tests/unw-deep: tests/workloads/unw-deep.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(UNW_CFLAGS) -o $@ $<

$(O)/tests/unw-signal: tests/workloads/unw-signal.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(UNW_CFLAGS) -o $@ $<

TEST_PROGS += $(O)/tests/unw-jit $(O)/tests/libunw-lib.so $(O)/tests/libunw-dbg.so \
	      $(O)/tests/libunw-dbgz.so 	      $(O)/tests/unw-libmain $(O)/tests/unw-execspin $(O)/tests/unw-join \
	      $(O)/tests/unw-deep $(O)/tests/unw-signal $(O)/tests/jit-chain

# unw-stackdepth FILE: unwind time, complete share and its dependence on the stack size
$(O)/tests/unw-stackdepth: tests/tools/unw-stackdepth.c $(O)/libdlprof.a | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(O)/libdlprof.a $(LDLIBS)
TEST_PROGS += $(O)/tests/unw-stackdepth
