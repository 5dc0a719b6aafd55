/* test-pyrec.c - unit tests of lib/file/pyrec.c: the packed Python records unpack to exactly
 * the plain ones, are smaller, and a damaged packed record is refused, never read past. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyrec.h"
#include "recfile.h"
#include "tap.h"
#include "util.h"
#include "../xorshift.h"

/* pack a plain record, unpack it: the same bytes and type back; returns the packed size */
static size_t round_trip(uint32_t type, const void *a, size_t alen, const void *b, size_t blen,
			 const char *what)
{
	struct strbuf packed = STRBUF_INIT, plain = STRBUF_INIT, want = STRBUF_INIT;
	uint32_t ptype = 0, back = 0;
	char got[160];
	size_t n = 0;
	int ok_pack, ok_unpack = 0;

	strbuf_add(&want, a, alen);
	if (blen)
		strbuf_add(&want, b, blen);
	ok_pack = !pyrec_pack(type, a, alen, b, blen, &packed, &ptype);
	if (ok_pack)
		ok_unpack = !pyrec_unpack(ptype, packed.buf, packed.len, &plain, &back);
	snprintf(got, sizeof(got), "pack %d unpack %d type %u, %zu bytes plain, %zu packed, %zu back",
		 ok_pack, ok_unpack, back, want.len, packed.len, plain.len);
	ok(ok_pack && ok_unpack && back == type && plain.len == want.len &&
	   !memcmp(plain.buf, want.buf, want.len), what, got);
	if (ok_pack) {
		/* every cut of it is refused */
		int cut_ok = 0;

		for (size_t len = 0; len < packed.len; len++) {
			struct strbuf out = STRBUF_INIT;
			char *copy = malloc(len ? len : 1);

			memcpy(copy, packed.buf, len);
			cut_ok += !pyrec_unpack(ptype, copy, len, &out, &back);
			free(copy);
			strbuf_release(&out);
		}
		snprintf(got, sizeof(got), "%d of %zu cuts read", cut_ok, packed.len);
		ok(cut_ok == 0, "  ... and each shorter cut of it is refused", got);
		n = packed.len;
	}
	strbuf_release(&packed);
	strbuf_release(&plain);
	strbuf_release(&want);
	return n;
}

static void codes(void)
{
	struct dlp_pycode_rec r;
	struct strbuf body = STRBUF_INIT, packed = STRBUF_INIT;
	int32_t pairs[][2] = { { 147, 1339 }, { 12, 1320 }, { 4000, -1 }, { 4002, 1500 } };
	uint32_t ptype;
	size_t n;

	memset(&r, 0, sizeof(r));
	r.id = 715;
	r.pid = 7896;
	r.firstlineno = 1317;
	r.pyversion = 0x030b02f0;
	r.flags = DLP_PYCODE_LINES;
	r.qualname_len = 22;
	r.file_len = 38;
	r.linetable_len = 8;
	strbuf_add(&body, "FileFinder._fill_cache", 22);
	strbuf_add(&body, "<frozen importlib._bootstrap_external>", 38);
	strbuf_add(&body, pairs[0], 8);
	n = round_trip(DLP_REC_PYCODE, &r, sizeof(r), body.buf, body.len,
		       "a code object's first record: names and one line");
	ok(n && n < sizeof(r) + body.len - 25, "  ... in fewer bytes", NULL);

	/* the lines met later: no names, pairs out of order, a line of -1 */
	memset(&r, 0, sizeof(r));
	r.id = 3;
	r.flags = DLP_PYCODE_LINES;
	r.linetable_len = sizeof(pairs);
	round_trip(DLP_REC_PYCODE, &r, sizeof(r), pairs, sizeof(pairs),
		   "a later record: lines of 4 instructions, unordered, one without a line");

	/* a recording before DLP_PYCODE_LINES: a piece of the location table itself */
	memset(&r, 0, sizeof(r));
	r.id = 9;
	r.linetable_off = 100;
	r.linetable_len = 5;
	round_trip(DLP_REC_PYCODE, &r, sizeof(r), "\x80\x01\xff\x00\x7f", 5,
		   "a piece of a location table at an offset");

	/* what has no packed form is said so (the caller writes it plain) */
	memset(&r, 0, sizeof(r));
	r.id = 1;
	r.flags = DLP_PYCODE_LINES;
	r.linetable_len = 7;
	ok(pyrec_pack(DLP_REC_PYCODE, &r, sizeof(r), "1234567", 7, &packed, &ptype) < 0,
	   "lines that are not whole pairs: no packed form", NULL);
	r.linetable_len = 16;
	ok(pyrec_pack(DLP_REC_PYCODE, &r, sizeof(r), "12345678", 8, &packed, &ptype) < 0,
	   "lengths that do not add up: no packed form", NULL);
	ok(pyrec_pack(DLP_REC_PYSTACK, &r, sizeof(r), NULL, 0, &packed, &ptype) < 0,
	   "another record type: no packed form", NULL);
	strbuf_release(&body);
	strbuf_release(&packed);
}

