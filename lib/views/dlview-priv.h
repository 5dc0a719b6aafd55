/* dlview-priv.h - the DL view's counters, shared by its three parts: aggregation
 * (dlview.c: each attributed sample, attr-stream.h, counted once), the tables
 * (dlview-table.c, dlview-ops.c) and the findings (dlview-findings.c). */
#ifndef DLPROF_DLVIEW_PRIV_H
#define DLPROF_DLVIEW_PRIV_H

#include "attr-stream.h"
#include "process.h"
#include "dlview.h"
#include "switches.h"
#include "fastpath.h"
#include "json.h"
#include "opcounts.h"
#include "output.h"
#include "tabw.h"

/* A counter keyed by up to two interned strings (pointer identity). */
struct cnt {
	const char *k1, *k2;
	uint64_t n, n2;
};

struct cmap {
	struct cnt *tab;
	size_t nr, size;
};

struct cnt *dlview_cmap_get(struct cmap *m, const char *k1, const char *k2);
/* The entry, or NULL (nothing added) */
struct cnt *dlview_cmap_find(const struct cmap *m, const char *k1, const char *k2);
/* Entries sorted by n descending (then name); free *out. */
size_t dlview_cmap_sorted(const struct cmap *m, struct cnt ***out);

struct thread_stat {
	uint32_t pid, tid;
	const char *comm;
	const char *pidkey;	/* the pid as interned text: the key of proc_fam */
	uint64_t samples, spin;
	uint64_t clock_ns;	/* its CPU samples' periods: ns counted where the event is
				   a clock (dlview.clock) */
	uint64_t on_ns, off_ns;
	uint64_t vol, invol;
	uint64_t last_in, last_out;
	uint64_t preempt_ns;	/* off-CPU after an involuntary switch: runnable, waiting */
	uint64_t gil_ns, gil_waits;	/* its switch-outs in family wait-gil: waits for the GIL */
	uint64_t *gil_at;	/* their times */
	size_t nr_gil_at, alloc_gil_at;
	uint64_t gil_preempted;	/* of them, preempted there (the switch record says): still
				   runnable, which a free-threaded build with its GIL off is
				   where take_gil returns at once */
	uint64_t py_samples;	/* its CPU samples with Python frames (running Python) */
	uint64_t held_samples;	/* its CPU samples holding the GIL (read in the kernel) */
	uint64_t held_off_ns;	/* off the CPU from a switch-out holding the GIL */
	int have_switch, out_preempted;
	int interp_seen;	/* its interpreter's file looked at (free_threaded) */
};

