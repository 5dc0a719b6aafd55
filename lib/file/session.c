/* session.c - give the records of a recording their meaning (see session.h).
 *
 * Two passes over the file: pass 1 builds the event table from ATTR records and
 * delivers the side-band; pass 2 delivers samples, lost and switch records.  In a file
 * written split (side-band and sample chunks apart), pass 1 steps over the sample chunks
 * and pass 2 over the side-band ones, so every chunk is inflated once.  Every perf
 * record is bounds-checked; one that fails is counted in bad_records and skipped.
 */
#include "session.h"
#include "memevent.h"
#include "memrec.h"
#include "perfdata.h"
#include "pyrec.h"
#include "recfile-priv.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct id_ent {
	uint64_t id;
	struct evsel *ev;
};

static struct evsel **kept_evsels;
static size_t nr_kept, alloc_kept;

struct session {
	const char *path;
	const struct session_ops *ops;
	void *ctx;
	struct session_info *info;
	struct evsel **evsels;
	size_t nr_evsels, alloc_evsels;
	struct id_ent *ids;
	size_t nr_ids, alloc_ids;
	int pass;		/* 1, 2; 0: live (record) */
	int failed;		/* a malformed ATTR record: fatal */
	struct session_info live_info;
	/* DLP_REC_STACK records seen so far (pass 2), by id - 1 */
	struct ustack {
		uint64_t *ips;
		uint8_t *scanned;
		uint32_t nr;
		int complete;
		int past_copy;		/* DLP_STACK_PAST_COPY */
		uint32_t pychain;	/* DLP_STACK_PY: its Python stack, 0: none */
		const uint64_t *stored;	/* the stored stack's addresses (a sample's
					   dlp_sample.ustack_id) */
	} *stacks;
	size_t nr_stacks, alloc_stacks;
	/* a DLP_USAMPLE_LEAF_IP sample's stack: its IP, then the stored one */
#define USTACK_MAX 65536
	uint64_t *leaf_ips;	/* USTACK_MAX + 1 */
	uint8_t *leaf_bits;	/* USTACK_MAX / 8 + 1 */
};

/* Fields of a sample_id_all trailer (and of the start of a sample). */
struct sample_id {
	uint32_t pid, tid, cpu;
	uint64_t time, id;
	int have_tid, have_cpu;
};

