/* perfdata.c - perf.data files as dlprof recordings (see perfdata.h).
 *
 * The layout (perf's tools/perf/Documentation/perf.data-file-format.txt): a header with
 * the attrs, data and feature sections; attrs are perf_event_attr plus a section of
 * their sample ids; the data section is the kernel's records and perf's own (types 64
 * and up); one section per feature bit set follows the data section.
 */
#include "perfdata.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "util.h"

#define PERF_MAGIC2		0x32454c4946524550ULL	/* "PERFILE2" */
#define HEADER_SIZE		104
#define FEAT_BUILD_ID		2
#define FEAT_HOSTNAME		3
#define FEAT_OSRELEASE		4
#define FEAT_NRCPUS		7
#define FEAT_CMDLINE		11
#define FEAT_EVENT_DESC		12
#define FEAT_BITS		256
#define REC_USER_TYPE_START	64	/* perf's own record types */
#define REC_COMPRESSED		81	/* perf record -z: zstd */
#define MISC_BUILD_ID_SIZE	(1 << 15)

struct section {
	uint64_t offset, size;
};

struct pd {
	const char *path;
	const unsigned char *map;
	size_t size;
	recfile_cb *cb;
	void *ctx;
	struct section attrs, data, feat[FEAT_BITS];
	uint64_t attr_size;
	/* EVENT_DESC: event names by attr index */
	char (*names)[64];
	size_t nr_names;
	int unfinished;		/* perf did not write the header back: no data size */
	int same_kernel;	/* recorded on the kernel running now (OSRELEASE) */
	pid_t *pids;		/* processes seen, for their perf maps */
	size_t nr_pids, alloc_pids;
};

/* Is [off, off+len) inside the file? */
static int in_file(const struct pd *d, uint64_t off, uint64_t len)
{
	return off <= d->size && len <= d->size - off;
}

static int bad(const struct pd *d, const char *what)
{
	return error("'%s': corrupt perf.data: %s", d->path, what);
}

int perfdata_is(const char *path)
{
	unsigned char b[8];
	struct stat st;
	ssize_t n;
	int fd;

	/* a FIFO or a device is read once, as a dlprof stream: never peek into it */
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	n = read(fd, b, sizeof(b));
	close(fd);
	return n == 8 && load_u64(b) == PERF_MAGIC2;
}

/* A perf header string: u32 length (padded), then the NUL-terminated bytes.  Copies at
 * most out_sz - 1 characters; advances *p.  Returns 0 or -1. */
static int read_string(const unsigned char **p, const unsigned char *end, char *out,
		       size_t out_sz)
{
	uint32_t len;
	size_t n;

	if (end - *p < 4)
		return -1;
	len = load_u32(*p);
	*p += 4;
	if ((size_t)(end - *p) < len)
		return -1;
	n = strnlen((const char *)*p, len);
	if (n >= out_sz)
		n = out_sz - 1;
	memcpy(out, *p, n);
	out[n] = '\0';
	*p += len;
	return 0;
}

static const char *attr_fallback_name(const struct perf_event_attr *a, char *buf, size_t sz)
{
	static const char *const hw[] = { "cycles", "instructions", "cache-references",
					  "cache-misses", "branches", "branch-misses",
					  "bus-cycles", "stalled-cycles-frontend",
					  "stalled-cycles-backend", "ref-cycles" };
	static const char *const sw[] = { "cpu-clock", "task-clock", "page-faults",
					  "context-switches", "cpu-migrations", "minor-faults",
					  "major-faults", "alignment-faults", "emulation-faults",
					  "dummy" };

	if (a->type == PERF_TYPE_HARDWARE && a->config < ARRAY_SIZE(hw))
		return hw[a->config];
	if (a->type == PERF_TYPE_SOFTWARE && a->config < ARRAY_SIZE(sw))
		return sw[a->config];
	snprintf(buf, sz, "event-%u-0x%llx", a->type, (unsigned long long)a->config);
	return buf;
}

static void meta_add(struct strbuf *sb, const char *k, const char *v)
{
	strbuf_add(sb, k, strlen(k) + 1);
	strbuf_add(sb, v, strlen(v) + 1);
}

