/* elffile.c - ELF files opened once and shared (elffile.h) */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elffile.h"
#include "util.h"

struct held {
	struct elffile f;		/* first: a const struct elffile * is a struct held * */
	struct held *next;		/* in the open list; not there once replaced */
	unsigned refs;
	int mapped, listed;
	int compressed;			/* a section is (read_headers) */
	int zfd;			/* +1: a descriptor of the bytes, where a section is
					   compressed (elffile_elf) */
	dev_t dev;
	ino_t ino;
	off_t st_size;
	struct timespec ctime;
	struct elffile_seg *segs;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct held *open_files;

/* Whether a section of e is compressed (SHF_COMPRESSED, or GNU's .zdebug_*) */
static int compressed(Elf *e)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_flags & SHF_COMPRESSED)
			return 1;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && !strncmp(name, ".zdebug", 7))
			return 1;
	}
	return 0;
}

/* The headers, what libelf reads of them: what a reader asks of every file first.  A
 * file with the ELF magic is kept even where libelf reads no more (its reader says why). */
static int read_headers(struct held *h)
{
	Elf *e;
	GElf_Ehdr eh;
	size_t nph;
	const void *id;
	ssize_t n;

	if (h->f.size < EI_NIDENT || memcmp(h->f.data, ELFMAG, SELFMAG))
		return -1;
	e = elffile_elf(&h->f);
	if (!e || !gelf_getehdr(e, &eh)) {
		if (e)
			elf_end(e);
		return 0;
	}
	h->f.elf64 = h->f.data[EI_CLASS] == ELFCLASS64;
	h->f.type = eh.e_type;
	h->f.machine = eh.e_machine;
	if (elf_getphdrnum(e, &nph))
		nph = 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		h->segs = xrealloc(h->segs, (h->f.nr_segs + 1) * sizeof(*h->segs));
		h->segs[h->f.nr_segs++] = (struct elffile_seg){ ph.p_offset, ph.p_vaddr, ph.p_filesz,
								ph.p_memsz, ph.p_flags };
	}
	h->f.segs = h->segs;
	n = dwelf_elf_gnu_build_id(e, &id);
	if (n > 0) {
		h->f.build_id_size = (size_t)n;
		memcpy(h->f.build_id, id, n < 20 ? (size_t)n : 20);
	}
	h->compressed = compressed(e);
	elf_end(e);
	return 0;
}

static void held_free(struct held *h)
{
	if (h->zfd)
		close(h->zfd - 1);
	if (h->mapped)
		munmap((void *)h->f.data, h->f.size);
	free(h->segs);
	free((char *)h->f.path);
	free(h);
}

static int same_file(const struct held *h, const char *path, const struct stat *st)
{
	return !strcmp(h->f.path, path) && h->dev == st->st_dev && h->ino == st->st_ino &&
	       h->st_size == st->st_size && h->ctime.tv_sec == st->st_ctim.tv_sec &&
	       h->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

static int build_id_fits(const struct elffile *f, const uint8_t *id, size_t id_size)
{
	if (!id_size || !f->build_id_size)
		return 1;
	if (id_size > 20)
		id_size = 20;
	return f->build_id_size >= id_size && !memcmp(f->build_id, id, id_size);
}

static void close_keep_errno(int fd)
{
	int e = errno;

	close(fd);
	errno = e;
}

static struct held *map_file(const char *path, int fd, const struct stat *st,
			     enum elffile_status *status)
{
	struct held *h;
	void *p;

	p = mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		*status = ELFFILE_UNREADABLE;
		return NULL;
	}
	h = xcalloc(1, sizeof(*h));
	h->f.path = xstrdup(path);
	h->f.data = p;
	h->f.size = (size_t)st->st_size;
	h->mapped = 1;
	h->dev = st->st_dev;
	h->ino = st->st_ino;
	h->st_size = st->st_size;
	h->ctime = st->st_ctim;
	if (read_headers(h)) {
		held_free(h);
		return NULL;
	}
	if (h->compressed) {
		int z = fcntl(fd, F_DUPFD_CLOEXEC, 0);

		h->zfd = z >= 0 ? z + 1 : 0;
	}
	return h;
}

