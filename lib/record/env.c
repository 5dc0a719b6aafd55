/* env.c - the workload's environment for JIT and ITT output, temporary directories, the allocation sampler's shared memory (recorder.h). */
#include "recorder.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>

/* ---- environment for JIT and ITT ---- */
static const char *tmp_root(void)
{
	const char *t = getenv("TMPDIR");

	return t && *t ? t : "/tmp";
}

/*
 * Open dir and take an exclusive flock on it: held until we close it or die, so a
 * directory whose lock can be taken belongs to no running dlprof (the kernel drops
 * a SIGKILLed process's locks; flock works across pid namespaces sharing /tmp).
 * Returns the locked descriptor, or -1.
 */
static int lock_dir(int at, const char *dir)
{
	int fd = openat(at, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static char *make_tmpdir(const char *what, int *lock)
{
	char *d = xasprintf("%s/dlprof-%s.XXXXXX", tmp_root(), what);

	*lock = -1;
	if (!mkdtemp(d)) {
		warning("cannot create a temporary directory '%s': %s", d, strerror(errno));
		free(d);
		return NULL;
	}
	*lock = lock_dir(AT_FDCWD, d);
	return d;
}

/*
 * The JIT and ITT directories of a dlprof that was SIGKILLed stay behind: remove
 * ours that no live dlprof holds locked.  Ones younger than a minute are left alone,
 * so a dlprof between its mkdtemp() and its flock() keeps its directory.
 */
static void sweep_tmpdirs(void)
{
	DIR *d = opendir(tmp_root());
	struct dirent *e;
	time_t old = time(NULL) - 60;

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct stat st;
		int fd;

		if (strncmp(e->d_name, "dlprof-jit.", 11) && strncmp(e->d_name, "dlprof-itt.", 11))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || st.st_mtime > old)
			continue;
		fd = lock_dir(dirfd(d), e->d_name);
		if (fd < 0)
			continue;
		{
			char *path = xasprintf("%s/%s", tmp_root(), e->d_name);

			remove_tree(path);
			free(path);
		}
		close(fd);
	}
	closedir(d);
}

/* What record gives the workload, kept to pass into a container (env_container_argv) */
static void env_set(struct recorder *r, const char *name, const char *value, int overwrite)
{
	if (!overwrite && getenv(name))
		return;
	setenv(name, value, 1);
	path_list_add(&r->given.env, name);
}

/* A file or folder of ours the workload reads or writes (a library, a directory) */
static void given_path(struct recorder *r, const char *path, int ro)
{
	path_list_add(ro ? &r->given.ro : &r->given.rw, path);
}

/* --memory: the file the library and we share (memevent.h): the alloc events' counters
 * and the free ring */
