/* profile.c - recording -> resolved stacks (see profile.h).
 *
 * Pass 1 feeds the process model, build-ids, kernel symbols and JIT maps; pass 2 turns
 * each sample into frames: the fp callchain (PERF_CONTEXT_* markers split kernel and
 * user parts), or unwind_sample() over the copied user stack (kernel part still from
 * the callchain), or the leaf alone.  Return addresses are looked up at pc - 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "filter.h"
#include "jitsym.h"
#include "ksyms.h"
#include "profile.h"
#include "pystack.h"
#include "rephash.h"
#include "symbolize.h"
#include "unwind.h"
#include "util.h"

#define MAX_DEPTH 512
#define KERNEL_START 0xffff800000000000ULL

#define MET_EVS	16
#define CALLERS_MAX_FRAMES	(1u << 18)	/* (14 MB of frames) */

/* A stored stack's frames from its callers on, as its process's mappings named them */
struct callers {
	uint32_t pid, nr, nr_frames;
	const void *id;			/* dlp_sample.ustack_id */
	uint64_t view;			/* machine_view() */
	uint64_t *ips;			/* the nr addresses and their flags, as named */
	unsigned *ipflags;
	struct frame fr[];
};

struct prof {
	const struct profile_opts *opts;
	const struct profile_consumer *c;
	struct profile_stats *st;
	struct machine *m;
	struct symbolizer *sym;
	struct ksyms *ks;
	struct jitsyms *jit;
	struct unwinder *uw;
	struct strpool pool;
	struct u64map anon_names;	/* map start -> "[anon]@0x..." name */
	struct u64map callers;		/* a stored stack's callers' frames (user_stack_frames) */
	size_t callers_frames;
	int have_ksyms_rec;
	char release[128];
	uint64_t cpus_seen[4];		/* bitmap of CPUs seen (first 256) */
	uint64_t *ips;
	unsigned *ipflags;
	struct frame *frames;
	size_t max_frames;
	const struct evsel *sel_ev;	/* the event counted (profile_opts.event) */
	const struct evsel *off_ev;	/* wall: the context-switches event, counted too */
	int ready;
	/* off_cpu: the switch-out samples, held until every switch-in is known */
	struct off_sample {
		struct dlp_sample s;
		size_t first, nr;
		size_t read_at;		/* its s.nr_read counts in off_reads */
		int complete;
	} *offs;
	size_t nr_offs, alloc_offs;
	uint64_t off_period;		/* their part of period_total */
	struct frame *off_frames;
	size_t nr_off_frames, alloc_off_frames;
	uint64_t *off_reads;		/* their counters (record --metrics), o->read_at */
	size_t nr_off_reads, alloc_off_reads;
	struct off_in { uint32_t tid; uint64_t time; } *ins;
	size_t nr_ins, alloc_ins;
	struct u64map exits;		/* tid -> the time of its EXIT record (the last) */
	struct pystacks *py;		/* the recording's Python stacks, NULL when none */
	/* live: called when code in an anonymous mapping has no JIT name yet (its perf
	 * map line may have been written since the last look); > 0: look again */
	int (*jit_miss)(void *ctx, uint32_t pid);
	void *jit_miss_ctx;
	int observing;			/* a sample the filter left out, for c->filtered */
	const struct u64map *skip;	/* profile_opts.skip_pids' answer */
	int asked_skip;
	/* record --metrics with each counter sampled on its own (META metrics_mode=events):
	 * the place each event's samples take in the counts a sample is given (0 the first
	 * event's, k the k-th counter of META metrics), so that every view reads them as it
	 * reads a group's: met_n counts (0: not such a recording) */
	const struct evsel *evs[MET_EVS];
	int nr_evs;
	const struct evsel *met_ev[MET_EVS];
	uint32_t met_at[MET_EVS];
	int nr_met_ev;
	uint32_t met_n;
	uint64_t met_read[MET_EVS + 1];
};

/* The pids another recording counts (profile_opts.skip_pids), asked once */
static void ask_skip(struct prof *p)
{
	if (p->asked_skip)
		return;
	p->asked_skip = 1;
	if (p->opts->skip_pids)
		p->skip = p->opts->skip_pids(p->opts->skip_ctx, p->m);
}

static int p_attr(void *ctx, const struct evsel *ev)
{
	struct prof *p = ctx;
	const char *want = p->opts->event ? p->opts->event :
			   p->opts->off_cpu ? "context-switches" : NULL;

	if (p->nr_evs < MET_EVS)
		p->evs[p->nr_evs++] = ev;	/* (met_events) */
	if (p->opts->wall && !strcmp(ev->name, "context-switches")) {
		p->off_ev = ev;	/* counted beside the clock event */
		return 0;
	}
	if (!p->sel_ev && (!want || !strcmp(ev->name, want))) {
		p->sel_ev = ev;
		snprintf(p->st->event, sizeof(p->st->event), "%s", ev->name);
		p->st->event_every = p->nr_evs > 1 && !ev->attr.freq ? ev->attr.sample_period : 0;
		p->st->sample_is_time = (ev->attr.type == PERF_TYPE_SOFTWARE &&
			(ev->attr.config == PERF_COUNT_SW_CPU_CLOCK ||
			 ev->attr.config == PERF_COUNT_SW_TASK_CLOCK)) || p->opts->off_cpu;
		/* cycles and the like spread over CPU time; a page fault or a cache miss
		 * does not stand for any time */
		p->st->sample_no_time = !p->st->sample_is_time && !p->opts->off_cpu &&
			(ev->attr.type == PERF_TYPE_SOFTWARE ||
			 ev->attr.type == PERF_TYPE_TRACEPOINT ||
			 ev->attr.type == PERF_TYPE_HW_CACHE ||
			 ev->attr.type == PERF_TYPE_BREAKPOINT);
	} else {
		size_t n = strlen(p->st->other_events);

		snprintf(p->st->other_events + n, sizeof(p->st->other_events) - n, "%s%s",
			 n ? "," : "", ev->name);
	}
	return 0;
}

