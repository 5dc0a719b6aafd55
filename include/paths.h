/* paths.h - where dlprof finds its own files (collector library, rule files). */
#ifndef DLPROF_PATHS_H
#define DLPROF_PATHS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
/* Where the file of this build-id is kept in dlprof's build-id cache: $DLPROF_BUILDID_DIR,
 * else dlprof_cache_dir("build-id"), then "/ab/cdef..." (the id in hex, its first byte a
 * folder), as perf's ~/.debug/.build-id.  malloc'd; NULL with no cache folder or id.
 * record keeps there the files of other roots (containers) its samples hit; report
 * reads one there when the path recorded names no file of that build-id. */
char *buildid_cache_file(const uint8_t *id, size_t size);
/* A file of a cache written whole or not at all: dlprof_cache_file_begin makes its
 * folder and opens PATH.PID beside it (*tmp, malloc'd; NULL where it cannot);
 * dlprof_cache_file_end closes it and, where ok and all went well, renames it over path
 * (0), else removes it (-1) */
FILE *dlprof_cache_file_begin(const char *path, char **tmp, const char *mode);
int dlprof_cache_file_end(FILE *f, int ok, const char *tmp, const char *path);
/* Make dir and its parents (0755); 0, or -1 when one could not be made */
int mkdir_p(const char *dir);
/* Remove dir and everything under it (rm -rf), not following links */
void remove_tree(const char *dir);

#endif
