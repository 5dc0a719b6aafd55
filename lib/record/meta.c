/* meta.c - what the recording lacks, said at its end, and its META record (recorder.h). */
#include "python/pybpf-prog.h"
#include "recorder.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>

/* ---- end of record: build-ids, kernel symbols, JIT, ITT, meta, stats ---- */


/* The user's JIT profile setting when it keeps oneDNN from publishing its kernels
 * (ONEDNN_JIT_PROFILE without the perf map (2) and jitdump (4) bits), else NULL. */
static const char *jit_profile_off(const struct recorder *r, const char **var)
{
	static const char *const vars[] = { "ONEDNN_JIT_PROFILE", "DNNL_JIT_PROFILE" };

	if (r->jit.ours)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		const char *v = getenv(vars[i]);

		if (v && !(strtoul(v, NULL, 0) & 6)) {
			*var = vars[i];
			return v;
		}
	}
	return NULL;
}

/*
 * What the recording lacks that the user expects, said once the run is over: JIT code
 * that ran unnamed (no perf map or jitdump covers its samples), a oneDNN workload that
 * never called the ITT collector.
 */
void meta_check_missing(struct recorder *r)
{
	uint64_t unnamed = 0, seen;
	int contained = 0;	/* of those, in a container record did not start */

	jitcov_place_pending(r);
	seen = r->jit.nr_anon_ips;
	for (size_t i = 0; i < r->jit.nr_anon_ips; i++)
		if (!jitsyms_find(r->jit.syms, (int32_t)r->jit.anon_ips[i].pid, r->jit.anon_ips[i].ip)) {
			int root;
			uint32_t ns;

			unnamed++;
			if (!r->given.argv && !proc_roots_pid(&r->roots, r->jit.anon_ips[i].pid, &root, &ns) &&
			    root >= 0)
				contained = 1;
		}
	/* past the array's cap: at the rate of those checked */
	if (seen && r->jit.anon_samples > seen)
		unnamed = (uint64_t)((double)unnamed * r->jit.anon_samples / seen);
	if (unnamed && unnamed * 200 >= r->samples - r->switch_outs) {
		const char *var = NULL, *val = jit_profile_off(r, &var);
		char why[400];

		if (r->opts->no_jit)
			snprintf(why, sizeof(why), "--no-jit left JIT publishing off");
		else if (val)
			snprintf(why, sizeof(why), "%s=%s in the environment keeps oneDNN from "
				 "publishing its JIT kernels: unset it, or set it to 6", var, val);
		else if (r->itt.dnnl_path && contained)
			snprintf(why, sizeof(why), "oneDNN (%s) in a container published no perf "
				 "map or jitdump for that code: a container runtime passes no "
				 "environment in; start it with -e ONEDNN_JIT_PROFILE=6, or record its "
				 "start ('dlprof record -- podman run ...' passes it in)",
				 r->itt.dnnl_path);
		else if (r->itt.dnnl_path)
			snprintf(why, sizeof(why), "oneDNN (%s) published no perf map or jitdump "
				 "for that code", r->itt.dnnl_path);
		else
			snprintf(why, sizeof(why), "the JIT that made it publishes neither "
				 "/tmp/perf-PID.map nor a jitdump");
		rec_warn(r, "%llu samples (%.1f%%) ran JIT code in anonymous memory that no "
			    "perf map or jitdump names: they show as [anon] addresses; %s",
			    (unsigned long long)unnamed,
			    100.0 * unnamed / (r->samples > r->switch_outs ? r->samples - r->switch_outs : 1),
			    why);
	}
	/* a docker run under the command (not podman-docker's: podman's descend) */
	if (r->unfollowed_run && !container_is_podman(r->unfollowed_rt))
		rec_warn(r, "process %u ran '%s run', whose container its daemon starts: not "
			    "recorded; record '%s run' itself (dlprof record -- %s run ...), or the "
			    "container with --container NAME while it runs", r->unfollowed_run,
			    r->unfollowed_rt, r->unfollowed_rt, r->unfollowed_rt);
	/* docker run followed: nothing ran in the cgroup record made for it */
	if (r->cg_dir_made)	/* followed late: its cgroup never came */
		rec_warn(r, "%s's container did not come: no cgroup of the id in its cidfile "
			    "(%s) was made before the command ended or was interrupted",
			    container_runtime(r->opts->argv[0]), r->opts->ct_cidfile);
	else if (r->opts->ct_follow && r->samples <= r->switch_outs)
		rec_warn(r, "nothing ran in cgroup %s, where %s was to start its container: "
			    "it did not start, or not on this machine", r->cg_dir,
			    container_runtime(r->opts->argv[0]));
	if (r->relabel_guessed)
		rec_warn(r, "%llu samples came with the id of another profiler's event (one "
			    "sampling the same threads): written as %s, though another of the "
			    "software events recorded may have taken them",
			    (unsigned long long)r->relabel_guessed, r->relabel_guess);
	if (r->lost && r->warn.ring[0])
		rec_warn(r, "%llu samples lost: the %s; raise it, or lower -F",
			    (unsigned long long)r->lost, r->warn.ring);
	if ((r->opts->pids || r->opts->system_wide) && r->itt.dnnl_path && !r->itt.task_files &&
	    !r->opts->no_itt)
		rec_warn(r, "process %u maps %s but was started without dlprof's ITT collector: "
			    "no oneDNN primitive is labelled (no dnnl:* operators); start it with "
			    "the flags 'dlprof record --container-flags' prints", r->itt.dnnl_pid,
			    r->itt.dnnl_path);
	if (r->itt.dir && r->itt.dnnl_path && !r->itt.task_files) {
		const char *lvl = getenv("ONEDNN_ITT_TASK_LEVEL");

		if (!lvl)
			lvl = getenv("DNNL_ITT_TASK_LEVEL");
		rec_warn(r, "the workload mapped %s but never called dlprof's ITT collector: no "
			    "oneDNN primitive is labelled (no dnnl:* operators)%s", r->itt.dnnl_path,
			    lvl && !strcmp(lvl, "0") ? "; ONEDNN_ITT_TASK_LEVEL=0 in the environment "
			    "turns oneDNN's ITT tasks off" : "; did the workload set "
			    "INTEL_LIBITTNOTIFY64 to another collector, or oneDNN run no primitive?");
	}
}

