/* test-elffile.c - ELF files opened once and shared (lib/util/elffile.c): one mapping for
 * two readers, the bytes and PT_LOADs of the file, a build-id asked for, a file replaced
 * at its path, and the reasons a path is refused.  Their headers read with preads
 * (elffile_heads) against libelf's reading of every shared library in DIR (argument;
 * default /usr/lib/x86_64-linux-gnu), and a mapping's bias from them. */
#include "elffile.h"
#include "elfsyms.h"
#include "tap.h"

#include <dirent.h>
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

static int segs_same(const struct elffile_seg *a, const struct elffile_seg *b, size_t na, size_t nb)
{
	for (size_t i = 0; i < na && na == nb; i++)
		if (a[i].offset != b[i].offset || a[i].vaddr != b[i].vaddr ||
		    a[i].filesz != b[i].filesz || a[i].memsz != b[i].memsz || a[i].flags != b[i].flags)
			return 0;
	return na == nb;
}

/* Each PT_NOTE's first note with sizes past the segment's end (namesz, then descsz):
 * elffile_heads reads no build-id from them, and reads nothing outside them */
static int notes_bent(const char *self, size_t len, const char *path)
{
	char *b = malloc(len);
	Elf64_Ehdr eh;
	int good = 1;

	for (int which = 0; which < 2 && b; which++) {
		struct elffile_heads h;

		memcpy(b, self, len);
		memcpy(&eh, b, sizeof(eh));
		for (size_t i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			uint32_t big = which ? 0xfffffff0u : 4093;

			memcpy(&ph, b + eh.e_phoff + i * sizeof(ph), sizeof(ph));
			if (ph.p_type == PT_NOTE && ph.p_offset + 8 <= len)
				memcpy(b + ph.p_offset + 4 * which, &big, 4);
		}
		if (spit(path, b, len) || elffile_heads(path, &h) != -1 || h.build_id_size)
			good = 0;
	}
	free(b);
	return good && b;
}

/* elffile_heads against elffile_open (libelf) on each ELF file of dir: the same type,
 * machine, PT_LOADs and build-id wherever it reads one; it reads most */
static void heads_like_libelf(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t files = 0, read = 0, same = 0, biased = 0;
	char path[4096], why[4400] = "";

	while (d && (de = readdir(d))) {
		const struct elffile *f;
		struct elffile_heads h;
		int got;

		if (!strstr(de->d_name, ".so"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = elffile_open(path, NULL, 0, NULL);
		if (!f || !f->elf64 || !f->build_id_size) {
			elffile_put(f);
			continue;
		}
		files++;
		got = !elffile_heads(path, &h);
		read += got;
		if (got && h.type == f->type && h.machine == f->machine &&
		    h.build_id_size == f->build_id_size &&
		    !memcmp(h.build_id, f->build_id, h.build_id_size < 20 ? h.build_id_size : 20) &&
		    segs_same(h.segs, f->segs, h.nr_segs, f->nr_segs))
			same++;
		else if (got && !*why)
			snprintf(why, sizeof(why), "%s differs", path);
		/* the bias of a mapping of its code as the kernel maps it */
		for (size_t i = 0; got && i < h.nr_segs; i++) {
			uint64_t start = 0x7f0000000000ULL + (h.segs[i].vaddr & ~0xfffULL), b1, b2;
			uint64_t pgoff = h.segs[i].offset & ~0xfffULL;

			if (!(h.segs[i].flags & PF_X))
				continue;
			if (!elffile_map_bias(h.type, h.segs, h.nr_segs, start, pgoff, &b1) &&
			    !elffile_map_bias(f->type, f->segs, f->nr_segs, start, pgoff, &b2) &&
			    b1 == b2 && (h.type == ET_EXEC ? b1 == 0 : b1 == 0x7f0000000000ULL))
				biased++;
			break;
		}
		elffile_put(f);
	}
	if (d)
		closedir(d);
	printf("# %s: %zu ELF files with a build-id, %zu read from their headers, %zu the same, %zu biases\n",
	       dir, files, read, same, biased);
	ok(files >= 10, "shared libraries to read", dir);
	ok(read >= files * 95 / 100, "their headers give the build-id of 95% or more", NULL);
	ok(same == read, "the same type, machine, segments and build-id as libelf reads", why);
	ok(biased == read, "a mapping of the code: its bias from the headers, the same from libelf's", NULL);
}

int main(int argc, char **argv)
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

	{
		struct elffile_heads h;

		ok(!elffile_heads(path, &h) && h.build_id_size == idlen &&
		   !memcmp(h.build_id, id, idlen < 20 ? idlen : 20) && h.machine == EM_X86_64,
		   "its headers by preads: the build-id of its notes", NULL);
		ok(elffile_heads(other, &h) == -1 && elffile_heads(dir, &h) == -1,
		   "a script, a folder: no headers", NULL);
		ok(elf_file_build_id(path, wrong) == idlen && !memcmp(wrong, id, idlen < 20 ? idlen : 20),
		   "elf_file_build_id: the same", NULL);
		ok(notes_bent(self, len, other), "notes whose sizes run past their segment: none read, no crash",
		   NULL);
	}
	heads_like_libelf(argc > 1 ? argv[1] : "/usr/lib/x86_64-linux-gnu");

	unlink(other);
	unlink(path);
	rmdir(dir);
	free(self);
	return tap_done();
}
