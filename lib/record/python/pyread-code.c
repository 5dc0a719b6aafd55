/* pyread-code.c - the code objects of a Python process read from outside: their names,
 * files and line tables, each read once at its address and kept while it lives, and the
 * ones the kernel read at the sample (pybpf.h) taken in. */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "pyread-priv.h"
#include "pyread.h"
#include "recfile.h"

/* The characters of the str object at obj as UTF-8 into sb (at most 1024 characters):
 * raw holds its first rawlen bytes (its header at least); what it lacks is read.  0 or
 * -1. */
static int str_parse(const struct pyproc *p, uint64_t obj, const unsigned char *raw,
		     size_t rawlen, struct strbuf *sb)
{
	unsigned char data[4096];
	const unsigned char *d = data;
	uint64_t len;
	uint32_t state, kind;
	size_t off, n;

	if (rawlen < 40)
		return -1;
	if (p->str_type && memcmp(raw + 8, &p->str_type, 8))
		return -1;	/* not a str (a code object freed under us: its names too) */
	memcpy(&len, raw + 16, 8);
	memcpy(&state, raw + 32, 4);
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return -1;	/* not compact: not a code object's name */
	off = ((state >> 6) & 1) ? p->lay->str_ascii : p->lay->str_compact;
	if (len > 1024)
		len = 1024;
	n = (size_t)len * kind;
	if (off + n <= rawlen)
		d = raw + off;
	else if (n && pyread_rd(p->pid, obj + off, data, n) < 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		uint32_t c = 0;

		memcpy(&c, d + i * kind, kind);	/* (little-endian) */
		if (c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
			return -1;	/* no character: not a string the interpreter made */
		if (c < 0x80) {
			strbuf_addch(sb, (char)c);
		} else if (c < 0x800) {
			strbuf_addch(sb, (char)(0xc0 | c >> 6));
			strbuf_addch(sb, (char)(0x80 | (c & 0x3f)));
		} else if (c < 0x10000) {
			strbuf_addch(sb, (char)(0xe0 | c >> 12));
			strbuf_addch(sb, (char)(0x80 | ((c >> 6) & 0x3f)));
			strbuf_addch(sb, (char)(0x80 | (c & 0x3f)));
		} else {
			strbuf_addch(sb, (char)(0xf0 | c >> 18));
			strbuf_addch(sb, (char)(0x80 | ((c >> 12) & 0x3f)));
			strbuf_addch(sb, (char)(0x80 | ((c >> 6) & 0x3f)));
			strbuf_addch(sb, (char)(0x80 | (c & 0x3f)));
		}
	}
	return 0;
}

/* The same for a str object read from outside. */
static int read_str(const struct pyproc *p, uint64_t obj, struct strbuf *sb)
{
	unsigned char h[40];	/* up to the state, in both layouts */

	if (pyread_rd(p->pid, obj, h, sizeof(h)) < 0)
		return -1;
	return str_parse(p, obj, h, sizeof(h), sb);
}

struct pycode *pyread_code_slot(struct pyproc *p, uint64_t addr)
{
	size_t i;

	if ((p->nr_codes + 1) * 2 > p->size_codes) {
		struct pycode *old = p->codes;
		size_t osize = p->size_codes;

		p->size_codes = osize ? osize * 2 : 256;
		p->codes = xcalloc(p->size_codes, sizeof(*p->codes));
		for (i = 0; i < osize; i++)
			if (old[i].addr)
				*pyread_code_slot(p, old[i].addr) = old[i];
		free(old);
	}
	i = (size_t)((addr >> 4) * 0x9E3779B97F4A7C15ull >> 20) & (p->size_codes - 1);
	while (p->codes[i].addr && p->codes[i].addr != addr)
		i = (i + 1) & (p->size_codes - 1);
	return &p->codes[i];
}

/* Write code object c's record: first its names (first: the first record of its id),
 * and the line that code unit instr is on, unless a record gave it already. */
void pyread_code_emit(struct pyreader *pr, struct pyproc *p, struct pycode *c, uint32_t instr,
		      int first)
{
	struct dlp_pycode_rec rec;
	struct strbuf body = STRBUF_INIT;
	int32_t pair[2];

	if (instr != DLP_PY_NO_INSTR) {
		void **seen = u64map_slot(&pr->lines_written, (uint64_t)c->id << 32 | instr);

		if (*seen && !first)
			return;
		*seen = (void *)1;
		if (!first) {
			/* the line of one more instruction: gathered, written a record per code
			 * object at the next pyreader_flush() (a record each was a fifth of the
			 * Python records' bytes on the CNN) */
			ALLOC_GROW(pr->pend, pr->nr_pend + 1, pr->alloc_pend);
			pr->pend[pr->nr_pend++] = (struct pend_line){
				c->id, { (int32_t)instr,
					 pyrec_py311_line(c->tab, c->tab_len, (int)c->firstlineno, instr) } };
			return;
		}
	} else if (!first) {
		return;
	}
	memset(&rec, 0, sizeof(rec));
	rec.id = c->id;
	rec.flags = DLP_PYCODE_LINES;
	if (first) {
		/* the rest only once: the file is smaller for it */
		rec.pid = (int32_t)p->pid;
		rec.firstlineno = c->firstlineno;
		rec.pyversion = p->version;
		rec.qualname_len = c->qlen;
		rec.file_len = c->flen;
		strbuf_add(&body, c->qualname, c->qlen);
		strbuf_add(&body, c->file, c->flen);
	}
	if (instr != DLP_PY_NO_INSTR) {
		pair[0] = (int32_t)instr;
		pair[1] = pyrec_py311_line(c->tab, c->tab_len, (int)c->firstlineno, instr);
		strbuf_add(&body, pair, sizeof(pair));
		rec.linetable_len = sizeof(pair);
	}
	pr->emit(pr->ctx, DLP_REC_PYCODE, &rec, sizeof(rec), body.buf, body.len);
	strbuf_release(&body);
}

/* Empty slot c becomes the code object at addr, as read: head (CO_READ bytes), its
 * names (the strbufs' buffers are taken), its line table (tab: tlen bytes, taken).  Its
 * id is given when a stack first names it (pyread_code_get). */
static void code_set(struct pyproc *p, struct pycode *c, uint64_t addr,
		     const unsigned char *head, struct strbuf *q, struct strbuf *fn,
		     unsigned char *tab, uint64_t tlen)
{
	int32_t first, trace;

	memcpy(&first, head + p->lay->co_firstline, 4);
	memcpy(&trace, head + p->lay->co_firsttrace, 4);
	memset(c, 0, sizeof(*c));
	c->addr = addr;
	memcpy(c->ident, head + CO_IDENT, sizeof(c->ident));
	c->firsttrace = trace;
	c->firstlineno = first > 0 ? (uint32_t)first : 0;
	c->tab = tab;
	c->tab_len = (uint32_t)tlen;
	c->qlen = (uint16_t)(q->len < 0xffff ? q->len : 0xffff);
	c->flen = (uint16_t)(fn->len < 0xffff ? fn->len : 0xffff);
	c->qualname = q->buf ? q->buf : xstrdup("");
	c->file = fn->buf ? fn->buf : xstrdup("");
	p->nr_codes++;
}

/* Slot c emptied (its code object is another one now) */
static void code_clear(struct pyproc *p, struct pycode *c)
{
	pyread_code_free(c);
	memset(c, 0, sizeof(*c));
	p->nr_codes--;
}

/* The code object at addr, running code unit instr: read (and written out) the first
 * time, written again when instr is past the line table written so far.  NULL when it
 * cannot be read (not a code object). */
const struct pycode *pyread_code_get(struct pyreader *pr, struct pyproc *p, uint64_t addr,
				     uint32_t instr)
{
	struct pycode *c = pyread_code_slot(p, addr);
	unsigned char h[CO_READ], *tab;
	uint64_t type, fname, qname, ltab, tlen = 0;
	struct strbuf q = STRBUF_INIT, fn = STRBUF_INIT;

	if (pr->cur_time && c->addr && c->since > pr->cur_time) {
		/* a chain the kernel read before the object at addr now was: an older one */
		for (size_t i = p->nr_old; i-- > 0;)
			if (p->old[i].addr == addr && p->old[i].since <= pr->cur_time &&
			    p->old[i].until > pr->cur_time) {
				c = &p->old[i];
				break;
			}
	} else if (c->addr && c->stale && !pr->cur_time) {
		/* read again as the code object it is now (a chain the kernel read: its code
		 * objects were read with it, a later look says nothing of them) */
		code_clear(p, c);
	}
	if (c->addr) {
		size_t i;

		for (i = 0; i < pr->nr_verify && pr->verify[i] != c; i++)
			;
		if (i == pr->nr_verify && i < MAX_FRAMES)
			pr->verify[pr->nr_verify++] = c;
		if (!c->id) {
			/* read in the kernel, named by a stack for the first time */
			c->id = ++pr->next_code;
			pr->st.codes++;
			pyread_code_emit(pr, p, c, instr, 1);
		} else {
			pyread_code_emit(pr, p, c, instr, 0);
		}
		return c;
	}
	if (pyread_rd(p->pid, addr + p->ob_base, h, sizeof(h)) < 0)
		return NULL;
	memcpy(&type, h + CO_TYPE, 8);
	if (type != p->code_type)
		return NULL;
	memcpy(&fname, h + CO_FILENAME, 8);
	memcpy(&qname, h + CO_QUALNAME, 8);
	memcpy(&ltab, h + CO_LINETABLE, 8);
	if (read_str(p, qname + p->ob_base, &q) < 0 || read_str(p, fname + p->ob_base, &fn) < 0) {
		strbuf_release(&q);
		strbuf_release(&fn);
		return NULL;
	}
	if (pyread_rd64(p->pid, ltab + p->ob_base + 16, &tlen) < 0 || tlen > (1u << 20))
		tlen = 0;
	tab = xmalloc(tlen + 1);
	if (tlen && pyread_rd(p->pid, ltab + p->ob_base + 32, tab, tlen) < 0)
		tlen = 0;
	code_set(p, c, addr, h, &q, &fn, tab, tlen);
	c->id = ++pr->next_code;
	pr->st.codes++;
	pr->st.codes_outside++;
	pyread_code_emit(pr, p, c, instr, 1);
	return c;
}

void pyreader_kernel_code(struct pyreader *pr, const struct pybpf_code *pc)
{
	struct pyproc *p = pyread_proc(pr, pc->pid);
	struct strbuf q = STRBUF_INIT, fn = STRBUF_INIT;
	uint64_t fname, qname, ltab, tlen = pc->tab_size;
	unsigned char *tab;
	struct pycode *c;

	if (p->state != 1 || !pc->qualname || !pc->filename ||
	    memcmp(pc->head + CO_TYPE, &p->code_type, 8))
		return;	/* not read whole: from outside, if a stack names it */
	c = pyread_code_slot(p, pc->addr);
	if (c->addr && !memcmp(c->ident, pc->head + CO_IDENT, sizeof(c->ident))) {
		c->stale = 0;
		return;	/* known already (the kernel's map forgot it) */
	}
	memcpy(&fname, pc->head + CO_FILENAME, 8);
	memcpy(&qname, pc->head + CO_QUALNAME, 8);
	memcpy(&ltab, pc->head + CO_LINETABLE, 8);
	/* (the program read each object from its ob_base on, as pyread does) */
	if (str_parse(p, qname + p->ob_base, pc->qualname, PYBPF_STR_READ, &q) < 0 ||
	    str_parse(p, fname + p->ob_base, pc->filename, PYBPF_STR_READ, &fn) < 0) {
		strbuf_release(&q);
		strbuf_release(&fn);
		return;
	}
	if (tlen > (1u << 20))
		tlen = 0;
	tab = xmalloc(tlen + 1);
	if (pc->tab && pc->tab_len == tlen) {
		memcpy(tab, pc->tab, tlen);
	} else if (!tlen || pyread_rd(p->pid, ltab + p->ob_base + 32, tab, tlen) < 0) {
		/* longer than the program reads, and gone: the part it read */
		tlen = pc->tab ? pc->tab_len : 0;
		if (tlen)
			memcpy(tab, pc->tab, tlen);
	}
	if (c->addr) {
		/* another object at that address before: kept for the samples before this
		 * one (the oldest kept goes) */
		if (p->nr_old == OLD_MAX) {
			pyread_code_free(&p->old[0]);
			memmove(p->old, p->old + 1, --p->nr_old * sizeof(p->old[0]));
		}
		ALLOC_GROW(p->old, p->nr_old + 1, p->alloc_old);
		p->old[p->nr_old] = *c;
		p->old[p->nr_old++].until = pc->time;
		memset(c, 0, sizeof(*c));
		p->nr_codes--;
	}
	code_set(p, c, pc->addr, pc->head, &q, &fn, tab, tlen);
	c->since = pc->time;
	pr->st.kernel_codes++;
}

static int pend_cmp(const void *a, const void *b)
{
	const struct pend_line *x = a, *y = b;

	if (x->code != y->code)
		return x->code < y->code ? -1 : 1;
	return x->pair[0] < y->pair[0] ? -1 : x->pair[0] > y->pair[0];
}

void pyreader_flush(struct pyreader *pr)
{
	struct strbuf body = STRBUF_INIT;

	if (!pr->nr_pend)
		return;
	qsort(pr->pend, pr->nr_pend, sizeof(*pr->pend), pend_cmp);
	for (size_t i = 0, j; i < pr->nr_pend; i = j) {
		struct dlp_pycode_rec rec;

		strbuf_reset(&body);
		for (j = i; j < pr->nr_pend && pr->pend[j].code == pr->pend[i].code; j++)
			strbuf_add(&body, pr->pend[j].pair, sizeof(pr->pend[j].pair));
		memset(&rec, 0, sizeof(rec));
		rec.id = pr->pend[i].code;
		rec.flags = DLP_PYCODE_LINES;
		rec.linetable_len = (uint32_t)body.len;
		pr->emit(pr->ctx, DLP_REC_PYCODE, &rec, sizeof(rec), body.buf, body.len);
	}
	pr->nr_pend = 0;
	strbuf_release(&body);
}

void pyreader_codes_in_kernel(struct pyreader *pr)
{
	pr->kernel_codes = 1;
}

void pyreader_chain_read_at(struct pyreader *pr, uint64_t time)
{
	pr->chain_time = time;
}

/* Are the cached code objects of the last walk still the objects at their addresses?
 * One read of their identifying pointers; the ones that changed are marked stale.
 * Returns how many changed (0 when the reads fail: nothing is known). */
size_t pyread_verify_codes(struct pyreader *pr, uint32_t pid)
{
	struct iovec local[MAX_FRAMES], remote[MAX_FRAMES];
	uint64_t got[MAX_FRAMES][3];
	size_t n = pr->nr_verify, changed = 0;
	uint16_t base = pyread_proc(pr, pid)->ob_base;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		local[i] = (struct iovec){ got[i], sizeof(got[i]) };
		remote[i] = (struct iovec){ (void *)(uintptr_t)(pr->verify[i]->addr + base + CO_IDENT),
					    sizeof(got[i]) };
	}
	if (process_vm_readv((pid_t)pid, local, n, remote, n, 0) != (ssize_t)(n * sizeof(got[0])))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (memcmp(got[i], pr->verify[i]->ident, sizeof(got[i]))) {
			pr->verify[i]->stale = 1;
			changed++;
		}
	pr->stale_codes += changed;
	return changed;
}