static void meta_add(struct strbuf *sb, const char *k, const char *v)
{
	strbuf_add(sb, k, strlen(k) + 1);
	strbuf_add(sb, v, strlen(v) + 1);
}

/* The "flags" line of /proc/cpuinfo (its first cpu), for the DL view's ISA findings. */
static void meta_cpu_flags(struct strbuf *sb)
{
	char *flags = isa_cpuinfo_flags();

	if (flags)
		meta_add(sb, "cpu_flags", flags);
	free(flags);
}

/*
 * The workload's settings that decide which code paths its libraries take (ISA caps,
 * OpenBLAS's core, ATen's capability, JIT profiling, OpenMP waiting), as META
 * "env.NAME" = value: report names them as the cause of a slow path.  What dlprof set
 * itself (the JIT profile and ITT collector) is not the user's and is left out.  A
 * process attached to with -p has its own environment, read from /proc.
 */
static const char *const settings_env[] = {
	"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ONEDNN_CPU_ISA_HINTS", "DNNL_CPU_ISA_HINTS",
	"ONEDNN_JIT_PROFILE", "DNNL_JIT_PROFILE", "ONEDNN_VERBOSE", "DNNL_VERBOSE",
	"MKLDNN_VERBOSE", "ONEDNN_ITT_TASK_LEVEL", "DNNL_ITT_TASK_LEVEL", "ONEDNN_DEFAULT_FPMATH_MODE",
	"ATEN_CPU_CAPABILITY", "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS",
	"MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE", "MKL_CBWR", "MKL_NUM_THREADS",
	"OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OMP_PROC_BIND", "OMP_PLACES", "GOMP_SPINCOUNT",
	"KMP_BLOCKTIME", "KMP_AFFINITY", "INTEL_LIBITTNOTIFY64", "INTEL_ITTNOTIFY_GROUPS",
	"DLPROF_NO_DNNL_HOOK", NULL
};

