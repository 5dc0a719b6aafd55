# harness.mk - helper programs of the test harness
$(O)/tests/can-perf: tests/can-perf.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -O2 -o $@ $<
TEST_PROGS += $(O)/tests/can-perf
