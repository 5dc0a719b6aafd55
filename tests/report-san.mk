# report-san.mk - dlprof built with AddressSanitizer (leaks included) and UBSan, for the
# report-side edge cases of t6006 (qsort of empty arrays, leaks, wrapping sums); and
# rep-edge, which writes those edge-case recordings.
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
SAN_DIR   := $(O)/tests/san
SAN_OBJ   := $(LIB_SRC:%.c=$(SAN_DIR)/%.o) $(CMD_SRC:%.c=$(SAN_DIR)/%.o)

$(SAN_DIR)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -O2 -O1 -O0 -O3,$(ALL_CFLAGS)) $(SAN_FLAGS) -c -o $@ $<

# includes the BPF program's skeleton (lib/record/python/pybpf.mk)
$(SAN_DIR)/lib/record/python/pybpf.o: $(PYBPF_SKEL)
$(SAN_DIR)/lib/record/opcalls.o: $(OPCALLS_SKEL)

$(SAN_DIR)/dlprof: $(SAN_OBJ)
	$(CC) $(SAN_FLAGS) -o $@ $(SAN_OBJ) $(LDLIBS)

$(O)/tests/rep-edge: tests/tools/rep-edge.c tests/tools/rec-build.h $(O)/libdlprof.a | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(O)/libdlprof.a $(LDLIBS)

TEST_PROGS += $(SAN_DIR)/dlprof $(O)/tests/rep-edge
-include $(SAN_OBJ:.o=.d)
