/* pprof.c - profiles in pprof's profile.proto format, gzip-compressed (see pprof.h).
 *
 * The protobuf encoding is written by hand: varints, length-delimited fields and packed
 * repeated integers are all the format needs.  Field numbers follow profile.proto.
 */
#include "pprof.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "rephash.h"
#include "util.h"

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3, PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12, PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUETYPE_TYPE = 1, VALUETYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3,
	MAPPING_ID = 1, MAPPING_FILENAME = 5, MAPPING_HAS_FUNCTIONS = 7,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
};

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

struct pp_func {
	const char *name, *file;	/* interned */
	uint64_t start;			/* function start in the first process seen, or 0 */
	uint64_t mapping;		/* mapping id */
};

/* A location: a function, and for a Python function the line (0: none) */
struct pp_loc {
	uint64_t func;
	int64_t line;
};

/* where a sample comes from (pprof_set_source): interned strings or NULL, pid 0 unknown */
struct pp_src {
	const char *input, *host, *rank;
	uint32_t pid;
};

struct pp_sample {
	uint64_t *locs;			/* location ids, leaf first */
	size_t nr;
	const char *comm, *family, *op;	/* interned or NULL */
	uint32_t tid;
	struct pp_src src;
	uint64_t count, period;
	uint64_t inuse_count, inuse_bytes;	/* memory profiles */
};

struct pprof {
	int memory;			/* pprof_new_memory() */
	struct strpool pool;
	struct u64map func_ids;		/* interned "name\1file" -> function id */
	struct pp_func *funcs;		/* id i+1 */
	size_t nr_funcs, alloc_funcs;
	struct u64map loc_ids;		/* func id << 32 | line -> location id */
	struct pp_loc *loctab;		/* id i+1 */
	size_t nr_loctab, alloc_loctab;
	struct u64map map_ids;		/* interned file -> mapping id */
	const char **maps;		/* id i+1 */
	size_t nr_maps, alloc_maps;
	struct u64map sample_ids;	/* interned stack+labels key -> sample index + 1 */
	struct pp_sample *samples;
	size_t nr_samples, alloc_samples;
	uint64_t total;
	struct strbuf key;
	struct pp_src src;		/* the source of the samples added next */
	uint64_t *locs;			/* scratch */
	size_t alloc_locs;
	/* samples whose operator label comes later (pprof_add_deferred) */
	struct pp_deferred {
		uint64_t *locs;
		size_t nr;
		const char *comm, *family;
		uint32_t tid;
		struct pp_src src;
		uint64_t count, period;
	} *deferred;
	size_t nr_deferred, alloc_deferred;
};

struct pprof *pprof_new(void)
{
	struct pprof *p = xcalloc(1, sizeof(*p));

	strpool_init(&p->pool);
	u64map_init(&p->func_ids);
	u64map_init(&p->loc_ids);
	u64map_init(&p->map_ids);
	u64map_init(&p->sample_ids);
	return p;
}

struct pprof *pprof_new_memory(void)
{
	struct pprof *p = pprof_new();

	p->memory = 1;
	return p;
}

void pprof_free(struct pprof *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nr_samples; i++)
		free(p->samples[i].locs);
	free(p->samples);
	for (size_t i = 0; i < p->nr_deferred; i++)
		free(p->deferred[i].locs);
	free(p->deferred);
	free(p->funcs);
	free(p->maps);
	free(p->locs);
	u64map_release(&p->func_ids);
	u64map_release(&p->loc_ids);
	free(p->loctab);
	u64map_release(&p->map_ids);
	u64map_release(&p->sample_ids);
	strpool_release(&p->pool);
	strbuf_release(&p->key);
	free(p);
}

static const char *intern(struct pprof *p, const char *s)
{
	return s ? strpool_intern(&p->pool, s) : NULL;
}

static uint64_t mapping_id(struct pprof *p, const char *file)
{
	void **slot = u64map_slot(&p->map_ids, (uintptr_t)file);

	if (!*slot) {
		ALLOC_GROW(p->maps, p->nr_maps + 1, p->alloc_maps);
		p->maps[p->nr_maps++] = file;
		*slot = (void *)(uintptr_t)p->nr_maps;
	}
	return (uintptr_t)*slot;
}