/* META metrics_mode=events: each counter's event (named as the counter; the switch-out
 * event's samples are the context switches), for met_counts.  Their samples are no other
 * event's where the consumer takes them (profile_opts.metric_samples). */
static void met_events(struct prof *p, const struct recmeta *m)
{
	const char *mode = recmeta_get(m, "metrics_mode");
	char *names[MET_EVS];
	size_t n;

	if (!m->metrics || !mode || strcmp(mode, "events") || !p->nr_evs || p->met_n)
		return;
	n = list_split(m->metrics, names, MET_EVS - 1);
	p->met_ev[p->nr_met_ev] = p->evs[0];	/* the sampling event's own count */
	p->met_at[p->nr_met_ev++] = 0;
	for (size_t k = 0; k < n; k++) {
		for (int e = 1; e < p->nr_evs; e++)
			if (!strcmp(p->evs[e]->name, names[k]) && p->nr_met_ev < MET_EVS) {
				p->met_ev[p->nr_met_ev] = p->evs[e];
				p->met_at[p->nr_met_ev++] = (uint32_t)k + 1;
				break;
			}
		free(names[k]);
	}
	p->met_n = (uint32_t)n + 1;
	if (p->opts->metric_samples) {
		/* (no longer "other events, not counted") */
		p->st->other_events[0] = 0;
		for (int e = 1; e < p->nr_evs; e++) {
			int k = 0;
			size_t len = strlen(p->st->other_events);

			while (k < p->nr_met_ev && p->met_ev[k] != p->evs[e])
				k++;
			if (k < p->nr_met_ev || p->evs[e] == p->sel_ev || p->evs[e] == p->off_ev)
				continue;
			snprintf(p->st->other_events + len, sizeof(p->st->other_events) - len,
				 "%s%s", len ? "," : "", p->evs[e]->name);
		}
	}
}

/* A sample of such a recording with its counts: the period of its event in that event's
 * place (a sampling event's sample its CPU time, a counter's its events, a switch-out
 * one switch), in a copy; s itself where it has none */
static const struct dlp_sample *met_counts(struct prof *p, const struct dlp_sample *s,
					   struct dlp_sample *copy)
{
	int k = 0;

	if (!p->met_n || !s->evsel || s->nr_read)
		return s;
	while (k < p->nr_met_ev && p->met_ev[k] != s->evsel)
		k++;
	if (k == p->nr_met_ev)
		return s;
	memset(p->met_read, 0, sizeof(p->met_read));
	p->met_read[p->met_at[k]] = s->period;
	*copy = *s;
	copy->nr_read = p->met_n;
	copy->read = p->met_read;
	/* (a counter's samples are a table's own where report -e names its event) */
	copy->counts_only = p->met_at[k] && p->opts->metric_samples && s->evsel != p->sel_ev &&
		!(s->evsel->attr.type == PERF_TYPE_SOFTWARE &&
		  s->evsel->attr.config == PERF_COUNT_SW_CONTEXT_SWITCHES);
	return copy;
}

static int p_meta(void *ctx, const struct recmeta *m)
{
	struct prof *p = ctx;
	const char *release = recmeta_get(m, "release"), *late = recmeta_get(m, "python_late");

	met_events(p, m);

	if (release)
		snprintf(p->release, sizeof(p->release), "%s", release);
	if (late && p->py)
		pystacks_late_delays(p->py, late);
	return p->c->meta ? p->c->meta(p->c->ctx, m) : 0;
}

static int p_mmap(void *ctx, const struct dlp_mmap *mm)
{
	return machine_mmap(((struct prof *)ctx)->m, mm);
}

static int p_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, int exec, uint64_t time)
{
	return machine_comm(((struct prof *)ctx)->m, pid, tid, comm, exec, time);
}

static int p_fork(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time)
{
	return machine_fork(((struct prof *)ctx)->m, pid, ppid, tid, ptid, time);
}

static int p_exit(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time)
{
	struct prof *p = ctx;

	if (time && (p->opts->off_cpu || p->opts->wall))
		u64map_put(&p->exits, tid, (void *)(uintptr_t)time);
	if (p->c->thread_exit && p->c->thread_exit(p->c->ctx, pid, tid, time) < 0)
		return -1;
	return machine_exit(p->m, pid, tid, time);
}

static int p_other(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct prof *p = ctx;

	switch (type) {
	case DLP_REC_BUILDID: {
		const struct dlp_buildid_rec *b = data;
		const char *path = (const char *)data + sizeof(*b);

		if (len > sizeof(*b) && b->size <= 20 && memchr(path, 0, len - sizeof(*b)))
			machine_set_build_id(p->m, path, b->id, b->size);
		break;
	}
	case DLP_REC_SYMNAME: {
		const struct dlp_buildid_rec *b = data;
		const char *sym = (const char *)data + sizeof(*b), *end = (const char *)data + len;
		const char *z = len > sizeof(*b) ? memchr(sym, 0, (size_t)(end - sym)) : NULL;

		if (z && b->size <= 20 && memchr(z + 1, 0, (size_t)(end - z - 1)))
			machine_set_sym_name(p->m, b->id, b->size, sym, z + 1);
		break;
	}
	case DLP_REC_PROC:
		machine_add_proc(p->m, data, len);
		break;
	case DLP_REC_KSYMS:
		if (ksyms_add_text(p->ks, data, len) > 0)
			p->have_ksyms_rec = 1;
		break;
	case DLP_REC_FILE: {
		const struct dlp_file_rec *fr = data;
		const char *path = (const char *)data + sizeof(*fr);

		if (len >= sizeof(*fr) && fr->path_len && fr->path_len <= len - sizeof(*fr) &&
		    !path[fr->path_len - 1])
			machine_set_image(p->m, path, path + fr->path_len,
					  len - sizeof(*fr) - fr->path_len);
		break;
	}
	case DLP_REC_PYCODE:
	case DLP_REC_PYSTACK:
	case DLP_REC_PYCHAIN:
	case DLP_REC_PYCODE_PACKED:
	case DLP_REC_PYCHAIN_PACKED:
		if (!p->opts->no_python) {
			if (!p->py)
				p->py = pystacks_new();
			pystacks_add(p->py, type, data, len);
		}
		break;
	case DLP_REC_JITMAP:
	case DLP_REC_JITDUMP: {
		const struct dlp_jit_rec *jr = data;
		char what[64];

		if (len < sizeof(*jr))
			break;
		if (type == DLP_REC_JITMAP) {
			snprintf(what, sizeof(what), "perf-%d.map", jr->pid);
			jitsyms_add_perfmap(p->jit, jr->pid, (const char *)data + sizeof(*jr),
					    len - sizeof(*jr), what);
		} else {
			snprintf(what, sizeof(what), "jit-%d.dump", jr->pid);
			jitsyms_add_jitdump(p->jit, jr->pid, (const char *)data + sizeof(*jr),
					    len - sizeof(*jr), what);
		}
		break;
	}
	default:
		break;
	}
	return p->c->other ? p->c->other(p->c->ctx, type, data, len) : 0;
}

