/* paths.h - where dlprof finds its own files (collector library, rule files). */
#ifndef DLPROF_PATHS_H
#define DLPROF_PATHS_H

/*
 * Full path of a helper library (e.g. "libdlprof-itt.so") or data file (e.g.
 * "families.rules"), searched in: $DLPROF_LIBDIR / $DLPROF_DATADIR, the build tree next
 * to the running binary (<exe dir>/build/ and <exe dir>/share/), the install tree
 * relative to it (<exe dir>/../lib/dlprof/, <exe dir>/../share/dlprof/), then the
 * directories compiled in.  Returns a malloc'd path, or NULL when not found.
 */
char *dlprof_libfile(const char *name);
/* The command's argv[0]: where the binary is when /proc/self/exe cannot say (no /proc). */
void dlprof_set_argv0(const char *arg0);
/* Where dlprof_libfile(name) looks, in order, for a message: "DIR, DIR, ..." (malloc'd). */
char *dlprof_libfile_places(void);
char *dlprof_datafile(const char *name);
/* dlprof's cache folder for sub ($XDG_CACHE_HOME/dlprof/SUB, else ~/.cache/dlprof/SUB),
 * NULL when neither is set; not created */
char *dlprof_cache_dir(const char *sub);
/* Make dir and its parents (0755); 0, or -1 when one could not be made */
int mkdir_p(const char *dir);

#endif
