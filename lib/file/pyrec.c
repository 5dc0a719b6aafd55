/* pyrec.c - the packed forms of the Python records (see pyrec.h).
 *
 * A code object's record and a chain's are written packed: each field a LEB128 varint,
 * a chain's frames as (code, instruction << 1 | entry), a code object's (instruction,
 * line) pairs as differences from the pair before.  Readers unpack them into the plain
 * records' layout (struct dlp_pycode_rec / dlp_pychain_rec and their bodies) and read
 * that, so there is one reader of each record whatever the file's age.
 */
#include <string.h>

#include "pyrec.h"
#include "recfile.h"
#include "util.h"

#define PACK_NAMES 2u	/* packed code record: pid, first line, version and names follow */

/* a reader of a packed record: a varint that does not read, or is past its field's
 * bound, makes the record bad */
struct cursor {
	struct varint_rd r;
	int bad;
};

static uint64_t get_uv(struct cursor *c, uint64_t max)
{
	uint64_t v;

	if (varint_get(&c->r, &v) < 0 || v > max) {
		c->bad = 1;
		return 0;
	}
	return v;
}

static int64_t get_sv(struct cursor *c)
{
	int64_t v;

	if (varint_get_signed(&c->r, &v) < 0) {
		c->bad = 1;
		return 0;
	}
	return v;
}

static const unsigned char *get_bytes(struct cursor *c, size_t n)
{
	const unsigned char *p = c->r.p;

	if (c->bad || (size_t)(c->r.end - c->r.p) < n) {
		c->bad = 1;
		return NULL;
	}
	c->r.p += n;
	return p;
}

/* A plain code record (struct + names + body) packed; -1: it has no packed form (the
 * caller writes it as it is) */
static int pack_code(const unsigned char *rec, size_t len, struct strbuf *out)
{
	struct dlp_pycode_rec r;
	const unsigned char *body;
	unsigned flags;

	if (len < sizeof(r))
		return -1;
	memcpy(&r, rec, sizeof(r));
	body = rec + sizeof(r);
	if ((uint64_t)r.qualname_len + r.file_len + r.linetable_len != len - sizeof(r) ||
	    (r.flags & ~DLP_PYCODE_LINES) || r.addr ||
	    ((r.flags & DLP_PYCODE_LINES) && (r.linetable_len % 8 || r.linetable_off)))
		return -1;
	flags = r.flags & DLP_PYCODE_LINES;
	if (r.pid || r.firstlineno || r.pyversion || r.qualname_len || r.file_len)
		flags |= PACK_NAMES;
	strbuf_add_varint(out, r.id);
	strbuf_add_varint(out, flags);
	if (flags & PACK_NAMES) {
		strbuf_add_varint(out, (uint32_t)r.pid);
		strbuf_add_varint(out, r.firstlineno);
		strbuf_add_varint(out, r.pyversion);
		strbuf_add_varint(out, r.qualname_len);
		strbuf_add_varint(out, r.file_len);
		strbuf_add(out, body, (size_t)r.qualname_len + r.file_len);
	}
	body += (size_t)r.qualname_len + r.file_len;
	if (flags & DLP_PYCODE_LINES) {
		int64_t instr = 0, line = r.firstlineno;

		strbuf_add_varint(out, r.linetable_len / 8);
		for (size_t i = 0; i < r.linetable_len; i += 8) {
			int32_t pair[2];

			memcpy(pair, body + i, sizeof(pair));
			strbuf_add_svarint(out, pair[0] - instr);
			strbuf_add_svarint(out, pair[1] - line);
			instr = pair[0];
			line = pair[1];
		}
	} else {
		strbuf_add_varint(out, r.linetable_off);
		strbuf_add_varint(out, r.linetable_len);
		strbuf_add(out, body, r.linetable_len);
	}
	return 0;
}

