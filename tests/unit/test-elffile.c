/* test-elffile.c - ELF files opened once and shared (lib/util/elffile.c): one mapping for
 * two readers, the bytes and PT_LOADs of the file, a build-id asked for, a file replaced
 * at its path, and the reasons a path is refused. */
#include "elffile.h"
#include "elfsyms.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, got;
	char chunk[65536];

	while (f && (got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		buf = realloc(buf, n + got);
		memcpy(buf + n, chunk, got);
		n += got;
	}
	if (f)
		fclose(f);
	*len = n;
	return buf;
}

static int spit(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(data, 1, len, f) == len;

	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : -1;
}

/* The PT_LOAD segments read from the bytes by hand: the reference */
static int loads_match(const struct elffile *f, const unsigned char *b)
{
	Elf64_Ehdr eh;
	size_t k = 0;

	memcpy(&eh, b, sizeof(eh));
	for (size_t i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, b + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD)
			continue;
		if (k >= f->nr_segs || f->segs[k].offset != ph.p_offset ||
		    f->segs[k].vaddr != ph.p_vaddr || f->segs[k].filesz != ph.p_filesz ||
		    f->segs[k].flags != ph.p_flags)
			return 0;
		k++;
	}
	return k && k == f->nr_segs;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char dir[256], path[300], other[300];
	const struct elffile *a, *b, *c;
	enum elffile_status st;
	uint8_t id[20], wrong[20];
	size_t len, idlen;
	char *self = slurp("/proc/self/exe", &len);
	Elf *e;

	snprintf(dir, sizeof(dir), "%s/test-elffile.XXXXXX", tmp);
	if (!mkdtemp(dir) || !self || len < 64)
		return fprintf(stderr, "no scratch folder or no /proc/self/exe\n"), 1;
	snprintf(path, sizeof(path), "%s/prog", dir);
	snprintf(other, sizeof(other), "%s/next", dir);
	spit(path, self, len);
	idlen = elf_image_build_id(self, len, id);

	a = elffile_open(path, NULL, 0, &st);
	b = elffile_open(path, NULL, 0, NULL);
	ok(a && st == ELFFILE_OK && a == b, "the same file opened twice is one mapping", NULL);
	ok(a && a->size == len && !memcmp(a->data, self, len), "its bytes are the file's", NULL);
	ok(a && a->elf64 && a->machine == EM_X86_64 && (a->type == ET_DYN || a->type == ET_EXEC),
	   "its header read: 64-bit x86-64, executable or shared", NULL);
	ok(a && loads_match(a, (const unsigned char *)self), "its PT_LOADs as the header lists them", NULL);
	ok(a && idlen && a->build_id_size == idlen && !memcmp(a->build_id, id, idlen < 20 ? idlen : 20),
	   "its build-id as the notes read by hand give it", NULL);
	e = a ? elffile_elf(a) : NULL;
	ok(e && elf_kind(e) == ELF_K_ELF, "a libelf handle of the reader's own", NULL);
	if (e)
		elf_end(e);

	c = elffile_open(path, id, idlen < 20 ? idlen : 20, &st);
	ok(c == a && st == ELFFILE_OK, "the build-id asked for: the same file", NULL);
	elffile_put(c);
	memcpy(wrong, id, sizeof(wrong));
	wrong[0] ^= 0xff;
	c = elffile_open(path, wrong, idlen < 20 ? idlen : 20, &st);
	ok(!c && st == ELFFILE_OTHER_BUILD_ID, "another build-id asked for: refused, and why", NULL);

	/* replaced at its path: a new reader maps the new file, the old keep their bytes */
	self[len - 1] ^= 0x5a;
	spit(other, self, len);
	ok(!rename(other, path), "the file replaced", strerror(errno));
	c = elffile_open(path, NULL, 0, &st);
	ok(c && c != a && c->data[len - 1] == (unsigned char)self[len - 1] &&
	   a->data[len - 1] != c->data[len - 1], "a replaced file is mapped again; its old holders keep the old bytes", NULL);
	elffile_put(c);
	elffile_put(b);
	elffile_put(a);

	a = elffile_open(dir, NULL, 0, &st);
	ok(!a && st == ELFFILE_NOT_REGULAR, "a folder: not a regular file", elffile_strstatus(st));
	snprintf(other, sizeof(other), "%s/none", dir);
	errno = 0;
	a = elffile_open(other, NULL, 0, &st);
	ok(!a && st == ELFFILE_UNREADABLE && errno == ENOENT, "no such file: unreadable, errno says why",
	   elffile_strstatus(st));
	spit(other, "#!/bin/sh\necho not an ELF file\n", 30);
	a = elffile_open(other, NULL, 0, &st);
	ok(!a && st == ELFFILE_NOT_ELF, "a script: not an ELF file", elffile_strstatus(st));
	c = elffile_image(self, len, "[image]");
	ok(c && c->data == (const uint8_t *)self && c->nr_segs, "an image in memory is read in place", NULL);
	elffile_put(c);

	unlink(other);
	unlink(path);
	rmdir(dir);
	free(self);
	return tap_done();
}
