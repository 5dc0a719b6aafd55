/* pprof.c - dlprof pprof: the recording as a pprof profile (profile.proto, gzipped). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attr-stream.h"
#include "cmds.h"
#include "family.h"
#include "filter.h"
#include "parse-options.h"
#include "memprof.h"
#include "pprof.h"
#include "process.h"
#include "profile.h"
#include "recfile.h"
#include "util.h"

static const char *const pprof_usage[] = {
	"dlprof pprof [-i FILE] [-o OUT.pb.gz | -o -] [--inline] [--raw-irqs] [--no-kernel] [--families FILE]",
	"dlprof pprof [OPTIONS] FILE...   (several recordings, e.g. one per rank: one profile, labelled input, host, pid, rank)",
	"dlprof pprof --memory [-i FILE] [-o OUT.pb.gz]   (a heap profile: alloc_objects, alloc_space, inuse_objects, inuse_space)",
	NULL
};

struct pprof_ctx {
	struct pprof *pp;
	int no_kernel;
	struct frame *buf;
	size_t alloc_buf;
	char *cmdline;
	uint64_t mem_mean;	/* --memory: bytes per sample on average */
	/* the labels of the recording being read: its name (several inputs), host, and the
	 * rank of each process (DLP_REC_PROC) */
	const char *input;
	char *host;
};

/* The labels of sample s: its recording, host, process and the process's rank */
static void set_source(struct pprof_ctx *c, struct machine *m, uint32_t pid)
{
	const struct proc_entry *e = proc_table_find(machine_procs(m), pid);

	pprof_set_source(c->pp, c->input, c->host, pid, e ? e->rank : NULL);
}

static void forget_input(struct pprof_ctx *c)
{
	free(c->host);
	c->host = NULL;
}

/* --no-kernel: the stack without its kernel frames (in c->buf) */
static void user_only(struct pprof_ctx *c, const struct frame **frames, size_t *nr)
{
	size_t n = 0;

	if (!c->no_kernel)
		return;
	ALLOC_GROW(c->buf, *nr + 1, c->alloc_buf);
	for (size_t i = 0; i < *nr; i++)
		if (!((*frames)[i].flags & FRAME_KERNEL))
			c->buf[n++] = (*frames)[i];
	*frames = c->buf;
	*nr = n;
}

static int pp_sample(void *ctx, const struct attributed *as)
{
	struct pprof_ctx *c = ctx;
	const struct dlp_sample *s = as->s;
	const char *comm = machine_comm_at(as->m, s->pid, s->tid, s->time);
	const struct frame *frames = as->frames;
	size_t nr = as->nr;

	user_only(c, &frames, &nr);
	set_source(c, as->m, s->pid);
	pprof_add(c->pp, frames, nr, comm, s->tid, as->a->family, attr_op_name(as->a->op, NULL),
		  1, s->period);
	return 0;
}

/* --memory: each sampled allocation's stack (its tag: the pprof handle), its values
 * added once its free is known */
static uint32_t pp_mem_frames(void *ctx, const struct frame *frames, size_t nr,
			      const char *comm, uint32_t tid, const char *family)
{
	struct pprof_ctx *c = ctx;

	user_only(c, &frames, &nr);
	return pprof_add_deferred(c->pp, frames, nr, comm, tid, family, 0, 0);
}

static int pprof_memory(struct pprof_ctx *c, const char *input, struct profile_opts *po,
			struct sample_filter *filt, struct family_rules *rules,
			struct profile_stats *st, struct session_info *sinfo)
{
	struct memprof *mp = memprof_new(rules, NULL);
	const struct mem_alloc *al;
	size_t nr;
	int ret;

	memprof_set_frames_cb(mp, pp_mem_frames, c);
	ret = memprof_run(mp, input, po, filt, st, sinfo);
	nr = ret >= 0 ? memprof_allocs(mp, &al) : 0;
	for (size_t i = 0; i < nr; i++) {
		double count = (double)al[i].weight / (double)(al[i].size ? al[i].size : 1);
		uint64_t v[4] = { (uint64_t)(count + 0.5), al[i].weight, 0, 0 };

		if (!al[i].free_time) {
			v[2] = v[0];
			v[3] = v[1];
		}
		pprof_add_memory(c->pp, al[i].tag, al[i].op, v);
	}
	if (ret >= 0 && !c->cmdline && memprof_cmdline(mp))
		c->cmdline = xstrdup(memprof_cmdline(mp));
	c->mem_mean = memprof_summary(mp)->mean;
	memprof_free(mp);
	return ret;
}

static int pp_meta(void *ctx, const char *key, const char *value)
{
	struct pprof_ctx *c = ctx;

	if (!strcmp(key, "cmdline") && !c->cmdline) {
		c->cmdline = xstrdup(value);	/* the first recording's */
	} else if (!strcmp(key, "hostname")) {
		free(c->host);
		c->host = xstrdup(value);
	}
	return 0;
}