static uint64_t function_id(struct pprof *p, const struct frame *f, int64_t *line)
{
	const char *file = intern(p, f->dso_path ? f->dso_path : f->dso ? f->dso : "[unknown]");
	const char *name = intern(p, f->sym ? f->sym : "[unknown]");
	void **slot;

	*line = 0;
	if (f->flags & FRAME_PYTHON) {
		/* "qualname (file.py:LINE)": the function is qualname in its file, the line
		 * goes to the location */
		const char *open = strrchr(name, '('), *colon = open ? strrchr(open, ':') : NULL;

		if (open && colon && open > name + 1) {
			char *fn = xstrndup(name, (size_t)(open - 1 - name));

			*line = atoi(colon + 1);
			name = intern(p, fn);
			free(fn);
		}
	}

	strbuf_reset(&p->key);
	strbuf_addf(&p->key, "%s\1%s", name, file);
	slot = u64map_slot(&p->func_ids, (uintptr_t)intern(p, p->key.buf));
	if (!*slot) {
		struct pp_func *fn;

		ALLOC_GROW(p->funcs, p->nr_funcs + 1, p->alloc_funcs);
		fn = &p->funcs[p->nr_funcs++];
		fn->name = name;
		fn->file = file;
		fn->start = f->sym_start;
		fn->mapping = mapping_id(p, file);
		*slot = (void *)(uintptr_t)p->nr_funcs;
	}
	return (uintptr_t)*slot;
}

static struct pp_sample *add_locs(struct pprof *p, const uint64_t *locs, size_t nr,
				  const char *comm, uint32_t tid, const char *family,
				  const char *op, const struct pp_src *src, uint64_t count,
				  uint64_t period);

static uint64_t location_id(struct pprof *p, const struct frame *f)
{
	int64_t line;
	uint64_t fn = function_id(p, f, &line);
	void **slot = u64map_slot(&p->loc_ids, fn << 32 | (uint64_t)(line & 0xffffffff));

	if (!*slot) {
		ALLOC_GROW(p->loctab, p->nr_loctab + 1, p->alloc_loctab);
		p->loctab[p->nr_loctab++] = (struct pp_loc){ fn, line };
		*slot = (void *)(uintptr_t)p->nr_loctab;
	}
	return (uintptr_t)*slot;
}

void pprof_add(struct pprof *p, const struct frame *frames, size_t nr, const char *comm,
	       uint32_t tid, const char *family, const char *op, uint64_t count,
	       uint64_t period)
{
	ALLOC_GROW(p->locs, nr + 1, p->alloc_locs);
	for (size_t i = 0; i < nr; i++)
		p->locs[i] = location_id(p, &frames[i]);
	add_locs(p, p->locs, nr, comm, tid, family, op, &p->src, count, period);
}

void pprof_set_source(struct pprof *p, const char *input, const char *host, uint32_t pid,
		      const char *rank)
{
	p->src.input = intern(p, input);
	p->src.host = intern(p, host);
	p->src.rank = intern(p, rank);
	p->src.pid = pid;
}

uint32_t pprof_add_deferred(struct pprof *p, const struct frame *frames, size_t nr,
			    const char *comm, uint32_t tid, const char *family, uint64_t count,
			    uint64_t period)
{
	struct pp_deferred *d;

	ALLOC_GROW(p->deferred, p->nr_deferred + 1, p->alloc_deferred);
	d = &p->deferred[p->nr_deferred++];
	d->locs = xmalloc((nr ? nr : 1) * sizeof(uint64_t));
	for (size_t i = 0; i < nr; i++)
		d->locs[i] = location_id(p, &frames[i]);
	d->nr = nr;
	d->comm = intern(p, comm);
	d->family = intern(p, family);
	d->tid = tid;
	d->src = p->src;
	d->count = count;
	d->period = period;
	return (uint32_t)p->nr_deferred;
}

