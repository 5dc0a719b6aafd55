/* pykernel.c - Python stacks read in the kernel at the sample, joined with their samples (recorder.h, pybpf.h). */
#include "../recorder.h"

#include <stdlib.h>
#include <string.h>

/* ---- Python stacks read in the kernel (pybpf.h) ---- */


/* Process pid's entry (listed 0 when new) */
struct pb_proc *pykernel_proc_of(struct recorder *r, uint32_t pid)
{
	for (size_t i = 0; i < r->py.nr_pb_procs; i++)
		if (r->py.pb_procs[i].pid == pid)
			return &r->py.pb_procs[i];
	ALLOC_GROW(r->py.pb_procs, r->py.nr_pb_procs + 1, r->py.alloc_pb_procs);
	r->py.pb_procs[r->py.nr_pb_procs] = (struct pb_proc){ .pid = pid };
	return &r->py.pb_procs[r->py.nr_pb_procs++];
}

/* A process started: an exec (ppid 0) of a Python interpreter, or a fork of a Python
 * process (a DataLoader or multiprocessing worker); or a thread of one (ppid == pid).
 * Its threads are listed for the program at the first sample read from outside; until
 * then record drains its rings within PY_POLL_MS (without, a launcher's Python child
 * waited up to POLL_MS: under `sh -c`, 86 of 2,108 samples read from outside, 45 ms
 * late; py_procs.py's threads 10-46 of 2,900) */
void pykernel_new_process(struct recorder *r, uint32_t pid, uint32_t ppid, uint32_t tid)
{
	int python = 0;

	if (ppid) {
		/* a fork of a Python process, or a thread of one: of one listed, or of a
		 * fork not listed yet (read through the program's forked entry, it is
		 * listed at its first sample read from outside: a DataLoader worker's
		 * queue feeder thread, whose first samples waited for a late drain and
		 * were read when its code had moved on) */
		for (size_t i = 0; i < r->py.nr_pb_procs && !python; i++)
			python = r->py.pb_procs[i].pid == ppid &&
				 (r->py.pb_procs[i].listed || r->py.pb_procs[i].forked);
		if (python && ppid != pid)
			pykernel_proc_of(r, pid)->forked = 1;
	} else {
		char exe[64], path[4096];
		ssize_t n;

		snprintf(exe, sizeof(exe), "/proc/%u/exe", pid);
		n = readlink(exe, path, sizeof(path) - 1);
		if (n > 0) {
			path[n] = 0;
			python = pyreader_python_path(path);
		}
	}
	if (!python)
		return;
	/* a thread that never runs Python (OpenMP, gloo) ends its quick reads soon */
	ALLOC_GROW(r->py.await, r->py.nr_await + 1, r->py.alloc_await);
	r->py.await[r->py.nr_await++] = (struct pb_await){ pid, ppid == pid ? tid : 0,
		now_ns() + (ppid == pid ? PB_THREAD_FAST_NS : PB_FAST_NS) };
}

/* Whether a process or thread started is still waiting to be listed (pykernel_new_process) */
int pykernel_awaiting(struct recorder *r)
{
	uint64_t now = r->py.nr_await ? now_ns() : 0;
	size_t w = 0;

	for (size_t i = 0; i < r->py.nr_await; i++)
		if (r->py.await[i].until > now)
			r->py.await[w++] = r->py.await[i];
	r->py.nr_await = w;
	return w > 0;
}

/* tid of pid is listed: what waited for it, or for its process's first thread, ends */
static void pb_listed(struct recorder *r, uint32_t pid, uint32_t tid)
{
	size_t w = 0;

	for (size_t i = 0; i < r->py.nr_await; i++) {
		const struct pb_await *a = &r->py.await[i];

		if (a->tid ? a->tid == tid : a->pid == pid)
			continue;
		r->py.await[w++] = *a;
	}
	r->py.nr_await = w;
}