static int cmp_in(const void *a, const void *b)
{
	const struct off_in *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

/* A thread's last switch-out comes a little after its EXIT record (do_task_dead): up to
 * this long after it, the switch-out of a thread that exited is its last (beyond it, its
 * tid was taken again by another) */
#define EXIT_SWITCH_NS	10000000ull

/* off_cpu: each switch-out sample, weighted by the time until its thread was switched in
 * again; when it never was, until its exit (0 for the switch-out of its exit itself), or
 * the end of the recording; in recording order. */
static int deliver_off_cpu(struct prof *p, const struct session_info *info, int ret)
{
	uint64_t end = info->have_stats && info->stats.end_ns ? info->stats.end_ns : p->st->last_time;
	uint64_t total = 0;

	if (p->nr_ins)
		qsort(p->ins, p->nr_ins, sizeof(*p->ins), cmp_in);
	for (size_t i = 0; i < p->nr_offs; i++) {
		struct off_sample *o = &p->offs[i];
		size_t lo = 0, hi = p->nr_ins;
		uint64_t back = end;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (p->ins[mid].tid < o->s.tid ||
			    (p->ins[mid].tid == o->s.tid && p->ins[mid].time <= o->s.time))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < p->nr_ins && p->ins[lo].tid == o->s.tid) {
			back = p->ins[lo].time;
		} else {
			uint64_t gone = (uintptr_t)u64map_get(&p->exits, o->s.tid);

			if (gone && (gone >= o->s.time || o->s.time - gone < EXIT_SWITCH_NS))
				back = gone;	/* (before the switch-out: 0, below) */
		}
		o->s.period = back > o->s.time ? back - o->s.time : 0;
		if (o->s.nr_read)
			o->s.read = p->off_reads + o->read_at;
		total += o->s.period;
		if (p->c->stack) {
			int r = p->c->stack(p->c->ctx, p->m, &o->s, p->off_frames + o->first, o->nr,
					    o->complete);

			if (r < 0)
				return r;
		}
	}
	/* each was counted with its period of 1, unless left out (waits_apart) */
	if (!p->opts->waits_apart) {
		p->st->period_total += total - (total ? p->nr_offs : 0);
		p->off_period = total ? total : p->nr_offs;
		p->st->off_samples += p->nr_offs;
	}
	return ret;
}

/* The running kernel's symbols, where the recording has none (dlprof top's live
 * reader): this boot's core kernel from record's cache (ksyms_load_running), else
 * /proc/kallsyms whole.  DLPROF_KALLSYMS names another file (/dev/null: none), for a
 * recording from elsewhere and for the fuzzer. */
static void load_kallsyms(struct prof *p)
{
	const char *path = getenv("DLPROF_KALLSYMS");
	const char *release = p->release[0] ? p->release : NULL;
	struct utsname u;

	if (!path && (!release || (!uname(&u) && !strcmp(u.release, release))))
		ksyms_load_running(p->ks, 0);	/* (the cache is record's to keep) */
	else
		ksyms_load_kallsyms(p->ks, path, release);
}

static void kernel_frame(struct prof *p, uint64_t addr, struct frame *f)
{
	const struct ksym *k;

	/* outside the core kernel kept by the cache: all of /proc/kallsyms */
	ksyms_need(p->ks, addr, p->release[0] ? p->release : NULL);
	k = ksyms_find(p->ks, addr);

	memset(f, 0, sizeof(*f));
	f->ip = addr;
	f->flags = FRAME_KERNEL;
	if (k) {
		f->sym = k->name;
		f->sym_start = k->start;
		f->dso = k->module ? k->module : "[kernel.kallsyms]";
	} else {
		f->sym = "[unknown]";
		f->dso = "[kernel.kallsyms]";
		f->flags |= FRAME_UNKNOWN;
	}
}

/* Resolve one user address into frames (inline expansion may add several). */
static size_t user_frames(struct prof *p, const struct dlp_sample *s, uint64_t addr,
			  struct frame *out, size_t max)
{
	const struct map *mp = machine_find_map(p->m, s->pid, addr, s->time);
	const struct jitsym *j;