/* META from the header features: command line, host, kernel release, cpus. */
static int emit_meta(struct pd *d)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	int ret;

	meta_add(&sb, "source", "perf.data");
	if (d->feat[FEAT_CMDLINE].size) {
		const unsigned char *p = d->map + d->feat[FEAT_CMDLINE].offset;
		const unsigned char *end = p + d->feat[FEAT_CMDLINE].size;
		struct strbuf cmd = STRBUF_INIT;
		uint32_t nr;

		if (end - p >= 4) {
			nr = load_u32(p);
			p += 4;
			for (uint32_t i = 0; i < nr && !read_string(&p, end, buf, sizeof(buf)); i++)
				strbuf_addf(&cmd, "%s%s", i ? " " : "", buf);
			if (cmd.len)
				meta_add(&sb, "cmdline", cmd.buf);
		}
		strbuf_release(&cmd);
	}
	if (d->feat[FEAT_HOSTNAME].size) {
		const unsigned char *p = d->map + d->feat[FEAT_HOSTNAME].offset;

		if (!read_string(&p, p + d->feat[FEAT_HOSTNAME].size, buf, sizeof(buf)))
			meta_add(&sb, "hostname", buf);
	}
	if (d->feat[FEAT_OSRELEASE].size) {
		const unsigned char *p = d->map + d->feat[FEAT_OSRELEASE].offset;

		struct utsname u;

		if (!read_string(&p, p + d->feat[FEAT_OSRELEASE].size, buf, sizeof(buf))) {
			meta_add(&sb, "release", buf);
			d->same_kernel = !uname(&u) && !strcmp(u.release, buf);
		}
	}
	{
		/* how it sampled: the first event's rate and call chains */
		const unsigned char *fa = d->map + d->attrs.offset;
		struct perf_event_attr a;
		size_t asz = d->attr_size - 16;

		memset(&a, 0, sizeof(a));
		memcpy(&a, fa, asz < sizeof(a) ? asz : sizeof(a));
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)a.sample_period);
		meta_add(&sb, a.freq ? "freq" : "period", buf);
		if (a.sample_type & PERF_SAMPLE_STACK_USER)
			snprintf(buf, sizeof(buf), "dwarf=%u", a.sample_stack_user);
		else
			snprintf(buf, sizeof(buf), "%s",
				 a.sample_type & PERF_SAMPLE_CALLCHAIN ? "fp" : "none");
		meta_add(&sb, "callgraph", buf);
	}
	if (d->feat[FEAT_NRCPUS].size >= 8) {
		/* available, then online */
		snprintf(buf, sizeof(buf), "%u", load_u32(d->map + d->feat[FEAT_NRCPUS].offset + 4));
		meta_add(&sb, "nr_cpus", buf);
	}
	ret = d->cb(d->ctx, DLP_REC_META, sb.buf, sb.len);
	strbuf_release(&sb);
	return ret;
}

/* EVENT_DESC: the names perf gave the events, in attr order. */
static void read_event_names(struct pd *d)
{
	const unsigned char *p, *end;
	uint32_t nre, sz;

	if (!d->feat[FEAT_EVENT_DESC].size)
		return;
	p = d->map + d->feat[FEAT_EVENT_DESC].offset;
	end = p + d->feat[FEAT_EVENT_DESC].size;
	if (end - p < 8)
		return;
	nre = load_u32(p);
	sz = load_u32(p + 4);
	p += 8;
	if (nre > 4096)
		return;
	d->names = xcalloc(nre ? nre : 1, sizeof(*d->names));
	for (uint32_t i = 0; i < nre; i++) {
		uint32_t nr_ids;

		if ((size_t)(end - p) < (size_t)sz + 4)
			break;
		p += sz;
		nr_ids = load_u32(p);
		p += 4;
		if (read_string(&p, end, d->names[i], sizeof(d->names[i])) ||
		    (size_t)(end - p) / 8 < nr_ids)
			break;
		p += (size_t)nr_ids * 8;
		d->nr_names = i + 1;
	}
}

static int emit_attrs(struct pd *d)
{
	size_t nr = d->attrs.size / d->attr_size;
	struct strbuf sb = STRBUF_INIT;
	int ret = 0;

	for (size_t i = 0; i < nr && !ret; i++) {
		const unsigned char *fa = d->map + d->attrs.offset + i * d->attr_size;
		struct perf_event_attr attr;
		struct dlp_attr_rec ar;
		struct section ids;
		size_t asz = d->attr_size - 16;
		char fb[64];

		memset(&attr, 0, sizeof(attr));
		memcpy(&attr, fa, asz < sizeof(attr) ? asz : sizeof(attr));
		ids.offset = load_u64(fa + asz);
		ids.size = load_u64(fa + asz + 8);
		if (!in_file(d, ids.offset, ids.size) || ids.size % 8) {
			ret = bad(d, "event ids outside the file");
			break;
		}
		memset(&ar, 0, sizeof(ar));
		ar.attr_size = sizeof(attr);
		ar.nr_ids = (uint32_t)(ids.size / 8);
		snprintf(ar.name, sizeof(ar.name), "%s",
			 i < d->nr_names && d->names[i][0] ? d->names[i] :
			 attr_fallback_name(&attr, fb, sizeof(fb)));
		strbuf_reset(&sb);
		strbuf_add(&sb, &ar, sizeof(ar));
		strbuf_add(&sb, &attr, sizeof(attr));
		strbuf_add(&sb, d->map + ids.offset, ids.size);
		ret = d->cb(d->ctx, DLP_REC_ATTR, sb.buf, sb.len);
	}
	strbuf_release(&sb);
	return ret;
}