static int pack_chain(const unsigned char *rec, size_t len, struct strbuf *out)
{
	struct dlp_pychain_rec r;
	const unsigned char *body;
	size_t nf;

	if (len < sizeof(r))
		return -1;
	memcpy(&r, rec, sizeof(r));
	body = rec + sizeof(r);
	nf = (size_t)r.nr - r.same;
	if (r.same > r.nr || r.pad || len - sizeof(r) != nf * sizeof(struct dlp_pyframe))
		return -1;
	strbuf_add_varint(out, r.id);
	strbuf_add_varint(out, r.base);
	strbuf_add_varint(out, r.nr);
	strbuf_add_varint(out, r.same);
	for (size_t i = 0; i < nf; i++) {
		struct dlp_pyframe f;

		memcpy(&f, body + i * sizeof(f), sizeof(f));
		strbuf_add_varint(out, f.code);
		strbuf_add_varint(out, (uint64_t)(f.instr & ~DLP_PY_ENTRY) << 1 | !!(f.instr & DLP_PY_ENTRY));
	}
	return 0;
}

int pyrec_pack(uint32_t type, const void *a, size_t alen, const void *b, size_t blen,
	       struct strbuf *out, uint32_t *packed_type)
{
	struct strbuf plain = STRBUF_INIT;
	int ret = -1;

	if (type != DLP_REC_PYCODE && type != DLP_REC_PYCHAIN)
		return -1;
	strbuf_add(&plain, a, alen);
	if (blen)
		strbuf_add(&plain, b, blen);
	strbuf_reset(out);
	if (type == DLP_REC_PYCODE) {
		ret = pack_code((const unsigned char *)plain.buf, plain.len, out);
		*packed_type = DLP_REC_PYCODE_PACKED;
	} else {
		ret = pack_chain((const unsigned char *)plain.buf, plain.len, out);
		*packed_type = DLP_REC_PYCHAIN_PACKED;
	}
	strbuf_release(&plain);
	return ret;
}

static int unpack_code(struct cursor *c, struct strbuf *out)
{
	struct dlp_pycode_rec r;
	const unsigned char *names = NULL, *tab = NULL;
	unsigned flags;
	uint64_t n = 0;

	memset(&r, 0, sizeof(r));
	r.id = (uint32_t)get_uv(c, UINT32_MAX);
	flags = (unsigned)get_uv(c, DLP_PYCODE_LINES | PACK_NAMES);
	r.flags = flags & DLP_PYCODE_LINES;
	if (flags & PACK_NAMES) {
		r.pid = (int32_t)(uint32_t)get_uv(c, UINT32_MAX);
		r.firstlineno = (uint32_t)get_uv(c, UINT32_MAX);
		r.pyversion = (uint32_t)get_uv(c, UINT32_MAX);
		r.qualname_len = (uint16_t)get_uv(c, UINT16_MAX);
		r.file_len = (uint16_t)get_uv(c, UINT16_MAX);
		names = get_bytes(c, (size_t)r.qualname_len + r.file_len);
	}
	if (r.flags & DLP_PYCODE_LINES) {
		n = get_uv(c, (uint64_t)(c->r.end - c->r.p));	/* 2 bytes a pair at least */
		r.linetable_len = (uint32_t)(n * 8);
	} else {
		r.linetable_off = (uint32_t)get_uv(c, UINT32_MAX);
		r.linetable_len = (uint32_t)get_uv(c, (uint64_t)(c->r.end - c->r.p));
		tab = get_bytes(c, r.linetable_len);
	}
	if (c->bad)
		return -1;
	strbuf_add(out, &r, sizeof(r));
	if (names)
		strbuf_add(out, names, (size_t)r.qualname_len + r.file_len);
	if (r.flags & DLP_PYCODE_LINES) {
		int64_t instr = 0, line = r.firstlineno;

		for (uint64_t i = 0; i < n; i++) {
			int32_t pair[2];

			instr += get_sv(c);
			line += get_sv(c);
			pair[0] = (int32_t)instr;
			pair[1] = (int32_t)line;
			strbuf_add(out, pair, sizeof(pair));
		}
	} else if (r.linetable_len) {
		strbuf_add(out, tab, r.linetable_len);
	}
	return c->bad || c->r.p != c->r.end ? -1 : 0;
}