	if (!max)
		return 0;
	if ((!mp || mp->dso->anon) &&
	    ((j = jitsyms_find(p->jit, s->pid, addr)) ||
	     (p->jit_miss && p->jit_miss(p->jit_miss_ctx, s->pid) > 0 &&
	      (j = jitsyms_find(p->jit, s->pid, addr))))) {
		memset(out, 0, sizeof(*out));
		out->ip = addr;
		out->sym = j->name;
		out->sym_start = j->start;
		out->dso = "[jit]";
		out->flags = FRAME_JIT;
		return 1;
	}
	if (!mp) {
		memset(out, 0, sizeof(*out));
		out->ip = addr;
		out->sym = "[unknown]";
		out->dso = "[unknown]";
		out->flags = FRAME_UNKNOWN;
		return 1;
	}
	if (mp->dso->anon) {
		void **slot = u64map_slot(&p->anon_names, mp->start);

		if (!*slot) {
			char buf[64];

			snprintf(buf, sizeof(buf), "[anon]@0x%llx", (unsigned long long)mp->start);
			*slot = (void *)strpool_intern(&p->pool, buf);
		}
		memset(out, 0, sizeof(*out));
		out->ip = addr;
		out->sym = *slot;
		out->sym_start = mp->start;
		out->dso = "[anon]";
		out->dso_path = mp->dso->path;
		out->flags = FRAME_ANON;
		return 1;
	}
	if (mp->dso->kernel) {
		kernel_frame(p, addr, out);
		return 1;
	}
	{
		size_t n = symbolize(p->sym, mp, addr, out, max);

		/* a function its recording names otherwise (a torch.compile kernel) */
		for (size_t i = 0; mp->dso->renamed && i < n; i++) {
			const char *name = machine_sym_name(p->m, mp->dso, out[i].sym);

			if (name)
				out[i].sym = name;
		}
		return n;
	}
}

int profile_irq_enabler(const char *sym)
{
	static const char *const tails[] = {
		"_irq_enable", "_restore_fl", "_unlock_irqrestore", "_unlock_irq",
	};
	size_t len;

	if (!sym)
		return 0;
	len = strcspn(sym, ". ");	/* without ".isra.0", ".constprop.0" */
	for (size_t i = 0; i < ARRAY_SIZE(tails); i++) {
		size_t tl = strlen(tails[i]);

		if (len >= tl && !strncmp(sym + len - tl, tails[i], tl))
			return 1;
	}
	return 0;
}

/* The sample fell due while interrupts were off and was taken where they came back on
 * (fr[0], an profile_irq_enabler()): count it to the first kernel caller that is not one,
 * marked.  Raw (--raw-irqs): counted, left as taken. */
