# pybpf.mk - the BPF program that reads Python stacks in the kernel (lib/record/python/pybpf.bpf.c):
# compiled by clang for BPF, its DWARF dropped (bpftool gen object), and embedded in
# pybpf.c as a libbpf skeleton (bpftool gen skeleton: $(O)/lib/record/python/pybpf.skel.h).
# Only the uapi headers (linux-libc-dev) and libbpf's are used: no vmlinux.h, nothing
# of the build machine's kernel.
BPF_CC   ?= clang
BPFTOOL  ?= $(firstword $(shell command -v bpftool 2>/dev/null) /usr/sbin/bpftool)
# asm/types.h lives under the multiarch folder, which clang -target bpf does not search
BPF_CFLAGS  = -O2 -g -target bpf -ffreestanding -Wall -Wextra -Wno-unused-parameter \
	      -idirafter /usr/include/$(shell $(CC) -print-multiarch 2>/dev/null) -Iinclude
PYBPF_SKEL := $(O)/lib/record/python/pybpf.skel.h
ALL_CFLAGS += -I$(O)/lib/record/python

# the tools, each missing one named (the bootstrap installs them; this says so when it
# could not, or was skipped)
$(O)/lib/record/python/pybpf.bpf.o: lib/record/python/pybpf.bpf.c lib/record/python/pybpf-prog.h lib/record/python/pybpf.h include/kunwind.h \
		include/memevent.h lib/record/python/pybpf.mk | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@m=; command -v $(BPF_CC) >/dev/null 2>&1 || m="$$m clang"; \
	test -x $(BPFTOOL) || command -v $(BPFTOOL) >/dev/null 2>&1 || m="$$m bpftool"; \
	test -e /usr/include/bpf/bpf_helpers.h || pkg-config --exists libbpf || m="$$m libbpf-dev"; \
	test -z "$$m" || { echo "make: $@ needs the Debian packages$$m" \
		"(sh scripts/bootstrap.sh as root installs them)" >&2; exit 1; }
	$(BPF_CC) $(BPF_CFLAGS) -c -o $@.tmp lib/record/python/pybpf.bpf.c
	$(BPFTOOL) gen object $@ $@.tmp
	@rm -f $@.tmp

$(PYBPF_SKEL): $(O)/lib/record/python/pybpf.bpf.o
	$(BPFTOOL) gen skeleton $< name pybpf_bpf >$@.tmp
	@mv $@.tmp $@

# every build of pybpf.c includes it (the sanitized and fuzzing ones name theirs)
$(O)/lib/record/python/pybpf.o: $(PYBPF_SKEL)
