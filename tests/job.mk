# job.mk - workloads of the tests that read a distributed job's recordings together
# (tests/t9010-job-merge.sh)
JOB_WORKLOADS := $(O)/tests/workloads/job-mark

$(JOB_WORKLOADS): $(O)/tests/workloads/job-%: tests/workloads/job-%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -fno-omit-frame-pointer -o $@ $<

TEST_PROGS += $(JOB_WORKLOADS)