int cmd_pprof(int argc, const char **argv)
{
	const char *input = NULL, *output = "dlprof.pb.gz", *families = NULL;
	const char *event = NULL, *symfs = NULL;
	int inl = 0, no_kernel = 0, raw_irqs = 0, memory = 0;
	struct filter_args fa = { 0 };
	const struct option options[] = {
		OPT_STRING('i', "input", &input, "FILE", "recording to read (default dlprof.data)"),
		OPT_STRING('o', "output", &output, "FILE", "profile to write (default dlprof.pb.gz; - for stdout)"),
		OPT_BOOL(0, "raw-irqs", &raw_irqs, "keep samples taken where interrupts came back on as taken"),
		OPT_BOOL(0, "inline", &inl, "include inlined functions as frames (DWARF)"),
		OPT_BOOL(0, "no-kernel", &no_kernel, "leave kernel frames out"),
		OPT_STRING(0, "families", &families, "FILE", "extra family rules, matched before the built-in ones"),
		OPT_STRING('e', "event", &event, "NAME", "the samples of this event (default the first recorded)"),
		OPT_STRING(0, "symfs", &symfs, "DIR", "read the recorded files under DIR (a copy of the recording machine's files; default $DLPROF_SYMFS)"),
		OPT_BOOL(0, "memory", &memory, "a heap profile of a record --memory recording: alloc_objects, alloc_space, inuse_objects, inuse_space (in use: live at exit)"),
		OPT_FILTERS(fa),
		OPT_END(),
	};
	struct profile_opts po;
	struct profile_stats st, sum;
	struct session_info sinfo;
	struct attr_view v = { .sample = pp_sample, .meta = pp_meta };
	struct pprof_info pi;
	struct pprof_ctx c;
	const char **inputs;
	int nr_inputs;
	uint64_t dur, duration = 0;
	struct family_rules *rules;
	struct sample_filter filt;
	uint64_t samples;
	size_t nfuncs, nstacks;
	FILE *out = NULL;
	int ret, to_stdout;
	char comment[512];

	argc = parse_options(argc, argv, options, pprof_usage, 0);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	nr_inputs = reader_inputs(argc, argv, &input, symfs, &inputs);
	if (nr_inputs < 0)
		return nr_inputs == -1 ? EXIT_USAGE : EXIT_FATAL;
	if (filter_init(&filt, &fa) < 0) {
		filter_release(&filt);
		return EXIT_USAGE;
	}
	to_stdout = !strcmp(output, "-");
	if (to_stdout && isatty(1)) {
		error("not writing a compressed profile to a terminal: give -o FILE");
		filter_release(&filt);
		return EXIT_USAGE;
	}
	memset(&c, 0, sizeof(c));
	if (memory && (event || fa.family || fa.op || nr_inputs > 1)) {
		error("--memory takes one recording, and no -e, --family or --op");
		filter_release(&filt);
		return EXIT_USAGE;
	}
	rules = family_rules_load(families);
	if (!rules) {
		filter_release(&filt);
		return EXIT_FATAL;
	}
	c.pp = memory ? pprof_new_memory() : pprof_new();
	c.no_kernel = no_kernel;
	memset(&po, 0, sizeof(po));
	po.inline_frames = inl;
	po.raw_irqs = raw_irqs;
	po.event = event;
	v.ctx = &c;
	memset(&sum, 0, sizeof(sum));
	ret = 0;
	for (int k = 0; k < nr_inputs && ret >= 0; k++) {
		int r1;

		/* each recording its own attribution: its pids, threads and clock are its own */
		c.input = nr_inputs > 1 ? inputs[k] : NULL;
		memset(&sinfo, 0, sizeof(sinfo));
		if (memory)
			r1 = pprof_memory(&c, inputs[k], &po, &filt, rules, &st, &sinfo);
		else
			r1 = attr_stream_run(inputs[k], &po, &filt, rules, &v, &st, &sinfo);
		forget_input(&c);
		if (r1 < 0) {
			ret = -1;
			break;
		}
		if (r1 == 1 || sinfo.bad_records)
			ret = 1;
		/* one profile: the first event, and the longest recording's duration */
		if (!k)
			sum = st;
		else {
			sum.samples += st.samples;
			sum.filtered_out += st.filtered_out;
		}
		if (sinfo.have_stats && sinfo.stats.end_ns > sinfo.stats.start_ns)
			dur = sinfo.stats.end_ns - sinfo.stats.start_ns;
		else
			dur = st.last_time - st.first_time;
		if (dur > duration)
			duration = dur;
	}
	if (ret >= 0) {
		memset(&pi, 0, sizeof(pi));
		pi.event = sum.event[0] ? sum.event : NULL;
		pi.event_is_time = sum.sample_is_time;
		pi.ns_per_sample = memory ? c.mem_mean : sum.sample_period_ns;
		pi.duration_ns = duration;
		snprintf(comment, sizeof(comment), "dlprof: %s%s", c.cmdline ? c.cmdline : inputs[0],
			 nr_inputs > 1 ? " (and more recordings)" : "");
		pi.comment = comment;
		out = to_stdout ? stdout : fopen(output, "wb");
		if (!out) {
			error("cannot write '%s': %m", output);
			ret = -1;
		} else {
			int werr = pprof_write(c.pp, &pi, out) < 0;

			werr |= (to_stdout ? fflush(out) : fclose(out)) != 0;
			if (werr) {
				error("cannot write '%s': %m", output);
				ret = -1;
			}
		}
		if (ret >= 0) {
			pprof_counts(c.pp, &samples, &nfuncs, &nstacks);
			if (!to_stdout)
				fprintf(stderr, "dlprof: wrote %s: %llu samples, %zu functions, "
					"%zu stacks%s\n", output, (unsigned long long)samples, nfuncs,
					nstacks, nr_inputs > 1 ? " (labels input, host, pid, rank)" : "");
			if (filter_active(&filt))
				info("pprof: %s: %llu of %llu samples kept", filt.desc,
				     (unsigned long long)sum.samples,
				     (unsigned long long)(sum.samples + sum.filtered_out));
		}
	}
	pprof_free(c.pp);
	family_rules_free(rules);
	free(c.buf);
	free(c.cmdline);

	filter_release(&filt);
	if (ret < 0)
		return EXIT_FATAL;
	return ret == 1 ? EXIT_PARTIAL : EXIT_OK;
}
