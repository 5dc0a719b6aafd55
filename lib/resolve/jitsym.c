/* jitsym.c - perf map and jitdump parsing into per-pid range tables (see jitsym.h).
 *
 * jitdump layout (as documented in the Linux tree, tools/perf/Documentation/jitdump-
 * specification.txt): a file header {u32 magic 'JiTD', u32 version, u32 total_size,
 * u32 elf_mach, u32 pad, u32 pid, u64 timestamp, u64 flags}, then records {u32 id,
 * u32 total_size, u64 timestamp, body}.  A reader that sees the magic byte-swapped
 * swaps every field.
 */
#include <byteswap.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "jitsym.h"
#include "rephash.h"
#include "util.h"

#define JITDUMP_MAGIC 0x4A695444u
#define JIT_CODE_LOAD 0
#define JIT_CODE_MOVE 1
#define JIT_CODE_DEBUG_INFO 2
#define JIT_CODE_CLOSE 3
#define JIT_CODE_UNWINDING_INFO 4
#define JIT_MAX_CODE (256u << 20)

struct jent {
	struct jitsym sym;
	uint64_t seq;
	uint8_t *code_own;
};

struct jpid {
	int32_t pid;
	struct jent *ents;
	size_t nr, alloc;
	uint64_t *max_end;
	int sorted;
};

struct jitsyms {
	struct u64map pids;	/* pid -> struct jpid */
	struct strpool pool;
	uint64_t seq;
	int quiet;
};

void jitsyms_set_quiet(struct jitsyms *j, int quiet)
{
	j->quiet = quiet;
}

struct jitsyms *jitsyms_new(void)
{
	struct jitsyms *j = xcalloc(1, sizeof(*j));

	u64map_init(&j->pids);
	strpool_init(&j->pool);
	return j;
}

void jitsyms_free(struct jitsyms *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->pids.cap; i++) {
		struct jpid *p;

		if (!j->pids.used[i])
			continue;
		p = j->pids.vals[i];
		for (size_t k = 0; k < p->nr; k++)
			free(p->ents[k].code_own);
		free(p->ents);
		free(p->max_end);
		free(p);
	}
	u64map_release(&j->pids);
	strpool_release(&j->pool);
	free(j);
}

static struct jpid *get_pid(struct jitsyms *j, int32_t pid)
{
	void **slot = u64map_slot(&j->pids, (uint32_t)pid);

	if (!*slot) {
		struct jpid *p = xcalloc(1, sizeof(*p));

		p->pid = pid;
		*slot = p;
	}
	return *slot;
}

/* A name without control characters (';' stays: fold sanitizes its own separator). */
static const char *clean_name(struct jitsyms *j, const char *s, size_t len)
{
	char buf[1024];
	size_t n = 0;

	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
		len--;
	for (size_t i = 0; i < len && n + 1 < sizeof(buf); i++)
		buf[n++] = (unsigned char)s[i] < 0x20 ? ' ' : s[i];
	if (!n)
		return strpool_intern(&j->pool, "[jit]");
	return strpool_intern_len(&j->pool, buf, n);
}

static void add_ent(struct jitsyms *j, struct jpid *p, uint64_t start, uint64_t size,
		    const char *name, uint64_t time, uint8_t *code)
{
	struct jent *e;

	ALLOC_GROW(p->ents, p->nr + 1, p->alloc);
	e = &p->ents[p->nr++];
	e->sym.start = start;
	e->sym.end = start + size;
	e->sym.name = name;
	e->sym.time = time;
	e->sym.code = code;
	e->code_own = code;
	e->seq = ++j->seq;
	p->sorted = 0;
}

static int parse_hex(const char *s, const char *end, const char **stop, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++, n++) {
		int d = hexval(*s);

		if (d < 0)
			break;
		if (n >= 16)
			return -1;
		v = v << 4 | d;
	}
	*stop = s;
	*out = v;
	return n ? 0 : -1;
}

struct pm_line {
	uint64_t start, size;
	const char *name;
	size_t nlen;
};