/* The doorbell of the command pid's tree: a dummy event per cpu that records its forks
 * and execs alone, and wakes record at each record written (its ring's watermark one
 * byte).  The samples' rings wake record when a quarter full, and it reads them every
 * POLL_MS: a Python process started under a launcher had its first 100 ms of samples
 * read from outside.  0, or -1 (none: the exec is noticed in the samples' rings). */
int pykernel_bells_open(struct recorder *r, pid_t pid)
{
	struct perf_event_attr a;

	event_dummy_attr(&a);
	a.comm = 1;
	a.comm_exec = 1;
	a.task = 1;
	a.inherit = 1;
	a.disabled = 1;
	a.enable_on_exec = 1;
	a.watermark = 1;
	a.wakeup_watermark = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	r->py.bells = xcalloc((size_t)r->nr_cpus, sizeof(*r->py.bells));
	r->py.bell_fds = xcalloc((size_t)r->nr_cpus, sizeof(int));
	for (int c = 0; c < r->nr_cpus; c++)
		r->py.bell_fds[c] = -1;
	for (int c = 0; c < r->nr_cpus; c++) {
		r->py.bell_fds[c] = event_open(&a, pid, r->cpus[c], -1, PERF_FLAG_FD_CLOEXEC);
		if (r->py.bell_fds[c] < 0 || ring_mmap(&r->py.bells[c], r->py.bell_fds[c], 1) < 0) {
			pykernel_bells_close(r);
			return -1;
		}
	}
	return 0;
}

static int bell_record(void *ctx, const struct perf_event_header *rec)
{
	struct recorder *r = ctx;
	const unsigned char *p = (const void *)rec;
	uint32_t pid, ppid;

	if (rec->size < sizeof(*rec) + 8)
		return 0;
	memcpy(&pid, p + sizeof(*rec), 4);
	memcpy(&ppid, p + sizeof(*rec) + 4, 4);
	if (rec->type == PERF_RECORD_COMM && (rec->misc & PERF_RECORD_MISC_COMM_EXEC)) {
		pykernel_new_process(r, pid, 0, pid);
	} else if (rec->type == PERF_RECORD_FORK && rec->size >= sizeof(*rec) + 12) {
		uint32_t tid;

		memcpy(&tid, p + sizeof(*rec) + 8, 4);
		pykernel_new_process(r, pid, ppid, tid);	/* a process, or a thread (pid == ppid) */
	}
	return 0;
}

/* The forks and execs since the last ring (the samples' rings have them too, in order:
 * these are only looked at) */
void pykernel_bells_ring(struct recorder *r)
{
	for (int c = 0; r->py.bells && c < r->nr_cpus; c++)
		ring_drain(&r->py.bells[c], bell_record, r);
}

void pykernel_bells_close(struct recorder *r)
{
	for (int c = 0; r->py.bell_fds && c < r->nr_cpus; c++) {
		if (r->py.bells[c].ctl)
			ring_release(&r->py.bells[c]);
		if (r->py.bell_fds[c] >= 0)
			close(r->py.bell_fds[c]);
	}
	free(r->py.bells);
	free(r->py.bell_fds);
	r->py.bells = NULL;
	r->py.bell_fds = NULL;
}