static int cmp_id(const void *a, const void *b)
{
	const struct id_ent *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static struct evsel *find_id(struct session *s, uint64_t id)
{
	size_t lo = 0, hi = s->nr_ids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ids[mid].id == id)
			return s->ids[mid].ev;
		if (s->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * The evsel of a perf record: the only one, or by its id.  dlprof (and perf with several
 * events) puts an IDENTIFIER first in samples and last in the sample_id_all trailer;
 * perf.data files may instead hold a plain ID, whose place follows from the sample_type
 * all the events share (samples: after IP, TID, TIME and ADDR; trailer: before
 * STREAM_ID, CPU and IDENTIFIER).
 */
static struct evsel *record_evsel(struct session *s, const unsigned char *rec, size_t len,
				  int trailer)
{
	struct evsel *ev0, *ev;
	uint64_t st;
	size_t pos;

	if (!s->nr_evsels)
		return NULL;
	ev0 = s->evsels[0];
	st = ev0->attr.sample_type;
	if (!(st & (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID)) || (trailer && !ev0->attr.sample_id_all))
		return s->nr_evsels == 1 ? ev0 : NULL;
	if (st & PERF_SAMPLE_IDENTIFIER) {
		pos = trailer ? 8 : sizeof(struct perf_event_header);
	} else if (trailer) {
		pos = 8 * (1 + !!(st & PERF_SAMPLE_STREAM_ID) + !!(st & PERF_SAMPLE_CPU));
	} else {
		pos = sizeof(struct perf_event_header) +
		      8 * (!!(st & PERF_SAMPLE_IP) + !!(st & PERF_SAMPLE_TID) +
			   !!(st & PERF_SAMPLE_TIME) + !!(st & PERF_SAMPLE_ADDR));
	}
	if (len < sizeof(struct perf_event_header) + 8 || len < pos + (trailer ? 0 : 8) ||
	    (trailer && len < sizeof(struct perf_event_header) + pos))
		return NULL;
	ev = find_id(s, load_u64(trailer ? rec + len - pos : rec + pos));
	if (!ev && s->nr_evsels == 1 && !ev0->nr_ids)
		return ev0;	/* no ids recorded: the only event */
	return ev;
}

/*
 * Parse the sample_id_all trailer of a side-band record whose fixed part is `fixed`
 * bytes (header included).  Returns the trailer size, or -1 when it does not fit.
 */
static long trailer_of(const struct perf_event_attr *attr, const unsigned char *rec,
		       size_t len, size_t fixed, struct sample_id *sid)
{
	uint64_t st;
	const unsigned char *p;
	size_t n = 0;

	memset(sid, 0, sizeof(*sid));
	if (len < fixed)
		return -1;
	if (!attr || !attr->sample_id_all)
		return 0;
	st = attr->sample_type;
	n += !!(st & PERF_SAMPLE_TID) + !!(st & PERF_SAMPLE_TIME) + !!(st & PERF_SAMPLE_ID) +
	     !!(st & PERF_SAMPLE_STREAM_ID) + !!(st & PERF_SAMPLE_CPU) +
	     !!(st & PERF_SAMPLE_IDENTIFIER);
	if (len - fixed < n * 8)
		return -1;
	p = rec + len - n * 8;
	if (st & PERF_SAMPLE_TID) {
		sid->pid = load_u32(p);
		sid->tid = load_u32(p + 4);
		sid->have_tid = 1;
		p += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		sid->time = load_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_ID) {
		sid->id = load_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_STREAM_ID)
		p += 8;
	if (st & PERF_SAMPLE_CPU) {
		sid->cpu = load_u32(p);
		sid->have_cpu = 1;
		p += 8;
	}
	if (st & PERF_SAMPLE_IDENTIFIER)
		sid->id = load_u64(p);
	return n * 8;
}

static long parse_trailer(const struct evsel *ev, const unsigned char *rec, size_t len,
			  size_t fixed, struct sample_id *sid)
{
	return trailer_of(ev ? &ev->attr : NULL, rec, len, fixed, sid);
}

uint64_t session_trailer_time(const struct perf_event_attr *attr, const void *rec, size_t len)
{
	struct sample_id sid;

	return trailer_of(attr, rec, len, sizeof(struct perf_event_header), &sid) > 0 ?
	       sid.time : 0;
}

static size_t skip_read_format(uint64_t rf, const unsigned char *p, const unsigned char *end)
{
	size_t per = 1 + !!(rf & PERF_FORMAT_ID) + !!(rf & PERF_FORMAT_LOST);
	size_t times = !!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) + !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING);
	size_t avail = (end - p) / 8;
	uint64_t nr;

	if (!(rf & PERF_FORMAT_GROUP))
		return per + times <= avail ? (per + times) * 8 : 0;
	if (avail < 1 + times)
		return 0;
	nr = load_u64(p);
	if (nr > (avail - 1 - times) / per)
		return 0;
	return (1 + times + nr * per) * 8;
}

int session_parse_sample(const struct evsel *ev, const void *rec, size_t len,
			 struct dlp_sample *out)
{
	return session_parse_sample_regs(ev, rec, len, out, 0);
}

int session_sample_reg(const struct dlp_sample *s, int regno, uint64_t *v)
{
	uint64_t mask = s->user_regs_mask;

	if (!s->user_regs || !s->user_abi || !(mask & (1ull << regno)))
		return -1;
	/* registers come in bit order */
	*v = s->user_regs[__builtin_popcountll(mask & ((1ull << regno) - 1))];
	return 0;
}

int session_mem_alloc(const struct dlp_sample *s, struct session_mem_alloc *a)
{
	uint64_t cx;

	if (session_sample_reg(s, MEM_REG_DI, &a->addr) ||
	    session_sample_reg(s, MEM_REG_SI, &a->size) ||
	    session_sample_reg(s, MEM_REG_DX, &a->weight) ||
	    session_sample_reg(s, MEM_REG_CX, &cx))
		return -1;
	a->kind = cx & MEM_KIND_MASK;
	a->seq = cx >> MEM_KIND_BITS;
	/* (MEM_KIND_STATS: a process's totals) */
	return a->kind >= MEM_KIND_MALLOC && a->kind <= MEM_KIND_MMAP ? 0 : -1;
}

