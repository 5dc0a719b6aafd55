# tools.mk - test tools: recdump (print a recording's records), rec-mkfile and rec-bad (write test recordings), rec-repeat (a long recording from a short one, bench/scale.sh)
$(O)/tests/recdump: tests/tools/recdump.c $(O)/libdlprof.a | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(O)/libdlprof.a $(LDLIBS)
TEST_PROGS += $(O)/tests/recdump
$(O)/tests/rec-mkfile: tests/tools/rec-mkfile.c tests/tools/rec-build.h $(O)/libdlprof.a | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(O)/libdlprof.a $(LDLIBS)
TEST_PROGS += $(O)/tests/rec-mkfile
$(O)/tests/rec-bad: tests/tools/rec-bad.c tests/tools/rec-build.h $(O)/libdlprof.a | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(O)/libdlprof.a $(LDLIBS)
TEST_PROGS += $(O)/tests/rec-bad
$(O)/tests/rec-repeat: tests/tools/rec-repeat.c $(O)/libdlprof.a | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(O)/libdlprof.a $(LDLIBS)
TEST_PROGS += $(O)/tests/rec-repeat
