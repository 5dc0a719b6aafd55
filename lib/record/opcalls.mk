# opcalls.mk - the BPF program of record --op-calls (lib/record/opcalls.bpf.c), built as
# pybpf.mk builds the Python reader's: clang for BPF, bpftool gen object and skeleton
# ($(O)/lib/record/opcalls.skel.h, included by opcalls.c).
OPCALLS_SKEL := $(O)/lib/record/opcalls.skel.h
ALL_CFLAGS += -I$(O)/lib/record

$(O)/lib/record/opcalls.bpf.o: lib/record/opcalls.bpf.c lib/record/opcalls.mk | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(BPF_CC) $(BPF_CFLAGS) -c -o $@.tmp lib/record/opcalls.bpf.c
	$(BPFTOOL) gen object $@ $@.tmp
	@rm -f $@.tmp

$(OPCALLS_SKEL): $(O)/lib/record/opcalls.bpf.o
	$(BPFTOOL) gen skeleton $< name opcalls_bpf >$@.tmp
	@mv $@.tmp $@

$(O)/lib/record/opcalls.o: $(OPCALLS_SKEL)
