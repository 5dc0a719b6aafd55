/* dlview-findings.c - what the DL view's counters say to do: OpenMP spinning and
 * oversubscription, reorders, page faults, and the fast-path findings (fastpath.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlview-priv.h"
#include "output.h"
#include "util.h"

static uint64_t fam_samples(struct dlview *v, const char *fam)
{
	for (size_t i = 0; i < v->fam.size; i++)
		if (v->fam.tab[i].k1 == fam)
			return v->fam.tab[i].n;
	return 0;
}

static int count_bits(const uint64_t *b, size_t n)
{
	int c = 0;

	for (size_t i = 0; i < n; i++)
		c += __builtin_popcountll(b[i]);
	return c;
}

/* Python threads (those waiting DLVIEW_GIL_THREAD_PCT of their time or more) that wait
 * for the GIL longer than they run Python: at most one runs Python at a time (the
 * switch-outs read: report --sort thread, --wall) */
static size_t gil_finding(struct dlview *v, struct finding *f)
{
	double py = 0, gil = 0, wall = 0;
	int threads = 0;

	for (size_t i = 0; i < v->nr_threads; i++) {
		const struct thread_stat *t = &v->threads[i];
		double p, g, other, on, off;

		if (!t->gil_ns)
			continue;
		dlview_gil_split(v, t, &p, &g, &other);
		dlview_on_off(v, t, &on, &off);
		if (g < DLVIEW_GIL_THREAD_PCT / 100 * (on + off))
			continue;	/* it hardly waited: a main thread in join() */
		threads++;
		py += p;
		gil += g;
		wall += on + off;
	}
	if (threads < 2 || gil <= py || wall <= 0)
		return 0;
	f->id = "gil-contention";
	f->figure = 100.0 * gil / wall;
	snprintf(f->text, sizeof(f->text),
		 "%d Python threads spend %.0f%% of their time waiting for the GIL and %.0f%% "
		 "running Python: at most one runs Python at a time. Use processes "
		 "(multiprocessing, DataLoader num_workers) or native code that releases the "
		 "GIL; report --sort thread has each thread's split", threads, f->figure,
		 100.0 * py / wall);
	return 1;
}

/* The entry of m with the most, of those holding a name, not a "(no op)"; NULL when none
 * has any.  *sum: what they hold together. */
static const struct cnt *cmap_top(const struct cmap *m, uint64_t *sum)
{
	const struct cnt *top = NULL;

	*sum = 0;
	for (size_t i = 0; i < m->size; i++) {
		const struct cnt *c = &m->tab[i];

		if (!c->k1 || !c->n || c->k1[0] == '(')
			continue;
		*sum += c->n;
		if (!top || c->n > top->n || (c->n == top->n && strcmp(c->k1, top->k1) < 0))
			top = c;
	}
	return top;
}

/* The operator (else the Python line) whose samples read the most page faults (record
 * --metrics), as ", most in OP: P% of the N page faults read", or what would say it; ""
 * when the recording has none */
static void fault_op(struct dlview *v, char *buf, size_t size)
{
	const struct cnt *top;
	uint64_t sum;

	if (!v->fault_read)
		return;
	if (v->fault_switch_outs && !v->fault_switch_seen) {
		/* (the switch-outs read counts too: only report --metrics, --sort op and
		 * --sort thread stream them) */
		snprintf(buf, size, " (report --metrics --sort op or line: the page faults of each)");
		return;
	}
	/* the operators, where they took most of them (torch); else the Python lines */
	top = cmap_top(&v->op_faults, &sum);
	if (!top || sum * 2 < v->faults_read)
		top = cmap_top(&v->line_faults, &sum);
	if (top && v->faults_read) {
		/* (an operator whose calls record --op-calls counted: per call too) */
		uint64_t calls = opcounts_get(&v->opc, top->k1);
		char per[48] = "";

		if (calls)
			snprintf(per, sizeof(per), ", %.0f a call", (double)top->n / (double)calls);
		snprintf(buf, size, ", most in %s: %.0f%% of the %llu page faults read%s", top->k1,
			 pct(top->n, v->faults_read), (unsigned long long)v->faults_read, per);
	}
}