/* Put pid's Python threads in the program's map (at most every PB_LIST_NS). */
void pykernel_list(struct recorder *r, uint32_t pid)
{
	struct pyreader_thread th[256];
	struct pywalk_info wi;
	struct pb_proc *pp = pykernel_proc_of(r, pid);
	uint64_t now = now_ns(), gil;
	size_t n;
	int regil;

	if (pp->listed && now - pp->listed < PB_LIST_NS) {
		/* a new thread of it waits: it may have made its state since (a DataLoader
		 * worker's second Python thread, started within 10 ms of the first, had
		 * its first 12 switch-outs without their lines) */
		int fresh = 0;

		for (size_t i = 0; i < r->py.nr_await && !fresh; i++)
			fresh = r->py.await[i].pid == pid && r->py.await[i].tid &&
				r->py.await[i].until > now;
		if (!fresh || now - pp->listed < PB_LIST_NEW_NS)
			return;
	}
	pp->listed = now;
	n = pyreader_threads(r->py.reader, pid, th, ARRAY_SIZE(th), &wi);
	pp->none = !n;
	/* its GIL, found once it has threads: the entries listed before get it too */
	gil = n ? pyreader_gil(r->py.reader, pid) : 0;
	regil = gil && gil != pp->gil;
	if (gil)
		pp->gil = gil;
	for (size_t i = 0; i < n; i++) {
		struct pybpf_thread t = {
			.tstate = th[i].tstate,
			.ts_frame = wi.ts_frame,
			.cf_current = wi.cf_current,
			.ts_tid = wi.ts_tid,
			.layout = wi.frame,
			.ns_tid = th[i].ns_tid != th[i].tid ? th[i].ns_tid : 0,
			.gil = pp->gil,
			.ob_base = wi.ob_base,
		};

		if ((uintptr_t)u64map_get(&r->py.pb_tids, th[i].tid) > 1) {
			if (regil)
				(void)pybpf_set_thread(r->py.pb, th[i].tid, &t);
			continue;
		}
		/* read from the first sample after its entry is in the map (a sample taken
		 * between `now` and the update had no chain: one a run, counted as lost) */
		if (!pybpf_set_thread(r->py.pb, th[i].tid, &t)) {
			u64map_put(&r->py.pb_tids, th[i].tid, (void *)(uintptr_t)now_ns());
			/* listed: the quick reads that waited for it end (the main loop, seeing
			 * the new Python process only now, must not start them again: they
			 * went on for 2 s, 1,000 wake-ups of record, each a context switch of
			 * the workload on a busy machine); where the program does not read
			 * code objects itself, a new process's first imports are read quickly
			 * (PB_START_NS), then while new code keeps coming */
			r->py.fast_until = 0;
			pb_listed(r, pid, th[i].tid);
			r->py.seen = pyreader_active(r->py.reader);
			if (pybpf_codes_off(r->py.pb) && r->py.pb_hot_until < now_ns() + PB_START_NS)
				r->py.pb_hot_until = now_ns() + PB_START_NS;
		}
	}
}

/* A Python stack of pid was just read from outside: it has a thread now.  Where its last
 * listing found none (made as it exec'd, before its interpreter had a thread), listed
 * again without waiting PB_LIST_NS: the samples of those 10 ms were read from outside,
 * late (t8002's training run: 4-9 of them, where it asks for 10 at most; now 2). */
void pykernel_list_read(struct recorder *r, uint32_t pid)
{
	struct pb_proc *pp = pykernel_proc_of(r, pid);

	if (pp->none && now_ns() - pp->listed >= PB_LIST_NEW_NS)
		pp->listed = 0;
	pykernel_list(r, pid);
}

/* The program no longer reads tid (it ended, exec'd, or its state is not the one listed:
 * listed again when it shows up) */
void pykernel_forget(struct recorder *r, uint32_t tid)
{
	if ((uintptr_t)u64map_get(&r->py.pb_tids, tid) <= 1)
		return;
	pybpf_drop_thread(r->py.pb, tid);
	u64map_put(&r->py.pb_tids, tid, PB_GONE);
}

static void pb_got_chain(void *ctx, uint32_t tid, uint64_t time, const uint64_t *chain,
			 uint32_t n, unsigned flags)
{
	struct recorder *r = ctx;
	struct pb_chain *c;

	ALLOC_GROW(r->py.pb_chains, r->py.nr_pb_chains + 1, r->py.alloc_pb_chains);
	c = &r->py.pb_chains[r->py.nr_pb_chains++];
	c->tid = tid;
	c->n = n;
	c->time = time;
	c->failed = !!(flags & PYBPF_CHAIN_FAILED);
	c->gil = !!(flags & PYBPF_CHAIN_GIL);
	c->exact = !!(flags & PYBPF_CHAIN_EXACT);
	c->stale = !!(flags & PYBPF_CHAIN_STALE);
	if (c->exact)
		r->py.pb_exact = 1;
	c->turns = 0;
	c->chain = xmalloc(n ? n * 16 : 1);
	memcpy(c->chain, chain, n * 16);
}