static int unpack_chain(struct cursor *c, struct strbuf *out)
{
	struct dlp_pychain_rec r;

	memset(&r, 0, sizeof(r));
	r.id = (uint32_t)get_uv(c, UINT32_MAX);
	r.base = (uint32_t)get_uv(c, UINT32_MAX);
	r.nr = (uint16_t)get_uv(c, UINT16_MAX);
	r.same = (uint16_t)get_uv(c, r.nr);
	if (c->bad || (size_t)(r.nr - r.same) * 2 > (size_t)(c->r.end - c->r.p))
		return -1;
	strbuf_add(out, &r, sizeof(r));
	for (unsigned i = r.same; i < r.nr; i++) {
		struct dlp_pyframe f;
		uint64_t v;

		f.code = (uint32_t)get_uv(c, UINT32_MAX);
		v = get_uv(c, (uint64_t)UINT32_MAX);
		f.instr = (uint32_t)(v >> 1) | (v & 1 ? DLP_PY_ENTRY : 0);
		strbuf_add(out, &f, sizeof(f));
	}
	return c->bad || c->r.p != c->r.end ? -1 : 0;
}

int pyrec_unpack(uint32_t type, const void *data, size_t len, struct strbuf *out,
		 uint32_t *plain_type)
{
	struct cursor c = { { data, (const unsigned char *)data + len }, 0 };

	strbuf_reset(out);
	if (type == DLP_REC_PYCODE_PACKED) {
		*plain_type = DLP_REC_PYCODE;
		return unpack_code(&c, out);
	}
	if (type == DLP_REC_PYCHAIN_PACKED) {
		*plain_type = DLP_REC_PYCHAIN;
		return unpack_chain(&c, out);
	}
	return -1;
}

/* CPython's location-table varints: 6 bits a byte, low first, bit 6 set on all but the
 * last; the signed ones zigzag-coded */
static uint32_t py_varint(const unsigned char *t, size_t len, size_t *i)
{
	uint32_t v = 0;
	int shift = 0;

	while (*i < len) {
		unsigned char b = t[(*i)++];

		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64) || shift > 30)
			break;
	}
	return v;
}

static int32_t py_svarint(const unsigned char *t, size_t len, size_t *i)
{
	uint32_t v = py_varint(t, len, i);

	return (v & 1) ? -(int32_t)(v >> 1) : (int32_t)(v >> 1);
}

/* CPython 3.11's location table (Objects/locations.md): entries of a header byte
 * 1CCCCLLL (code C, L+1 code units), then per code: 15 no location; 14 line delta
 * (svarint), end line, column, end column (varints); 13 line delta only; 10-12 the line
 * moves by C-10, two column bytes; 0-9 same line, one column byte. */
int pyrec_py311_line(const unsigned char *tab, size_t len, int firstlineno, uint32_t instr)
{
	size_t i = 0;
	uint64_t addr = 0;
	int line = firstlineno;

	while (i < len) {
		unsigned char h = tab[i++];
		unsigned code = (h >> 3) & 15, n = (h & 7) + 1;
		int none = 0;

		if (!(h & 0x80))
			return -1;	/* not an entry start: a table we do not read */
		if (code == 15) {
			none = 1;
		} else if (code == 14) {
			line += py_svarint(tab, len, &i);
			py_varint(tab, len, &i);
			py_varint(tab, len, &i);
			py_varint(tab, len, &i);
		} else if (code == 13) {
			line += py_svarint(tab, len, &i);
		} else if (code >= 10) {
			line += (int)code - 10;
			i += 2;
		} else {
			i += 1;
		}
		if (instr < addr + n)
			return none ? -1 : line;
		addr += n;
	}
	return -1;
}