static int settings_env_ours(const struct recorder *r, const char *name)
{
	if (r->jit.ours && (!strcmp(name, "ONEDNN_JIT_PROFILE") || !strcmp(name, "DNNL_JIT_PROFILE")))
		return 1;
	return r->itt.dir && (!strcmp(name, "INTEL_LIBITTNOTIFY64") ||
			     !strcmp(name, "INTEL_ITTNOTIFY_GROUPS"));
}

static void meta_settings_env(struct recorder *r, struct strbuf *sb)
{
	struct strbuf env = STRBUF_INIT, key = STRBUF_INIT;

	if (r->opts->pids && r->att.nr) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/environ", (int)r->att.targets[0]);
		if (strbuf_read_file(&env, path, 1u << 20) < 0) {
			strbuf_release(&env);
			return;
		}
		strbuf_addch(&env, '\0');
	}
	for (const char *const *v = settings_env; *v; v++) {
		const char *val = NULL;
		size_t n = strlen(*v);

		if (!r->opts->pids) {
			if (!settings_env_ours(r, *v))
				val = getenv(*v);
		} else {
			for (const char *e = env.buf; e && e < env.buf + env.len && *e; e += strlen(e) + 1)
				if (!strncmp(e, *v, n) && e[n] == '=') {
					val = e + n + 1;
					break;
				}
		}
		if (!val || !*val)
			continue;	/* empty: the libraries ignore it too */
		strbuf_reset(&key);
		strbuf_addf(&key, "env.%s", *v);
		meta_add(sb, key.buf, val);
	}
	strbuf_release(&env);
	strbuf_release(&key);
}