static int pb_chain_cmp(const void *a, const void *b)
{
	const struct pb_chain *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

static void pb_got_code(void *ctx, const struct pybpf_code *code)
{
	struct recorder *r = ctx;

	pyreader_kernel_code(r->py.reader, code);
}

/* The chains the program wrote since the last look, sorted by thread, then time (the
 * code objects it read, to the Python reader as they come: before their chains). */
void pykernel_fetch(struct recorder *r)
{
	if (pybpf_drain(r->py.pb, pb_got_chain, pb_got_code, r))
		qsort(r->py.pb_chains, r->py.nr_pb_chains, sizeof(r->py.pb_chains[0]), pb_chain_cmp);
}

/* The chain of thread tid's sample at time; NULL when none is in.  Where the program
 * knows its sample's time (Linux 6.3 on: pb_exact), the chain of that thread and time;
 * else the same thread, the closest time (the program runs as the sample is taken,
 * before it is written). */
static struct pb_chain *pb_find(struct recorder *r, uint32_t tid, uint64_t time)
{
	struct pb_chain *best = NULL;
	uint64_t best_d = PB_JOIN_NS + 1;
	size_t lo = 0, hi = r->py.nr_pb_chains;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct pb_chain *c = &r->py.pb_chains[mid];

		if (c->tid < tid || (c->tid == tid && c->time < time))
			lo = mid + 1;
		else
			hi = mid;
	}
	/* where the program knows its sample's time: its own (a neighbour's is another
	 * sample's: a chain timed by the program itself came up to 150 us after its
	 * sample, where a thread's page faults were sampled every 50 us) */
	for (size_t k = lo; r->py.pb_exact && k < r->py.nr_pb_chains; k++) {
		struct pb_chain *c = &r->py.pb_chains[k];

		if (c->tid != tid || c->time != time)
			break;
		if (c->chain && c->exact)
			return c;
	}
	/* else the neighbours either side timed by the program, past the ones already
	 * taken */
	for (size_t k = lo; k-- > 0 && r->py.pb_chains[k].tid == tid;) {
		struct pb_chain *c = &r->py.pb_chains[k];

		if (!c->chain || c->exact)
			continue;
		if (time - c->time < best_d) {
			best = c;
			best_d = time - c->time;
		}
		break;
	}
	/* a chain after the sample: the program ran late (a guest's CPU held up in the
	 * sample's interrupt): up to half the sampling period after it */
	for (size_t k = lo; k < r->py.nr_pb_chains && r->py.pb_chains[k].tid == tid; k++) {
		struct pb_chain *c = &r->py.pb_chains[k];

		if (!c->chain || c->exact)
			continue;
		if (c->time - time < best_d || (!best && c->time - time <= r->py.pb_join_after))
			best = c;
		break;
	}
	return best;
}

/* The chain of tid's sample at time, the ring drained first where it is not in yet */
static struct pb_chain *pb_find_fetch(struct recorder *r, uint32_t tid, uint64_t time)
{
	struct pb_chain *c = pb_find(r, tid, time);

	if (!c) {
		pykernel_fetch(r);
		c = pb_find(r, tid, time);
	}
	return c;
}

/* Sample (pid, tid, time) gets chain c: its Python stack, with chain_id named by the
 * sample's own record (pyreader_sample_chain), else a record of its own. */