static size_t irqs_off(struct prof *p, struct frame *fr, size_t *nf)
{
	size_t k = 1;
	char buf[256];
	int n;

	while (k < *nf && (fr[k].flags & FRAME_KERNEL) && profile_irq_enabler(fr[k].sym))
		k++;
	if (k >= *nf || !(fr[k].flags & FRAME_KERNEL))
		return 0;	/* no kernel caller to give it to */
	p->st->irqs_off++;
	if (p->opts->raw_irqs)
		return 0;
	n = snprintf(buf, sizeof(buf), "%s (irqs off)", fr[k].sym);
	fr[k].sym = str_intern(buf, n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	fr[k].flags |= FRAME_IRQS_OFF;
	fr[k].flags &= ~FRAME_INLINE;
	memmove(fr, fr + k, (*nf - k) * sizeof(*fr));
	*nf -= k;
	return k;	/* frames removed */
}

/* Compare the stack unwound while recording with the one unwound here from the copy:
 * the same, different only in frames a stack scan found (either side), or different. */
static void check_unwind(struct prof *p, const struct dlp_sample *s, size_t n, int complete)
{
	size_t i, a, b, k, same;
	int scan_only;

	p->st->unwind_checked++;
	/* the frames both give alike, address and scan flag, from the leaf */
	for (same = 0; same < n && same < s->nr_ustack && p->ips[same] == s->ustack[same] &&
		       !(p->ipflags[same] & FRAME_RECOVERED) ==
		       !(s->ustack_scanned[same / 8] & (1u << (same % 8))); same++)
		;
	if ((s->ustack_past_copy || (!complete && unwind_copy_ended(p->uw))) && n < s->nr_ustack) {
		/* its outer frames past the copy came from the thread's last walk: the copy
		 * gives the frames up to its end, perhaps then a few a stack scan found (or
		 * ends at a thread-root function short of the outermost: main's stack cut
		 * at __libc_start_main, the last walk's reaching on to _start).  So too a
		 * stack walked in the kernel, which reads on where the copy ended */
		for (i = same; i < n && (p->ipflags[i] & FRAME_RECOVERED); i++)
			;
		if (i == n) {
			p->st->unwind_past_copy++;
			return;
		}
	}
	if (n == s->nr_ustack && complete == s->ustack_complete && same == n) {
		p->st->unwind_same++;
		return;
	}
	/* the same up to the first frame a stack scan found, on either side */
	for (a = 0; a < n && !(p->ipflags[a] & FRAME_RECOVERED); a++)
		;
	for (b = 0; b < s->nr_ustack && !(s->ustack_scanned[b / 8] & (1u << (b % 8))); b++)
		;
	k = a < b ? a : b;
	scan_only = (a < n || b < s->nr_ustack) && !memcmp(p->ips, s->ustack, k * 8);
	if (scan_only)
		p->st->unwind_scan_differs++;
	else
		p->st->unwind_differs++;
}

/* The sample's user stack into p->ips/p->ipflags: as unwound while recording, else from
 * its copy.  Returns the number of frames; *past_copy: its outer frames lay past the copy
 * (recorded so). */
static size_t user_stack(struct prof *p, const struct dlp_sample *s, int *complete,
			 int *past_copy, int *recorded)
{
	size_t n;

	*recorded = 0;
	if (s->nr_ustack && (!p->opts->reunwind || !s->stack_size || !p->uw)) {
		if (p->opts->check_unwind && s->stack_size && s->user_regs && p->uw) {
			int c = 0;

			n = unwind_sample(p->uw, s, p->ips, p->ipflags, MAX_DEPTH, &c);
			check_unwind(p, s, n, c);
		}
		n = s->nr_ustack < MAX_DEPTH ? s->nr_ustack : MAX_DEPTH;
		memcpy(p->ips, s->ustack, n * 8);
		for (size_t i = 0; i < n; i++)
			p->ipflags[i] = s->ustack_scanned[i / 8] & (1u << (i % 8)) ? FRAME_RECOVERED : 0;
		*complete = s->ustack_complete;
		*past_copy = s->ustack_past_copy;
		*recorded = n == s->nr_ustack;
		p->st->recorded_stacks++;
		return n;
	}
	p->st->copied_stacks++;
	return unwind_sample(p->uw, s, p->ips, p->ipflags, MAX_DEPTH, complete);
}

/* The frames of user stack addresses p->ips[from .. n) into out, at most max */
static size_t stack_frames(struct prof *p, const struct dlp_sample *s, size_t from, size_t n,
			   struct frame *out, size_t max)
{
	size_t nf = 0;

	for (size_t i = from; i < n && nf < max; i++) {
		uint64_t a = i ? p->ips[i] - 1 : p->ips[i];
		size_t k = user_frames(p, s, a, out + nf, max - nf);

		for (size_t x = 0; x < k; x++)
			if (p->ipflags[i] & FRAME_RECOVERED)
				out[nf + x].flags |= FRAME_RECOVERED;
		nf += k;
	}
	return nf;
}

static void callers_clear(struct prof *p)
{
	for (size_t i = 0; i < p->callers.cap; i++)
		if (p->callers.used[i])
			free(p->callers.vals[i]);
	u64map_release(&p->callers);
	u64map_init(&p->callers);
	p->callers_frames = 0;
}

/*
 * The frames of a sample's user stack (p->ips[0 .. n), recorded: as the recording gives
 * it) into out, at most max.  A stack stored in the recording is met again by each
 * sample of its call chain (with ustack_leaf_ip, whatever its leaf): its callers' frames
 * are kept by the stack and its process, for as long as the process's mappings give
 * what they gave (machine_view) and the addresses are those kept.  Not kept: frames
 * whose naming may come later (JIT code, anonymous or unmapped memory), a stack cut at
 * max.
 */
static size_t user_stack_frames(struct prof *p, const struct dlp_sample *s, size_t n,
				int recorded, struct frame *out, size_t max)
{
	size_t from = s->ustack_leaf_ip ? 1 : 0, nf, k, nr;
	uint64_t view, key;
	struct callers *c;
	void **slot;

	if (!recorded || !s->ustack_id || n <= from ||
	    !machine_view(p->m, s->pid, s->time, &view))
		return stack_frames(p, s, 0, n, out, max);
	nf = stack_frames(p, s, 0, from, out, max);	/* the sample's own IP */
	nr = n - from;
	key = hash_u64((uint64_t)(uintptr_t)s->ustack_id ^ hash_u64(s->pid)) | 1;
	slot = u64map_slot(&p->callers, key);
	c = *slot;
	if (c && c->pid == s->pid && c->id == s->ustack_id && c->view == view && c->nr == nr &&
	    !memcmp(c->ips, p->ips + from, nr * sizeof(*c->ips)) &&
	    !memcmp(c->ipflags, p->ipflags + from, nr * sizeof(*c->ipflags))) {
		if (c->nr_frames > max - nf)
			return nf + stack_frames(p, s, from, n, out + nf, max - nf);
		memcpy(out + nf, c->fr, c->nr_frames * sizeof(*out));
		return nf + c->nr_frames;
	}
	k = stack_frames(p, s, from, n, out + nf, max - nf);
	if (nf + k >= max)
		return nf + k;	/* (perhaps cut short) */
	for (size_t i = 0; i < k; i++)
		if (out[nf + i].flags & (FRAME_JIT | FRAME_ANON | FRAME_UNKNOWN))
			return nf + k;
	if (p->callers_frames + k > CALLERS_MAX_FRAMES) {
		callers_clear(p);
		slot = u64map_slot(&p->callers, key);
	} else if (*slot) {
		p->callers_frames -= ((struct callers *)*slot)->nr_frames;
		free(*slot);
	}
	c = xmalloc(sizeof(*c) + k * sizeof(c->fr[0]) + nr * (sizeof(*c->ips) + sizeof(*c->ipflags)));
	c->pid = s->pid;
	c->id = s->ustack_id;
	c->view = view;
	c->nr = (uint32_t)nr;
	c->nr_frames = (uint32_t)k;
	memcpy(c->fr, out + nf, k * sizeof(*out));
	c->ips = (uint64_t *)(c->fr + k);
	c->ipflags = (unsigned *)(c->ips + nr);
	memcpy(c->ips, p->ips + from, nr * sizeof(*c->ips));
	memcpy(c->ipflags, p->ipflags + from, nr * sizeof(*c->ipflags));
	*slot = c;
	p->callers_frames += k;
	return nf + k;
}

static int sample_in(struct prof *p, const struct dlp_sample *s, int counted);

/* A sample in; a switch-out left out of the stats where opts->waits_apart */
static int p_sample(void *ctx, const struct dlp_sample *s)
{
	struct prof *p = ctx;
	struct profile_stats *st = p->st, apart;
	int ret;

	if (!s->counts_only &&
	    (!p->opts->waits_apart || !p->opts->wall || !s->evsel || s->evsel != p->off_ev))
		return sample_in(p, s, 1);
	memset(&apart, 0, sizeof(apart));
	p->st = &apart;
	ret = sample_in(p, s, 0);
	p->st = st;
	return ret;
}

static int sample_in(struct prof *p, const struct dlp_sample *s, int counted)
{
	size_t nf = 0, max = p->max_frames;
	size_t nuser = 0, first_user = 0;
	int complete = 0, unw_complete = 0, past_copy = 0, dwarf = 0;
	struct frame *fr = p->frames;
	struct dlp_sample held;

	/* a Python stack read in the kernel after its sample was written: whether its
	 * thread held the GIL is the stack record's to say */
	if (p->py && !s->pychain && !(s->pyflags & DLP_PYSTACK_GIL) &&
	    pystacks_gil(p->py, s->pid, s->tid, s->time)) {
		held = *s;
		held.pyflags |= DLP_PYSTACK_GIL;
		s = &held;
	}

	p->st->samples++;
	p->st->period_total += s->period;
	if (p->py && s->pychain && counted)
		pystacks_count_chain(p->py, s->pyflags, s->pystate);
	if (!p->st->first_time || s->time < p->st->first_time)
		p->st->first_time = s->time;
	if (s->time > p->st->last_time)
		p->st->last_time = s->time;
	if (s->cpu < 256 && counted)
		p->cpus_seen[s->cpu / 64] |= 1ULL << (s->cpu % 64);

	if ((s->stack_size && s->user_regs && p->uw) || s->nr_ustack)
		dwarf = 1;

	if (s->nr_callchain && !p->opts->no_children) {
		uint64_t ctxmark = 0;
		int first_in_ctx = 0;

		for (uint64_t i = 0; i < s->nr_callchain && nf < max; i++) {
			uint64_t ip = s->callchain[i];

			if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
				ctxmark = ip;
				first_in_ctx = 1;
				continue;
			}
			if (ctxmark == (uint64_t)PERF_CONTEXT_USER || (!ctxmark && ip < KERNEL_START)) {
				if (dwarf)
					break;	/* the user part comes from the unwinder */
				if (!nuser)
					first_user = nf;
				size_t k = user_frames(p, s, first_in_ctx ? ip : ip - 1, fr + nf, max - nf);

				if (!first_in_ctx)
					for (size_t x = 0; x < k; x++)
						fr[nf + x].ip = ip - 1;
				nf += k;
				nuser += k;
			} else {
				kernel_frame(p, first_in_ctx ? ip : ip - 1, &fr[nf++]);
			}
			first_in_ctx = 0;
		}
	}
	if (dwarf && !p->opts->no_children) {
		int recorded;
		size_t n = user_stack(p, s, &unw_complete, &past_copy, &recorded), k;

		first_user = nf;
		k = user_stack_frames(p, s, n, recorded, fr + nf, max - nf);
		nf += k;
		nuser += k;
	}
	if (!nf) {
		/* leaf only */
		if (s->ip >= KERNEL_START || s->cpumode == PERF_RECORD_MISC_KERNEL)
			kernel_frame(p, s->ip, &fr[nf++]);
		else {
			nf = user_frames(p, s, s->ip, fr, p->opts->no_children ? 1 : max);
			nuser = nf;
			first_user = 0;
		}
	}
	if (nf > 1 && (fr[0].flags & FRAME_KERNEL) && profile_irq_enabler(fr[0].sym)) {
		size_t gone = irqs_off(p, fr, &nf);

		if (nuser)
			first_user -= gone;	/* the kernel part got shorter */
	}
	if (p->opts->no_children && nf > 1)
		nf = 1;
	if (p->opts->max_depth && nf > p->opts->max_depth)
		nf = p->opts->max_depth;

	if (unw_complete)
		complete = 1;
	else if (nuser && first_user + nuser <= nf)
		complete = unwind_thread_root_name(fr[first_user + nuser - 1].sym);
	else if (!nuser && nf && s->pid == 0)
		complete = 1;	/* the idle task / kernel threads have no user part */
	if (nf && complete && nf < first_user + nuser)
		complete = 0;
	if (p->py && nf) {
		/* the eval loops' frames become the Python functions they ran */
		if (pystacks_merge(p->py, s->pid, s->tid, s->time, s->pychain,
				   !!(s->pyflags & (DLP_PYSTACK_OWN | DLP_PYSTACK_KERNEL)), fr, &nf,
				   max, complete) > 0)
			p->st->python++;
		if (p->opts->max_depth && nf > p->opts->max_depth)
			nf = p->opts->max_depth;
	}
	if (complete) {
		p->st->complete_stacks++;
		p->st->past_copy_stacks += past_copy && unw_complete;
	}
	for (size_t i = 0; i < nf; i++)
		if (fr[i].flags & FRAME_RECOVERED) {
			p->st->recovered_stacks++;
			break;
		}
	if (nf) {
		unsigned f = fr[0].flags;

		if (!(f & (FRAME_UNKNOWN | FRAME_ANON)))
			p->st->named++;
	}
	if (p->observing)
		return p->c->filtered(p->c->ctx, p->m, s, fr, nf, complete);
	if (p->opts->off_cpu || (p->opts->wall && s->evsel && s->evsel == p->off_ev)) {
		/* its weight is known once the thread's next switch-in is: at the end */
		struct off_sample *o;

		ALLOC_GROW(p->offs, p->nr_offs + 1, p->alloc_offs);
		o = &p->offs[p->nr_offs++];
		o->s = *s;
		o->s.callchain = NULL;
		o->s.user_regs = NULL;
		o->s.stack = NULL;
		o->s.ustack = NULL;
		o->s.ustack_scanned = NULL;
		o->s.read = NULL;
		o->read_at = p->nr_off_reads;
		if (s->read && s->nr_read) {
			ALLOC_GROW(p->off_reads, p->nr_off_reads + s->nr_read, p->alloc_off_reads);
			memcpy(p->off_reads + p->nr_off_reads, s->read, s->nr_read * sizeof(uint64_t));
			p->nr_off_reads += s->nr_read;
		} else {
			o->s.nr_read = 0;
		}
		o->s.nr_ustack = 0;
		o->first = p->nr_off_frames;
		o->nr = nf;
		o->complete = complete;
		ALLOC_GROW(p->off_frames, p->nr_off_frames + nf + 1, p->alloc_off_frames);
		memcpy(p->off_frames + p->nr_off_frames, fr, nf * sizeof(*fr));
		p->nr_off_frames += nf;
		return 0;
	}
	if (p->c->stack)
		return p->c->stack(p->c->ctx, p->m, s, fr, nf, complete);
	return 0;
}