int jitsyms_add_perfmap(struct jitsyms *j, int32_t pid, const char *text, size_t len,
			const char *what)
{
	const char *p = text, *end = text + len;
	struct pm_line *tmp = NULL;
	size_t nr = 0, alloc = 0;
	struct jpid *jp;
	int lineno = 0;

	while (p < end) {
		const char *ls = p;
		const char *nl = memchr(p, '\n', end - p);
		const char *le = nl ? nl : end, *q;
		uint64_t start, size;

		lineno++;
		p = nl ? nl + 1 : end;
		while (ls < le && (*ls == ' ' || *ls == '\t'))
			ls++;
		if (ls == le || (le - ls == 1 && *ls == '\r'))
			continue;
		if (parse_hex(ls, le, &q, &start) || q >= le || (*q != ' ' && *q != '\t'))
			goto bad;
		while (q < le && (*q == ' ' || *q == '\t'))
			q++;
		if (parse_hex(q, le, &q, &size) || q >= le || (*q != ' ' && *q != '\t'))
			goto bad;
		while (q < le && (*q == ' ' || *q == '\t'))
			q++;
		if (!size || start + size < start)
			goto bad;
		ALLOC_GROW(tmp, nr + 1, alloc);
		tmp[nr].start = start;
		tmp[nr].size = size;
		tmp[nr].name = q;
		tmp[nr].nlen = le - q;
		nr++;
	}
	jp = get_pid(j, pid);
	for (size_t i = 0; i < nr; i++)
		add_ent(j, jp, tmp[i].start, tmp[i].size, clean_name(j, tmp[i].name, tmp[i].nlen), 0, NULL);
	free(tmp);
	return (int)nr;
bad:
	if (!j->quiet)
		warning("ignoring perf map '%s': malformed line %d", what, lineno);
	free(tmp);
	return -1;
}

struct jd_reader {
	const uint8_t *p;
	size_t len;
	int swap;
};

static int rd32(const struct jd_reader *r, size_t off, uint32_t *v)
{
	if (off > r->len || r->len - off < 4)
		return -1;
	memcpy(v, r->p + off, 4);
	if (r->swap)
		*v = bswap_32(*v);
	return 0;
}

static int rd64(const struct jd_reader *r, size_t off, uint64_t *v)
{
	if (off > r->len || r->len - off < 8)
		return -1;
	memcpy(v, r->p + off, 8);
	if (r->swap)
		*v = bswap_64(*v);
	return 0;
}

struct jd_load {
	uint64_t vma, addr, size, time;
	const char *name;
	size_t nlen;
	const uint8_t *code;
};

int jitsyms_add_jitdump(struct jitsyms *j, int32_t pid, const void *data, size_t len,
			const char *what)
{
	struct jd_reader r = { data, len, 0 };
	uint32_t magic, version, hdr_size;
	struct jd_load *loads = NULL;
	size_t nr = 0, alloc = 0, off;
	const char *why = NULL;
	struct jpid *jp;

	if (len < 40) {
		why = "too short for a header";
		goto bad;
	}
	memcpy(&magic, data, 4);
	if (magic == bswap_32(JITDUMP_MAGIC))
		r.swap = 1;
	else if (magic != JITDUMP_MAGIC) {
		why = "bad magic";
		goto bad;
	}
	rd32(&r, 4, &version);
	rd32(&r, 8, &hdr_size);
	if (version < 1 || version > 2) {
		if (!j->quiet)
			warning("ignoring jitdump '%s': unsupported version %u", what, version);
		return -1;
	}
	if (hdr_size < 40 || hdr_size > len) {
		if (!j->quiet)
			warning("ignoring jitdump '%s': bad header size %u", what, hdr_size);
		return -1;
	}

	for (off = hdr_size; off < len; ) {
		uint32_t id, size;
		uint64_t ts;

		if (rd32(&r, off, &id) || rd32(&r, off + 4, &size) || rd64(&r, off + 8, &ts)) {
			why = "truncated record header";
			break;
		}
		if (size < 16 || size > len - off) {
			why = "record size out of bounds";
			break;
		}
		if (id == JIT_CODE_LOAD) {
			struct jd_reader b = { r.p + off, size, r.swap };
			struct jd_load *l;
			const char *name, *nul;
			uint64_t vma, addr, csize, index;

			if (rd64(&b, 24, &vma) || rd64(&b, 32, &addr) || rd64(&b, 40, &csize) ||
			    rd64(&b, 48, &index) || size <= 56) {
				why = "short code-load record";
				break;
			}
			name = (const char *)b.p + 56;
			nul = memchr(name, 0, size - 56);
			if (!nul) {
				why = "unterminated name";
				break;
			}
			if (csize > JIT_MAX_CODE || csize > (uint64_t)(size - 56 - (nul + 1 - name)) ||
			    !csize || addr + csize < addr) {
				why = "code size out of bounds";
				break;
			}
			ALLOC_GROW(loads, nr + 1, alloc);
			l = &loads[nr++];
			l->vma = vma;
			l->addr = addr;
			l->size = csize;
			l->time = ts;
			l->name = name;
			l->nlen = nul - name;
			l->code = (const uint8_t *)nul + 1;
		} else if (id == JIT_CODE_MOVE) {
			struct jd_reader b = { r.p + off, size, r.swap };
			uint64_t oldaddr, newaddr, csize;

			if (rd64(&b, 32, &oldaddr) || rd64(&b, 40, &newaddr) || rd64(&b, 48, &csize)) {
				why = "short code-move record";
				break;
			}
			for (size_t i = nr; i-- > 0; )
				if (loads[i].addr == oldaddr && newaddr + loads[i].size > newaddr) {
					ALLOC_GROW(loads, nr + 1, alloc);
					loads[nr] = loads[i];
					loads[nr].addr = newaddr;
					loads[nr].time = ts;
					loads[nr].code = NULL;	/* bytes of the old place */
					nr++;
					break;
				}
		} else if (id == JIT_CODE_CLOSE) {
			break;
		} else if (id == JIT_CODE_DEBUG_INFO || id == JIT_CODE_UNWINDING_INFO) {
			/* sizes checked by the record bound above; content not needed for names */
		}
		/* unknown ids are skipped by their size, as the format allows */
		off += size;
	}
	if (why) {
		if (!j->quiet)
			warning("ignoring jitdump '%s': %s at offset %zu", what, why, off);
		free(loads);
		return -1;
	}
	jp = get_pid(j, pid);
	for (size_t i = 0; i < nr; i++) {
		uint8_t *code = NULL;

		if (loads[i].code) {
			code = xmalloc(loads[i].size);
			memcpy(code, loads[i].code, loads[i].size);
		}
		add_ent(j, jp, loads[i].addr, loads[i].size, clean_name(j, loads[i].name, loads[i].nlen),
			loads[i].time, code);
	}
	free(loads);
	return (int)nr;
bad:
	if (!j->quiet)
		warning("ignoring jitdump '%s': %s", what, why);
	return -1;
}