static void chains(void)
{
	struct dlp_pychain_rec r;
	struct dlp_pyframe f[5] = {
		{ 5, 120 }, { 6, 123 | DLP_PY_ENTRY }, { 70000, DLP_PY_NO_INSTR },
		{ 11, DLP_PY_NO_INSTR | DLP_PY_ENTRY }, { 1, 0 },
	};
	size_t n;

	memset(&r, 0, sizeof(r));
	r.id = 344;
	r.base = 343;
	r.nr = 19;
	r.same = 14;
	n = round_trip(DLP_REC_PYCHAIN, &r, sizeof(r), f, sizeof(f),
		       "a chain on its base: entry frames, no instruction yet, a large code id");
	ok(n && n * 3 < (sizeof(r) + sizeof(f)) * 2, "  ... in under two thirds of the bytes", NULL);
	memset(&r, 0, sizeof(r));
	r.id = 1;
	round_trip(DLP_REC_PYCHAIN, &r, sizeof(r), NULL, 0, "an empty chain");
	r.nr = 2;
	r.same = 3;
	{
		struct strbuf packed = STRBUF_INIT;
		uint32_t ptype;

		ok(pyrec_pack(DLP_REC_PYCHAIN, &r, sizeof(r), f, 0, &packed, &ptype) < 0,
		   "more frames shared than it has: no packed form", NULL);
		strbuf_release(&packed);
	}
}

/* random bytes as packed records: refused or read whole, never past their end (run
 * under the sanitizers by t6006's builds too) */
static void garbage(void)
{
	uint64_t seed = 12345;
	unsigned read = 0;

	for (int i = 0; i < 20000; i++) {
		unsigned char buf[64];
		size_t len = (size_t)(i % 64);
		struct strbuf out = STRBUF_INIT;
		uint32_t ptype;
		uint32_t type = i & 1 ? DLP_REC_PYCODE_PACKED : DLP_REC_PYCHAIN_PACKED;
		unsigned char *copy;

		for (size_t k = 0; k < len; k++) {
			buf[k] = (unsigned char)(xorshift64(&seed) >> 24);
			if (k % 3)
				buf[k] &= 0x0f;	/* small varints, so that some records read */
		}
		copy = malloc(len ? len : 1);
		memcpy(copy, buf, len);
		if (!pyrec_unpack(type, copy, len, &out, &ptype)) {
			read++;
			if (ptype == DLP_REC_PYCHAIN) {
				struct dlp_pychain_rec r;

				memcpy(&r, out.buf, sizeof(r));
				if (out.len != sizeof(r) + (size_t)(r.nr - r.same) * 8 || r.same > r.nr)
					read = 1u << 30;
			}
		}
		free(copy);
		strbuf_release(&out);
	}
	{
		char got[64];

		snprintf(got, sizeof(got), "%u read", read);
		ok(read > 0 && read < (1u << 30),
		   "random packed records: refused, or read into consistent ones", got);
	}
}

int main(void)
{
	codes();
	chains();
	garbage();
	return tap_done();
}