int session_parse_sample_regs(const struct evsel *ev, const void *rec, size_t len,
			      struct dlp_sample *out, uint64_t regs_mask)
{
	const unsigned char *p = rec, *end = p + len;
	struct perf_event_header hdr;
	uint64_t st, v;

#define NEED(n) do { if ((size_t)(end - p) < (size_t)(n)) return -1; } while (0)
	memset(out, 0, sizeof(*out));
	if (!ev || len < sizeof(hdr) || ((uintptr_t)rec & 7))
		return -1;
	memcpy(&hdr, rec, sizeof(hdr));
	if (hdr.type != PERF_RECORD_SAMPLE || hdr.size != len)
		return -1;
	out->evsel = ev;
	out->cpumode = hdr.misc & PERF_RECORD_MISC_CPUMODE_MASK;
	st = ev->attr.sample_type;
	p += sizeof(hdr);
	if (st & PERF_SAMPLE_IDENTIFIER) {
		NEED(8);
		out->id = load_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_IP) {
		NEED(8);
		out->ip = load_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_TID) {
		NEED(8);
		out->pid = load_u32(p);
		out->tid = load_u32(p + 4);
		p += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		NEED(8);
		out->time = load_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_ADDR) {
		NEED(8);
		p += 8;
	}
	if (st & PERF_SAMPLE_ID) {
		NEED(8);
		out->id = load_u64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_STREAM_ID) {
		NEED(8);
		p += 8;
	}
	if (st & PERF_SAMPLE_CPU) {
		NEED(8);
		out->cpu = load_u32(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_PERIOD) {
		NEED(8);
		out->period = load_u64(p);
		p += 8;
	} else if (!ev->attr.freq) {
		out->period = ev->attr.sample_period;	/* (each sample stands for as many) */
	}
	if (st & PERF_SAMPLE_READ) {
		size_t n = skip_read_format(ev->attr.read_format, p, end);
		uint64_t rf = ev->attr.read_format;

		if (!n)
			return -1;
		if ((rf & (PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_LOST |
			   PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING)) ==
		    (PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
		     PERF_FORMAT_TOTAL_TIME_RUNNING)) {
			/* nr, enabled, running, the values (record --metrics' layout) */
			out->nr_read = (uint32_t)load_u64(p);
			out->read_enabled = load_u64(p + 8);
			out->read_running = load_u64(p + 16);
			out->read = (const uint64_t *)(p + 24);
		}
		p += n;
	}
	if (st & PERF_SAMPLE_CALLCHAIN) {
		NEED(8);
		v = load_u64(p);
		p += 8;
		if (v > (size_t)(end - p) / 8)
			return -1;
		out->nr_callchain = v;
		out->callchain = (const uint64_t *)p;
		p += v * 8;
	}
	if (st & PERF_SAMPLE_RAW) {
		NEED(4);
		v = load_u32(p);
		p += 4;
		NEED(v);
		p += v;
		if ((uintptr_t)p & 7)	/* the kernel pads size + data to 8 */
			return -1;
	}
	if (st & PERF_SAMPLE_BRANCH_STACK) {
		NEED(8);
		v = load_u64(p);
		p += 8;
		if (ev->attr.branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX) {
			NEED(8);
			p += 8;
		}
		if (v > (size_t)(end - p) / sizeof(struct perf_branch_entry))
			return -1;
		p += v * sizeof(struct perf_branch_entry);
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		NEED(8);
		out->user_abi = load_u64(p);
		p += 8;
		if (out->user_abi) {
			out->user_regs_mask = regs_mask ? regs_mask : ev->attr.sample_regs_user;
			v = __builtin_popcountll(out->user_regs_mask);
			NEED(v * 8);
			out->user_regs = (const uint64_t *)p;
			p += v * 8;
		}
	}
	if (st & PERF_SAMPLE_STACK_USER) {
		NEED(8);
		v = load_u64(p);
		p += 8;
		if (v) {
			uint64_t dyn;

			NEED(v);
			out->stack = p;
			p += v;
			NEED(8);
			dyn = load_u64(p);
			p += 8;
			out->stack_size = dyn < v ? dyn : v;
			if (!out->stack_size)
				out->stack = NULL;
		}
	}
	/* What follows (weight, data_src, regs_intr, ...) is not used. */
	return 0;
#undef NEED
}

static void bad_record(struct session *s)
{
	s->info->bad_records++;
}

static int add_attr(struct session *s, const unsigned char *data, size_t len)
{
	struct dlp_attr_rec ar;
	struct evsel *ev;
	size_t i;

	if (len < sizeof(ar))
		goto bad;
	memcpy(&ar, data, sizeof(ar));
	if (ar.attr_size < PERF_ATTR_SIZE_VER0 || ar.attr_size > 4096 || ar.nr_ids > (1u << 20) ||
	    len != sizeof(ar) + ar.attr_size + (size_t)ar.nr_ids * 8)
		goto bad;
	ev = xcalloc(1, sizeof(*ev));
	memcpy(&ev->attr, data + sizeof(ar),
	       ar.attr_size < sizeof(ev->attr) ? ar.attr_size : sizeof(ev->attr));
	memcpy(ev->name, ar.name, sizeof(ev->name));
	ev->name[sizeof(ev->name) - 1] = '\0';
	ev->nr_ids = ar.nr_ids;
	ev->ids = xcalloc(ar.nr_ids ? ar.nr_ids : 1, sizeof(uint64_t));
	memcpy(ev->ids, data + sizeof(ar) + ar.attr_size, (size_t)ar.nr_ids * 8);
	ALLOC_GROW(s->evsels, s->nr_evsels + 1, s->alloc_evsels);
	s->evsels[s->nr_evsels++] = ev;
	ALLOC_GROW(s->ids, s->nr_ids + ev->nr_ids, s->alloc_ids);
	for (i = 0; i < ev->nr_ids; i++) {
		s->ids[s->nr_ids].id = ev->ids[i];
		s->ids[s->nr_ids].ev = ev;
		s->nr_ids++;
	}
	if (s->nr_ids > 1)
		qsort(s->ids, s->nr_ids, sizeof(*s->ids), cmp_id);
	if (s->ops->attr)
		return s->ops->attr(s->ctx, ev);
	return 0;
bad:
	s->failed = 1;
	return error("'%s': corrupt recording: malformed event description", s->path);
}

/* META: parsed once (recmeta.h), handed on as a whole */
static int do_meta(struct session *s, const unsigned char *data, size_t len)
{
	struct recmeta m;
	int ret;

	if (!s->ops->meta)
		return 0;
	recmeta_parse(&m, data, len);
	ret = s->ops->meta(s->ctx, &m);
	recmeta_release(&m);
	return ret;
}

/* A NUL-terminated string in [p, end), or NULL. */
static const char *get_str(const unsigned char *p, const unsigned char *end)
{
	if (p >= end || !memchr(p, '\0', end - p))
		return NULL;
	return (const char *)p;
}

static int do_mmap(struct session *s, const unsigned char *rec, size_t len,
		   const struct perf_event_header *hdr)
{
	struct evsel *ev = record_evsel(s, rec, len, 1);
	size_t fixed = hdr->type == PERF_RECORD_MMAP2 ? 8 + 64 : 8 + 32;
	struct sample_id sid;
	struct dlp_mmap m;
	const unsigned char *p = rec + 8;
	long tsize;

	tsize = parse_trailer(ev, rec, len, fixed, &sid);
	if (tsize < 0)
		return bad_record(s), 0;
	memset(&m, 0, sizeof(m));
	m.pid = load_u32(p);
	m.tid = load_u32(p + 4);
	m.start = load_u64(p + 8);
	m.len = load_u64(p + 16);
	m.pgoff = load_u64(p + 24);
	m.misc = hdr->misc;
	m.time = sid.time;
	if (hdr->type == PERF_RECORD_MMAP2) {
		if (hdr->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			m.build_id_size = p[32];
			if (m.build_id_size > sizeof(m.build_id))
				return bad_record(s), 0;
			memcpy(m.build_id, p + 36, m.build_id_size);
		}
		m.prot = load_u32(p + 56);
		m.flags = load_u32(p + 60);
	} else if (!(hdr->misc & PERF_RECORD_MISC_MMAP_DATA)) {
		m.prot = PROT_READ | PROT_EXEC;	/* MMAP v1 is only emitted for exec maps unless MMAP_DATA */
	} else {
		m.prot = PROT_READ;
	}
	m.filename = get_str(rec + fixed, rec + len - tsize);
	if (!m.filename)
		return bad_record(s), 0;
	if (s->ops->mmap)
		return s->ops->mmap(s->ctx, &m);
	return 0;
}

static int do_sideband(struct session *s, const unsigned char *rec, size_t len,
		       const struct perf_event_header *hdr)
{
	struct evsel *ev;
	struct sample_id sid;
	long tsize;

	switch (hdr->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return do_mmap(s, rec, len, hdr);
	case PERF_RECORD_COMM: {
		const char *comm;

		ev = record_evsel(s, rec, len, 1);
		tsize = parse_trailer(ev, rec, len, 16, &sid);
		if (tsize < 0 || !(comm = get_str(rec + 16, rec + len - tsize)))
			return bad_record(s), 0;
		if (s->ops->comm)
			return s->ops->comm(s->ctx, load_u32(rec + 8), load_u32(rec + 12), comm,
					    !!(hdr->misc & PERF_RECORD_MISC_COMM_EXEC), sid.time);
		return 0;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;

		ev = record_evsel(s, rec, len, 1);
		tsize = parse_trailer(ev, rec, len, 32, &sid);
		if (tsize < 0)
			return bad_record(s), 0;
		pid = load_u32(rec + 8);
		ppid = load_u32(rec + 12);
		tid = load_u32(rec + 16);
		ptid = load_u32(rec + 20);
		time = load_u64(rec + 24);
		if (hdr->type == PERF_RECORD_FORK)
			return s->ops->fork ? s->ops->fork(s->ctx, pid, ppid, tid, ptid, time) : 0;
		return s->ops->exit ? s->ops->exit(s->ctx, pid, ppid, tid, ptid, time) : 0;
	}
	}
	return 0;	/* unknown or uninteresting: skipped */
}

/* A sample parsed, given its stack unwound while recording when us is not NULL (its first
 * address the sample's IP with leaf_is_ip). */
static int finish_sample(struct session *s, struct dlp_sample *smp, const struct ustack *us,
			 int leaf_is_ip, uint32_t pychain, uint32_t usflags)
{
	struct session_info *info = s->info;

	if (us) {
		if (leaf_is_ip)
			us->ips[0] = smp->ip;
		smp->nr_ustack = us->nr;
		smp->ustack = us->ips;
		smp->ustack_scanned = us->scanned;
		smp->ustack_complete = us->complete;
		smp->ustack_past_copy = us->past_copy;
		smp->ustack_id = us->stored;
		smp->ustack_leaf_ip = leaf_is_ip;
	}
	if (pychain) {
		/* its Python stack, and who read it: the thread, the kernel, or record */
		smp->pychain = pychain;
		smp->pyflags = usflags & DLP_USAMPLE_PY_OWN ? DLP_PYSTACK_OWN :
			       usflags & DLP_USAMPLE_PY_LATE ? 0 : DLP_PYSTACK_KERNEL;
		if (usflags & DLP_USAMPLE_PY_GIL)
			smp->pyflags |= DLP_PYSTACK_GIL;
		smp->pystate = usflags & DLP_USAMPLE_PY_UNCHECKED ? DLP_PY_UNCHECKED :
			       DLP_PY_TRUSTED;
	}
	/* the switch-out of a thread that is exiting, taken by a per-cpu event: as its
	 * switch record (do_sideband), no tid to count it to, and it runs no more */
	if (smp->tid == (uint32_t)-1 && smp->evsel &&
	    smp->evsel->attr.type == PERF_TYPE_SOFTWARE &&
	    smp->evsel->attr.config == PERF_COUNT_SW_CONTEXT_SWITCHES)
		return 0;
	if (smp->time && (!info->first_time || smp->time < info->first_time))
		info->first_time = smp->time;
	if (smp->time > info->last_time)
		info->last_time = smp->time;
	return s->ops->sample ? s->ops->sample(s->ctx, smp) : 0;
}

/* Parse a sample record and hand it to ops->sample (finish_sample) */
static int deliver_sample(struct session *s, const unsigned char *rec, size_t len,
			  const struct ustack *us, int leaf_is_ip, uint64_t regs_mask,
			  uint32_t pychain, uint32_t usflags)
{
	struct dlp_sample smp;
	struct evsel *ev = record_evsel(s, rec, len, 0);

	if (session_parse_sample_regs(ev, rec, len, &smp, regs_mask) < 0)
		return bad_record(s), 0;
	return finish_sample(s, &smp, us, leaf_is_ip, pychain, usflags);
}

static int do_pass2(struct session *s, const unsigned char *rec, size_t len,
		    const struct perf_event_header *hdr)
{
	struct evsel *ev;
	struct sample_id sid;
	long tsize;

	switch (hdr->type) {
	case PERF_RECORD_SAMPLE:
		return deliver_sample(s, rec, len, NULL, 0, 0, 0, 0);
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES: {
		size_t fixed = hdr->type == PERF_RECORD_LOST ? 24 : 16;
		uint64_t id, lost;

		ev = record_evsel(s, rec, len, 1);
		tsize = parse_trailer(ev, rec, len, fixed, &sid);
		if (tsize < 0)
			return bad_record(s), 0;
		if (hdr->type == PERF_RECORD_LOST) {
			id = load_u64(rec + 8);
			lost = load_u64(rec + 16);
		} else {
			id = sid.id;
			lost = load_u64(rec + 8);
		}
		return s->ops->lost ? s->ops->lost(s->ctx, id, lost) : 0;
	}
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: {
		size_t fixed = hdr->type == PERF_RECORD_SWITCH ? 8 : 16;
		int out = !!(hdr->misc & PERF_RECORD_MISC_SWITCH_OUT);
		int preempt = !!(hdr->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);

		ev = record_evsel(s, rec, len, 1);
		tsize = parse_trailer(ev, rec, len, fixed, &sid);
		if (tsize < 0 || !sid.have_tid)
			return bad_record(s), 0;
		/* a per-cpu event's switch-out of a thread that is exiting: the kernel no
		 * longer has its tid (-1, and pid -1 for a process's last thread); it has
		 * nothing to be counted to, and it runs no more */
		if (sid.tid == (uint32_t)-1)
			return 0;
		if (s->ops->context_switch)
			return s->ops->context_switch(s->ctx, sid.pid, sid.tid, sid.cpu, sid.time,
						      out, out && preempt);
		return 0;
	}
	}
	return 0;
}

static int do_perf(struct session *s, const void *data, size_t len)
{
	const unsigned char *rec = data;
	struct perf_event_header hdr;
	int sb;

	if (len < sizeof(hdr))
		return bad_record(s), 0;
	memcpy(&hdr, rec, sizeof(hdr));
	if (hdr.size != len)
		return bad_record(s), 0;
	sb = dlp_perf_type_is_sideband(hdr.type);
	if (s->pass == 0)
		return sb ? do_sideband(s, rec, len, &hdr) : do_pass2(s, rec, len, &hdr);
	if (s->pass == 1)
		return sb ? do_sideband(s, rec, len, &hdr) : 0;
	return sb ? 0 : do_pass2(s, rec, len, &hdr);
}

/* DLP_REC_STACK: ids come in order, each once. */
static int add_stack(struct session *s, const unsigned char *data, size_t len)
{
	struct dlp_stack_rec h;
	struct ustack *us;
	size_t body;

	if (len < sizeof(h))
		return bad_record(s), 0;
	memcpy(&h, data, sizeof(h));
	body = (size_t)h.nr * 8 + (h.nr + 7u) / 8;
	if (!h.nr || h.id != s->nr_stacks + 1 ||
	    len != sizeof(h) + body + (h.flags & DLP_STACK_PY ? 4 : 0))
		return bad_record(s), 0;
	ALLOC_GROW(s->stacks, s->nr_stacks + 1, s->alloc_stacks);
	us = &s->stacks[s->nr_stacks++];
	us->nr = h.nr;
	us->complete = !!(h.flags & DLP_STACK_COMPLETE);
	us->past_copy = !!(h.flags & DLP_STACK_PAST_COPY);
	us->pychain = 0;
	if (h.flags & DLP_STACK_PY)
		memcpy(&us->pychain, data + sizeof(h) + body, 4);
	us->ips = xmalloc(body);
	us->stored = us->ips;
	memcpy(us->ips, data + sizeof(h), body);
	us->scanned = (uint8_t *)(us->ips + h.nr);
	return 0;
}

/*
 * The stack of a sample that names stack id with usample flags: the stored one, or with
 * DLP_USAMPLE_LEAF_IP a copy with a slot for the sample's IP first (in *tmp).  NULL: a
 * bad id.
 */
static const struct ustack *sample_stack(struct session *s, uint32_t id, uint32_t flags,
					 struct ustack *tmp)
{
	const struct ustack *st;

