/* recdump.c - print the records of a dlprof recording, one line each, in file order.
 *
 *   build/tests/recdump FILE
 *
 * Lines (fields separated by single spaces, stable for tests):
 *   ATTR name=NAME type=T config=C sample_type=0xX ids=N
 *   META KEY=VALUE                     (one line per pair)
 *   PERF SAMPLE pid=P tid=T time=NS ip=0xX cpu=C period=N callchain=N stack=BYTES
 *   PERF SAMPLE bad                    (failed session_parse_sample)
 *   STACK id=N nr=N complete=0|1 scanned=N [pychain=ID]   (a stack unwound while recording,
 *                                      with the Python stack its samples ran)
 *   PYCODE id=N pid=P first=LINE name=QUALNAME file=PATH lines=UNIT:LINE,...|linetable=OFF+LEN
 *   PYSTACK pid=P tid=T time=NS state=S delay=NS nr=N same=N frames=CODE:UNIT[E],...
 *   PYSTACK pid=P tid=T time=NS state=S delay=NS chain=ID   (a raw sample's chain)
 *   PYCHAIN id=N base=ID nr=N same=N frames=CODE:UNIT[E],...
 *   PERF SAMPLE ... stack=BYTES ustack=ID frames=N   (a DLP_REC_USAMPLE: frames counts the
 *                                      sample's IP when the stored stack starts at its caller)
 *   ... pychain=ID by=kernel|thread|outside   (a USAMPLE whose stack has a Python stack,
 *                                      read by)
 *   ... args=DI,SI,DX,CX               (a memory event's arguments: memevent.h)
 *   ... ev=NAME                        (last, when the recording has more than one event)
 *   PERF MMAP|MMAP2 pid=P tid=T time=NS start=0xX len=0xX pgoff=0xX buildid=HEX|- file=PATH
 *   PERF COMM pid=P tid=T time=NS exec=0|1 comm=NAME
 *   PERF FORK|EXIT pid=P ppid=P tid=T ptid=T time=NS
 *   PERF LOST id=N lost=N
 *   PERF SWITCH|SWITCH_CPU_WIDE misc=0xX size=N [pid=P tid=T time=NS]
 *   PERF TYPE<n> size=N                (other perf records)
 *   MEMFREE pid=P tid=T time=NS addr=0xX|seq=N   (one line per free of a DLP_REC_MEMFREE
 *                                      or DLP_REC_MEMFREES record)
 *   MEMALLOC pid=P tid=T time=NS ip=0xX cpu=C ustack=ID frames=N [pychain=ID by=...]
 *            addr=0xX|seq=N size=N weight=N kind=K   (one line per entry of a
 *                                      DLP_REC_MEMALLOC record)
 *   MEMALLOC|MEMFREE bad               (an entry that does not decode)
 *   PERF SAMPLE pid=P tid=T time=NS ip=0xX cpu=C period=N callchain=N stack=0 ustack=ID
 *            frames=N [pychain=ID by=...] [ev=NAME]   (one line per entry of a
 *                                      DLP_REC_USAMPLES record, as its USAMPLE would be)
 *   USAMPLES bad                       (a batch that does not decode)
 *   STATS samples=N lost=N exit=N flags=0xX
 *   BUILDID|KSYMS|JITMAP|JITDUMP|ITT|FILE|TYPE<n> len=N
 *   KSYM START SIZE NAME [MODULE]        (--ksyms: each line of a KSYMS record after it)
 * where the file ends in bytes of no complete chunk: ignored=N (before the last line)
 * and last: records=N chunks=N truncated=0|1
 * Exit status: 0 complete, 1 truncated (all complete chunks shown), 2 error.
 *
 *   build/tests/recdump [--ksyms] FILE
 *   build/tests/recdump --sizes FILE
 *
 * What each kind of record costs in the file: one line per kind (PERF records by perf
 * type, SAMPLE and USAMPLE by event), its count, payload bytes and the bytes its records
 * deflate to on their own (level 1, one stream per kind, as the writer's chunks are):
 *   KIND count=N raw=BYTES deflated=BYTES
 */
