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

static struct dynlib_cs cs;
static int cs_ok;
static pthread_once_t cs_once = PTHREAD_ONCE_INIT;

static void cs_load(void)
{
	static const char *const names[] = { "cs_open", "cs_option", "cs_disasm",
					      "cs_disasm_iter", "cs_malloc", "cs_free",
					      "cs_close" };
	void *fns[ARRAY_SIZE(names)];

	_Static_assert(sizeof(cs) == sizeof(fns), "one pointer a name");
	if (!load("libcapstone.so." STR(CS_API_MAJOR), "the Capstone disassembler", fns, names,
		  ARRAY_SIZE(names))) {
		memcpy(&cs, fns, sizeof(cs));
		cs_ok = 1;
	}
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
	void *fns[ARRAY_SIZE(names)];

	_Static_assert(sizeof(pfm) == sizeof(fns), "one pointer a name");
	if (!load("libpfm.so.4", "libpfm4, which names hardware events", fns, names,
		  ARRAY_SIZE(names))) {
		memcpy(&pfm, fns, sizeof(pfm));
		pfm_ok = 1;
	}
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
