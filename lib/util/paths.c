/* paths.c - locate dlprof's helper libraries and data files. */
#include "elfsyms.h"
#include "paths.h"
#include "util.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef DLPROF_LIBDIR
#define DLPROF_LIBDIR "/usr/local/lib/dlprof"
#endif
#ifndef DLPROF_DATADIR
#define DLPROF_DATADIR "/usr/local/share/dlprof"
#endif

static const char *argv0;

void dlprof_set_argv0(const char *arg0)
{
	argv0 = arg0;
}

/* The running binary's path: /proc/self/exe, else (no /proc: a container, a chroot)
 * argv[0] as given with a slash, or searched in $PATH as the shell found it. */
static int exe_path(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	const char *path;

	if (n > 0) {
		buf[n] = '\0';
		return 0;
	}
	if (!argv0 || !*argv0)
		return -1;
	if (strchr(argv0, '/'))
		return realpath(argv0, buf) ? 0 : -1;
	for (path = getenv("PATH"); path && *path;) {
		size_t len = strcspn(path, ":");
		char *cand = xasprintf("%.*s/%s", (int)len, path, argv0);
		int ok = access(cand, X_OK) == 0 && realpath(cand, buf);

		free(cand);
		if (ok)
			return 0;
		path += len + (path[len] == ':');
	}
	return -1;
}

static char *exe_dir(void)
{
	char buf[PATH_MAX];
	char *slash;

	if (exe_path(buf, sizeof(buf)))
		return NULL;
	slash = strrchr(buf, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	return xstrdup(buf);
}

static char *try_path(const char *dir, const char *sub, const char *name)
{
	char *p;

	if (!dir || !*dir)
		return NULL;
	p = xasprintf("%s%s/%s", dir, sub, name);
	if (access(p, R_OK) == 0)
		return p;
	free(p);
	return NULL;
}

/*
 * The environment, then the source tree (the binary at the top of a build), then an
 * installed tree relative to the binary (PREFIX/bin/dlprof -> PREFIX/<prefix_sub>, so an
 * install moved elsewhere, or installed with a PREFIX other than the build's, still
 * works), then the directory compiled in.
 */
static char *find_file(const char *env, const char *tree_sub, const char *prefix_sub,
		       const char *installed, const char *name)
{
	char *p, *dir;

	if ((p = try_path(getenv(env), "", name)))
		return p;
	dir = exe_dir();
	p = try_path(dir, tree_sub, name);
	if (!p)
		p = try_path(dir, prefix_sub, name);
	free(dir);
	if (p)
		return p;
	return try_path(installed, "", name);
}

char *dlprof_libfile(const char *name)
{
	return find_file("DLPROF_LIBDIR", "/build", "/../lib/dlprof", DLPROF_LIBDIR, name);
}

char *dlprof_libfile_places(void)
{
	const char *env = getenv("DLPROF_LIBDIR");
	char *dir = exe_dir(), *s;

	s = xasprintf("%s%s%s%s/build, %s/../lib/dlprof, %s", env && *env ? "$DLPROF_LIBDIR=" : "",
		      env && *env ? env : "", env && *env ? ", " : "", dir ? dir : "?",
		      dir ? dir : "?", DLPROF_LIBDIR);
	free(dir);
	return s;
}

char *dlprof_datafile(const char *name)
{
	return find_file("DLPROF_DATADIR", "/share", "/../share/dlprof", DLPROF_DATADIR, name);
}

char *dlprof_cache_dir(const char *sub)
{
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	if (x && *x == '/')
		return xasprintf("%s/dlprof/%s", x, sub);
	if (home && *home)
		return xasprintf("%s/.cache/dlprof/%s", home, sub);
	return NULL;
}

char *buildid_cache_file(const uint8_t *id, size_t size)
{
	const char *env = getenv("DLPROF_BUILDID_DIR");
	char *dir = env && *env ? xstrdup(env) : dlprof_cache_dir("build-id"), *p = NULL;
	char hex[41];

	if (dir && size) {
		build_id_hex(id, size, hex);
		p = xasprintf("%s/%.2s/%s", dir, hex, hex + 2);
	}
	free(dir);
	return p;
}

FILE *dlprof_cache_file_begin(const char *path, char **tmp, const char *mode)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	FILE *f = NULL;

	*tmp = xasprintf("%s.%d", path, (int)getpid());
	if (slash)
		*slash = '\0';
	if (slash && !mkdir_p(dir))
		f = fopen(*tmp, mode);
	free(dir);
	return f;
}

int dlprof_cache_file_end(FILE *f, int ok, const char *tmp, const char *path)
{
	if (fclose(f) || !ok || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

int mkdir_p(const char *dir)
{
	char *p = xstrdup(dir), *q;
	int ret = 0;

	for (q = p + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			ret = -1;
		*q = '/';
	}
	if (mkdir(p, 0755) && errno != EEXIST)
		ret = -1;
	free(p);
	return ret;
}

static int walk_remove(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	if (flag == FTW_DP || flag == FTW_D)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* rm -rf dir: what is left of it is what could not be removed */
void remove_tree(const char *dir)
{
	nftw(dir, walk_remove, 16, FTW_DEPTH | FTW_PHYS);
}