static int p_lost(void *ctx, uint64_t id, uint64_t lost)
{
	uint64_t *sum = &((struct prof *)ctx)->st->lost;

	/* saturate: a crafted or garbled count must not wrap the total to a small number */
	*sum = lost > UINT64_MAX - *sum ? UINT64_MAX : *sum + lost;
	return 0;
}

static int p_switch(void *ctx, uint32_t pid, uint32_t tid, uint32_t cpu, uint64_t time, int out,
		    int preempt)
{
	struct prof *p = ctx;

	if ((p->opts->off_cpu || p->opts->wall) && !out) {
		ALLOC_GROW(p->ins, p->nr_ins + 1, p->alloc_ins);
		p->ins[p->nr_ins++] = (struct off_in){ tid, time };
	}
	if (p->c->context_switch)
		return p->c->context_switch(p->c->ctx, p->m, pid, tid, cpu, time, out, preempt);
	return 0;
}

/* Pass 2 starts with the first sample: load /proc/kallsyms then if nothing was recorded. */
static int p_sample_first(void *ctx, const struct dlp_sample *s);

static const struct session_ops prof_ops = {
	.attr = p_attr,
	.meta = p_meta,
	.mmap = p_mmap,
	.comm = p_comm,
	.fork = p_fork,
	.exit = p_exit,
	.sample = p_sample_first,
	.lost = p_lost,
	.context_switch = p_switch,
	.other = p_other,
};

