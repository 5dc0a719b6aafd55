/* sweep.c - the thread sweep (sweep.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <regex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attr-stream.h"
#include "family-rules.h"
#include "family.h"
#include "json.h"
#include "output.h"
#include "profile.h"
#include "sweep.h"
#include "util.h"

#define MAX_SETTINGS 64
#define MAX_CPUS 4096
#define TOP_FAMS 3

/* ---- the machine ---- */

struct topo {
	int cpus;		/* allowed to this process */
	int sockets, cores, smt, nodes;
	int cores_first;	/* cores of the first socket (allowed ones) */
	cpu_set_t first;	/* the first socket's allowed CPUs */
	int first_pkg;
};

static int read_int(const char *fmt, int cpu)
{
	char path[128], buf[32];
	int fd, v = -1;
	ssize_t n;

	snprintf(path, sizeof(path), fmt, cpu);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		v = atoi(buf);
	}
	return v;
}

static void topology(struct topo *t)
{
	static int pkg[MAX_CPUS], core[MAX_CPUS];
	cpu_set_t set;
	int n = 0;
	struct stat st;
	char path[64];

	memset(t, 0, sizeof(*t));
	CPU_ZERO(&t->first);
	if (sched_getaffinity(0, sizeof(set), &set))
		CPU_ZERO(&set);
	t->first_pkg = -1;
	for (int c = 0; c < CPU_SETSIZE && c < MAX_CPUS; c++) {
		int p, k, seen_core = 0, seen_pkg = 0;

		if (!CPU_ISSET(c, &set))
			continue;
		p = read_int("/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
		k = read_int("/sys/devices/system/cpu/cpu%d/topology/core_id", c);
		for (int i = 0; i < n; i++) {
			seen_pkg |= pkg[i] == p;
			seen_core |= pkg[i] == p && core[i] == k;
		}
		if (t->first_pkg < 0)
			t->first_pkg = p;
		if (p == t->first_pkg) {
			CPU_SET(c, &t->first);
			if (!seen_core)
				t->cores_first++;
		}
		t->sockets += !seen_pkg;
		t->cores += !seen_core;
		pkg[n] = p;
		core[n] = k;
		n++;
	}
	t->cpus = n;
	if (!t->cores)
		t->cores = t->cpus ? t->cpus : 1;
	if (!t->sockets)
		t->sockets = 1;
	if (!t->cores_first)
		t->cores_first = t->cores;
	t->smt = t->cpus / t->cores ? t->cpus / t->cores : 1;
	for (int i = 0; i < 1024; i++) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", i);
		if (stat(path, &st))
			break;
		t->nodes++;
	}
	if (!t->nodes)
		t->nodes = 1;
}

/* ---- settings and runs ---- */

enum { WAIT_DEFAULT, WAIT_ACTIVE, WAIT_PASSIVE };
static const char *const wait_names[] = { "default", "active", "passive" };

struct run {
	int done, status;	/* status: the workload's exit code (record passes it on) */
	double wall, cpu;	/* seconds: the workload's wall time, its CPU time */
	double metric;
	int have_metric;
	uint64_t samples;
	double spin;		/* omp-spin share of the samples */
	const char *fam[TOP_FAMS];
	double fam_share[TOP_FAMS];
};

struct setting {
	int threads, wait;
	char name[48];
	struct run *runs;	/* repeat of them */
	/* medians of the finished good runs */
	int good;
	double wall, wall_min, wall_max, cpu, metric, spin;
	int have_metric;
	const char *fam[TOP_FAMS];
	double fam_share[TOP_FAMS];
	int failed_status;
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	interrupted = 1;
}

/* Run one setting once: `dlprof record` with its environment.  Returns the child's wait
 * status, -1 when it could not start. */