static int cmp_jent(const void *a, const void *b)
{
	const struct jent *x = a, *y = b;

	if (x->sym.start != y->sym.start)
		return x->sym.start < y->sym.start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void jpid_sort(struct jpid *p)
{
	uint64_t mx = 0;

	qsort(p->ents, p->nr, sizeof(*p->ents), cmp_jent);
	free(p->max_end);
	p->max_end = xmalloc((p->nr ? p->nr : 1) * sizeof(*p->max_end));
	for (size_t i = 0; i < p->nr; i++) {
		if (p->ents[i].sym.end > mx)
			mx = p->ents[i].sym.end;
		p->max_end[i] = mx;
	}
	p->sorted = 1;
}

static const struct jent *find_ent(struct jitsyms *j, int32_t pid, uint64_t addr)
{
	struct jpid *p = u64map_get(&j->pids, (uint32_t)pid);
	const struct jent *best = NULL;
	size_t lo = 0, hi;

	if (!p || !p->nr)
		return NULL;
	if (!p->sorted)
		jpid_sort(p);
	hi = p->nr;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->ents[mid].sym.start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && p->max_end[i] > addr; ) {
		const struct jent *e = &p->ents[i];

		if (addr < e->sym.end && (!best || e->seq > best->seq))
			best = e;
	}
	return best;
}

const struct jitsym *jitsyms_find(struct jitsyms *j, int32_t pid, uint64_t addr)
{
	const struct jent *e = find_ent(j, pid, addr);

	return e ? &e->sym : NULL;
}

int jitsym_code(struct jitsyms *j, int32_t pid, uint64_t addr, uint64_t *start,
		const uint8_t **code, size_t *len)
{
	const struct jent *e = find_ent(j, pid, addr);

	if (!e || !e->sym.code)
		return -1;
	*start = e->sym.start;
	*code = e->sym.code;
	*len = e->sym.end - e->sym.start;
	return 0;
}

const char JITSYM_PERFMAP_OLD[] = "last written before this recording started";

int jitsym_perfmap_check(int fd, long since, int any_owner, struct stat *st, const char **why)
{
	*why = NULL;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) ||
	    (!any_owner && st->st_uid != getuid() && st->st_uid != 0)) {
		*why = "not a regular file owned by you or root";
		close(fd);
		return -1;
	}
	if (since && st->st_mtime < since) {
		*why = JITSYM_PERFMAP_OLD;
		close(fd);
		return -1;
	}
	return fd;
}

int jitsym_perfmap_open(int32_t pid, long since, struct stat *st, const char **why)
{
	char path[64];
	int fd;

	*why = NULL;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			*why = "not a regular file owned by you or root";
		else if (errno != ENOENT)
			*why = strerror(errno);
		return -1;
	}
	return jitsym_perfmap_check(fd, since, 0, st, why);
}
