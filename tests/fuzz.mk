# fuzz.mk - libFuzzer harnesses (Debian's clang): the readers of outside input, built
# with -fsanitize=fuzzer,address,undefined.
#
#   make fuzz [FUZZ_SECONDS=N]   run every harness N seconds (default 60) on its corpus
#
# Harnesses (tests/fuzz/fuzz-NAME.c, seeds in tests/fuzz/corpus/NAME/):
#   recording       records re-wrapped as a valid recording: session, process model,
#                   unwinder, symbolizer, attribution
#   recording-raw   the same binary on file bytes (FUZZ_RAW=1): header and chunks
#   parsers         family rules, perf maps, jitdumps, ITT collector files (first byte)
#   perfdata        perf.data files (header, attrs, features, records, dwarf stacks), and
#                   an attr + records wrapped as a well-formed file (first byte)
#   elf             ELF files through check-isa's scan, the DL view's function tiers, and
#                   report's symbolizer (DWARF lines, inlines) and CFI unwinder
# The corpus grows in build/fuzz/corpus-NAME (the seeds stay as they are).  What libFuzzer
# finds (crash-*, leak-*, timeout-*, oom-*, slow-unit-*; one malloc over FUZZ_MALLOC_MB is
# an oom-*) is left in build/fuzz/findings/NAME/; once every harness has run, the target
# fails naming each such file.  Fixed, a finding goes to tests/fuzz/regress/NAME/, which
# t6003 replays on every `make check`; l6003 (make check-long) runs each harness a few seconds.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_MALLOC_MB ?= 256
FUZZ_FINDINGS := crash leak timeout oom slow-unit
FUZZ_DIR     := $(O)/fuzz
FUZZ_CFLAGS  := $(filter-out -O2 -O1 -O0 -O3 -Wshadow,$(ALL_CFLAGS)) -O1 -g -fno-omit-frame-pointer \
		-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
FUZZ_OBJ     := $(LIB_SRC:%.c=$(FUZZ_DIR)/%.o)
FUZZ_NAMES   := recording parsers perfdata elf
FUZZ_BIN     := $(FUZZ_NAMES:%=$(FUZZ_DIR)/fuzz-%)
HAVE_CLANG   := $(shell command -v $(FUZZ_CC) >/dev/null 2>&1 && echo yes)

.SECONDARY: $(FUZZ_OBJ)
$(FUZZ_DIR)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

# includes the BPF program's skeleton (lib/record/python/pybpf.mk)
$(FUZZ_DIR)/lib/record/python/pybpf.o: $(PYBPF_SKEL)
$(FUZZ_DIR)/lib/record/opcalls.o: $(OPCALLS_SKEL)

$(FUZZ_DIR)/fuzz-%: tests/fuzz/fuzz-%.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) $(LDLIBS)

# name binary [env]
define fuzz_run
	@mkdir -p $(FUZZ_DIR)/corpus-$(1) $(FUZZ_DIR)/findings/$(1)
	@echo "fuzz: $(1) for $(FUZZ_SECONDS) s"
	cd $(FUZZ_DIR) && $(3) ./$(2) -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 \
		-malloc_limit_mb=$(FUZZ_MALLOC_MB) -timeout=20 -close_fd_mask=2 -print_final_stats=1 \
		-artifact_prefix=findings/$(1)/ corpus-$(1) \
		$(CURDIR)/tests/fuzz/corpus/$(1) 2>&1 | grep -E "DONE|stat::|==|SUMMARY|INFO: Seed" || true
endef

fuzz: $(FUZZ_BIN)
	$(call fuzz_run,recording,fuzz-recording,)
	$(call fuzz_run,recording-raw,fuzz-recording,FUZZ_RAW=1)
	$(call fuzz_run,parsers,fuzz-parsers,)
	$(call fuzz_run,perfdata,fuzz-perfdata,)
	$(call fuzz_run,elf,fuzz-elf,)
	@found=$$(ls -d $(FUZZ_FINDINGS:%=$(FUZZ_DIR)/%-*) \
		$(foreach n,$(FUZZ_NAMES) recording-raw,$(FUZZ_FINDINGS:%=$(FUZZ_DIR)/findings/$(n)/%-*)) \
		2>/dev/null); \
	test -z "$$found" || { for f in $$found; do echo "fuzz: finding $$f"; done; exit 1; }

.PHONY: fuzz
ifeq ($(HAVE_CLANG),yes)
TEST_PROGS += $(FUZZ_BIN)
endif
-include $(FUZZ_OBJ:.o=.d)