#include "memevent.h"
#include "memrec.h"
#include "pyrec.h"
#include "recfile.h"
#include "session.h"
#include "util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

struct dump {
	struct evsel *ev[64];
	size_t nr;
	unsigned *stack_nr;	/* frames of each STACK id - 1 */
	uint32_t *stack_py;	/* its Python stack (0: none) */
	unsigned nr_stacks;
	unsigned ustack, ustack_frames;	/* the USAMPLE being printed */
	int ustack_args;		/* ... holds the four argument registers only */
	uint32_t py_chain;		/* ... names its Python stack (0: none) */
	int quiet;			/* --sizes: the events parsed, not printed */
	int ksyms;			/* --ksyms: the kernel symbols' lines too */
	const char *py_by;		/* ... read by the thread, the kernel or record */
};

static uint64_t u64_at(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t u32_at(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static struct evsel *find_ev(struct dump *d, const unsigned char *rec, size_t len, int trailer)
{
	size_t i, j;
	uint64_t id;

	if (d->nr == 1)
		return d->ev[0];
	if (!d->nr || len < 16 || !(d->ev[0]->attr.sample_type & PERF_SAMPLE_IDENTIFIER))
		return NULL;
	id = u64_at(trailer ? rec + len - 8 : rec + 8);
	for (i = 0; i < d->nr; i++)
		for (j = 0; j < d->ev[i]->nr_ids; j++)
			if (d->ev[i]->ids[j] == id)
				return d->ev[i];
	return NULL;
}

/* Time from the sample_id_all trailer, 0 when there is none. */
static uint64_t trailer_time(struct dump *d, const unsigned char *rec, size_t len)
{
	struct evsel *ev = find_ev(d, rec, len, 1);
	uint64_t st;
	size_t n;

	if (!ev || !ev->attr.sample_id_all || !(ev->attr.sample_type & PERF_SAMPLE_TIME))
		return 0;
	st = ev->attr.sample_type;
	n = !!(st & PERF_SAMPLE_TIME) + !!(st & PERF_SAMPLE_ID) + !!(st & PERF_SAMPLE_STREAM_ID) +
	    !!(st & PERF_SAMPLE_CPU) + !!(st & PERF_SAMPLE_IDENTIFIER);
	if (len < 8 + n * 8)
		return 0;
	return u64_at(rec + len - n * 8);
}

static const char *cstr(const unsigned char *p, const unsigned char *end)
{
	if (p >= end || !memchr(p, '\0', end - p))
		return "?";
	return (const char *)p;
}

static void dump_perf(struct dump *d, const unsigned char *rec, size_t len)
{
	struct perf_event_header h;
	struct dlp_sample s;

	if (len < sizeof(h)) {
		printf("PERF short len=%zu\n", len);
		return;
	}
	memcpy(&h, rec, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_SAMPLE:
		if (session_parse_sample_regs(find_ev(d, rec, len, 0), rec, len, &s,
					      d->ustack_args ? 0x3c : 0) < 0) {
			printf("PERF SAMPLE bad\n");
			break;
		}
		printf("PERF SAMPLE pid=%u tid=%u time=%" PRIu64 " ip=0x%" PRIx64 " cpu=%u period=%" PRIu64
		       " callchain=%" PRIu64 " stack=%" PRIu64, s.pid, s.tid, s.time, s.ip, s.cpu,
		       s.period, s.nr_callchain, s.stack_size);
		if (d->ustack)
			printf(" ustack=%u frames=%u", d->ustack, d->ustack_frames);
		if (d->py_chain)
			printf(" pychain=%u by=%s", d->py_chain, d->py_by);
		if (d->ustack_args && s.user_abi && s.user_regs_mask == 0x3c)
			printf(" args=0x%" PRIx64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, s.user_regs[3],
			       s.user_regs[2], s.user_regs[1], s.user_regs[0]);
		if (d->nr > 1 && s.evsel)
			printf(" ev=%s", s.evsel->name);
		putchar('\n');
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		size_t fixed = h.type == PERF_RECORD_MMAP2 ? 72 : 40;
		char bid[41] = "-";

		if (len < fixed) {
			printf("PERF %s short\n", h.type == PERF_RECORD_MMAP2 ? "MMAP2" : "MMAP");
			break;
		}
		if (h.type == PERF_RECORD_MMAP2 && (h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) &&
		    rec[40] && rec[40] <= 20) {
			int i;

			for (i = 0; i < rec[40]; i++)
				sprintf(bid + 2 * i, "%02x", rec[44 + i]);
		}
		printf("PERF %s pid=%u tid=%u time=%" PRIu64 " start=0x%" PRIx64 " len=0x%" PRIx64
		       " pgoff=0x%" PRIx64 " buildid=%s file=%s\n",
		       h.type == PERF_RECORD_MMAP2 ? "MMAP2" : "MMAP", u32_at(rec + 8), u32_at(rec + 12),
		       trailer_time(d, rec, len), u64_at(rec + 16), u64_at(rec + 24), u64_at(rec + 32),
		       bid, cstr(rec + fixed, rec + len));
		break;
	}
	case PERF_RECORD_COMM:
		if (len < 16)
			break;
		printf("PERF COMM pid=%u tid=%u time=%" PRIu64 " exec=%d comm=%s\n", u32_at(rec + 8),
		       u32_at(rec + 12), trailer_time(d, rec, len),
		       !!(h.misc & PERF_RECORD_MISC_COMM_EXEC), cstr(rec + 16, rec + len));
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (len < 32)
			break;
		printf("PERF %s pid=%u ppid=%u tid=%u ptid=%u time=%" PRIu64 "\n",
		       h.type == PERF_RECORD_FORK ? "FORK" : "EXIT", u32_at(rec + 8), u32_at(rec + 12),
		       u32_at(rec + 16), u32_at(rec + 20), u64_at(rec + 24));
		break;
	case PERF_RECORD_LOST:
		if (len < 24)
			break;
		printf("PERF LOST id=%" PRIu64 " lost=%" PRIu64 "\n", u64_at(rec + 8), u64_at(rec + 16));
		break;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		printf("PERF %s misc=0x%x size=%u",
		       h.type == PERF_RECORD_SWITCH ? "SWITCH" : "SWITCH_CPU_WIDE", h.misc, h.size);
		{
			struct evsel *ev = find_ev(d, rec, len, 1);
			uint64_t time = trailer_time(d, rec, len);

			/* the trailer's pid and tid come just before its time */
			if (time && (ev->attr.sample_type & PERF_SAMPLE_TID)) {
				size_t n = !!(ev->attr.sample_type & PERF_SAMPLE_ID) +
					   !!(ev->attr.sample_type & PERF_SAMPLE_STREAM_ID) +
					   !!(ev->attr.sample_type & PERF_SAMPLE_CPU) +
					   !!(ev->attr.sample_type & PERF_SAMPLE_IDENTIFIER) + 2;

				printf(" pid=%u tid=%u time=%" PRIu64, u32_at(rec + len - n * 8),
				       u32_at(rec + len - n * 8 + 4), time);
			}
		}
		putchar('\n');
		break;
	default:
		printf("PERF TYPE%u size=%u\n", h.type, h.size);
	}
}

static void add_ev(struct dump *d, const unsigned char *data, size_t len)
{
	struct dlp_attr_rec ar;
	struct evsel *ev;

	if (len < sizeof(ar)) {
		printf("ATTR bad\n");
		return;
	}
	memcpy(&ar, data, sizeof(ar));
	if (ar.attr_size < PERF_ATTR_SIZE_VER0 || ar.attr_size > 4096 || ar.nr_ids > 65536 ||
	    len != sizeof(ar) + ar.attr_size + (size_t)ar.nr_ids * 8 || d->nr == ARRAY_SIZE(d->ev)) {
		printf("ATTR bad\n");
		return;
	}
	ev = xcalloc(1, sizeof(*ev));
	memcpy(&ev->attr, data + sizeof(ar),
	       ar.attr_size < sizeof(ev->attr) ? ar.attr_size : sizeof(ev->attr));
	memcpy(ev->name, ar.name, sizeof(ev->name));
	ev->name[sizeof(ev->name) - 1] = '\0';
	ev->nr_ids = ar.nr_ids;
	ev->ids = xcalloc(ar.nr_ids + 1, 8);
	memcpy(ev->ids, data + sizeof(ar) + ar.attr_size, (size_t)ar.nr_ids * 8);
	d->ev[d->nr++] = ev;
	if (!d->quiet)
		printf("ATTR name=%s type=%u config=%llu sample_type=0x%llx ids=%zu\n",
		       ev->name, ev->attr.type, (unsigned long long)ev->attr.config,
		       (unsigned long long)ev->attr.sample_type, ev->nr_ids);
}

/* n struct dlp_pyframe at p: "CODE:UNIT[E],...", then the line's end */
static void print_pyframes(const char *p, unsigned n)
{
	struct dlp_pyframe f;

	for (unsigned i = 0; i < n; i++) {
		memcpy(&f, p + i * sizeof(f), sizeof(f));
		printf("%s%u:%u%s", i ? "," : "", f.code, f.instr & ~DLP_PY_ENTRY,
		       (f.instr & DLP_PY_ENTRY) ? "E" : "");
	}
	printf("\n");
}

/* the record types' names (those printed by type alone, and --sizes) */
static const char *const rec_names[DLP_REC_MAX] = {
	[DLP_REC_ATTR] = "ATTR", [DLP_REC_META] = "META", [DLP_REC_BUILDID] = "BUILDID",
	[DLP_REC_KSYMS] = "KSYMS", [DLP_REC_JITMAP] = "JITMAP", [DLP_REC_JITDUMP] = "JITDUMP",
	[DLP_REC_ITT] = "ITT", [DLP_REC_STATS] = "STATS", [DLP_REC_FILE] = "FILE",
	[DLP_REC_PYCODE] = "PYCODE", [DLP_REC_PYSTACK] = "PYSTACK", [DLP_REC_STACK] = "STACK",
	[DLP_REC_USAMPLE] = "USAMPLE", [DLP_REC_PROC] = "PROC", [DLP_REC_MEMFREE] = "MEMFREE",
	[DLP_REC_MEMALLOC] = "MEMALLOC", [DLP_REC_MEMFREES] = "MEMFREES",
	[DLP_REC_USAMPLES] = "USAMPLES",
	[DLP_REC_PYCHAIN] = "PYCHAIN", [DLP_REC_SYMNAME] = "SYMNAME",
	/* printed, and sized, as the plain records they pack */
	[DLP_REC_PYCODE_PACKED] = "PYCODE", [DLP_REC_PYCHAIN_PACKED] = "PYCHAIN",
};

static int dump_cb(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct dump *d = ctx;
	const char *p = data, *end = p + len;

	switch (type) {
	case DLP_REC_PYCODE_PACKED:
	case DLP_REC_PYCHAIN_PACKED: {
		struct strbuf plain = STRBUF_INIT;
		uint32_t ptype;

		if (pyrec_unpack(type, data, len, &plain, &ptype))
			printf("%s bad\n", rec_names[type]);
		else
			dump_cb(ctx, ptype, plain.buf, plain.len);
		strbuf_release(&plain);
		return 0;
	}
	case DLP_REC_PERF:
		dump_perf(d, data, len);
		return 0;
	case DLP_REC_STACK: {
		struct dlp_stack_rec sr;
		unsigned scanned = 0;
		uint32_t chain;
		size_t body;

		if (len < sizeof(sr)) {
			printf("STACK short len=%zu\n", len);
			return 0;
		}
		memcpy(&sr, data, sizeof(sr));
		body = (size_t)sr.nr * 8 + (sr.nr + 7u) / 8;
		if (len != sizeof(sr) + body + (sr.flags & DLP_STACK_PY ? 4 : 0)) {
			printf("STACK bad len=%zu\n", len);
			return 0;
		}
		for (unsigned i = 0; i < sr.nr; i++)
			scanned += (((const uint8_t *)data)[sizeof(sr) + sr.nr * 8 + i / 8] >> (i % 8)) & 1;
		chain = sr.flags & DLP_STACK_PY ? u32_at((const unsigned char *)data + sizeof(sr) + body) : 0;
		printf("STACK id=%u nr=%u complete=%u scanned=%u", sr.id, sr.nr,
		       sr.flags & DLP_STACK_COMPLETE ? 1 : 0, scanned);
		if (chain)
			printf(" pychain=%u", chain);
		printf("\n");
		if (sr.id == d->nr_stacks + 1) {
			d->stack_nr = realloc(d->stack_nr, (d->nr_stacks + 1) * sizeof(*d->stack_nr));
			d->stack_py = realloc(d->stack_py, (d->nr_stacks + 1) * sizeof(*d->stack_py));
			d->stack_py[d->nr_stacks] = chain;
			d->stack_nr[d->nr_stacks++] = sr.nr;
		}
		return 0;
	}
	case DLP_REC_USAMPLE: {
		struct dlp_usample_rec us;
		size_t off;

		if (len < sizeof(us)) {
			printf("USAMPLE short len=%zu\n", len);
			return 0;
		}
		memcpy(&us, data, sizeof(us));
		d->ustack = us.stack_id;
		d->ustack_frames = us.stack_id && us.stack_id <= d->nr_stacks ?
			d->stack_nr[us.stack_id - 1] + !!(us.flags & DLP_USAMPLE_LEAF_IP) : 0;
		d->ustack_args = !!(us.flags & DLP_USAMPLE_ARGS_REGS);
		off = sizeof(us);
		/* its stack's Python stack */
		d->py_chain = us.stack_id && us.stack_id <= d->nr_stacks ?
			      d->stack_py[us.stack_id - 1] : 0;
		d->py_by = us.flags & DLP_USAMPLE_PY_OWN ? "thread" :
			   us.flags & DLP_USAMPLE_PY_LATE ? "outside" : "kernel";
		dump_perf(d, (const unsigned char *)p + off, len - off);
		d->ustack = 0;
		d->ustack_args = 0;
		d->py_chain = 0;
		return 0;
	}
	case DLP_REC_ATTR:
		add_ev(d, data, len);
		return 0;
	case DLP_REC_META:
		while (p < end) {
			const char *k = p, *v = memchr(k, '\0', end - k), *e;

			if (!v || ++v >= end || !(e = memchr(v, '\0', end - v)))
				break;
			printf("META %s=%s\n", k, v);
			p = e + 1;
		}
		return 0;
	case DLP_REC_MEMFREES: {
		struct memrec_dec md;
		struct memrec_free f;
		int got = memrec_free_begin(&md, data, len);

		while (!got && memrec_free_next(&md, &f) > 0) {
			if (d->quiet)
				continue;
			printf("MEMFREE pid=%u tid=%u time=%" PRIu64, f.pid, f.tid, f.time);
			if (f.key & MEM_KEY_SEQ)
				printf(" seq=%" PRIu64 "\n", (uint64_t)(f.key & ~MEM_KEY_SEQ));
			else
				printf(" addr=0x%" PRIx64 "\n", f.key);
		}
		if (got < 0 && !d->quiet)
			printf("MEMFREE bad\n");
		return 0;
	}
	case DLP_REC_USAMPLES: {
		struct memrec_dec md;
		struct memrec_sample e;
		int got = memrec_sample_begin(&md, data, len);
		const char *evname = NULL;

		for (size_t i = 0; !got && d->nr > 1 && i < d->nr; i++)
			for (size_t k = 0; k < d->ev[i]->nr_ids; k++)
				if (d->ev[i]->ids[k] == md.id)
					evname = d->ev[i]->name;
		while (!got && memrec_sample_next(&md, &e) > 0) {
			uint32_t id = e.stack_id;
			int ok = id && id <= d->nr_stacks;

			if (d->quiet)
				continue;
			printf("PERF SAMPLE pid=%u tid=%u time=%" PRIu64 " ip=0x%" PRIx64
			       " cpu=%u period=%" PRIu64 " callchain=%u stack=0 ustack=%u frames=%u",
			       e.pid, e.tid, e.time, e.ip, e.cpu, e.period, e.nr_callchain, id,
			       ok ? d->stack_nr[id - 1] + !!(e.flags & DLP_USAMPLE_LEAF_IP) : 0);
			if (ok && d->stack_py[id - 1])
				printf(" pychain=%u by=%s", d->stack_py[id - 1],
				       e.flags & DLP_USAMPLE_PY_OWN ? "thread" :
				       e.flags & DLP_USAMPLE_PY_LATE ? "outside" : "kernel");
			if (evname)
				printf(" ev=%s", evname);
			printf("\n");
		}
		if (got < 0 && !d->quiet)
			printf("USAMPLES bad\n");
		return 0;
	}
	case DLP_REC_MEMALLOC: {
		struct memrec_dec md;
		struct memrec_alloc a;
		int got = memrec_alloc_begin(&md, data, len);

		while (!got && memrec_alloc_next(&md, &a) > 0) {
			uint32_t id = a.stack_id;
			int ok = id && id <= d->nr_stacks;

			if (d->quiet)
				continue;
			printf("MEMALLOC pid=%u tid=%u time=%" PRIu64 " ip=0x%" PRIx64
			       " cpu=%u ustack=%u frames=%u", a.pid, a.tid, a.time, a.ip, a.cpu, id,
			       ok ? d->stack_nr[id - 1] + !!(a.flags & DLP_USAMPLE_LEAF_IP) : 0);
			if (ok && d->stack_py[id - 1])
				printf(" pychain=%u by=%s", d->stack_py[id - 1],
				       a.flags & DLP_USAMPLE_PY_OWN ? "thread" :
				       a.flags & DLP_USAMPLE_PY_LATE ? "outside" : "kernel");
			if (a.seq)
				printf(" seq=%" PRIu64, a.seq);
			else
				printf(" addr=0x%" PRIx64, a.addr);
			printf(" size=%" PRIu64 " weight=%" PRIu64 " kind=%" PRIu64 "\n", a.size,
			       a.weight, a.kind);
		}
		if (got < 0 && !d->quiet)
			printf("MEMALLOC bad\n");
		return 0;
	}
	case DLP_REC_MEMFREE:
		/* one line per free */
		for (size_t i = 0; i + sizeof(struct dlp_memfree) <= len;
		     i += sizeof(struct dlp_memfree)) {
			struct dlp_memfree f;

			memcpy(&f, (const char *)data + i, sizeof(f));
			printf("MEMFREE pid=%u tid=%u time=%" PRIu64 " addr=0x%" PRIx64 "\n", f.pid,
			       f.tid, f.time, f.addr);
		}
		return 0;
	case DLP_REC_PROC: {
		struct dlp_proc_rec h;

		if (len < sizeof(h)) {
			printf("PROC bad\n");
			return 0;
		}
		memcpy(&h, data, sizeof(h));
		printf("PROC pid=%d", (int)h.pid);
		for (p += sizeof(h); p < end;) {
			const char *k = p, *v = memchr(k, '\0', end - k), *e;

			if (!v || ++v >= end || !(e = memchr(v, '\0', end - v)))
				break;
			printf(" %s=%s", k, v);
			p = e + 1;
		}
		printf("\n");
		return 0;
	}
	case DLP_REC_PYCODE: {
		struct dlp_pycode_rec c;

		if (len < sizeof(c)) {
			printf("PYCODE bad\n");
			return 0;
		}
		memcpy(&c, data, sizeof(c));
		if ((uint64_t)c.qualname_len + c.file_len + c.linetable_len > len - sizeof(c)) {
			printf("PYCODE bad\n");
			return 0;
		}
		printf("PYCODE id=%u pid=%d first=%u name=%.*s file=%.*s", c.id, c.pid,
		       c.firstlineno, (int)c.qualname_len, p + sizeof(c), (int)c.file_len,
		       p + sizeof(c) + c.qualname_len);
		if (c.flags & DLP_PYCODE_LINES) {
			const char *l = p + sizeof(c) + c.qualname_len + c.file_len;

			printf(" lines=");
			for (uint32_t i = 0; i + 8 <= c.linetable_len; i += 8)
				printf("%s%u:%d", i ? "," : "", u32_at((const void *)(l + i)),
				       (int32_t)u32_at((const void *)(l + i + 4)));
			printf("\n");
		} else {
			printf(" linetable=%u+%u\n", c.linetable_off, c.linetable_len);
		}
		return 0;
	}
	case DLP_REC_PYSTACK: {
		struct dlp_pystack_rec r;
		struct dlp_pyframe f;

		memcpy(&r, data, len < sizeof(r) ? len : sizeof(r));
		if (len >= sizeof(r) + 4 && (r.flags & DLP_PYSTACK_CHAIN)) {
			printf("PYSTACK pid=%u tid=%u time=%" PRIu64 " state=%u delay=%u chain=%u\n",
			       r.pid, r.tid, r.time, r.state, r.delay_ns,
			       u32_at((const unsigned char *)p + sizeof(r)));
			return 0;
		}
		if (len < sizeof(r) || r.same > r.nr ||
		    (size_t)(r.nr - r.same) * sizeof(f) > len - sizeof(r)) {
			printf("PYSTACK bad\n");
			return 0;
		}
		printf("PYSTACK pid=%u tid=%u time=%" PRIu64 " state=%u delay=%u nr=%u same=%u frames=",
		       r.pid, r.tid, r.time, r.state, r.delay_ns, r.nr, r.same);
		/* the frames of its own (the rest: the thread's previous record's root side) */
		print_pyframes(p + sizeof(r), (unsigned)(r.nr - r.same));
		return 0;
	}
	case DLP_REC_PYCHAIN: {
		struct dlp_pychain_rec r;
		struct dlp_pyframe f;

		memcpy(&r, data, len < sizeof(r) ? len : sizeof(r));
		if (len < sizeof(r) || r.same > r.nr ||
		    (size_t)(r.nr - r.same) * sizeof(f) > len - sizeof(r)) {
			printf("PYCHAIN bad\n");
			return 0;
		}
		printf("PYCHAIN id=%u base=%u nr=%u same=%u frames=", r.id, r.base, r.nr, r.same);
		print_pyframes(p + sizeof(r), (unsigned)(r.nr - r.same));
		return 0;
	}
	case DLP_REC_STATS: {
		struct dlp_stats st;

		if (len < sizeof(st)) {
			printf("STATS bad\n");
			return 0;
		}
		memcpy(&st, data, sizeof(st));
		printf("STATS samples=%" PRIu64 " lost=%" PRIu64 " exit=%d flags=0x%x\n",
		       st.samples, st.lost, st.exit_status, st.flags);
		return 0;
	}
	}
	if (type < DLP_REC_MAX && rec_names[type])
		printf("%s len=%zu\n", rec_names[type], len);
	else
		printf("TYPE%u len=%zu\n", type, len);
	if (type == DLP_REC_KSYMS && d->ksyms)
		while (p < end) {
			const char *nl = memchr(p, '\n', end - p);
			int n = (int)((nl ? nl : end) - p);

			printf("KSYM %.*s\n", n, p);
			p = nl ? nl + 1 : end;
		}
	return 0;
}

/* --sizes: one deflate stream per kind of record */
struct kind {
	char name[96];
	uint64_t count, raw, out;
	z_stream z;
};

static struct kind kinds[64];
static size_t nr_kinds;

static void kind_feed(struct kind *k, const void *data, size_t len, int finish)
{
	unsigned char buf[16384];

	k->z.next_in = (unsigned char *)(uintptr_t)data;
	k->z.avail_in = (uInt)len;
	do {
		k->z.next_out = buf;
		k->z.avail_out = sizeof(buf);
		deflate(&k->z, finish ? Z_FINISH : Z_NO_FLUSH);
		k->out += sizeof(buf) - k->z.avail_out;
	} while (k->z.avail_out == 0 || (finish && k->z.avail_in));
}

static int sizes_cb(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct dump *d = ctx;
	char name[96];
	const unsigned char *p = data;
	size_t i;

	if (type < DLP_REC_MAX && rec_names[type])
		snprintf(name, sizeof(name), "%s", rec_names[type]);
	else
		snprintf(name, sizeof(name), "TYPE%u", type);
	if (type == DLP_REC_ATTR)
		add_ev(d, data, len);	/* the events, to name the samples by */
	if ((type == DLP_REC_PERF && len >= 8) ||
	    (type == DLP_REC_USAMPLE && len >= sizeof(struct dlp_usample_rec) + 8)) {
		const unsigned char *rec = type == DLP_REC_PERF ? p :
					   p + sizeof(struct dlp_usample_rec);
		uint32_t ptype;

		ptype = u32_at(rec);
		size_t rlen = len - (size_t)(rec - p);

		if (ptype == PERF_RECORD_SAMPLE) {
			struct evsel *ev = find_ev(d, rec, rlen, 0);

			snprintf(name, sizeof(name), "%s %s",
				 type == DLP_REC_PERF ? "SAMPLE" : "USAMPLE",
				 ev ? ev->name : "?");
		} else {
			static const char *const perf_named[] = {
				[PERF_RECORD_MMAP] = "MMAP", [PERF_RECORD_LOST] = "LOST",
				[PERF_RECORD_COMM] = "COMM", [PERF_RECORD_EXIT] = "EXIT",
				[PERF_RECORD_THROTTLE] = "THROTTLE", [PERF_RECORD_UNTHROTTLE] = "UNTHROTTLE",
				[PERF_RECORD_FORK] = "FORK", [PERF_RECORD_MMAP2] = "MMAP2",
				[PERF_RECORD_SWITCH] = "SWITCH", [PERF_RECORD_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE",
				[PERF_RECORD_LOST_SAMPLES] = "LOST_SAMPLES",
			};

			if (ptype < ARRAY_SIZE(perf_named) && perf_named[ptype])
				snprintf(name, sizeof(name), "PERF %s", perf_named[ptype]);
			else
				snprintf(name, sizeof(name), "PERF%u", ptype);
		}
	}
	for (i = 0; i < nr_kinds && strcmp(kinds[i].name, name); i++)
		;
	if (i == nr_kinds) {
		if (nr_kinds == ARRAY_SIZE(kinds))
			return 0;
		nr_kinds++;
		snprintf(kinds[i].name, sizeof(kinds[i].name), "%s", name);
		if (deflateInit2(&kinds[i].z, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
			return -1;
	}
	kinds[i].count++;
	kinds[i].raw += len;
	kind_feed(&kinds[i], data, len, 0);
	return 0;
}

static int sizes(const char *path)
{
	struct dump d;
	struct recfile_info info;
	uint64_t raw = 0, out = 0;
	int ret;

	memset(&d, 0, sizeof(d));
	d.quiet = 1;
	ret = recfile_read(path, sizes_cb, &d, &info);
	for (size_t i = 0; i < nr_kinds; i++) {
		kind_feed(&kinds[i], NULL, 0, 1);
		deflateEnd(&kinds[i].z);
		printf("%s count=%" PRIu64 " raw=%" PRIu64 " deflated=%" PRIu64 "\n",
		       kinds[i].name, kinds[i].count, kinds[i].raw, kinds[i].out);
		raw += kinds[i].raw;
		out += kinds[i].out;
	}
	printf("ALL raw=%" PRIu64 " deflated=%" PRIu64 "\n", raw, out);
	return ret < 0 ? 2 : 0;
}

int main(int argc, char **argv)
{
	struct dump d;
	struct recfile_info info;
	size_t i;
	int ret;

	if (argc == 3 && !strcmp(argv[1], "--sizes"))
		return sizes(argv[2]);
	memset(&d, 0, sizeof(d));
	if (argc == 3 && !strcmp(argv[1], "--ksyms")) {
		d.ksyms = 1;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: recdump [--ksyms | --sizes] FILE\n");
		return 2;
	}
	ret = recfile_read(argv[1], dump_cb, &d, &info);
	for (i = 0; i < d.nr; i++) {
		free(d.ev[i]->ids);
		free(d.ev[i]);
	}
	if (ret < 0)
		return 2;
	if (info.ignored_bytes)
		printf("ignored=%" PRIu64 "\n", info.ignored_bytes);
	printf("records=%" PRIu64 " chunks=%" PRIu64 " truncated=%d\n", info.records, info.chunks,
	       info.truncated);
	return info.truncated ? 1 : 0;
}