/* Add deferred sample handle (once) with its operator and memory values */
static void add_deferred(struct pprof *p, uint32_t handle, const char *op, const uint64_t *v)
{
	struct pp_deferred *d;
	struct pp_sample *s;

	if (!handle || handle > p->nr_deferred)
		return;
	d = &p->deferred[handle - 1];
	if (!d->locs)
		return;		/* added already */
	s = add_locs(p, d->locs, d->nr, d->comm, d->tid, d->family, op, &d->src, v[0], v[1]);
	s->inuse_count += v[2];
	s->inuse_bytes += v[3];
	free(d->locs);
	d->locs = NULL;
}

void pprof_add_memory(struct pprof *p, uint32_t handle, const char *op, const uint64_t v[4])
{
	add_deferred(p, handle, op, v);
}

static struct pp_sample *add_locs(struct pprof *p, const uint64_t *locs, size_t nr,
				  const char *comm, uint32_t tid, const char *family,
				  const char *op, const struct pp_src *src, uint64_t count,
				  uint64_t period)
{
	struct pp_sample *s;
	void **slot;

	comm = intern(p, comm);
	family = intern(p, family);
	op = intern(p, op);
	strbuf_reset(&p->key);
	for (size_t i = 0; i < nr; i++)
		strbuf_addf(&p->key, "%llx,", (unsigned long long)locs[i]);
	strbuf_addf(&p->key, "\2%p\2%u\2%p\2%p\2%p\2%p\2%p\2%u", (const void *)comm, tid,
		    (const void *)family, (const void *)op, (const void *)src->input,
		    (const void *)src->host, (const void *)src->rank, src->pid);
	slot = u64map_slot(&p->sample_ids, (uintptr_t)intern(p, p->key.buf));
	if (!*slot) {
		ALLOC_GROW(p->samples, p->nr_samples + 1, p->alloc_samples);
		s = &p->samples[p->nr_samples++];
		memset(s, 0, sizeof(*s));
		s->locs = xmalloc((nr ? nr : 1) * sizeof(uint64_t));
		memcpy(s->locs, locs, nr * sizeof(uint64_t));
		s->nr = nr;
		s->comm = comm;
		s->family = family;
		s->op = op;
		s->tid = tid;
		s->src = *src;
		*slot = (void *)(uintptr_t)p->nr_samples;
	}
	s = &p->samples[(uintptr_t)*slot - 1];
	s->count += count;
	s->period += period;
	p->total += count;
	return s;
}

void pprof_counts(const struct pprof *p, uint64_t *samples, size_t *functions, size_t *stacks)
{
	*samples = p->total;
	*functions = p->nr_funcs;
	*stacks = p->nr_samples;
}

/* ---- protobuf encoding ---- */

static void pb_key(struct strbuf *sb, unsigned field, unsigned wire)
{
	strbuf_add_varint(sb, (uint64_t)field << 3 | wire);
}

/* An integer field; zero is the default and is left out, as proto3 encoders do. */
static void pb_uint(struct strbuf *sb, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_key(sb, field, WIRE_VARINT);
	strbuf_add_varint(sb, v);
}

static void pb_bytes(struct strbuf *sb, unsigned field, const void *data, size_t len)
{
	pb_key(sb, field, WIRE_LEN);
	strbuf_add_varint(sb, len);
	strbuf_add(sb, data, len);
}

static void pb_packed(struct strbuf *sb, unsigned field, const uint64_t *v, size_t nr)
{
	struct strbuf body = STRBUF_INIT;

	if (!nr)
		return;
	for (size_t i = 0; i < nr; i++)
		strbuf_add_varint(&body, v[i]);
	pb_bytes(sb, field, body.buf, body.len);
	strbuf_release(&body);
}

/* The string table: index 0 is "", the others in order of first use. */
struct strtab {
	struct u64map idx;	/* interned pointer -> index + 1 */
	const char **v;
	size_t nr, alloc;
};