void meta_write(struct recorder *r)
{
	const struct record_opts *o = r->opts;
	struct strbuf sb = STRBUF_INIT, tmp = STRBUF_INIT;
	struct utsname u;
	char num[64];

	if (o->system_wide) {
		strbuf_addstr(&tmp, r->att.cmdline.buf ? r->att.cmdline.buf : "every process");
		for (const char **a = o->argv; a && *a; a++)
			strbuf_addf(&tmp, "%s%s", a == o->argv ? "; while: " : " ", *a);
		meta_add(&sb, "system_wide", "1");
	} else if (o->pids) {
		/* the processes attached to */
		strbuf_addstr(&tmp, r->att.cmdline.len ? r->att.cmdline.buf : "?");
		meta_add(&sb, "attach", o->pids);
		if (o->container)
			meta_add(&sb, "container", o->container);
		if (o->cgroup)
			meta_add(&sb, "cgroup", o->cgroup);
		if (r->att.pid_flags)	/* per cpu on it: what started in it later too */
			meta_add(&sb, "cgroup_events", o->cgroup_dir);
	} else {
		for (const char **a = o->argv; *a; a++) {
			if (a != o->argv)
				strbuf_addch(&tmp, ' ');
			strbuf_addstr(&tmp, *a);
		}
		/* docker run: its container followed by the cgroup parent record made */
		if (o->ct_follow && r->att.pid_flags)
			meta_add(&sb, "cgroup_events", r->cg_dir);
	}
	meta_add(&sb, "cmdline", tmp.buf);
	/* MONOTONIC REALTIME UNCERTAINTY, ns: the time axis of several hosts' recordings */
	for (int k = 0; k < 2; k++) {
		const struct clock_anchor *c = k ? &r->clock_end : &r->clock_start;
		char clk[80];

		if (!c->real)
			continue;
		snprintf(clk, sizeof(clk), "%llu %llu %llu", (unsigned long long)c->mono,
			 (unsigned long long)c->real, (unsigned long long)c->err);
		meta_add(&sb, k ? "clock_end" : "clock_start", clk);
	}
	if (!uname(&u)) {
		meta_add(&sb, "hostname", u.nodename);
		meta_add(&sb, "release", u.release);
		meta_add(&sb, "machine", u.machine);
	}
	snprintf(num, sizeof(num), "%d", r->nr_cpus);
	meta_add(&sb, "nr_cpus", num);
	meta_cpu_flags(&sb);
	strbuf_reset(&tmp);
	for (int e = 0; e < r->nr_ev; e++)
		strbuf_addf(&tmp, "%s%s", e ? "," : "", r->ev[e].name);
	meta_add(&sb, "event", tmp.buf);
	if (o->period) {
		snprintf(num, sizeof(num), "%lu", o->period);
		meta_add(&sb, "period", num);
	} else {
		snprintf(num, sizeof(num), "%lu", o->freq);
		meta_add(&sb, "freq", num);
	}
	if (o->callgraph == RECORD_CG_DWARF)
		snprintf(num, sizeof(num), "dwarf=%u", o->stack_size);
	else
		snprintf(num, sizeof(num), "%s", o->callgraph == RECORD_CG_FP ? "fp" : "none");
	meta_add(&sb, "callgraph", num);
	meta_add(&sb, "version", DLPROF_VERSION);
	meta_add(&sb, "kernel", r->ev[0].attr.exclude_kernel ? "excluded" : "included");
	if (r->warn.fallback[0])
		meta_add(&sb, "note", r->warn.fallback);
	meta_add(&sb, "jit", o->no_jit ? "off" : r->jit.ours ? "on" : "user");
	meta_add(&sb, "itt", r->itt.dir ? "on" : "off");
	if (o->memory) {
		char n[32];

		snprintf(n, sizeof(n), "%lu", o->mem_sample ? o->mem_sample :
			 (unsigned long)MEM_DEFAULT_SAMPLE);
		meta_add(&sb, "mem_sample", n);
	}
	if (r->met.nr) {
		/* record --metrics: the members in the samples' order, and the counts read at
		 * the end: enabled ns, running ns, the leader's, the members' */
		struct strbuf names = STRBUF_INIT, periods = STRBUF_INIT, totals = STRBUF_INIT;
		struct strbuf ran = STRBUF_INIT;

		metrics_meta(r, &names, &periods, &totals, &ran);
		meta_add(&sb, "metrics", names.buf);
		meta_add(&sb, "metrics_mode", r->met.events ? "events" : "group");
		if (r->met.events)
			meta_add(&sb, "metrics_period", periods.buf);
		if (r->met.switch_outs)
			meta_add(&sb, "metrics_switch_outs", "1");
		if (totals.len)
			meta_add(&sb, "metrics_total", totals.buf);
		if (ran.len)
			meta_add(&sb, "metrics_ran", ran.buf);
		strbuf_release(&ran);
		strbuf_release(&names);
		strbuf_release(&periods);
		strbuf_release(&totals);
	}
	if (r->opts->op_calls)	/* (empty: none counted) */
		meta_add(&sb, "op_calls", r->oc.meta.buf ? r->oc.meta.buf : "");
	meta_add(&sb, "python", r->py.reader ? "on" : "off");
	if (r->py.reader) {
		/* the stacks read from outside that their samples name: how many, the sum
		 * and the largest of their delays (the PYSTACK records carry their own) */
		struct pyreader_stats ps;

		pyreader_get_stats(r->py.reader, &ps);
		if (ps.late_named) {
			strbuf_reset(&tmp);
			strbuf_addf(&tmp, "%llu %llu %llu", (unsigned long long)ps.late_named,
				    (unsigned long long)ps.late_delay_sum_ns,
				    (unsigned long long)ps.late_delay_max_ns);
			meta_add(&sb, "python_late", tmp.buf);
		}
		/* code objects read in the kernel, from outside; frames whose code was gone */
		strbuf_reset(&tmp);
		strbuf_addf(&tmp, "%llu %llu %llu", (unsigned long long)ps.kernel_codes,
			    (unsigned long long)ps.codes_outside, (unsigned long long)ps.gone);
		meta_add(&sb, "python_codes", tmp.buf);
	}
	{
		/* dlprof's own CPU time (all its threads), for the cost per sample */
		struct rusage ru;

		if (!getrusage(RUSAGE_SELF, &ru)) {
			snprintf(num, sizeof(num), "%llu",
				 (unsigned long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
				 (unsigned long long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull);
			meta_add(&sb, "record_cpu_ns", num);
		}
		if (r->run_cpu_ns) {
			/* the same while the workload ran, the kernel symbols' load left out */
			snprintf(num, sizeof(num), "%llu", (unsigned long long)r->run_cpu_ns);
			meta_add(&sb, "record_run_cpu_ns", num);
		}
	}
	if (r->ru_st.samples) {
		/* samples (with a copy) unwound incomplete behind distinct-stacks cpu-ns unwind-ns
		 * partial frames joined reused inline bails past-copy */
		strbuf_reset(&tmp);
		strbuf_addf(&tmp, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			    (unsigned long long)r->ru_st.samples, (unsigned long long)r->ru_st.unwound,
			    (unsigned long long)r->ru_st.incomplete, (unsigned long long)r->ru_st.behind,
			    (unsigned long long)r->ru_st.stacks, (unsigned long long)r->ru_st.cpu_ns,
			    (unsigned long long)r->ru_st.unwind_ns, (unsigned long long)r->ru_st.partial,
			    (unsigned long long)r->ru_st.frames, (unsigned long long)r->ru_st.joined,
			    (unsigned long long)r->ru_st.reused,
			    (unsigned long long)r->ru_st.inline_samples,
			    (unsigned long long)r->ru_st.bails,
			    (unsigned long long)r->ru_st.past_copy);
		meta_add(&sb, "record_unwind", tmp.buf);
	}
	/* bytes read from the rings: the perf rings', the native walks' (kstack.h) */
	strbuf_reset(&tmp);
	strbuf_addf(&tmp, "%llu %llu", (unsigned long long)r->ring_bytes,
		    (unsigned long long)(r->ru_st.kstack ? r->ru_st.ks.kring_bytes : 0));
	meta_add(&sb, "record_rings", tmp.buf);
	if (r->ru_st.kstack) {
		/* the kernel's native walks (kstack.h): tables rows table-bytes table-ns walks
		 * dropped matched unmatched same differ runs run-ns, then the early stops by
		 * KW_* from 1 */
		const struct kstack_stats *k = &r->ru_st.ks;
		uint64_t runs = 0, run_ns = 0;

		if (r->py.pb && r->py.stats)
			pybpf_stats(r->py.pb, &runs, &run_ns);

		strbuf_reset(&tmp);
		strbuf_addf(&tmp, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			    (unsigned long long)k->tables, (unsigned long long)k->rows,
			    (unsigned long long)k->table_bytes, (unsigned long long)k->table_ns,
			    (unsigned long long)k->walks, (unsigned long long)k->dropped,
			    (unsigned long long)k->matched, (unsigned long long)k->unmatched,
			    (unsigned long long)k->same, (unsigned long long)k->differ,
			    (unsigned long long)runs, (unsigned long long)run_ns);
		for (int i = 1; i < KW_NR; i++)
			strbuf_addf(&tmp, " %llu", (unsigned long long)k->stopped[i]);
		strbuf_addf(&tmp, " %llu %llu", (unsigned long long)k->past_same,
			    (unsigned long long)k->past_differ);
		meta_add(&sb, "record_kstack", tmp.buf);
		/* of record's CPU time, its tables' (made or read, and given to the kernel) */
		snprintf(num, sizeof(num), "%llu", (unsigned long long)k->table_cpu_ns);
		meta_add(&sb, "record_table_cpu_ns", num);
	}
	meta_settings_env(r, &sb);
	{
		const char *w = r->warn.lines.buf;

		for (int i = 0; i < r->warn.nr; i++, w += strlen(w) + 1) {
			snprintf(num, sizeof(num), "warn.%d", i + 1);
			meta_add(&sb, num, w);
		}
	}
	recwriter_add(r->w, DLP_REC_META, sb.buf, sb.len);
	strbuf_release(&sb);
	strbuf_release(&tmp);
}