static void note_pid(struct pd *d, const unsigned char *rec, const struct perf_event_header *h)
{
	uint32_t pid;

	if ((h->type != PERF_RECORD_COMM && h->type != PERF_RECORD_FORK &&
	     h->type != PERF_RECORD_MMAP2) || h->size < 12)
		return;
	pid = load_u32(rec + 8);
	if ((int32_t)pid <= 0)
		return;
	for (size_t i = d->nr_pids; i-- > 0 && i + 16 >= d->nr_pids; )
		if (d->pids[i] == (pid_t)pid)
			return;	/* a recent one: most records repeat the last pids */
	ALLOC_GROW(d->pids, d->nr_pids + 1, d->alloc_pids);
	d->pids[d->nr_pids++] = (pid_t)pid;
}

static int emit_data(struct pd *d, struct recfile_info *info)
{
	uint64_t off = d->data.offset, end = d->data.offset + d->data.size;
	uint64_t dropped = d->data.offset & ~4095ull;
	uint64_t *aligned = xmalloc(65536 + 8);
	int ret = 0;

	while (!ret && end - off >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;
		const unsigned char *rec = d->map + off;

		memcpy(&h, rec, sizeof(h));
		if (h.size < sizeof(h) || h.size > end - off) {
			info->truncated = 1;	/* cut inside a record */
			break;
		}
		if (h.type == REC_COMPRESSED) {
			ret = error("'%s': compressed perf.data (perf record -z) is not supported: "
				    "record without -z", d->path);
			break;
		}
		if (h.type < REC_USER_TYPE_START) {
			if ((uintptr_t)rec & 7) {
				memcpy(aligned, rec, h.size);
				rec = (const unsigned char *)aligned;
			}
			note_pid(d, rec, &h);
			ret = d->cb(d->ctx, DLP_REC_PERF, rec, h.size);
			info->records++;
		}
		off += h.size;
		/* the records read are not needed again: give their pages back (an 8 GB file
		 * of dwarf samples was all resident by the end) */
		if (off - dropped >= (64u << 20)) {
			uint64_t to = off & ~4095ull;

			madvise((void *)(d->map + dropped), to - dropped, MADV_DONTNEED);
			dropped = to;
		}
	}
	if (!ret && off != end)
		info->truncated = 1;
	free(aligned);
	return ret;
}

/* BUILD_ID: one record per file: header, pid, 24 bytes of id (its size in byte 20 when
 * misc says so, else 20), NUL-terminated file name. */
static int emit_build_ids(struct pd *d)
{
	const unsigned char *p, *end;
	struct strbuf sb = STRBUF_INIT;
	int ret = 0;

	if (!d->feat[FEAT_BUILD_ID].size)
		return 0;
	p = d->map + d->feat[FEAT_BUILD_ID].offset;
	end = p + d->feat[FEAT_BUILD_ID].size;
	while (!ret && end - p >= 8 + 4 + 24) {
		struct perf_event_header h;
		struct dlp_buildid_rec b;
		const char *name;
		size_t max;

		memcpy(&h, p, sizeof(h));
		if (h.size < 8 + 4 + 24 || h.size > end - p)
			break;
		memset(&b, 0, sizeof(b));
		b.pid = -1;
		b.size = (h.misc & MISC_BUILD_ID_SIZE) && p[12 + 20] <= 20 ? p[12 + 20] : 20;
		memcpy(b.id, p + 12, b.size);
		name = (const char *)p + 36;
		max = h.size - 36;
		if (max && memchr(name, '\0', max) && name[0]) {
			strbuf_reset(&sb);
			strbuf_add(&sb, &b, sizeof(b));
			strbuf_add(&sb, name, strlen(name) + 1);
			ret = d->cb(d->ctx, DLP_REC_BUILDID, sb.buf, sb.len);
		}
		p += h.size;
	}
	strbuf_release(&sb);
	return ret;
}