struct dlview {
	const struct family_rules *rules;
	struct attr_stream *as;	/* what each sample is */
	struct attr *attr;	/* its attribution: the ITT tasks, the oneDNN calls */
	struct attr_view also;	/* the reader's own view of the same samples */
	struct switches sw;	/* the context switches, sorted when resolved */
	uint64_t samples;
	struct cmap fam;	/* family -> samples */
	struct cmap famsym;	/* (family, sym) -> samples */
	struct cmap op_self;	/* op -> samples */
	struct cmap op_wait;	/* op -> ns its threads' switch-outs in it kept them off the
				   CPU (where the view reads them: report --sort op) */
	struct cmap op_total;	/* op -> samples with op anywhere in the stack */
	struct cmap op_prim;	/* (op, oneDNN primitive) -> samples */
	struct cmap itt_samp;	/* (ITT task name, family) -> samples taken inside such a task */
	/* by oneDNN primitive (attr.h prim_desc; key: its description, or "dnnl:KIND" when
	 * the task's primitive was not described): samples, (key, op), (key, Python line) */
	struct cmap prim_samp, prim_op, prim_line;
	struct fastpath *fp_prims;	/* the kernels each primitive ran, by the same key */
	/* Python (attr.h pychain): samples by chain, by (chain, op), by (chain, family), by
	 * (op, innermost Python line); the file of each Python frame (k1 sym, k2 path) */
	struct cmap py_chain, py_chain_op, py_chain_fam, op_pyline, py_path;
	struct thread_stat *threads;
	size_t nr_threads, alloc_threads, last_thread;
	struct proc_table procs;	/* what record read of each process (--sort pid) */
	struct cmap proc_fam;	/* (pid as interned text, family) -> samples */
	uint64_t cpus_seen[4];	/* bitmap of sample CPUs (first 256) */
	uint64_t op_samples_in_fw;	/* samples in aten/dnnl/jit/gemm code ... */
	uint64_t fw_samples;		/* ... and how many of them got an op */
	uint64_t fw_by[ATTR_PHASE + 1];	/* ... and how (enum attr_source) */
	int resolved;
	int rec_cpus;		/* nr_cpus of the recorded machine (META), 0 unknown */
	int attached;		/* record -p: the processes ran without the ITT collector */
	int cpu_wide;		/* record -a, --cgroup: a sampling clock per cpu, not per
				   thread (META system_wide, cgroup_events) */
	char *itt_warn;		/* record's warning on why there are no ITT tasks */
	int itt_meta;		/* META itt: 1 on, 0 off (--no-itt), -1 not said (perf.data) */
	struct fastpath *fp;	/* is the fast path running: kernels per primitive, ISA facts */
	double ns_per_sample;
	int clock;		/* the samples' event counts ns (cpu-clock, task-clock) */
	uint64_t duration_ns;
	char event[64];
	const char *f_spin, *f_reorder, *f_fault, *f_gil;
	int waits_apart;	/* dlview_waits_apart(): 1, 2 passed on to also */
	int fault_read;		/* page-faults' place in the samples' counts (META
				   metrics), 0: not read */
	int fault_switch_outs;	/* ... the switch-outs read them too (META) */
	struct opcounts opc;	/* record --op-calls: each operator's calls (META) */
	struct u64map exits;	/* tid -> its exit's time (its last, a tid taken again) */
	uint64_t end_ns;	/* the recording's last sample's time (dlview_set_stats) */
	struct u64map import_at;	/* a Python chain -> the line it imports from */
	int fault_switch_seen;	/* ... and such a switch-out came */
	struct cmap op_faults;	/* op -> the page faults its samples read */
	struct cmap line_faults;	/* Python line -> the same */
	uint64_t faults_read;
	int waits_seen;		/* switch-outs came (their families known) */
	int gil_known;		/* a sample said its thread held the GIL: who holds it is read */
	char *free_threaded;	/* a free-threaded interpreter's file seen: no GIL (a copy) */
};

/* A Python thread's wall time split for the GIL (thread table, gil-contention): on the
 * CPU in Python, waiting for the GIL, the rest off the CPU; ns */
void dlview_gil_split(const struct dlview *v, const struct thread_stat *t, double *py,
		      double *gil, double *other_off);
/* t's time holding the GIL: its CPU samples that held it (a share of its on-CPU time) and
 * its time off the CPU from switch-outs that held it */
double dlview_gil_held(const struct dlview *v, const struct thread_stat *t);

/* Count the thread switches in (once, before reading any table). */
void dlview_resolve(struct dlview *v);

/* The tables' cells (dlview-cells.c): a cell cut or padded to width; the top entries of
 * a count map under key; a Python frame's file, function and line from its symbol
 * ("fn (file.py:12)").  Durations: output_duration_ns (output.h). */
void dlview_put_cell(FILE *out, const char *s, size_t width, int right);
/* The same into a string of the caller's (a tabw cell's text) */
char *dlview_fit(const char *s, size_t width, int right);
size_t dlview_top_of(const struct cmap *m, const char *key, const struct cnt **out, size_t max);
const char *dlview_py_path(struct dlview *v, const char *sym);
void dlview_py_parts(const char *sym, char *fn, size_t fnsz, int *line);
/* A DL table's JSON: {"kind": KIND, "samples": N, left open for its fields and its
 * "rows" array; dlview_json_end closes both, the rows' last line ended first */
void dlview_json_begin(struct json *j, FILE *out, const char *kind, uint64_t samples);
void dlview_json_end(struct json *j);
/* A DL table t in fmt: text and CSV as tabw prints them, JSON in the DL frame above
 * with no fields but its rows */
void dlview_print_table(struct dlview *v, struct tabw *t, FILE *out, enum out_format fmt,
			const char *kind);
/* A row's samples n as the DL tables show them, three cells: its share of the run's
 * samples (to places decimals), the count, and the time they stand for */
void dlview_share_cells(const struct dlview *v, struct tabw *t, uint64_t n, int places);
/* The operator table (dlview-ops.c) */
void dlview_print_op(struct dlview *v, FILE *out, enum out_format fmt, size_t limit);
/* The primitive table (dlview-prims.c) */
void dlview_print_prim(struct dlview *v, FILE *out, enum out_format fmt, size_t limit);

/* Shared by the tables and the findings (dlview-table.c) */
void dlview_on_off(const struct dlview *v, const struct thread_stat *t, double *on, double *off);

#endif