	if (!id || id > s->nr_stacks)
		return NULL;
	st = &s->stacks[id - 1];
	if (!(flags & DLP_USAMPLE_LEAF_IP))
		return st;
	/* the sample's IP, then the stored callers */
	if (st->nr + 1 > USTACK_MAX)
		return NULL;
	if (!s->leaf_ips) {
		s->leaf_ips = xmalloc((USTACK_MAX + 1) * sizeof(uint64_t));
		s->leaf_bits = xmalloc(USTACK_MAX / 8 + 1);
	}
	*tmp = (struct ustack){ s->leaf_ips, s->leaf_bits, st->nr + 1, st->complete, st->past_copy,
				st->pychain, st->ips };
	s->leaf_ips[0] = 0;	/* the sample's IP, once parsed */
	memcpy(s->leaf_ips + 1, st->ips, (size_t)st->nr * 8);
	memset(s->leaf_bits, 0, (st->nr + 8u) / 8);
	for (uint32_t i = 0; i < st->nr; i++)
		if (st->scanned[i / 8] & (1u << (i % 8)))
			s->leaf_bits[(i + 1) / 8] |= (uint8_t)(1u << ((i + 1) % 8));
	return tmp;
}

/* DLP_REC_USAMPLE: a sample whose user stack was unwound while recording. */
static int do_usample(struct session *s, const unsigned char *data, size_t len)
{
	struct dlp_usample_rec h;
	struct perf_event_header hdr;
	const struct ustack *us;
	struct ustack tmp;
	size_t off = sizeof(h);

	if (len < sizeof(h) + sizeof(hdr))
		return bad_record(s), 0;
	memcpy(&h, data, sizeof(h));
	memcpy(&hdr, data + off, sizeof(hdr));
	if (hdr.type != PERF_RECORD_SAMPLE || hdr.size != len - off ||
	    !(us = sample_stack(s, h.stack_id, h.flags, &tmp)))
		return bad_record(s), 0;
	return deliver_sample(s, data + off, len - off, us, !!(h.flags & DLP_USAMPLE_LEAF_IP),
			      h.flags & DLP_USAMPLE_ARGS_REGS ? 0x3c : 0, us->pychain, h.flags);
}

/* The event of a compact batch (memrec.h), or NULL (the decoder released, the record
 * counted bad) */
static struct evsel *compact_event(struct session *s, struct memrec_dec *d)
{
	struct evsel *ev = find_id(s, d->id);