static int pb_take(struct recorder *r, struct pb_chain *c, uint32_t pid, uint32_t tid,
		   uint64_t time, uint32_t *chain_id)
{
	int gil = c->gil && !c->failed;

	if (c->failed) {
		pyreader_sample_chain(r->py.reader, pid, tid, time, NULL, 0, 0, chain_id);
		if (c->stale) {
			/* its state was freed or remade (a native thread's, between its
			 * calls into Python): listed again */
			pykernel_forget(r, tid);
			pykernel_list(r, pid);
		}
	} else {
		pyreader_chain_read_at(r->py.reader, c->time);
		pyreader_sample_chain(r->py.reader, pid, tid, time, c->chain, c->n,
				      DLP_PYSTACK_KERNEL | (gil ? DLP_PYSTACK_GIL : 0), chain_id);
	}
	free(c->chain);
	c->chain = NULL;
	return gil;
}

/* A sample of a thread the program reads (taken since it does): its chain is in (it is
 * written before the sample), or comes in a later drain: the sample waits then.  Returns
 * 0 when the thread is not read in the kernel. */
int pykernel_sample(struct recorder *r, uint32_t pid, uint32_t tid, uint64_t time,
		     uint32_t *chain_id)
{
	uintptr_t since = (uintptr_t)u64map_get(&r->py.pb_tids, tid);
	struct pb_chain *c;

	if (since == (uintptr_t)PB_GONE)
		return 0;	/* listed, then dropped */
	if (!since || time < since) {
		/* taken while not listed: a process a listed thread forked is read by the
		 * program from the fork on (pybpf.bpf.c, forked), its first thread's chains
		 * in the ring before its samples, also those on another cpu drained after
		 * a thread of its own had it listed (before, they were read from outside,
		 * late: a DataLoader worker's first samples without Python frames); and a
		 * thread listed again, its samples of before, still in the rings (read from
		 * outside, late, they gave t1018's fault_small page faults to fault_large) */
		c = tid == pid || since ? pb_find_fetch(r, tid, time) : NULL;
		if (!c || c->failed)
			return 0;
		return pb_take(r, c, pid, tid, time, chain_id) ? 2 : 1;
	}
	c = pb_find_fetch(r, tid, time);
	if (c)
		return pb_take(r, c, pid, tid, time, chain_id) ? 2 : 1;
	ALLOC_GROW(r->py.pb_wait, r->py.nr_pb_wait + 1, r->py.alloc_pb_wait);
	r->py.pb_wait[r->py.nr_pb_wait++] = (struct pb_wait){ pid, tid, time, 0 };
	return 1;
}

/* After a drain: the samples whose chain had not come joined to it; what waited too
 * long goes (a sample without a chain keeps its native stack, counted: its chain was
 * dropped, or came too late to be told from a neighbour's where the program times it;
 * its thread stays listed, as a stale state has a chain that says so), and so do chains
 * whose sample never came. */
void pykernel_match(struct recorder *r, int last)
{
	struct pyreader_stats st;
	size_t w = 0;

	pykernel_fetch(r);
	/* a GIL its process's listings did not find (looked for at most every 200 ms,
	 * pyreader_gil: one not held yet as a listing came, or a free-threaded build's
	 * turned on as it ran) is looked for again, and once found its threads listed
	 * get it; else, with every thread listed in its first 200 ms, no listing came
	 * again and no sample said who held it (t8008, PYTHON_GIL=1: 1 run in 40) */
	for (size_t i = 0; r->py.reader && i < r->py.nr_pb_procs; i++) {
		struct pb_proc *pp = &r->py.pb_procs[i];

		if (pp->listed && !pp->none && !pp->gil && pyreader_gil(r->py.reader, pp->pid)) {
			pp->listed = 0;
			pykernel_list(r, pp->pid);
		}
	}
	for (size_t i = 0; i < r->py.nr_pb_wait; i++) {
		struct pb_wait *sw = &r->py.pb_wait[i];
		struct pb_chain *c = pb_find(r, sw->tid, sw->time);

		if (c) {
			pb_take(r, c, sw->pid, sw->tid, sw->time, NULL);
		} else if (last || ++sw->turns >= PB_TURNS) {
			r->py.pb_unmatched++;
		} else {
			r->py.pb_wait[w++] = *sw;
		}
	}
	r->py.nr_pb_wait = w;
	w = 0;
	for (size_t k = 0; k < r->py.nr_pb_chains; k++) {
		struct pb_chain *c = &r->py.pb_chains[k];

		if (c->chain && (last || ++c->turns >= PB_TURNS)) {
			free(c->chain);	/* its sample never came (not ours to read) */
			c->chain = NULL;
		}
		if (c->chain)
			r->py.pb_chains[w++] = *c;
	}
	r->py.nr_pb_chains = w;
	/* code objects read from outside for the first time since the last drain (as its
	 * chains were joined, or here; where the program reads them at the sample, those it
	 * could not): an import, code being made; a module's code goes when its import is
	 * over, so it must be read soon: the drains come soon while new ones keep coming
	 * (PB_HOT_NS after the last: one quick drain that finds none says little) */
	if (!r->py.reader)
		return;		/* the program walks native stacks only (--no-python) */
	pyreader_get_stats(r->py.reader, &st);
	if (st.codes_outside != r->py.pb_codes) {
		r->py.pb_codes = st.codes_outside;
		r->py.pb_hot_until = now_ns() + PB_HOT_NS;
	}
}

