/* dynlib.c - libraries loaded the first time a command needs them (dynlib.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "dynlib.h"
#include "util.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* dlopen soname and fill n function pointers at fns from names; 0, or -1 (said once) */
static int load(const char *soname, const char *what, void **fns, const char *const *names,
		size_t n)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		error("cannot load %s (%s): %s", soname, what, dlerror());
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		fns[i] = dlsym(h, names[i]);
		if (!fns[i]) {
			error("%s has no %s: not the version dlprof was built with", soname,
			      names[i]);
			dlclose(h);
			return -1;
		}
	}
	return 0;	/* (kept loaded) */
}

/* load() into api, a struct of n function pointers in the order of names: 1, or 0 */
static int load_api(void *api, size_t size, const char *soname, const char *what,
		    const char *const *names, size_t n)
{
	void *fns[8];

	if (n > ARRAY_SIZE(fns) || size != n * sizeof(void *) ||
	    load(soname, what, fns, names, n))
		return 0;
	memcpy(api, fns, size);
	return 1;
}

static struct dynlib_cs cs;
static int cs_ok;
static pthread_once_t cs_once = PTHREAD_ONCE_INIT;

static void cs_load(void)
{
	static const char *const names[] = { "cs_open", "cs_option", "cs_disasm",
					      "cs_disasm_iter", "cs_malloc", "cs_free",
					      "cs_close" };

	cs_ok = load_api(&cs, sizeof(cs), "libcapstone.so." STR(CS_API_MAJOR),
			 "the Capstone disassembler", names, ARRAY_SIZE(names));
}

const struct dynlib_cs *dynlib_cs(void)
{
	pthread_once(&cs_once, cs_load);
	return cs_ok ? &cs : NULL;
}

static struct dynlib_pfm pfm;
static int pfm_ok;
static pthread_once_t pfm_once = PTHREAD_ONCE_INIT;

static void pfm_load(void)
{
	static const char *const names[] = { "pfm_initialize", "pfm_get_os_event_encoding",
					      "pfm_strerror" };

	pfm_ok = load_api(&pfm, sizeof(pfm), "libpfm.so.4",
			  "libpfm4, which names hardware events", names, ARRAY_SIZE(names));
}

const struct dynlib_pfm *dynlib_pfm(void)
{
	pthread_once(&pfm_once, pfm_load);
	return pfm_ok ? &pfm : NULL;
}

typedef char *demangle_fn(const char *mangled, char *buf, size_t *len, int *status);
static demangle_fn *demangle;
static pthread_once_t demangle_once = PTHREAD_ONCE_INIT;

static void demangle_load(void)
{
	static const char *const names[] = { "__cxa_demangle" };
	void *fn;

	if (!load("libstdc++.so.6", "the C++ runtime, to demangle names", &fn, names, 1))
		memcpy(&demangle, &fn, sizeof(fn));
}

char *dynlib_demangle(const char *mangled, int *status)
{
	pthread_once(&demangle_once, demangle_load);
	if (!demangle) {
		*status = -1;
		return NULL;
	}
	return demangle(mangled, NULL, NULL, status);
}