static uint64_t str_id(struct pprof *p, struct strtab *t, const char *s)
{
	void **slot;

	if (!s || !*s)
		return 0;
	s = intern(p, s);
	slot = u64map_slot(&t->idx, (uintptr_t)s);
	if (!*slot) {
		ALLOC_GROW(t->v, t->nr + 1, t->alloc);
		t->v[t->nr++] = s;
		*slot = (void *)(uintptr_t)t->nr;	/* index t->nr: "" is index 0 */
	}
	return (uintptr_t)*slot;
}

static void value_type(struct strbuf *sb, unsigned field, uint64_t type, uint64_t unit)
{
	struct strbuf m = STRBUF_INIT;

	pb_uint(&m, VALUETYPE_TYPE, type);
	pb_uint(&m, VALUETYPE_UNIT, unit);
	pb_bytes(sb, field, m.buf, m.len);
	strbuf_release(&m);
}

static void label(struct pprof *p, struct strtab *t, struct strbuf *sb, const char *key,
		  const char *str, uint64_t num)
{
	struct strbuf m = STRBUF_INIT;

	pb_uint(&m, LABEL_KEY, str_id(p, t, key));
	if (str)
		pb_uint(&m, LABEL_STR, str_id(p, t, str));
	else {
		pb_key(&m, LABEL_NUM, WIRE_VARINT);
		strbuf_add_varint(&m, num);
	}
	pb_bytes(sb, SAMPLE_LABEL, m.buf, m.len);
	strbuf_release(&m);
}