/* Run the program on the sampling events among fds[base...] and on the switch-outs
 * (there it reads where a Python thread blocked, at the switch, in its own context), not
 * on the allocation uprobes.  Where the kernel will not run it on the sampling events,
 * Python stacks are read from outside, and late: said once; where not on the
 * switch-outs, they keep their native stacks. */
void pykernel_attach(struct recorder *r, int base)
{
	r->py.pb_join_after = PB_JOIN_MAX_NS;
	r->py.pb_switch = 0;
	for (int e = 0; r->py.pb && e < r->nr_ev; e++) {
		const struct perf_event_attr *a = &r->ev[e].attr;
		uint64_t period = 0;
		int c, ret = 0;

		if (r->ev[e].mem)
			continue;
		if (r->ev[e].off_cpu) {
			/* a switch-out walked whole is remade as the kernel walked it, where
			 * its layout is the walk's (not where it reads counters: --metrics) */
			uint32_t as = a->sample_type == KW_TYPE ? (uint32_t)e : 0;

			for (c = 0; c < r->nr_cpus && ret >= 0; c++)
				ret = pybpf_attach_switch(r->py.pb, r->fds[base + e * r->nr_cpus + c],
							  as);
			r->py.pb_switch = ret >= 0;
			continue;
		}
		/* a thread's samples of this event come a period apart at least (a clock's
		 * period is in ns; other events' nominal rate, with -F) */
		if (a->freq && a->sample_freq)
			period = 1000000000ull / a->sample_freq;
		else if (a->type == PERF_TYPE_SOFTWARE && (a->config == PERF_COUNT_SW_CPU_CLOCK ||
							   a->config == PERF_COUNT_SW_TASK_CLOCK))
			period = a->sample_period;
		if (!period)
			r->py.pb_join_after = PB_JOIN_NS;	/* unknown: only the close ones */
		else if (period / 2 < r->py.pb_join_after)
			r->py.pb_join_after = period / 2 > PB_JOIN_NS ? period / 2 : PB_JOIN_NS;
		for (c = 0; c < r->nr_cpus; c++) {
			ret = pybpf_attach(r->py.pb, r->fds[base + e * r->nr_cpus + c], e == 0);
			if (ret < 0) {
				warning("cannot run the Python stack reader on '%s' (%s): Python "
					"stacks are read from outside, late", r->ev[e].name,
					strerror(-ret));
				if (r->ru)
					recunw_set_native(r->ru, NULL, 1);
				pybpf_free(r->py.pb);
				r->py.pb = NULL;
				r->py.pb_switch = 0;
				r->py.pb_why = "the kernel would not run it on the events";
				break;
			}
		}
	}
}