	if (!ev) {
		memrec_dec_release(d);
		bad_record(s);
	}
	return ev;
}

/* One entry of a compact batch d, smp filled in but for its stack: handed on as its
 * sample.  *stop when the batch goes no further (the decoder released). */
static int compact_sample(struct session *s, struct memrec_dec *d, struct dlp_sample *smp,
			  uint32_t stack_id, uint32_t flags, int *stop)
{
	const struct ustack *us;
	struct ustack tmp;
	int ret;

	smp->id = d->id;
	if (!(us = sample_stack(s, stack_id, flags, &tmp))) {
		*stop = 1;
		memrec_dec_release(d);
		return bad_record(s), 0;
	}
	ret = finish_sample(s, smp, us, !!(flags & DLP_USAMPLE_LEAF_IP), us->pychain, flags);
	if (ret) {
		*stop = 1;
		memrec_dec_release(d);
	}
	return ret;
}

/*
 * DLP_REC_USAMPLES: a batch of samples whose stacks were unwound while recording, each
 * handed on as the sample it came as, without registers and stack copy (what a USAMPLE
 * holds of it).
 */
static int do_usamples(struct session *s, const unsigned char *data, size_t len)
{
	struct memrec_dec d;
	struct memrec_sample e;
	struct evsel *ev;
	int ret = 0, stop = 0;

	if (memrec_sample_begin(&d, data, len) < 0)
		return bad_record(s), 0;
	if (!(ev = compact_event(s, &d)))
		return 0;
	while (!stop && memrec_sample_next(&d, &e) > 0) {
		struct dlp_sample smp;

		memset(&smp, 0, sizeof(smp));
		smp.evsel = ev;
		smp.ip = e.ip;
		smp.time = e.time;
		smp.period = e.period;
		smp.pid = e.pid;
		smp.tid = e.tid;
		smp.cpu = e.cpu;
		smp.cpumode = e.cpumode;
		smp.nr_callchain = e.nr_callchain;
		smp.callchain = e.callchain;
		ret = compact_sample(s, &d, &smp, e.stack_id, e.flags, &stop);
	}
	return ret;
}

/*
 * DLP_REC_MEMALLOC: sampled allocations (record --memory), each handed on as the
 * mem-alloc sample it came as, with its arguments in CX DX SI DI (memevent.h).
 */
static int do_memalloc(struct session *s, const unsigned char *data, size_t len)
{
	struct memrec_dec d;
	struct memrec_alloc a;
	struct evsel *ev;
	int ret = 0, stop = 0;

	if (memrec_alloc_begin(&d, data, len) < 0)
		return bad_record(s), 0;
	if (!(ev = compact_event(s, &d)))
		return 0;
	while (!stop && memrec_alloc_next(&d, &a) > 0) {
		struct dlp_sample smp;
		uint64_t regs[4];

		memset(&smp, 0, sizeof(smp));
		smp.evsel = ev;
		smp.ip = a.ip;
		smp.time = a.time;
		smp.period = 1;
		smp.pid = a.pid;
		smp.tid = a.tid;
		smp.cpu = a.cpu;
		smp.cpumode = PERF_RECORD_MISC_USER;
		smp.user_abi = PERF_SAMPLE_REGS_ABI_64;
		smp.user_regs_mask = 0x3c;
		regs[0] = a.kind | a.seq << MEM_KIND_BITS;	/* CX */
		regs[1] = a.weight;				/* DX */
		regs[2] = a.size;				/* SI */
		regs[3] = a.addr;				/* DI */
		smp.user_regs = regs;
		ret = compact_sample(s, &d, &smp, a.stack_id, a.flags, &stop);
	}
	return ret;
}

static void free_stacks(struct session *s)
{
	for (size_t i = 0; i < s->nr_stacks; i++)
		free(s->stacks[i].ips);
	free(s->stacks);
	free(s->leaf_ips);
	free(s->leaf_bits);
	s->leaf_ips = NULL;
	s->leaf_bits = NULL;
	s->stacks = NULL;
	s->nr_stacks = s->alloc_stacks = 0;
}

/* One record of pass s->pass (1: side-band, 2: samples; 0, live: both). */
static int record_cb(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct session *s = ctx;

	if (type == DLP_REC_PERF)
		return do_perf(s, data, len);
	if (type == DLP_REC_STACK)
		return s->pass != 1 ? add_stack(s, data, len) : 0;
	if (type == DLP_REC_USAMPLE)
		return s->pass != 1 ? do_usample(s, data, len) : 0;
	if (type == DLP_REC_MEMALLOC)
		return s->pass != 1 ? do_memalloc(s, data, len) : 0;
	if (type == DLP_REC_USAMPLES)
		return s->pass != 1 ? do_usamples(s, data, len) : 0;
	if (s->pass == 2)
		return 0;
	switch (type) {
	case DLP_REC_ATTR:
		return add_attr(s, data, len);
	case DLP_REC_META:
		return do_meta(s, data, len);
	case DLP_REC_STATS:
		if (len >= sizeof(struct dlp_stats)) {
			memcpy(&s->info->stats, data, sizeof(struct dlp_stats));
			s->info->have_stats = 1;
		}
		break;
	}
	if (type != DLP_REC_ATTR && type != DLP_REC_META && s->ops->other)
		return s->ops->other(s->ctx, type, data, len);
	return 0;
}

int session_process(const char *path, const struct session_ops *ops, void *ctx,
		    struct session_info *info)
{
	static const struct session_ops no_ops;
	struct session_info dummy;
	struct session s;
	struct recfile_info fi2;
	size_t i;
	int ret;