/* Unwind and resolve a sample the filter left out for c->filtered, counting it in no
 * stat of the run. */
static int observe(struct prof *p, const struct dlp_sample *s)
{
	struct profile_stats keep = *p->st;
	uint64_t cpus[ARRAY_SIZE(p->cpus_seen)];
	int ret;

	memcpy(cpus, p->cpus_seen, sizeof(cpus));
	p->observing = 1;
	ret = p_sample(p, s);
	p->observing = 0;
	*p->st = keep;
	memcpy(p->cpus_seen, cpus, sizeof(cpus));
	return ret;
}

static int p_sample_first(void *ctx, const struct dlp_sample *s)
{
	struct prof *p = ctx;
	struct dlp_sample counted;

	if (p->met_n)
		s = met_counts(p, s, &counted);
	/* one event per table: samples of the others count other things (wall: the
	 * off-CPU ones count with the clock's; a counter's go to what reads counts) */
	if (p->sel_ev && s->evsel && s->evsel != p->sel_ev && !(p->off_ev && s->evsel == p->off_ev) &&
	    !s->counts_only) {
		p->st->other_samples++;
		return p->c->other_sample ? p->c->other_sample(p->c->ctx, s) : 0;
	}
	if (!p->ready) {
		p->ready = 1;
		if (!p->have_ksyms_rec && !ksyms_count(p->ks))
			load_kallsyms(p);
		ask_skip(p);
	}
	if (p->skip && u64map_has(p->skip, s->pid)) {
		p->st->duplicate++;
		return 0;
	}
	if (p->opts->filter) {
		struct sample_filter *f = p->opts->filter;

		f->seen++;
		const char *comm = f->nr_comms ? machine_comm_at(p->m, s->pid, s->tid, s->time) : NULL;

		if (!filter_thread(f, s->pid, s->tid, comm, s->time) ||
		    (f->have_kept && !filter_kept(f, s->tid, s->time))) {
			p->st->filtered_out++;
			return p->c->filtered ? observe(p, s) : 0;	/* else not unwound */
		}
		f->passed++;
	}
	return p_sample(ctx, s);
}

static void prof_init(struct prof *p, const struct profile_opts *opts,
		      const struct profile_consumer *c, struct profile_stats *stats)
{
	struct symbolize_opts so = { opts->srcline, opts->inline_frames };

	memset(stats, 0, sizeof(*stats));
	memset(p, 0, sizeof(*p));
	p->opts = opts;
	p->c = c;
	p->st = stats;
	p->m = machine_new();
	/* the recorded files under this root (report --symfs), else $DLPROF_SYMFS's */
	machine_set_symfs(p->m, opts->symfs ? opts->symfs : getenv("DLPROF_SYMFS"));
	p->sym = symbolizer_new(&so);
	p->ks = ksyms_new();
	p->jit = jitsyms_new();
	machine_set_jit(p->m, p->jit);
	p->uw = unwinder_new(p->m);
	strpool_init(&p->pool);
	u64map_init(&p->anon_names);
	u64map_init(&p->callers);
	u64map_init(&p->exits);
	p->max_frames = opts->max_depth && opts->max_depth < MAX_DEPTH ? opts->max_depth : MAX_DEPTH;
	p->max_frames *= opts->inline_frames ? 4 : 1;
	p->frames = xcalloc(p->max_frames + 1, sizeof(*p->frames));
	p->ips = xcalloc(MAX_DEPTH, sizeof(*p->ips));
	p->ipflags = xcalloc(MAX_DEPTH, sizeof(*p->ipflags));
}

static void prof_release(struct prof *p)
{
	free(p->offs);
	free(p->off_frames);
	free(p->off_reads);
	free(p->ins);
	free(p->frames);
	free(p->ips);
	free(p->ipflags);
	u64map_release(&p->anon_names);
	callers_clear(p);
	u64map_release(&p->callers);
	u64map_release(&p->exits);
	strpool_release(&p->pool);
	if (p->uw)
		unwinder_free(p->uw);
	jitsyms_free(p->jit);
	ksyms_free(p->ks);
	symbolizer_free(p->sym);
	machine_free(p->m);
}