/* The JIT maps of the processes seen, read now (perf report does the same). */
static int emit_jit_maps(struct pd *d)
{
	uid_t me = getuid();
	int ret = 0;

	for (size_t i = 0; i < d->nr_pids && !ret; i++) {
		struct strbuf sb = STRBUF_INIT;
		struct dlp_jit_rec h = { d->pids[i], 0 };
		char path[64];
		struct stat st;
		int fd;

		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)d->pids[i]);
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_uid != me && st.st_uid)) {
			warning("ignoring '%s': not a regular file owned by you or root", path);
			close(fd);
			continue;
		}
		strbuf_add(&sb, &h, sizeof(h));
		if (strbuf_read_fd(&sb, fd, 64u << 20) == 0)
			ret = d->cb(d->ctx, DLP_REC_JITMAP, sb.buf, sb.len);
		close(fd);
		strbuf_release(&sb);
	}
	return ret;
}

static int parse_header(struct pd *d)
{
	const unsigned char *h = d->map;
	uint64_t hsize, feat_off;
	size_t k = 0;

	if (d->size < HEADER_SIZE)
		return bad(d, "header cut short");
	hsize = load_u64(h + 8);
	if (hsize == 16)
		return error("'%s': pipe-mode perf.data ('perf record -o -') is not supported: "
			     "record to a file", d->path);
	if (hsize < HEADER_SIZE)
		return bad(d, "header too small");
	d->attr_size = load_u64(h + 16);
	d->attrs.offset = load_u64(h + 24);
	d->attrs.size = load_u64(h + 32);
	d->data.offset = load_u64(h + 40);
	d->data.size = load_u64(h + 48);
	if (d->attr_size < PERF_ATTR_SIZE_VER0 + 16 || d->attr_size > 4096 ||
	    !in_file(d, d->attrs.offset, d->attrs.size) || d->attrs.size % d->attr_size ||
	    !d->attrs.size)
		return bad(d, "no event attributes");
	if (d->data.offset > d->size)
		return bad(d, "data section outside the file");
	/* a perf killed before it wrote its header back leaves data.size 0 */
	if (!d->data.size || d->data.size > d->size - d->data.offset) {
		d->unfinished = 1;
		d->data.size = d->size - d->data.offset;
	}
	feat_off = d->data.offset + d->data.size;
	for (int bit = 0; bit < FEAT_BITS; bit++) {
		const unsigned char *s;

		if (!(load_u64(h + 72 + (bit / 64) * 8) >> (bit % 64) & 1))
			continue;
		if (!in_file(d, feat_off + k * 16, 16))
			break;	/* no feature sections: a file cut short */
		s = d->map + feat_off + k * 16;
		k++;
		d->feat[bit].offset = load_u64(s);
		d->feat[bit].size = load_u64(s + 8);
		if (!in_file(d, d->feat[bit].offset, d->feat[bit].size))
			d->feat[bit].size = 0;	/* ignore a damaged feature */
	}
	return 0;
}

int perfdata_read(const char *path, recfile_cb *cb, void *ctx, struct recfile_info *info,
		  int records_only)
{
	struct pd d;
	struct stat st;
	int fd, ret;

	memset(&d, 0, sizeof(d));
	memset(info, 0, sizeof(*info));
	d.path = path;
	d.cb = cb;
	d.ctx = ctx;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return error("cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return error("'%s': not a regular file", path);
	}
	d.size = (size_t)st.st_size;
	d.map = d.size ? mmap(NULL, d.size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	close(fd);
	if (d.map == MAP_FAILED)
		return error("cannot read '%s': %s", path, d.size ? strerror(errno) : "empty file");
	ret = parse_header(&d);
	if (!ret && d.unfinished)
		info->truncated = 1;
	if (!ret && !records_only) {
		read_event_names(&d);
		ret = emit_meta(&d);
		if (!ret)
			ret = emit_attrs(&d);
	}
	if (!ret)
		ret = emit_data(&d, info);
	if (!ret && !records_only)
		ret = emit_build_ids(&d);
	if (!ret && !records_only)
		ret = emit_jit_maps(&d);
	if (!ret && !records_only && d.same_kernel) {
		/* perf keeps no vDSO image in the file: this kernel's is the recorded one */
		struct strbuf sb = STRBUF_INIT;

		if (!recfile_vdso_rec(&sb))
			ret = cb(ctx, DLP_REC_FILE, sb.buf, sb.len);
		strbuf_release(&sb);
	}
	munmap((void *)d.map, d.size);
	free(d.names);
	free(d.pids);
	return ret < 0 ? -1 : ret;
}
