# dl.mk - workloads of the DL-view tests (families, operators, ITT)
$(O)/tests/workloads/dl-itt-user: tests/workloads/dl-itt-user.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -o $@ $< -ldl -lpthread

$(O)/tests/workloads/dl-omp-imbalance: tests/workloads/dl-omp-imbalance.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -fopenmp -o $@ $<

$(O)/tests/workloads/dl-gemm: tests/workloads/dl-gemm.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -o $@ $< -lopenblas

TEST_PROGS += $(O)/tests/workloads/dl-itt-user $(O)/tests/workloads/dl-omp-imbalance \
	      $(O)/tests/workloads/dl-gemm

$(O)/tests/workloads/dl-conv-impl: tests/workloads/dl-conv-impl.c tests/workloads/dnnl-test.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -o $@ $< -ldnnl

TEST_PROGS += $(O)/tests/workloads/dl-conv-impl

$(O)/tests/workloads/sweep-omp: tests/workloads/sweep-omp.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -fopenmp -o $@ $<

TEST_PROGS += $(O)/tests/workloads/sweep-omp

$(O)/tests/workloads/dl-prims: tests/workloads/dl-prims.c tests/workloads/dnnl-test.h lib/inject/dnnl-abi.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Ilib/inject -o $@ $< -ldnnl

TEST_PROGS += $(O)/tests/workloads/dl-prims

$(O)/tests/workloads/dl-blas: tests/workloads/dl-blas.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -o $@ $< -ldl

TEST_PROGS += $(O)/tests/workloads/dl-blas
