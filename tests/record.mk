# record.mk - workloads of the record tests (tests/t1*-record-*.sh)
REC_WORKLOADS := $(O)/tests/workloads/rec-hot $(O)/tests/workloads/rec-threads \
		 $(O)/tests/workloads/rec-fork $(O)/tests/workloads/rec-exec.sh \
		 $(O)/tests/workloads/rec-vdso

$(filter-out %.sh,$(REC_WORKLOADS)): $(O)/tests/workloads/rec-%: tests/workloads/rec-%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -fno-omit-frame-pointer -no-pie -o $@ $< -lpthread

$(O)/tests/workloads/rec-exec.sh: tests/workloads/rec-exec.sh
	@mkdir -p $(dir $@)
	cp $< $@ && chmod +x $@

TEST_PROGS += $(REC_WORKLOADS)
