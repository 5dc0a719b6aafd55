# isa.mk - workloads of the check-isa tests: one kernel per vector ISA, built with the
# flags that make the compiler emit it, linked into one executable; a raw CPUID reader.
ISA_WL := $(O)/tests/workloads/isa

$(ISA_WL)/zmm.o: tests/workloads/isa-zmm.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O3 -g -mavx512f -mprefer-vector-width=512 -fno-unroll-loops -c -o $@ $<
$(ISA_WL)/avx2.o: tests/workloads/isa-avx2.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O3 -g -mavx2 -mfma -c -o $@ $<
$(ISA_WL)/sse2.o: tests/workloads/isa-sse2.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O3 -g -msse2 -mno-avx -c -o $@ $<
$(ISA_WL)/scalar.o: tests/workloads/isa-scalar.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -mgeneral-regs-only -fno-tree-vectorize -c -o $@ $<
$(ISA_WL)/main.o: tests/workloads/isa-main.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -c -o $@ $<

$(O)/tests/workloads/isa-kernels: $(ISA_WL)/main.o $(ISA_WL)/zmm.o $(ISA_WL)/avx2.o \
				  $(ISA_WL)/sse2.o $(ISA_WL)/scalar.o
	$(CC) -Wl,--build-id -o $@ $^

$(O)/tests/workloads/isa-cpuid: tests/workloads/isa-cpuid.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -Wall -Wextra -o $@ $<

TEST_PROGS += $(O)/tests/workloads/isa-kernels $(O)/tests/workloads/isa-cpuid