const struct elffile *elffile_open(const char *path, const uint8_t *build_id, size_t id_size,
				   enum elffile_status *status)
{
	enum elffile_status dummy;
	struct held *h, **pp;
	struct stat st;
	int fd;

	if (!status)
		status = &dummy;
	*status = ELFFILE_UNREADABLE;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		if (!S_ISREG(st.st_mode))
			*status = ELFFILE_NOT_REGULAR;
		close_keep_errno(fd);
		return NULL;
	}
	*status = ELFFILE_NOT_ELF;
	if (st.st_size < EI_NIDENT) {
		close(fd);
		return NULL;
	}
	pthread_mutex_lock(&lock);
	for (pp = &open_files; (h = *pp); pp = &h->next) {
		if (same_file(h, path, &st))
			break;
		if (!strcmp(h->f.path, path)) {
			/* replaced since: its holders keep the old bytes */
			*pp = h->next;
			h->listed = 0;
			h = NULL;
			break;
		}
	}
	if (!h) {
		h = map_file(path, fd, &st, status);
		if (h) {
			h->next = open_files;
			h->listed = 1;
			open_files = h;
		}
	}
	close_keep_errno(fd);
	if (h && !build_id_fits(&h->f, build_id, id_size)) {
		*status = ELFFILE_OTHER_BUILD_ID;
		if (!h->refs) {
			open_files = h->next;	/* just mapped: at the head */
			held_free(h);
		}
		h = NULL;
	}
	if (h) {
		h->refs++;
		*status = ELFFILE_OK;
	}
	pthread_mutex_unlock(&lock);
	return h ? &h->f : NULL;
}

const struct elffile *elffile_image(const void *data, size_t size, const char *name)
{
	struct held *h = xcalloc(1, sizeof(*h));

	h->f.path = xstrdup(name);
	h->f.data = data;
	h->f.size = size;
	h->refs = 1;
	if (read_headers(h)) {
		held_free(h);
		return NULL;
	}
	if (h->compressed) {
		int z = memfd_create("dlprof-elf", MFD_CLOEXEC);
		size_t done = 0;

		while (z >= 0 && done < size) {
			ssize_t n = write(z, (const char *)data + done, size - done);

			if (n < 0 ? errno != EINTR : n == 0) {
				close(z);
				z = -1;
			}
			done += n > 0 ? (size_t)n : 0;
		}
		h->zfd = z >= 0 ? z + 1 : 0;
	}
	return &h->f;
}

void elffile_put(const struct elffile *f)
{
	struct held *h = (struct held *)f, **pp;

	if (!h)
		return;
	pthread_mutex_lock(&lock);
	if (--h->refs) {
		pthread_mutex_unlock(&lock);
		return;
	}
	if (h->listed) {
		for (pp = &open_files; *pp && *pp != h; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = h->next;
	}
	pthread_mutex_unlock(&lock);
	held_free(h);
}

/*
 * libelf decompresses a section (elf_compress(), and libdw's dwarf_begin_elf() for every
 * compressed .debug_*) by writing its header anew: in place where the headers lie in
 * the bytes it was given, which are shared and read-only here (a Go binary's
 * .debug_frame took record down).  A file with a compressed section is read through a
 * descriptor instead, where libelf keeps the headers in a copy of its own.
 */
Elf *elffile_elf(const struct elffile *f)
{
	const struct held *h = (const struct held *)f;
	Elf *e;

	if (f->size < EI_NIDENT || f->data[EI_DATA] != ELFDATA2LSB)
		return NULL;	/* libelf would turn a big-endian file's bytes in place */
	elf_version(EV_CURRENT);
	if (h->compressed && !h->zfd)
		return NULL;
	e = h->zfd ? elf_begin(h->zfd - 1, ELF_C_READ_MMAP, NULL)
		   : elf_memory((char *)f->data, f->size);
	if (e && elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return NULL;
	}
	return e;
}

/* The build-id among the notes of one PT_NOTE segment's bytes (align: 4 or 8) */
static size_t notes_build_id(const unsigned char *p, size_t len, size_t align, uint8_t id[20])
{
	size_t o = 0;

	while (o + 12 <= len) {
		uint32_t namesz, descsz, type;
		size_t name_at = o + 12, desc_at;

		memcpy(&namesz, p + o, 4);
		memcpy(&descsz, p + o + 4, 4);
		memcpy(&type, p + o + 8, 4);
		desc_at = name_at + ((namesz + align - 1) & ~(align - 1));
		if (namesz > len || descsz > len || desc_at > len || descsz > len - desc_at)
			return 0;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(p + name_at, "GNU", 4) &&
		    descsz) {
			memcpy(id, p + desc_at, descsz < 20 ? descsz : 20);
			return descsz;
		}
		o = desc_at + ((descsz + align - 1) & ~(align - 1));
	}
	return 0;
}

