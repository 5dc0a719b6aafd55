/* test-pygil.c - take_gil and drop_gil found from an interpreter's code (pygil.h).
 *
 * usage: test-pygil [-n] FILE [STRIPPED]
 *   FILE with a symbol table: what pygil_find() finds (it never reads the symbols) is
 *   where FILE's symbols take_gil and drop_gil are; with STRIPPED (FILE without its
 *   symbols, strip --strip-all), what it finds there too.  A function FILE has no symbol
 *   for (drop_gil inlined into its caller, as in a static python3.13t) must be found at
 *   the start of the function symbol it was inlined into.
 *   -n: FILE has no symbols for them (a distribution's stripped interpreter): only that
 *   both are found, in different functions; and which file names are interpreters'.
 *   TAP output. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>

#include "elfsyms.h"
#include "pygil.h"

#include "unit/tap.h"

struct want {
	Elf *e;
	uint64_t addr[PYGIL_NR];
	/* where FILE has no symbol of that name: what was found, and the function symbol
	 * at that address (inlined there) */
	uint64_t found[PYGIL_NR];
	char holder[PYGIL_NR][128];
};

static int find_sym(void *ctx, const GElf_Sym *sym, size_t strndx)
{
	struct want *w = ctx;
	const char *name = elf_strptr(w->e, strndx, sym->st_name);

	for (int f = 0; name && f < PYGIL_NR; f++) {
		if (!strcmp(name, pygil_name(f)))
			w->addr[f] = sym->st_value;
		if (w->found[f] && sym->st_value == w->found[f] && !w->holder[f][0])
			snprintf(w->holder[f], sizeof(w->holder[f]), "%s", name);
	}
	return 0;
}

static Elf *open_elf(const char *path, int *fd)
{
	*fd = open(path, O_RDONLY);
	return *fd < 0 ? NULL : elf_begin(*fd, ELF_C_READ_MMAP, NULL);
}

static void check(const char *path, const struct want *w, int no_syms)
{
	struct pygil_func got[PYGIL_NR];
	char what[512], buf[64];
	int fd, n;
	Elf *e = open_elf(path, &fd);

	if (!e) {
		ok(0, path, "cannot read it");
		return;
	}
	n = pygil_find(e, got);
	for (int f = 0; f < PYGIL_NR; f++)
		printf("# %s: %s at 0x%llx, %llu bytes\n", path, pygil_name(f),
		       (unsigned long long)got[f].start, (unsigned long long)got[f].len);
	snprintf(buf, sizeof(buf), "%d", n);
	snprintf(what, sizeof(what), "%s: take_gil and drop_gil found", path);
	ok(n == 2, what, buf);
	for (int f = 0; f < PYGIL_NR && !no_syms; f++) {
		snprintf(what, sizeof(what), "%s: %s at its symbol's address", path, pygil_name(f));
		snprintf(buf, sizeof(buf), "0x%llx for 0x%llx", (unsigned long long)got[f].start,
			 (unsigned long long)w->addr[f]);
		ok(w->addr[f] && got[f].start == w->addr[f], what, buf);
	}
	if (no_syms) {
		snprintf(what, sizeof(what), "%s: two functions", path);
		ok(got[PYGIL_TAKE].start != got[PYGIL_DROP].start && got[PYGIL_TAKE].len &&
		   got[PYGIL_DROP].len, what, NULL);
	}
	elf_end(e);
	close(fd);
}

int main(int argc, char **argv)
{
	int no_syms = argc > 1 && !strcmp(argv[1], "-n"), fd;
	struct want w = { 0 };
	int ft;

	elf_version(EV_CURRENT);
	argv += no_syms;
	argc -= no_syms;
	if (argc < 2) {
		fprintf(stderr, "usage: test-pygil [-n] FILE [STRIPPED]\n");
		return 2;
	}
	if (no_syms) {
		ok(pygil_interpreter("/usr/lib/libpython3.12.so.1.0", &ft) && !ft,
		   "libpython3.12.so.1.0 is an interpreter", NULL);
		ok(pygil_interpreter("/opt/py/bin/python3.13t", &ft) && ft,
		   "python3.13t is a free-threaded one", NULL);
		ok(!pygil_interpreter("/usr/bin/python3", &ft) &&
		   !pygil_interpreter("libpythonx.so", &ft),
		   "python3 (a link) and others are not", NULL);
	}
	if (!no_syms) {
		struct pygil_func got[PYGIL_NR];

		w.e = open_elf(argv[1], &fd);
		if (w.e) {
			if (pygil_find(w.e, got) == 2)
				for (int f = 0; f < PYGIL_NR; f++)
					w.found[f] = got[f].start;
			elf_each_func(w.e, find_sym, &w);
			elf_end(w.e);
			close(fd);
		}
		for (int f = 0; f < PYGIL_NR; f++)
			if (!w.addr[f] && w.holder[f][0]) {
				/* no symbol of its own: inlined into the function found */
				printf("# %s: no %s symbol; found %s, which holds it inlined\n",
				       argv[1], pygil_name(f), w.holder[f]);
				w.addr[f] = w.found[f];
			}
	}
	check(argv[1], &w, no_syms);
	if (argc > 2)
		check(argv[2], &w, 0);
	return tap_done();
}