void profile_stats_add(struct profile_stats *sum, const struct profile_stats *st)
{
	uint64_t waited = sum->py_records - sum->py_at_sample, more = st->py_records - st->py_at_sample;

	/* the mean delay of the Python stacks not read at their sample, over both */
	if (waited + more)
		sum->py_delay_ns = (sum->py_delay_ns * waited + st->py_delay_ns * more) /
				   (waited + more);
	sum->samples += st->samples;
	sum->off_samples += st->off_samples;
	sum->complete_stacks += st->complete_stacks;
	sum->named += st->named;
	sum->recovered_stacks += st->recovered_stacks;
	sum->past_copy_stacks += st->past_copy_stacks;
	sum->recorded_stacks += st->recorded_stacks;
	sum->copied_stacks += st->copied_stacks;
	sum->unwind_checked += st->unwind_checked;
	sum->unwind_same += st->unwind_same;
	sum->unwind_scan_differs += st->unwind_scan_differs;
	sum->unwind_past_copy += st->unwind_past_copy;
	sum->unwind_differs += st->unwind_differs;
	sum->lost += st->lost;
	sum->period_total += st->period_total;
	sum->other_samples += st->other_samples;
	sum->filtered_out += st->filtered_out;
	sum->duplicate += st->duplicate;
	sum->python += st->python;
	sum->py_records += st->py_records;
	sum->py_moved += st->py_moved;
	sum->py_failed += st->py_failed;
	sum->py_mismatched += st->py_mismatched;
	sum->py_at_sample += st->py_at_sample;
	sum->irqs_off += st->irqs_off;
}

int profile_result(int ret, const struct session_info *info)
{
	return ret < 0 ? DLP_FAILED : ret == 1 || info->bad_records ? DLP_PARTIAL : DLP_OK;
}

int profile_run(const char *path, const struct profile_opts *opts,
		const struct profile_consumer *c, struct profile_stats *stats,
		struct session_info *info)
{
	struct session_info local_info;
	struct prof p;
	int ret;

	if (!info)
		info = &local_info;
	memset(info, 0, sizeof(*info));
	prof_init(&p, opts, c, stats);

	ret = session_process(path, &prof_ops, &p, info);
	if (ret >= 0 && opts->event && !p.sel_ev) {
		error("no event '%s' in '%s'%s%s%s", opts->event, path,
		      stats->other_events[0] ? " (it has " : "", stats->other_events,
		      stats->other_events[0] ? ")" : "");
		ret = -1;
	}

	if (info->have_stats) {
		if (info->stats.lost > stats->lost)
			stats->lost = info->stats.lost;
	}
	if (ret >= 0 && (opts->off_cpu || opts->wall))
		ret = deliver_off_cpu(&p, info, ret);
	if (ret >= 0 && opts->wall == 1 && !p.off_ev) {
		error("'%s' has no off-CPU samples: record it with --off-cpu for --wall", path);
		ret = -1;
	}
	if (ret >= 0)
		ask_skip(&p);	/* a recording without samples: its processes all the same */
	if (ret >= 0 && c->end && c->end(c->ctx, p.m) < 0)
		ret = -1;
	if (stats->samples && !stats->sample_no_time) {
		if (stats->sample_is_time && opts->wall && !opts->waits_apart &&
		    stats->samples > p.nr_offs) {
			/* the clock's samples' period, not the waits' */
			stats->sample_period_ns = (stats->period_total - p.off_period) /
						  (stats->samples - p.nr_offs);
		} else if (stats->sample_is_time) {
			stats->sample_period_ns = stats->period_total / stats->samples;
		} else {
			uint64_t dur = stats->last_time - stats->first_time;
			unsigned cpus = 0;

			if (info->have_stats && info->stats.end_ns > info->stats.start_ns)
				dur = info->stats.end_ns - info->stats.start_ns;
			for (size_t i = 0; i < ARRAY_SIZE(p.cpus_seen); i++)
				cpus += __builtin_popcountll(p.cpus_seen[i]);
			stats->sample_period_ns = dur * (cpus ? cpus : 1) / stats->samples;
		}
	}

	if (p.py) {
		struct pystacks_stats ps;

		pystacks_get_stats(p.py, &ps);
		stats->py_records = ps.records;
		stats->py_moved = ps.moved;
		stats->py_failed = ps.failed;
		stats->py_mismatched = ps.mismatched;
		stats->py_at_sample = ps.at_sample;
		stats->py_delay_ns = ps.records > ps.at_sample ?
				     ps.delay_sum_ns / (ps.records - ps.at_sample) : 0;
		pystacks_free(p.py);
	}
	prof_release(&p);
	return ret;
}

/* ---- live: the records of a recording being made (dlprof top) ---- */

struct profile_live {
	struct prof p;
	struct session *s;
	struct strbuf rec;
};

struct profile_live *profile_live_new(const struct profile_opts *opts,
				      const struct profile_consumer *c,
				      struct profile_stats *stats)
{
	struct profile_live *pl = xcalloc(1, sizeof(*pl));

	prof_init(&pl->p, opts, c, stats);
	pl->s = session_live_new(&prof_ops, &pl->p);
	strbuf_init(&pl->rec, 0);
	/* the [vdso]'s image is this process's (record writes it at the end) */
	if (!recfile_vdso_rec(&pl->rec))
		p_other(&pl->p, DLP_REC_FILE, pl->rec.buf, pl->rec.len);
	return pl;
}

int profile_live_record(struct profile_live *pl, uint32_t type, const void *a, size_t alen,
			const void *b, size_t blen)
{
	if (blen) {
		strbuf_reset(&pl->rec);
		strbuf_add(&pl->rec, a, alen);
		strbuf_add(&pl->rec, b, blen);
		a = pl->rec.buf;
		alen = pl->rec.len;
	}
	return session_live_record(pl->s, type, a, alen);
}

struct jitsyms *profile_live_jit(struct profile_live *pl)
{
	return pl->p.jit;
}

void profile_live_roots(struct profile_live *pl,
			const char *(*fn)(void *ctx, uint32_t pid, uint64_t time), void *ctx)
{
	machine_set_root_fn(pl->p.m, fn, ctx);
}

void profile_live_jit_miss(struct profile_live *pl, int (*fn)(void *ctx, uint32_t pid),
			   void *ctx)
{
	pl->p.jit_miss = fn;
	pl->p.jit_miss_ctx = ctx;
}

void profile_live_free(struct profile_live *pl)
{
	if (!pl)
		return;
	session_live_free(pl->s);
	if (pl->p.py)
		pystacks_free(pl->p.py);
	prof_release(&pl->p);
	strbuf_release(&pl->rec);
	free(pl);
}