static size_t collect_findings(struct dlview *v, struct finding *f, size_t max)
{
	size_t n = 0;
	double spin;

	dlview_resolve(v);	/* thread switches counted, workers' operators known */
	spin = pct(fam_samples(v, v->f_spin), v->samples);
	double reorder = pct(fam_samples(v, v->f_reorder), v->samples);
	double fault = pct(fam_samples(v, v->f_fault), v->samples);
	int cpus = count_bits(v->cpus_seen, ARRAY_SIZE(v->cpus_seen));
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int busy = 0;
	uint64_t invol = 0, maxs = 0;
	double on_ns = 0, pre_ns = 0, waitpct, runnable = 0;

	if (!v->samples)
		return 0;
	/* CPUs of the recorded machine (META nr_cpus); else those samples ran on, at
	 * least the report machine's */
	if (v->rec_cpus)
		cpus = v->rec_cpus;
	else if (online > cpus)
		cpus = online;
	for (size_t i = 0; i < v->nr_threads; i++)
		if (v->threads[i].samples > maxs)
			maxs = v->threads[i].samples;
	for (size_t i = 0; i < v->nr_threads; i++) {
		if (v->threads[i].samples * 5 >= maxs)
			busy++;	/* within 5x of the busiest thread: runnable much of the time */
		invol += v->threads[i].invol;
		if (v->threads[i].have_switch) {
			double on, off;

			dlview_on_off(v, &v->threads[i], &on, &off);
			on_ns += on;
			pre_ns += v->threads[i].preempt_ns;
		}
	}
	/* share of the threads' runnable time spent preempted, and the average number of
	 * runnable threads (context-switch records; none without them) */
	waitpct = on_ns + pre_ns > 0 ? 100.0 * pre_ns / (on_ns + pre_ns) : 0;
	if (v->duration_ns)
		runnable = (on_ns + pre_ns) / v->duration_ns;
	if (spin > DLVIEW_SPIN_PCT && (busy > cpus || waitpct > DLVIEW_PREEMPT_PCT)) {
		f[n].id = "omp-oversubscription";
		f[n].figure = spin;
		snprintf(f[n].text, sizeof(f[n].text),
			 "OpenMP threads spin %.1f%% of samples while runnable threads waited "
			 "preempted %.1f%% of their runnable time (%.1f runnable threads of this "
			 "run on average, %d busy threads, %d CPUs, %llu involuntary switches): "
			 "the CPUs are oversubscribed%s. Set OMP_NUM_THREADS to the cores you own, or "
			 "let waiters sleep: OMP_WAIT_POLICY=passive, KMP_BLOCKTIME=0 (Intel/LLVM "
			 "OpenMP), GOMP_SPINCOUNT=0 (libgomp)", spin, waitpct, runnable, busy, cpus,
			 (unsigned long long)invol,
			 busy > cpus ? "" : " by other processes");
		n++;
	} else if (spin > DLVIEW_SPIN_PCT) {
		f[n].id = "omp-spin";
		f[n].figure = spin;
		snprintf(f[n].text, sizeof(f[n].text),
			 "OpenMP threads spin %.1f%% of samples waiting at barriers (%d busy threads, "
			 "%d CPUs): load imbalance between threads; OMP_WAIT_POLICY=passive or "
			 "GOMP_SPINCOUNT/KMP_BLOCKTIME shorten the spinning", spin, busy, cpus);
		n++;
	}
	if (reorder > DLVIEW_REORDER_PCT) {
		f[n].id = "jit-reorder";
		f[n].figure = reorder;
		snprintf(f[n].text, sizeof(f[n].text),
			 "oneDNN reorders take %.1f%% of samples: layout conversions around "
			 "convolutions (keep tensors in the blocked layout, e.g. channels_last / "
			 "to_mkldnn, or let weights be reordered once)", reorder);
		n++;
	}
	if (fault > DLVIEW_FAULT_PCT) {
		char who[256] = "";

		fault_op(v, who, sizeof(who));
		f[n].id = "page-faults";
		f[n].figure = fault;
		snprintf(f[n].text, sizeof(f[n].text),
			 "first-touch page faults take %.1f%% of samples: memory is freed and "
			 "re-allocated each step (allocator churn)%s; a caching allocator "
			 "(jemalloc/tcmalloc, MALLOC_TRIM_THRESHOLD_/MALLOC_MMAP_THRESHOLD_) keeps pages mapped",
			 fault, who);
		n++;
	}
	n += gil_finding(v, f + n);
	/* is the fast path running: oneDNN without JIT kernels, ATen and OpenBLAS below
	 * the CPU */
	n += fastpath_findings(v->fp, v->samples, f + n, max - n);
	return n;
}

/* "  * [id] text" word-wrapped at 79 columns, continuation lines indented by 4. */
static void print_wrapped(FILE *out, const char *id, const char *text)
{
	char lead[64];

	snprintf(lead, sizeof(lead), "  * [%s]", id);
	fput_wrapped(out, lead, text, 4, 79);
}

int dlview_print_findings(struct dlview *v, FILE *out, enum out_format format)
{
	struct finding f[16];
	size_t n = collect_findings(v, f, ARRAY_SIZE(f)), i;

	if (format == OUT_JSON) {
		struct json j;

		json_init(&j, out, JSON_SPACED);
		json_obj(&j);
		json_karr(&j, "findings");
		for (i = 0; i < n; i++) {
			json_pre(&j, "\n  ");
			json_obj(&j);
			json_kstr(&j, "id", f[i].id);
			json_knum(&j, "figure_pct", "%.2f", f[i].figure);
			json_kstr(&j, "text", f[i].text);
			json_end(&j);
		}
		json_raw(&j, "\n");
		json_end(&j);
		json_end(&j);
		json_raw(&j, "\n");
	} else if (format == OUT_CSV) {
		for (i = 0; i < n; i++) {
			fprintf(out, "finding,%s,%.2f,", f[i].id, f[i].figure);
			fput_csv_str(out, f[i].text);
			fputc('\n', out);
		}
	} else if (n) {
		fprintf(out, "\nFindings:\n");
		for (i = 0; i < n; i++)
			print_wrapped(out, f[i].id, f[i].text);
	}
	return (int)n;
}