int elffile_heads(const char *path, struct elffile_heads *h)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[64];
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = -1;

	memset(h, 0, sizeof(*h));
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    !eh.e_phnum || eh.e_phnum > 64 || eh.e_phoff > (uint64_t)st.st_size ||
	    pread(fd, ph, eh.e_phnum * sizeof(*ph), (off_t)eh.e_phoff) !=
		    (ssize_t)(eh.e_phnum * sizeof(*ph)))
		goto out;
	h->type = eh.e_type;
	h->machine = eh.e_machine;
	for (size_t i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD) {
			if (h->nr_segs == ELFFILE_HEAD_SEGS)
				goto out;
			h->segs[h->nr_segs++] = (struct elffile_seg){ ph[i].p_offset, ph[i].p_vaddr,
								     ph[i].p_filesz, ph[i].p_memsz,
								     ph[i].p_flags };
		} else if (ph[i].p_type == PT_NOTE && !h->build_id_size && ph[i].p_filesz &&
			   ph[i].p_filesz <= 4096 && ph[i].p_offset <= (uint64_t)st.st_size) {
			unsigned char b[4096];
			ssize_t n = pread(fd, b, ph[i].p_filesz, (off_t)ph[i].p_offset);

			if (n == (ssize_t)ph[i].p_filesz)
				h->build_id_size = notes_build_id(b, (size_t)n,
								  ph[i].p_align == 8 ? 8 : 4,
								  h->build_id);
		}
	}
	ret = h->build_id_size ? 0 : -1;
out:
	close(fd);
	return ret;
}

int elffile_map_bias(uint16_t type, const struct elffile_seg *segs, size_t nr_segs,
		     uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	if (type == ET_EXEC) {
		*bias = 0;
		return 0;
	}
	for (size_t i = 0; i < nr_segs; i++) {
		const struct elffile_seg *sg = &segs[i];
		uint64_t lo = sg->offset & ~0xfffULL;

		if (pgoff >= lo && pgoff < sg->offset + (sg->filesz ? sg->filesz : 1)) {
			*bias = start - pgoff + sg->offset - sg->vaddr;
			return 0;
		}
	}
	return -1;
}

int elffile_off_to_vaddr(const struct elffile *f, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < f->nr_segs; i++) {
		const struct elffile_seg *g = &f->segs[i];

		if (off >= g->offset && off - g->offset < g->filesz) {
			*vaddr = off - g->offset + g->vaddr;
			return 0;
		}
	}
	return -1;
}

int elffile_vaddr_to_off(const struct elffile *f, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < f->nr_segs; i++) {
		const struct elffile_seg *g = &f->segs[i];

		if (vaddr >= g->vaddr && vaddr - g->vaddr < g->filesz) {
			*off = vaddr - g->vaddr + g->offset;
			return 0;
		}
	}
	return -1;
}

const char *elffile_strstatus(enum elffile_status status)
{
	switch (status) {
	case ELFFILE_OK:
		return "readable";
	case ELFFILE_UNREADABLE:
		return "not readable";
	case ELFFILE_NOT_REGULAR:
		return "not a regular file";
	case ELFFILE_NOT_ELF:
		return "not an ELF file";
	case ELFFILE_OTHER_BUILD_ID:
		return "its build-id differs from the recorded one";
	}
	return "?";
}