static int run_one(const struct sweep_opts *o, const struct topo *t, const struct setting *s,
		   const char *data, const char *out)
{
	char num[16], freq[24];
	pid_t pid;
	int st;

	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		const char **args = xcalloc(16 + 256, sizeof(*args));
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int n = 0;

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		snprintf(num, sizeof(num), "%d", s->threads);
		setenv("OMP_NUM_THREADS", num, 1);
		setenv("MKL_NUM_THREADS", num, 1);
		if (s->threads <= t->cores) {
			setenv("OMP_PROC_BIND", "close", 1);
			setenv("OMP_PLACES", "cores", 1);
		} else {
			setenv("OMP_PROC_BIND", "false", 1);	/* oversubscribed: let them move */
			unsetenv("OMP_PLACES");
		}
		if (t->sockets > 1 && s->threads <= t->cores_first)
			sched_setaffinity(0, sizeof(t->first), &t->first);
		if (s->wait == WAIT_ACTIVE) {
			setenv("OMP_WAIT_POLICY", "active", 1);
			setenv("GOMP_SPINCOUNT", "infinite", 1);
			setenv("KMP_BLOCKTIME", "infinite", 1);
		} else if (s->wait == WAIT_PASSIVE) {
			setenv("OMP_WAIT_POLICY", "passive", 1);
			setenv("GOMP_SPINCOUNT", "0", 1);
			setenv("KMP_BLOCKTIME", "0", 1);
		}
		snprintf(freq, sizeof(freq), "%lu", o->freq);
		args[n++] = o->self;
		args[n++] = "record";
		args[n++] = "-q";
		args[n++] = "--no-python";	/* the figures are the workload's, not the reader's */
		args[n++] = "-F";
		args[n++] = freq;
		args[n++] = "-o";
		args[n++] = data;
		args[n++] = "--";
		for (int i = 0; o->argv[i] && n < 16 + 250; i++)
			args[n++] = o->argv[i];
		args[n] = NULL;
		execv(o->self, (char *const *)args);
		fprintf(stderr, "dlprof sweep: cannot run '%s': %s\n", o->self, strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return st;
}

/* ---- one recording's figures ---- */

struct fam_count {
	const char *family;
	uint64_t n;
};

struct analysis {
	struct fam_count fams[64];
	size_t nr_fams;
	uint64_t samples;
};

static int an_sample(void *ctx, const struct attributed *as)
{
	struct analysis *a = ctx;
	const char *family = as->a->family;
	size_t i;

	a->samples++;
	for (i = 0; i < a->nr_fams && a->fams[i].family != family; i++)
		;
	if (i == a->nr_fams && i < ARRAY_SIZE(a->fams))
		a->fams[a->nr_fams++] = (struct fam_count){ family, 0 };
	if (i < a->nr_fams)
		a->fams[i].n++;
	return 0;
}

static int cmp_fam_count(const void *x, const void *y)
{
	const struct fam_count *a = x, *b = y;

	return a->n != b->n ? (a->n > b->n ? -1 : 1) : strcmp(a->family, b->family);
}

static int analyse(const char *data, const struct family_rules *rules, struct run *r)
{
	struct analysis a;
	struct attr_view v = { .sample = an_sample, .ctx = &a };
	struct profile_opts po;
	struct profile_stats st;
	struct session_info info;
	int ret;

	memset(&a, 0, sizeof(a));
	memset(&po, 0, sizeof(po));
	po.no_python = 1;
	ret = attr_stream_run(data, &po, NULL, rules, &v, &st, &info);
	if (ret < 0)
		return -1;
	r->samples = a.samples;
	if (info.have_stats && info.stats.end_ns > info.stats.start_ns)
		r->wall = (info.stats.end_ns - info.stats.start_ns) / 1e9;
	r->cpu = a.samples * (double)(st.sample_period_ns ? st.sample_period_ns : 0) / 1e9;
	qsort(a.fams, a.nr_fams, sizeof(a.fams[0]), cmp_fam_count);
	for (size_t i = 0; i < a.nr_fams; i++) {
		if (i < TOP_FAMS) {
			r->fam[i] = a.fams[i].family;
			r->fam_share[i] = a.samples ? 100.0 * a.fams[i].n / a.samples : 0;
		}
		if (!strcmp(a.fams[i].family, "omp-spin"))
			r->spin = a.samples ? 100.0 * a.fams[i].n / a.samples : 0;
	}
	return 0;
}

/* The workload's figure: the last match of the regex's first group in its output. */
static int find_metric(const regex_t *re, const char *out, double *v)
{
	FILE *f = fopen(out, "r");
	char line[4096];
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		regmatch_t m[2];

		if (!regexec(re, line, 2, m, 0) && m[1].rm_so >= 0) {
			line[m[1].rm_eo] = '\0';
			*v = strtod(line + m[1].rm_so, NULL);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* ---- summary ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void summarize(struct setting *s, int repeat)
{
	double w[64], c[64], m[64], sp[64];
	int n = 0, nm = 0;

	s->good = 0;
	for (int r = 0; r < repeat; r++) {
		const struct run *x = &s->runs[r];

		if (!x->done)
			continue;
		if (x->status) {
			s->failed_status = x->status;
			continue;
		}
		w[n] = x->wall;
		c[n] = x->cpu;
		sp[n] = x->spin;
		if (x->have_metric)
			m[nm++] = x->metric;
		if (!n || x->wall < s->wall_min)
			s->wall_min = x->wall;
		if (!n || x->wall > s->wall_max)
			s->wall_max = x->wall;
		if (!n)
			for (int k = 0; k < TOP_FAMS; k++) {
				s->fam[k] = x->fam[k];
				s->fam_share[k] = x->fam_share[k];
			}
		n++;
	}
	s->good = n;
	if (!n)
		return;
	s->wall = median(w, n);
	s->cpu = median(c, n);
	s->spin = median(sp, n);
	s->have_metric = nm > 0;
	if (nm)
		s->metric = median(m, nm);
}

/* The 1-thread setting of a wait policy: the speedups' base. */
static const struct setting *one_thread(const struct setting *set, int nset, int wait)
{
	for (int k = 0; k < nset; k++)
		if (set[k].threads == 1 && set[k].wait == wait)
			return &set[k];
	return NULL;
}

/* the speedup of s against the 1-thread setting of the same wait policy */
static double speedup(const struct sweep_opts *o, const struct setting *base, const struct setting *s)
{
	if (!base || !base->good || !s->good)
		return NAN;
	if (o->metric && base->have_metric && s->have_metric && base->metric > 0 && s->metric > 0)
		return o->metric_higher ? s->metric / base->metric : base->metric / s->metric;
	return s->wall > 0 ? base->wall / s->wall : NAN;
}

static void print_table(const struct sweep_opts *o, const struct topo *t, struct setting *set,
			int nset, int repeat, int done_all)
{
	const struct setting *best = NULL;
	FILE *out = stdout;

	for (int i = 0; i < nset; i++)
		if (set[i].good && (!best || set[i].wall < best->wall))
			best = &set[i];
	if (o->metric) {	/* with a figure, the best is the best figure */
		const struct setting *bm = NULL;

		for (int i = 0; i < nset; i++)
			if (set[i].good && set[i].have_metric &&
			    (!bm || (o->metric_higher ? set[i].metric > bm->metric : set[i].metric < bm->metric)))
				bm = &set[i];
		if (bm)
			best = bm;
	}
	if (o->format == OUT_JSON) {
		struct json j;

		json_init(&j, out, JSON_COMPACT);
		json_obj(&j);
		json_kstr(&j, "command", o->argv[0] ? o->argv[0] : "");
		json_ki64(&j, "cpus", t->cpus);
		json_ki64(&j, "sockets", t->sockets);
		json_ki64(&j, "cores", t->cores);
		json_ki64(&j, "smt", t->smt);
		json_ki64(&j, "nodes", t->nodes);
		json_ki64(&j, "repeat", repeat);
		json_kbool(&j, "complete", done_all);
		json_kstr(&j, "dir", o->dir ? o->dir : "");
		json_karr(&j, "settings");
		for (int i = 0; i < nset; i++) {
			const struct setting *s = &set[i], *base = one_thread(set, nset, s->wait);

			json_obj(&j);
			json_kstr(&j, "name", s->name);
			json_ki64(&j, "threads", s->threads);
			json_kstr(&j, "wait", wait_names[s->wait]);
			json_ki64(&j, "runs", s->good);
			json_ki64(&j, "failed_status", s->failed_status);
			if (s->good) {
				double su = speedup(o, base, s);

				json_knum(&j, "wall_s", "%.6f", s->wall);
				json_knum(&j, "wall_min_s", "%.6f", s->wall_min);
				json_knum(&j, "wall_max_s", "%.6f", s->wall_max);
				json_knum(&j, "cpu_s", "%.6f", s->cpu);
				json_knum(&j, "omp_spin_pct", "%.3f", s->spin);
				if (s->have_metric)
					json_knum(&j, "metric", "%.6g", s->metric);
				if (!isnan(su)) {
					json_knum(&j, "speedup", "%.4f", su);
					json_knum(&j, "efficiency", "%.4f", su / s->threads);
				}
				json_karr(&j, "families");
				for (int k = 0; k < TOP_FAMS && s->fam[k]; k++) {
					json_obj(&j);
					json_kstr(&j, "family", s->fam[k]);
					json_knum(&j, "pct", "%.3f", s->fam_share[k]);
					json_end(&j);
				}
				json_end(&j);
			}
			json_end(&j);
		}
		json_end(&j);
		json_kstr(&j, "best", best ? best->name : NULL);
		json_end(&j);
		json_raw(&j, "\n");
		return;
	}
	fprintf(out, "# sweep:   %s%s\n", o->argv[0], o->argv[1] ? " ..." : "");
	fprintf(out, "# machine: %d socket%s, %d core%s (%d thread%s each), %d NUMA node%s; %d CPU%s "
		"allowed\n", t->sockets, t->sockets > 1 ? "s" : "", t->cores, t->cores > 1 ? "s" : "",
		t->smt, t->smt > 1 ? "s" : "", t->nodes, t->nodes > 1 ? "s" : "", t->cpus,
		t->cpus > 1 ? "s" : "");
	fprintf(out, "# runs:    %d setting%s x %d, recorded at %lu Hz into %s%s\n\n", nset,
		nset > 1 ? "s" : "", repeat, o->freq, o->dir,
		done_all ? "" : " (interrupted: what finished)");
	fprintf(out, "%-22s %9s %8s %9s %8s %6s %5s %8s  %s\n", "Setting", "Wall", "spread",
		o->metric ? "Metric" : "", "Speedup", "Effic.", "CPU", "omp-spin", "Top families");
	for (int i = 0; i < nset; i++) {
		const struct setting *s = &set[i], *base = one_thread(set, nset, s->wait);
		char fams[160] = "", metric[32] = "";
		double su;

		if (!s->good) {
			fprintf(out, "%-22s %s\n", s->name, s->failed_status ?
				"failed (exit status below)" : "not run");
			if (s->failed_status)
				fprintf(out, "%-22s   exit %d: see %s/%s.*.out\n", "", s->failed_status,
					o->dir, s->name);
			continue;
		}
		for (int k = 0; k < TOP_FAMS && s->fam[k]; k++) {
			size_t l = strlen(fams);

			snprintf(fams + l, sizeof(fams) - l, "%s%s %.0f%%", k ? ", " : "", s->fam[k],
				 s->fam_share[k]);
		}
		if (s->have_metric)
			snprintf(metric, sizeof(metric), "%.4g", s->metric);
		su = speedup(o, base, s);
		fprintf(out, "%-22s %8.3fs %7.1f%% %9s ", s->name, s->wall,
			s->wall > 0 ? 100.0 * (s->wall_max - s->wall_min) / 2 / s->wall : 0.0, metric);
		if (isnan(su))
			fprintf(out, "%8s %6s ", "-", "-");
		else
			fprintf(out, "%7.2fx %5.0f%% ", su, 100.0 * su / s->threads);
		fprintf(out, "%5.1f %7.1f%%  %s\n", s->wall > 0 ? s->cpu / s->wall : 0.0, s->spin, fams);
	}
	if (best) {
		const struct setting *base = one_thread(set, nset, best->wait);

		fprintf(out, "\nBest: %s", best->name);
		if (!isnan(speedup(o, base, best)))
			fprintf(out, ": %.2fx", speedup(o, base, best));
		fprintf(out, ", spin %.1f%%", best->spin);
		for (int i = 0; i < nset; i++) {
			const struct setting *s = &set[i];

			if (s == best || !s->good)
				continue;
			if (s->threads > t->cores)
				fprintf(out, "; %s on %d core%s: oversubscribed, spin %.1f%%", s->name,
					t->cores, t->cores > 1 ? "s" : "", s->spin);
			else if (s->threads > best->threads && s->wall > best->wall)
				fprintf(out, "; %s: slower (%.2fx the time), spin %.1f%%", s->name,
					s->wall / best->wall, s->spin);
		}
		fputs("\n", out);
	}
}

/* ---- the sweep ---- */

static int parse_list(const char *s, int *v, int max, int lo, int hi, const char *what)
{
	int n = 0;
	char *copy = xstrdup(s), *p = copy, *tok;

	while ((tok = strsep(&p, ","))) {
		char *end;
		long x = strtol(tok, &end, 10);

		if (!*tok || *end || x < lo || x > hi || n == max) {
			error("bad %s '%s' (want numbers %d..%d, comma-separated)", what, tok, lo, hi);
			free(copy);
			return -1;
		}
		v[n++] = (int)x;
	}
	free(copy);
	return n;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int sweep_run(const struct sweep_opts *o)
{
	struct topo t;
	int threads[MAX_SETTINGS], nt = 0, waits[3], nw = 0, nset = 0, ret = 0, ok_runs = 0;
	struct setting set[MAX_SETTINGS];
	struct family_rules *rules;
	struct sigaction sa, old_int, old_term;
	regex_t re;

	topology(&t);
	threads[nt++] = 1;
	threads[nt++] = t.cores_first;
	threads[nt++] = t.cores;
	if (o->threads) {
		int n = parse_list(o->threads, threads + nt, MAX_SETTINGS / 3 - nt, 1, 4096, "thread count");

		if (n < 0)
			return DLP_USAGE;
		nt += n;
	}
	qsort(threads, nt, sizeof(int), cmp_int);
	{
		int k = 0;

		for (int i = 0; i < nt; i++)
			if (!k || threads[k - 1] != threads[i])
				threads[k++] = threads[i];
		nt = k;
	}
	if (o->wait) {
		char *copy = xstrdup(o->wait), *p = copy, *tok;

		while ((tok = strsep(&p, ","))) {
			int w = !strcmp(tok, "active") ? WAIT_ACTIVE : !strcmp(tok, "passive") ?
				WAIT_PASSIVE : !strcmp(tok, "default") ? WAIT_DEFAULT : -1;

			if (w < 0 || nw == 3) {
				error("bad wait policy '%s' (active, passive or default)", tok);
				free(copy);
				return DLP_USAGE;
			}
			waits[nw++] = w;
		}
		free(copy);
	} else {
		waits[nw++] = WAIT_DEFAULT;
	}
	if (o->repeat < 1 || o->repeat > 64)
		return error("--repeat takes 1..64"), DLP_USAGE;
	if (o->metric && regcomp(&re, o->metric, REG_EXTENDED)) {
		error("bad --metric regular expression '%s'", o->metric);
		return DLP_USAGE;
	}
	if (o->metric && re.re_nsub < 1) {
		regfree(&re);
		error("--metric '%s' needs a group: the number, e.g. 'step=([0-9.]+)ms'", o->metric);
		return DLP_USAGE;
	}
	if (mkdir(o->dir, 0755) && errno != EEXIST) {
		error("cannot create '%s': %m", o->dir);
		if (o->metric)
			regfree(&re);
		return DLP_FAILED;
	}
	rules = family_rules_load(NULL);
	if (!rules) {
		if (o->metric)
			regfree(&re);
		return DLP_FAILED;
	}
	for (int w = 0; w < nw; w++)
		for (int i = 0; i < nt && nset < MAX_SETTINGS; i++) {
			struct setting *s = &set[nset++];

			memset(s, 0, sizeof(*s));
			s->threads = threads[i];
			s->wait = waits[w];
			snprintf(s->name, sizeof(s->name), "%d-thread%s%s%s", s->threads,
				 s->threads > 1 ? "s" : "", s->wait ? "-" : "",
				 s->wait ? wait_names[s->wait] : "");
			s->runs = xcalloc(o->repeat, sizeof(*s->runs));
		}
	/* Ctrl-C: the run in progress ends (record passes it on), the sweep prints what
	 * finished */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	for (int r = 0; r < o->repeat && !interrupted; r++)
		for (int i = 0; i < nset && !interrupted; i++) {
			struct setting *s = &set[i];
			struct run *x = &s->runs[r];
			char *data = xasprintf("%s/%s.%d.data", o->dir, s->name, r + 1);
			char *out = xasprintf("%s/%s.%d.out", o->dir, s->name, r + 1);
			int st;

			if (o->format != OUT_JSON)
				fprintf(stderr, "dlprof sweep: %s, run %d of %d\n", s->name, r + 1, o->repeat);
			st = run_one(o, &t, s, data, out);
			if (interrupted) {
				free(data);
				free(out);
				break;
			}
			x->done = 1;
			x->status = st < 0 ? 127 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			if (!x->status && analyse(data, rules, x) < 0)
				x->status = 2;
			if (!x->status)
				ok_runs++;
			if (o->metric)
				x->have_metric = find_metric(&re, out, &x->metric);
			if (x->status)
				fprintf(stderr, "dlprof sweep: %s run %d failed with status %d (its output: %s)\n",
					s->name, r + 1, x->status, out);
			free(data);
			free(out);
		}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	for (int i = 0; i < nset; i++)
		summarize(&set[i], o->repeat);
	print_table(o, &t, set, nset, o->repeat, !interrupted);
	if (interrupted)
		ret = DLP_PARTIAL;
	else if (!ok_runs) {
		error("no run of '%s' succeeded (outputs in %s)", o->argv[0], o->dir);
		ret = DLP_FAILED;
	}
	for (int i = 0; i < nset; i++)
		free(set[i].runs);
	family_rules_free(rules);
	if (o->metric)
		regfree(&re);
	return ret;
}