	if (!info)
		info = &dummy;
	memset(info, 0, sizeof(*info));
	memset(&s, 0, sizeof(s));
	s.path = path;
	s.ops = ops ? ops : &no_ops;
	s.ctx = ctx;
	s.info = info;

	if (perfdata_is(path)) {
		/* perf record's own file: the same two passes over its records */
		s.pass = 1;
		ret = perfdata_read(path, record_cb, &s, &info->file, 0);
		if (!ret) {
			s.pass = 2;
			ret = perfdata_read(path, record_cb, &s, &fi2, 1);
		}
		if (!ret && info->file.truncated)
			warning("'%s' is truncated (perf did not finish it, or it was cut); "
				"showing what it holds", path);
	} else {
		/* in a split file (format 2) each pass inflates only its own chunks */
		s.pass = 1;
		ret = recfile_read_flags(path, record_cb, &s, &info->file, RECFILE_SKIP_SAMPLES);
		if (!ret) {
			s.pass = 2;
			ret = recfile_read_flags(path, record_cb, &s, &fi2,
						 RECFILE_QUIET | RECFILE_SKIP_SIDEBAND);
		}
	}
	if (ret)
		ret = -1;
	else if (info->file.truncated)
		ret = 1;
	if (ret >= 0 && info->bad_records)
		warning("'%s': skipped %llu malformed perf records", path,
			(unsigned long long)info->bad_records);

