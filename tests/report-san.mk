# report-san.mk - dlprof built with AddressSanitizer (leaks included) and UBSan, for the
# report-side edge cases of t6006 (qsort of empty arrays, leaks, wrapping sums); and
# rep-edge, which writes those edge-case recordings.
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
SAN_DIR   := $(O)/tests/san
ifeq ($(HAVE_CLANG),yes)
# the fuzzing harnesses' objects (fuzz.mk: clang, ASan and UBSan, with coverage the
# sanitizers' runtime takes without libFuzzer) and the commands' built alike: one
# sanitized build of the library, not two (100 files: 15 s of make check on 2 cores)
SAN_LINK  := $(FUZZ_CC)
SAN_OBJ   := $(FUZZ_OBJ) $(CMD_SRC:%.c=$(FUZZ_DIR)/%.o)
$(FUZZ_DIR)/cmd/%.o: cmd/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<
else
SAN_LINK  := $(CC)
SAN_OBJ   := $(LIB_SRC:%.c=$(SAN_DIR)/%.o) $(CMD_SRC:%.c=$(SAN_DIR)/%.o)
endif

$(SAN_DIR)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -O2 -O1 -O0 -O3,$(ALL_CFLAGS)) $(SAN_FLAGS) -c -o $@ $<

# includes the BPF program's skeleton (lib/record/python/pybpf.mk)
$(SAN_DIR)/lib/record/python/pybpf.o: $(PYBPF_SKEL)
$(SAN_DIR)/lib/record/opcalls.o: $(OPCALLS_SKEL)

$(SAN_DIR)/dlprof: $(SAN_OBJ)
	@mkdir -p $(dir $@)
	$(SAN_LINK) $(SAN_FLAGS) -o $@ $(SAN_OBJ) $(LDLIBS)

$(O)/tests/rep-edge: tests/tools/rep-edge.c tests/tools/rec-build.h $(O)/libdlprof.a | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(O)/libdlprof.a $(LDLIBS)

TEST_PROGS += $(SAN_DIR)/dlprof $(O)/tests/rep-edge
-include $(SAN_OBJ:.o=.d)