static void mem_shared_open(struct recorder *r)
{
	char *path = xasprintf("%s/dlprof-mem.XXXXXX", tmp_root());
	int fd = mkstemp(path);
	void *m = MAP_FAILED;

	_Static_assert(offsetof(struct mem_shared, free_ring) == 4096, "the ring's page");
	if (fd >= 0 && !ftruncate(fd, (off_t)MEM_SHARED_SIZE))
		m = mmap(NULL, MEM_SHARED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (fd >= 0)
		close(fd);
	if (m == MAP_FAILED) {
		/* without it nothing waits (samples may be lost at high rates: counted) and
		 * every free is a uprobe event */
		warning("--memory: cannot set up '%s': %s", path, strerror(errno));
		if (fd >= 0)
			unlink(path);
		free(path);
		return;
	}
	r->mem.shared = m;
	/* in flight at most: a quarter of a ring's worth of stack copies */
	r->mem.shared->limit = events_default_pages(r->opts) * (size_t)sysconf(_SC_PAGESIZE) / 4 /
			       ((size_t)r->opts->stack_size + 512);
	if (r->mem.shared->limit < 4)
		r->mem.shared->limit = 4;
	for (uint64_t i = 0; i < MEM_FREE_RING; i++)
		r->mem.shared->free_ring[i].seq = i;
	/* the test suite's way to send every free as a uprobe event */
	if (!getenv("DLPROF_TEST_MEM_NO_RING"))
		__atomic_store_n(&r->mem.shared->free_ring_on, 1, __ATOMIC_RELEASE);
	r->mem.shared_path = path;
	env_set(r, MEM_ENV_SHARED, path, 1);
	given_path(r, path, 0);
}

/* Append a library to the workload's LD_PRELOAD. */
static void preload_add(struct recorder *r, const char *lib)
{
	const char *pre = getenv("LD_PRELOAD");
	char *v = pre && *pre ? xasprintf("%s:%s", pre, lib) : xstrdup(lib);

	setenv("LD_PRELOAD", v, 1);
	free(v);
	path_list_add(&r->given.preload, lib);
	given_path(r, lib, 1);
}

void env_setup(struct recorder *r)
{
	if (!r->opts->no_jit || !r->opts->no_itt)
		sweep_tmpdirs();
	if (!r->opts->no_jit && !getenv("ONEDNN_JIT_PROFILE") && !getenv("DNNL_JIT_PROFILE")) {
		r->jit.dir = make_tmpdir("jit", &r->jit.dir_lock);
		if (r->jit.dir) {
			env_set(r, "ONEDNN_JIT_PROFILE", "6", 1);
			env_set(r, "DNNL_JIT_PROFILE", "6", 1);
			env_set(r, "JITDUMPDIR", r->jit.dir, 1);
			given_path(r, r->jit.dir, 0);
			r->jit.ours = 1;
		}
	}
	if (r->opts->memory && r->mem.lib) {
		/* after the user's own preloads: an allocator preloaded on purpose stays the
		 * workload's (and is named at the end: our functions see no call) */
		char n[32];

		preload_add(r, r->mem.lib);
		snprintf(n, sizeof(n), "%lu", r->opts->mem_sample ? r->opts->mem_sample :
			 (unsigned long)MEM_DEFAULT_SAMPLE);
		env_set(r, MEM_ENV_SAMPLE, n, 1);
		mem_shared_open(r);
	}
	if (!r->opts->no_itt) {
		char *lib = dlprof_libfile("libdlprof-itt.so");

		if (lib) {
			r->itt.dir = make_tmpdir("itt", &r->itt.dir_lock);
			if (r->itt.dir) {
				const char *off = getenv("DLPROF_NO_DNNL_HOOK");

				env_set(r, "INTEL_LIBITTNOTIFY64", lib, 1);
				env_set(r, "INTEL_ITTNOTIFY_GROUPS", "all", 0);
				env_set(r, "DLPROF_ITT_DIR", r->itt.dir, 1);
				given_path(r, lib, 1);
				given_path(r, r->itt.dir, 0);
				/* preloaded too, so that its dnnl_primitive_execute() sees each
				 * oneDNN primitive called through libdnnl's C API (dnnl-hook.c);
				 * after the user's own preloads */
				if (!off || !*off || !strcmp(off, "0"))
					preload_add(r, lib);
			}
			free(lib);
		} else {
			char *where = dlprof_libfile_places();

			rec_warn(r, "the ITT collector libdlprof-itt.so is missing (looked in %s): "
				    "oneDNN primitives will not be labelled (no dnnl:* operators); "
				    "build it with 'make' in dlprof's source tree, or 'make install'",
				    where);
			free(where);
		}
	}
}


/*
 * What record gives a workload, as a container runtime's flags, for a container someone
 * else starts (Docker's daemon, a Kubernetes pod's env and volume) and record attaches to
 * (-p, --container, -a): oneDNN's JIT kernels published (the perf map and jitdump, read
 * under the container's root), dlprof's ITT collector preloaded from its path on the
 * host, mounted at the same path, writing into the container's /tmp, where record reads
 * it by the process's environment (capture_itt_foreign).
 */
int env_container_flags(FILE *out)
{
	char *lib = dlprof_libfile("libdlprof-itt.so");

	fprintf(out, "-e ONEDNN_JIT_PROFILE=6 -e DNNL_JIT_PROFILE=6");
	if (lib)
		fprintf(out, " -e INTEL_LIBITTNOTIFY64=%s -e INTEL_ITTNOTIFY_GROUPS=all "
			"-e DLPROF_ITT_DIR=/tmp -e LD_PRELOAD=%s -v %s:%s:ro", lib, lib, lib, lib);
	fputc('\n', out);
	if (!lib) {
		char *where = dlprof_libfile_places();

		warning("the ITT collector libdlprof-itt.so is missing (looked in %s): without "
			"it no oneDNN primitive is labelled", where);
		free(where);
	}
	free(lib);
	return lib ? DLP_OK : DLP_FAILED;
}

/* s, malloc'd, kept until the recorder ends */
static const char *own(struct recorder *r, char *s)
{
	ALLOC_GROW(r->given.owned.v, r->given.owned.nr + 1, r->given.owned.alloc);
	return r->given.owned.v[r->given.owned.nr++] = s;
}

/*
 * A container started by the command (podman, docker or nerdctl "run", or "container
 * run") gets none of the environment record set and sees none of its files: Podman and
 * Docker pass the caller's environment in only by -e, and the container has its own
 * root.  So what record gives the workload is added to the command after its "run":
 * "-e NAME" for each variable set (the runtime takes the value from our environment),
 * "-e LD_PRELOAD=..." with our libraries only (the host's own preloads are not the
 * container's), and "-v PATH:PATH" for each file and folder of ours it reads or
 * writes (the libraries read-only), at the same path, so the values hold inside.  Said
 * on stderr.  Returns argv itself when the command starts no container.
 */
const char **env_container_argv(struct recorder *r, const char **argv)
{
	size_t n = 0, at, k = 0, extra;
	const char **out;
	struct strbuf said = STRBUF_INIT;

	at = container_run_at(argv);
	if (!at || (!r->given.env.nr && !r->given.preload.nr))
		return argv;
	while (argv[n])
		n++;
	extra = 2 * (r->given.env.nr + 1 + r->given.ro.nr + r->given.rw.nr);
	out = xcalloc(n + extra + 1, sizeof(*out));
	for (size_t i = 0; i < at; i++)
		out[k++] = argv[i];
	for (size_t i = 0; i < r->given.env.nr; i++) {
		out[k++] = "-e";
		out[k++] = r->given.env.v[i];
		strbuf_addf(&said, " -e %s", r->given.env.v[i]);
	}
	if (r->given.preload.nr) {
		struct strbuf pre = STRBUF_INIT;

		strbuf_addstr(&pre, "LD_PRELOAD=");
		for (size_t i = 0; i < r->given.preload.nr; i++)
			strbuf_addf(&pre, "%s%s", i ? ":" : "", r->given.preload.v[i]);
		out[k++] = "-e";
		out[k++] = own(r, xstrdup(pre.buf));
		strbuf_release(&pre);
		strbuf_addf(&said, " -e %s", out[k - 1]);
	}
	for (int ro = 1; ro >= 0; ro--) {
		const struct path_list *l = ro ? &r->given.ro : &r->given.rw;

		for (size_t i = 0; i < l->nr; i++) {
			out[k++] = "-v";
			out[k++] = own(r, xasprintf("%s:%s%s", l->v[i], l->v[i], ro ? ":ro" : ""));
			strbuf_addf(&said, " -v %s", out[k - 1]);
		}
	}
	for (size_t i = at; i < n; i++)
		out[k++] = argv[i];
	out[k] = NULL;
	if (!r->opts->quiet)
		fprintf(stderr, "dlprof: passing into the container what record gives the "
			"workload (JIT names, oneDNN primitives%s): %s%s\n",
			r->opts->memory ? ", allocations" : "", argv[at - 1], said.buf);
	strbuf_release(&said);
	r->given.argv = out;
	return out;
}