	/* Callers keep evsel pointers (a sample's evsel, the attr callback's argument) past
	 * this call, and there is no session object to own them: they live as long as the
	 * process, in a list that stays reachable. */
	for (i = 0; i < s.nr_evsels; i++) {
		ALLOC_GROW(kept_evsels, nr_kept + 1, alloc_kept);
		kept_evsels[nr_kept++] = s.evsels[i];
	}
	free(s.evsels);
	free(s.ids);
	free_stacks(&s);
	return ret;
}

struct session *session_live_new(const struct session_ops *ops, void *ctx)
{
	struct session *s = xcalloc(1, sizeof(*s));

	s->path = "(live)";
	s->ops = ops;
	s->ctx = ctx;
	s->info = &s->live_info;
	s->pass = 0;
	return s;
}

int session_live_attr(struct session *s, const void *data, size_t len)
{
	return add_attr(s, data, len);
}

int session_live_perf(struct session *s, const void *rec, size_t len)
{
	return do_perf(s, rec, len);
}

int session_live_record(struct session *s, uint32_t type, const void *data, size_t len)
{
	return record_cb(s, type, data, len);	/* pass 0: every kind as it comes */
}

const struct evsel *session_live_evsel(struct session *s, const void *rec, size_t len)
{
	return record_evsel(s, rec, len, 0);
}

void session_live_free(struct session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nr_evsels; i++) {
		free(s->evsels[i]->ids);
		free(s->evsels[i]);
	}
	free(s->evsels);
	free(s->ids);
	free_stacks(s);
	free(s);
}