static void encode(struct pprof *p, const struct pprof_info *info, struct strbuf *out)
{
	struct strtab t;
	struct strbuf m = STRBUF_INIT;
	const char *vtype = info->event_is_time ? "cpu" : (info->event ? info->event : "events");
	const char *vunit = info->event_is_time ? "nanoseconds" : "count";
	uint64_t vals[4];

	memset(&t, 0, sizeof(t));
	u64map_init(&t.idx);
	if (p->memory) {
		/* Go's heap profile: what was allocated, and what is still in use (at exit) */
		vtype = "space";
		vunit = "bytes";
		value_type(out, PROFILE_SAMPLE_TYPE, str_id(p, &t, "alloc_objects"), str_id(p, &t, "count"));
		value_type(out, PROFILE_SAMPLE_TYPE, str_id(p, &t, "alloc_space"), str_id(p, &t, "bytes"));
		value_type(out, PROFILE_SAMPLE_TYPE, str_id(p, &t, "inuse_objects"), str_id(p, &t, "count"));
		value_type(out, PROFILE_SAMPLE_TYPE, str_id(p, &t, "inuse_space"), str_id(p, &t, "bytes"));
	} else {
		/* samples: how many, and the CPU time (or events) they stand for */
		value_type(out, PROFILE_SAMPLE_TYPE, str_id(p, &t, "samples"), str_id(p, &t, "count"));
		value_type(out, PROFILE_SAMPLE_TYPE, str_id(p, &t, vtype), str_id(p, &t, vunit));
	}
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct pp_sample *s = &p->samples[i];

		strbuf_reset(&m);
		pb_packed(&m, SAMPLE_LOCATION_ID, s->locs, s->nr);
		vals[0] = s->count;
		vals[1] = s->period;
		vals[2] = s->inuse_count;
		vals[3] = s->inuse_bytes;
		pb_packed(&m, SAMPLE_VALUE, vals, p->memory ? 4 : 2);
		if (s->comm)
			label(p, &t, &m, "thread", s->comm, 0);
		label(p, &t, &m, "tid", NULL, s->tid);
		if (s->family)
			label(p, &t, &m, "family", s->family, 0);
		if (s->op)
			label(p, &t, &m, "operator", s->op, 0);
		/* for back-ends that gather many machines and ranks (Parca, Pyroscope) */
		if (s->src.pid)
			label(p, &t, &m, "pid", NULL, s->src.pid);
		if (s->src.host)
			label(p, &t, &m, "host", s->src.host, 0);
		if (s->src.rank)
			label(p, &t, &m, "rank", s->src.rank, 0);
		if (s->src.input)
			label(p, &t, &m, "input", s->src.input, 0);
		pb_bytes(out, PROFILE_SAMPLE, m.buf, m.len);
	}
	for (size_t i = 0; i < p->nr_maps; i++) {
		strbuf_reset(&m);
		pb_uint(&m, MAPPING_ID, i + 1);
		pb_uint(&m, MAPPING_FILENAME, str_id(p, &t, p->maps[i]));
		pb_uint(&m, MAPPING_HAS_FUNCTIONS, 1);
		pb_bytes(out, PROFILE_MAPPING, m.buf, m.len);
	}
	/* one location per function (pprof's default view is by function anyway), one
	 * per line of a Python function */
	for (size_t i = 0; i < p->nr_loctab; i++) {
		struct strbuf line = STRBUF_INIT;
		const struct pp_func *fn = &p->funcs[p->loctab[i].func - 1];

		strbuf_reset(&m);
		pb_uint(&m, LOCATION_ID, i + 1);
		pb_uint(&m, LOCATION_MAPPING_ID, fn->mapping);
		pb_uint(&m, LOCATION_ADDRESS, fn->start);
		pb_uint(&line, LINE_FUNCTION_ID, p->loctab[i].func);
		if (p->loctab[i].line > 0)
			pb_uint(&line, LINE_LINE, (uint64_t)p->loctab[i].line);
		pb_bytes(&m, LOCATION_LINE, line.buf, line.len);
		strbuf_release(&line);
		pb_bytes(out, PROFILE_LOCATION, m.buf, m.len);
	}
	for (size_t i = 0; i < p->nr_funcs; i++) {
		strbuf_reset(&m);
		pb_uint(&m, FUNCTION_ID, i + 1);
		pb_uint(&m, FUNCTION_NAME, str_id(p, &t, p->funcs[i].name));
		pb_uint(&m, FUNCTION_SYSTEM_NAME, str_id(p, &t, p->funcs[i].name));
		pb_uint(&m, FUNCTION_FILENAME, str_id(p, &t, p->funcs[i].file));
		pb_bytes(out, PROFILE_FUNCTION, m.buf, m.len);
	}
	pb_uint(out, PROFILE_DURATION_NANOS, info->duration_ns);
	value_type(out, PROFILE_PERIOD_TYPE, str_id(p, &t, vtype), str_id(p, &t, vunit));
	pb_uint(out, PROFILE_PERIOD, info->ns_per_sample);
	if (info->comment) {
		pb_key(out, PROFILE_COMMENT, WIRE_VARINT);
		strbuf_add_varint(out, str_id(p, &t, info->comment));
	}
	pb_uint(out, PROFILE_DEFAULT_SAMPLE_TYPE, str_id(p, &t, p->memory ? "inuse_space" : vtype));
	/* the string table last: every index above is known now */
	pb_bytes(out, PROFILE_STRING_TABLE, "", 0);
	for (size_t i = 0; i < t.nr; i++)
		pb_bytes(out, PROFILE_STRING_TABLE, t.v[i], strlen(t.v[i]));
	strbuf_release(&m);
	free(t.v);
	u64map_release(&t.idx);
}

int pprof_write(struct pprof *p, const struct pprof_info *info, FILE *out)
{
	struct strbuf raw = STRBUF_INIT;
	unsigned char buf[65536];
	z_stream zs;
	int ret = 0, zr;

	encode(p, info, &raw);
	memset(&zs, 0, sizeof(zs));
	/* windowBits 15 + 16: a gzip wrapper, as pprof files are */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		strbuf_release(&raw);
		return error("cannot start zlib");
	}
	zs.next_in = (unsigned char *)raw.buf;
	zs.avail_in = (uInt)raw.len;
	do {
		zs.next_out = buf;
		zs.avail_out = sizeof(buf);
		zr = deflate(&zs, Z_FINISH);
		if (fwrite(buf, 1, sizeof(buf) - zs.avail_out, out) != sizeof(buf) - zs.avail_out)
			ret = -1;
	} while (zr == Z_OK);
	if (zr != Z_STREAM_END)
		ret = error("zlib failed to compress the profile");
	deflateEnd(&zs);
	strbuf_release(&raw);
	return ret;
}
