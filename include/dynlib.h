/* dynlib.h - libraries loaded the first time a command needs them (lib/util/dynlib.c):
 * Capstone, libpfm4 and the C++ runtime's demangler.  Linked, the dynamic loader
 * relocated them at every dlprof command's start (Capstone 77,000 relocations, libpfm
 * 41,000): 2 ms each time, whether the command disassembled, named an event or demangled
 * anything or not.
 */
#ifndef DLPROF_DYNLIB_H
#define DLPROF_DYNLIB_H

#include <capstone/capstone.h>

/* Capstone's calls dlprof makes */
struct dynlib_cs {
	cs_err (*open)(cs_arch arch, cs_mode mode, csh *handle);
	cs_err (*option)(csh handle, cs_opt_type type, size_t value);
	size_t (*disasm)(csh handle, const uint8_t *code, size_t size, uint64_t address,
			 size_t count, cs_insn **insn);
	bool (*disasm_iter)(csh handle, const uint8_t **code, size_t *size, uint64_t *address,
			    cs_insn *insn);
	cs_insn *(*malloc)(csh handle);
	void (*free)(cs_insn *insn, size_t count);
	cs_err (*close)(csh *handle);
};

/* libpfm4's (pfm_err_t and pfm_os_t are ints: its header is left to its caller, which
 * puts the kernel's perf_event.h first) */
struct dynlib_pfm {
	int (*initialize)(void);
	int (*get_os_event_encoding)(const char *str, int dfl_plm, int os, void *args);
	const char *(*strerror)(int code);
};

/* The library's calls, loaded on the first call (the soname of the headers built
 * against: Capstone's major version, libpfm.so.4); NULL where it cannot be loaded, with
 * one error line saying so the first time. */
const struct dynlib_cs *dynlib_cs(void);
const struct dynlib_pfm *dynlib_pfm(void);

/* __cxa_demangle(mangled, NULL, NULL, status) of libstdc++.so.6: the demangled name (to
 * free), or NULL (*status -1 where the runtime cannot be loaded) */
char *dynlib_demangle(const char *mangled, int *status);

#endif
