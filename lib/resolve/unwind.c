/* unwind.c - CFI unwinding of copied user stacks (unwind.h): the walk, one step a frame
 * (a cached CFI rule of the file, else the frame-pointer step), each return address
 * checked (executable, after a call), a stack scan over frames without CFI, and, while
 * recording, the rest of a walk taken from the thread's last one when its reads above
 * match (unwind-memo.c).  docs/unwinding.md has the design and its figures.
 */
#include <stdlib.h>
#include <string.h>
#include <asm/perf_regs.h>
#include <dwarf.h>

#include "elfsyms.h"
#include "frame.h"
#include "unwind.h"
#include "unwind-priv.h"
#include "util.h"

/* perf_regs index of each DWARF register */
static const unsigned char dwarf_to_perf[DW_NREGS] = {
	PERF_REG_X86_AX, PERF_REG_X86_DX, PERF_REG_X86_CX, PERF_REG_X86_BX,
	PERF_REG_X86_SI, PERF_REG_X86_DI, PERF_REG_X86_BP, PERF_REG_X86_SP,
	PERF_REG_X86_R8, PERF_REG_X86_R9, PERF_REG_X86_R10, PERF_REG_X86_R11,
	PERF_REG_X86_R12, PERF_REG_X86_R13, PERF_REG_X86_R14, PERF_REG_X86_R15,
	PERF_REG_X86_IP,
};


/* ---- the step ---- */


static void memo_log(struct walk *w, uint64_t addr, uint64_t val)
{
	struct memo *m = w->rec;

	if (m->nr_log >= m->alloc_log)
		ALLOC_GROW(m->log, m->nr_log + 1, m->alloc_log);
	m->log[m->nr_log].addr = addr;
	m->log[m->nr_log++].val = val;
}

/* A scan read the copy's words [from, end); to: where it would have ended (0: it found a
 * return address before) */
static void memo_log_scan(struct walk *w, uint64_t from, uint64_t end, uint64_t to)
{
	struct memo *m = w->rec;
	struct memo_scan sc = { to, end - from };

	memo_log(w, from | MR_SCAN, m->nr_bytes);
	ALLOC_GROW(m->bytes, m->nr_bytes + sizeof(sc) + sc.len, m->alloc_bytes);
	memcpy(m->bytes + m->nr_bytes, &sc, sizeof(sc));
	if (sc.len)
		memcpy(m->bytes + m->nr_bytes + sizeof(sc), w->s->stack + (from - w->stack_lo),
		       sc.len);
	m->nr_bytes += sizeof(sc) + sc.len;
}

static int read_word(struct walk *w, uint64_t addr, uint64_t *out)
{
	if (in_copy(w, addr, 8)) {
		memcpy(out, w->s->stack + (addr - w->stack_lo), 8);
		if (w->rec)
			memo_log(w, addr, *out);
		return 0;
	}
	if (w->rec)
		memo_log(w, addr | MR_FILE, 0);
	if (!unw_read_file_bytes(w, addr, out, 8))
		return 0;
	/* (a frame's slot just past the copy: the stack goes on beyond it) */
	if (addr >= w->stack_hi && addr - w->stack_hi < PAST_END_SPAN)
		w->past_end = 1;
	return -1;
}

/* Evaluate a CFI expression; cfa is pushed by DW_OP_call_frame_cfa. */
static int eval_expr(struct walk *w, const struct expr *e, const uint64_t *regs, uint32_t set,
		     uint64_t cfa, int have_cfa, uint64_t *out)
{
	uint64_t st[EXPR_STACK];
	size_t sp = 0;

#define NEED(k) do { if (sp < (k)) return -1; } while (0)
#define PUSH(v) do { if (sp >= EXPR_STACK) return -1; st[sp++] = (v); } while (0)
	for (size_t i = 0; i < e->nops; i++) {
		const Dwarf_Op *op = &e->ops[i];
		uint8_t a = op->atom;
		uint64_t x, y;

		if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
			PUSH((uint64_t)(a - DW_OP_lit0));
			continue;
		}
		if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
			unsigned r = a - DW_OP_breg0;

			if (r >= DW_NREGS || !(set & (1u << r)))
				return -1;
			PUSH(regs[r] + op->number);
			continue;
		}
		switch (a) {
		case DW_OP_call_frame_cfa:
			if (!have_cfa)
				return -1;
			PUSH(cfa);
			break;
		case DW_OP_bregx:
			if (op->number >= DW_NREGS || !(set & (1u << op->number)))
				return -1;
			PUSH(regs[op->number] + op->number2);
			break;
		case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
		case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
		case DW_OP_constu: case DW_OP_consts: case DW_OP_addr:
			PUSH(op->number);
			break;
		case DW_OP_dup:
			NEED(1);
			x = st[sp - 1];
			PUSH(x);
			break;
		case DW_OP_drop:
			NEED(1);
			sp--;
			break;
		case DW_OP_over:
			NEED(2);
			x = st[sp - 2];
			PUSH(x);
			break;
		case DW_OP_swap:
			NEED(2);
			x = st[sp - 1];
			st[sp - 1] = st[sp - 2];
			st[sp - 2] = x;
			break;
		case DW_OP_deref:
			NEED(1);
			if (read_word(w, st[sp - 1], &st[sp - 1]))
				return -1;
			break;
		case DW_OP_plus_uconst:
			NEED(1);
			st[sp - 1] += op->number;
			break;
		case DW_OP_neg:
			NEED(1);
			st[sp - 1] = -st[sp - 1];
			break;
		case DW_OP_not:
			NEED(1);
			st[sp - 1] = ~st[sp - 1];
			break;
		case DW_OP_plus: case DW_OP_minus: case DW_OP_mul: case DW_OP_and: case DW_OP_or:
		case DW_OP_xor: case DW_OP_shl: case DW_OP_shr: case DW_OP_shra:
		case DW_OP_eq: case DW_OP_ne: case DW_OP_lt: case DW_OP_le: case DW_OP_gt:
		case DW_OP_ge:
			NEED(2);
			y = st[--sp];
			x = st[sp - 1];
			switch (a) {
			case DW_OP_plus: x += y; break;
			case DW_OP_minus: x -= y; break;
			case DW_OP_mul: x *= y; break;
			case DW_OP_and: x &= y; break;
			case DW_OP_or: x |= y; break;
			case DW_OP_xor: x ^= y; break;
			case DW_OP_shl: x = y < 64 ? x << y : 0; break;
			case DW_OP_shr: x = y < 64 ? x >> y : 0; break;
			case DW_OP_shra: x = (uint64_t)((int64_t)x >> (y < 63 ? y : 63)); break;
			case DW_OP_eq: x = x == y; break;
			case DW_OP_ne: x = x != y; break;
			case DW_OP_lt: x = (int64_t)x < (int64_t)y; break;
			case DW_OP_le: x = (int64_t)x <= (int64_t)y; break;
			case DW_OP_gt: x = (int64_t)x > (int64_t)y; break;
			case DW_OP_ge: x = (int64_t)x >= (int64_t)y; break;
			}
			st[sp - 1] = x;
			break;
		case DW_OP_nop:
			break;
		default:
			return -1;	/* not met in x86-64 CFI */
		}
	}
#undef NEED
#undef PUSH
	if (!sp)
		return -1;
	*out = st[sp - 1];
	return 0;
}

/*
 * One CFI step from the frame in regs/set to its caller, into nregs/nset.  Returns 0, or
 * -1 when the CFA or the return address cannot be computed.
 */
static int cfi_step(struct walk *w, const struct rule *ru, const uint64_t *regs, uint32_t set,
		    uint64_t *nregs, uint32_t *nset)
{
	uint64_t cfa;

	if (ru->cfa_unknown)
		return -1;
	if (ru->cfa_expr) {
		if (eval_expr(w, ru->cfa_expr, regs, set, 0, 0, &cfa))
			return -1;
	} else {
		if (!(set & (1u << ru->cfa_reg)))
			return -1;
		cfa = regs[ru->cfa_reg] + (uint64_t)ru->cfa_off;
	}
	*nset = ru->same & set;
	for (uint32_t m = *nset; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctz(m);

		nregs[r] = regs[r];
	}
	for (unsigned i = 0; i < ru->nr_steps; i++) {
		const struct reg_step *st = &ru->steps[i];
		uint64_t v;

		switch (st->kind) {
		case RR_AT_CFA:
			if (read_word(w, cfa + (uint64_t)(int64_t)st->off, &v))
				continue;
			break;
		case RR_CFA_PLUS:
			v = cfa + (uint64_t)(int64_t)st->off;
			break;
		case RR_REG:
			if (!(set & (1u << st->from)))
				continue;
			v = regs[st->from];
			break;
		case RR_EXPR:
			if (eval_expr(w, &ru->exprs[st->from], regs, set, cfa, 1, &v) ||
			    read_word(w, v, &v))
				continue;
			break;
		case RR_VAL_EXPR:
			if (eval_expr(w, &ru->exprs[st->from], regs, set, cfa, 1, &v))
				continue;
			break;
		default:
			continue;
		}
		nregs[st->reg] = v;
		*nset |= 1u << st->reg;
	}
	if (!(*nset & (1u << DW_RSP))) {
		nregs[DW_RSP] = cfa;	/* the ABI's definition of the CFA */
		*nset |= 1u << DW_RSP;
	}
	return *nset & (1u << DW_RIP) ? 0 : -1;
}

/* The frame-pointer step, for code in a file that has no CFI row for it. */
static int fp_step(struct walk *w, const uint64_t *regs, uint32_t set, uint64_t *nregs,
		   uint32_t *nset)
{
	uint64_t bp, ra, prev;

	if (!(set & (1u << DW_RBP)))
		return -1;
	bp = regs[DW_RBP];
	if (read_word(w, bp, &prev) || read_word(w, bp + 8, &ra))
		return -1;
	memcpy(nregs, regs, sizeof(*nregs) * DW_NREGS);
	*nset = set;
	nregs[DW_RBP] = prev;
	nregs[DW_RSP] = bp + 16;
	nregs[DW_RIP] = ra;
	*nset |= (1u << DW_RSP) | (1u << DW_RIP);
	return 0;
}

/* ---- thread roots ---- */

int unwind_thread_root_name(const char *name)
{
	static const char *const roots[] = {
		"_start", "__libc_start_main", "__libc_start_call_main", "__libc_start_main_impl",
		"start_thread", "clone", "clone3", "__clone", "__clone3", "_dl_start_user",
	};

	/* (called for every function symbol of every library: libtorch_cpu.so has ~200k,
	 * nearly all C++ names, "_Z...", which the first two bytes tell apart; the
	 * comparisons with every root were a quarter of the walks while torch was
	 * imported) */
	if (!name || !(name[0] == 's' || name[0] == 'c' ||
		       (name[0] == '_' && (name[1] == 's' || name[1] == '_' || name[1] == 'd'))))
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(roots); i++)
		if (!strcmp(name, roots[i]))
			return 1;
	return 0;
}

struct roots_ctx {
	struct unw_dso *d;
	size_t alloc;
};

static int note_root(void *ctx, const GElf_Sym *sym, size_t strndx)
{
	struct roots_ctx *rc = ctx;
	struct unw_dso *d = rc->d;

	if (!sym->st_size || !unwind_thread_root_name(elf_strptr(d->elf, strndx, sym->st_name)))
		return 0;
	ALLOC_GROW(d->roots, d->nr_roots + 1, rc->alloc);
	d->roots[d->nr_roots].start = sym->st_value;
	d->roots[d->nr_roots].end = sym->st_value + sym->st_size;
	d->nr_roots++;
	return 0;
}

/* Where the file's thread-root functions are (one pass over its symbol tables). */
static void note_roots(struct unw_dso *d)
{
	struct roots_ctx rc = { d, 0 };

	elf_each_func(d->elf, note_root, &rc);
}

void unw_roots(struct unw_dso *d)
{
	if (!d->cfi_done)
		unw_cfi_open(d);
	if (d->nr_roots == 0 && !d->roots) {
		if (d->elf)
			note_roots(d);
		if (!d->roots)
			d->roots = xcalloc(1, sizeof(*d->roots));	/* looked: none */
	}
}

/* Is process address addr (mapped by mp) inside a thread-root function? */
static int in_root(const struct map *mp, uint64_t addr)
{
	struct unw_dso *d = mp ? unw_dso_get(mp->dso) : NULL;
	uint64_t bias;

	if (!d || unw_dso_bias(d, mp, &bias))
		return 0;
	unw_roots(d);
	for (size_t i = 0; i < d->nr_roots; i++)
		if (addr - bias >= d->roots[i].start && addr - bias < d->roots[i].end)
			return 1;
	return 0;
}

/* ---- the walk ---- */

/* The file mapping (with usable bytes) of a code address, or NULL. */
static const struct map *code_map(struct walk *w, uint64_t addr, struct unw_dso **dp,
				  uint64_t *bias)
{
	const struct map *mp = unw_walk_map(w, addr);

	if (!mp || mp->dso->anon || (mp->dso->special && !mp->dso->image) || mp->dso->kernel)
		return NULL;
	*dp = unw_dso_get(mp->dso);
	if (!*dp || unw_dso_bias(*dp, mp, bias))
		return NULL;
	return mp;
}

static int walk_pass(struct walk *w)
{
	uint64_t nregs[DW_NREGS];
	uint32_t nset;
	int initial = 1, activation = 0;

	w->stop_bad = 0;
	w->last_map = NULL;
	for (;;) {
		uint64_t pc = w->regs[DW_RIP], ip = pc, lookup, bias = 0;
		unsigned fl = 0;
		const struct map *mp;
		const struct rule *ru;
		struct unw_dso *d = NULL;
		struct frame_ent *fe = NULL;
		int ok;

		if (initial) {
			lookup = pc;
			if (w->restart) {
				/* the pass started at ra - 1, inside the call: report the return
				 * address */
				ip = pc + 1;
				fl = FRAME_RECOVERED;
			}
		} else if (!activation && w->sp->frames &&
			   (fe = &w->sp->frames[hash_u64(ip) & (FRAME_CACHE - 1)])->mp && fe->ip == ip &&
			   fe->gen == w->sp->gen) {
			/* met before: a return address into that file, and its row */
			lookup = pc - 1;
			if ((w->regs_set & (1u << DW_RSP)) && w->last_has_sp &&
			    w->regs[DW_RSP] <= w->last_sp) {
				w->stop_bad = 1;
				break;
			}
		} else {
			/* a return address found by CFI (or the frame-pointer step): it must be
			 * code, right after a call when we can read the code, and the stack
			 * must grow toward the root */
			int kind = unw_page_kind(w, ip);

			fe = NULL;
			lookup = activation ? pc : pc - 1;
			if (kind == PG_NONE && ip >= 4096 && ip < 0x800000000000ULL &&
			    !unw_walk_map(w, ip))
				unw_set_unmapped(w);
			if (kind == PG_NONE || (kind == PG_FILE && !activation && !unw_is_return_address(w, ip)) ||
			    ((w->regs_set & (1u << DW_RSP)) && w->last_has_sp &&
			     w->regs[DW_RSP] <= w->last_sp)) {
				w->stop_bad = 1;
				break;
			}
		}
		if (w->n >= w->max)
			break;
		if (w->rec && unw_memo_note(w, initial, activation))
			return 2;	/* the rest is the thread's last walk's */
		w->ips[w->n] = ip;
		if (w->flags)
			w->flags[w->n] = fl;
		w->n++;
		w->seq++;
		if (w->regs_set & (1u << DW_RSP)) {
			w->last_sp = w->regs[DW_RSP];
			w->last_has_sp = 1;
		}
		w->last_regs_set = 0;
		for (size_t i = 0; i < ARRAY_SIZE(unw_callee_saved); i++) {
			unsigned r = unw_callee_saved[i];

			if (w->regs_set & (1u << r)) {
				w->last_regs[r] = w->regs[r];
				w->last_regs_set |= 1u << r;
			}
		}
		if (fe) {
			mp = fe->mp;
			d = fe->d;
			bias = fe->bias;
		} else {
			mp = code_map(w, lookup, &d, &bias);
			if (!mp && !unw_walk_map(w, lookup))
				unw_set_unmapped(w);
		}
		w->last_map = mp;
		w->last_lookup = lookup;
		if (!mp || w->n >= w->max)
			break;
		if (fe) {
			ru = fe->ru;
		} else {
			ru = unw_rule_at(d, lookup - bias, w->fast ? &w->bail : NULL);
			if (w->bail)
				return 0;
			if (!initial && !activation && w->sp->frames && ru != d->spare) {
				/* a plausible return address (checked above) in file-backed code */
				fe = &w->sp->frames[hash_u64(ip) & (FRAME_CACHE - 1)];
				*fe = (struct frame_ent){ ip, mp, d, bias, ru, w->sp->gen };
			}
		}
		if (ru && ru->ra_undefined)
			return 1;
		if (ru && (ru->uses & ~KEY_REGS))
			w->other_seq = w->seq;
		ok = ru ? cfi_step(w, ru, w->regs, w->regs_set, nregs, &nset)
			: (d->eh || d->has_dbg) ? fp_step(w, w->regs, w->regs_set, nregs, &nset) : -1;
		if (ok || !nregs[DW_RIP])
			break;
		activation = ru && ru->signal;
		memcpy(w->regs, nregs, sizeof(nregs));
		w->regs_set = nset;
		initial = 0;
	}
	return w->last_map && in_root(w->last_map, w->last_lookup);
}

/* Scan the copied stack upward from the last SP for a return address; on success set
 * up the registers of a restart pass. */
static int scan_stack(struct walk *w)
{
	uint64_t from = w->last_has_sp ? w->last_sp : w->stack_lo;
	uint64_t to, a;

	if (from < w->stack_lo)
		from = w->stack_lo;
	from = (from + 7) & ~7ULL;
	to = scan_end(w, from);
	for (a = from; a + 8 <= to; a += 8) {
		uint64_t v, bp;

		memcpy(&v, w->s->stack + (a - w->stack_lo), 8);
		if (v < 4096 || (v >= w->stack_lo && v < w->stack_hi))
			continue;
		if (!unw_is_return_address(w, v))
			continue;
		w->regs_set = (1u << DW_RSP) | (1u << DW_RIP) | w->last_regs_set;
		for (size_t i = 0; i < ARRAY_SIZE(unw_callee_saved); i++)
			w->regs[unw_callee_saved[i]] = w->last_regs[unw_callee_saved[i]];
		w->regs[DW_RIP] = v - 1;
		w->regs[DW_RSP] = a + 8;
		/* Callee-saved registers keep the values of the last frame CFI knew (code
		 * without CFI mostly leaves them alone or restores them); but when rbp
		 * points at the slot below the return address, the skipped code made a
		 * classic frame, and that slot holds the caller's rbp. */
		if (w->rec)
			memo_log_scan(w, from, a + 8, 0);
		if ((w->last_regs_set & (1u << DW_RBP)) && w->last_regs[DW_RBP] == a - 8) {
			if (in_copy(w, a - 8, 8)) {
				memcpy(&bp, w->s->stack + (a - 8 - w->stack_lo), 8);
				w->regs[DW_RBP] = bp;
				if (w->rec)
					memo_log(w, a - 8, bp);
			} else if (w->rec) {
				memo_log(w, (a - 8) | MR_FILE, 0);
			}
		}
		w->last_sp = a + 8;
		w->last_has_sp = 1;
		return 1;
	}
	if (w->rec)
		memo_log_scan(w, from, to > from ? to : from, to);
	return 0;
}

static struct space *space_get(struct unwinder *u, uint32_t pid, uint64_t time)
{
	unsigned gen = machine_exec_gen(u->m, pid, time);
	void **slot = u64map_slot(&u->spaces, (uint64_t)gen << 32 | pid);
	struct space *sp = *slot;

	if (sp)
		return sp;
	sp = xcalloc(1, sizeof(*sp));
	*slot = sp;
	ALLOC_GROW(u->all, u->nr_all + 1, u->alloc_all);
	u->all[u->nr_all++] = sp;
	sp->u = u;
	sp->pid = pid;
	u64map_init(&sp->calls);
	u64map_init(&sp->memos);
	/* the report's model knows every mapping over time, and a return address may be in
	 * another file at another time: look each up; the recorder's only grows */
	if (u->live)
		sp->frames = xcalloc(FRAME_CACHE, sizeof(*sp->frames));
	return sp;
}

/* Set the walk up to join the thread's last walk and to be recorded for its next. */

size_t unwind_sample(struct unwinder *u, const struct dlp_sample *s, uint64_t *ips,
		     unsigned *flags, size_t max, int *complete)
{
	struct walk w;
	int perf_idx[PERF_REG_X86_64_MAX];
	unsigned idx = 0;
	int done = 0, joined = 0;
	struct unwind_stats st0 = u->st;

	*complete = 0;
	u->last_bail = 0;
	u->last_past_copy = 0;
	u->last_copy_ended = 0;
	if (!max || !s->user_abi || !s->user_regs || !s->stack_size || !s->stack)
		return 0;
	for (int r = 0; r < PERF_REG_X86_64_MAX; r++)
		perf_idx[r] = (s->user_regs_mask >> r) & 1 ? (int)idx++ : -1;
	if (perf_idx[PERF_REG_X86_SP] < 0 || perf_idx[PERF_REG_X86_IP] < 0)
		return 0;

	memset(&w, 0, sizeof(w));
	w.other_seq = UINT64_MAX;
	w.s = s;
	w.ips = ips;
	w.flags = flags;
	w.max = max;
	for (int r = 0; r < DW_NREGS; r++) {
		int i = perf_idx[dwarf_to_perf[r]];

		if (i >= 0) {
			w.regs[r] = s->user_regs[i];
			w.regs_set |= 1u << r;
		}
	}
	w.stack_lo = w.regs[DW_RSP];
	w.stack_hi = w.stack_lo + s->stack_size;
	if (w.stack_hi < w.stack_lo)
		return 0;
	/* the copy was written on another CPU (record's drain, or the kernel into the ring
	 * for an inline walk): ask for all of it at once, rather than wait for a miss on each
	 * frame's slots in turn (only the lines the thread's last walk read: no better) */
	w.fast = u->fast;
	for (size_t off = 0; off < s->stack_size; off += 64)
		__builtin_prefetch(s->stack + off, 0, 2);
	w.sp = space_get(u, s->pid, s->time);
	if (w.sp->frames && !u->no_memo)
		unw_memo_begin(&w);
	u->st.walks++;
	for (; w.n < max; w.scans++) {
		size_t before = w.n;
		int dead_end, r = walk_pass(&w);

		if (w.bail)
			break;
		if (r == 2) {
			u->st.scans += w.old->fr[w.cursor - 1].scans;
			u->st.joined++;
			u->st.reused += w.cursor;
			done = w.old->done;
			joined = 1;
			/* its outer frames beyond the copy, as the last walk found them */
			u->last_past_copy = w.beyond &&
					    w.beyond - 1 < w.old->fr[w.cursor - 1].reads;
			u->st.past_copy += u->last_past_copy;
			unw_memo_join(&w);
			break;
		}
		if (r) {
			done = 1;
			break;
		}
		/* the stack went on past the copy: the frame's return address is not in it,
		 * and a scan of the copy's last bytes would find only stale words (unw-deep:
		 * a frame's buffer still held the return addresses of calls made before) */
		if (w.past_end) {
			u->last_copy_ended = 1;
			break;
		}
		/* a scanned return address whose own CFI step led to an implausible frame
		 * was most likely a stale word: drop it if the scan finds a better one */
		dead_end = w.restart && w.n == before + 1 && w.stop_bad;
		if (w.scans >= MAX_SCANS || w.n >= max || !scan_stack(&w) || w.bail)
			break;
		if (dead_end)
			w.n = before;
		w.restart = 1;
		u->st.scans++;
	}
	if (w.bail) {
		/* nothing of it counted, nothing kept for the thread's next walk */
		u->st = st0;
		u->last_bail = 1;
		return 0;
	}
	if (w.rec)
		unw_memo_end(&w, done, joined);
	if (!w.n) {
		ips[0] = w.regs[DW_RIP];
		if (flags)
			flags[0] = 0;
		w.n = 1;
	}
	u->st.frames += w.n;
	if (done)
		u->st.complete++;
	u->last_unmapped = w.unmapped;
	*complete = done;
	return w.n;
}

void unwind_maps_changed(struct unwinder *u, uint32_t pid, uint64_t time)
{
	for (size_t i = 0; i < u->nr_all; i++) {
		struct space *sp = u->all[i];

		if (sp->pid != pid)
			continue;
		if (!++sp->gen) {
			/* (the count came round: entries of gen 0 would look fresh) */
			memset(sp->pages, 0, sizeof(sp->pages));
			if (sp->frames)
				memset(sp->frames, 0, FRAME_CACHE * sizeof(*sp->frames));
		}
		unw_memos_clear(sp, 0);
		if (time > sp->maps_time)
			sp->maps_time = time;
	}
}

void unwind_thread_exit(struct unwinder *u, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < u->nr_all; i++) {
		struct space *sp = u->all[i];
		struct memo **slot;

		if (sp->pid != pid || !u64map_get(&sp->memos, tid))
			continue;
		slot = (struct memo **)u64map_slot(&sp->memos, tid);
		unw_memo_free(*slot);
		free(*slot);
		*slot = NULL;
		sp->nr_memos--;
	}
}

void unwinder_set_live(struct unwinder *u)
{
	const char *e = getenv("DLPROF_NO_UNWIND_MEMO");

	u->live = 1;
	u->no_memo = e && *e && strcmp(e, "0");
}

void unwinder_set_fast(struct unwinder *u, int fast)
{
	u->fast = fast;
}

int unwind_bailed(const struct unwinder *u)
{
	return u->last_bail;
}

int unwind_met_unmapped(const struct unwinder *u)
{
	return u->last_unmapped;
}

int unwind_past_copy(const struct unwinder *u)
{
	return u->last_past_copy;
}

int unwind_copy_ended(const struct unwinder *u)
{
	return u->last_copy_ended;
}

void unwind_get_stats(const struct unwinder *u, struct unwind_stats *st)
{
	*st = u->st;
}

struct unwinder *unwinder_new(struct machine *m)
{
	struct unwinder *u = xcalloc(1, sizeof(*u));

	u->m = m;
	u64map_init(&u->spaces);
	elf_version(EV_CURRENT);
	return u;
}

void unwinder_free(struct unwinder *u)
{
	struct dso **dsos;
	size_t n;

	if (!u)
		return;
	for (size_t i = 0; i < u->nr_all; i++) {
		u64map_release(&u->all[i]->calls);
		unw_memos_clear(u->all[i], 1);
		free(u->all[i]->frames);
		free(u->all[i]);
	}
	free(u->all);
	unw_memo_free(&u->rec);
	u64map_release(&u->spaces);
	n = machine_dsos(u->m, &dsos);
	for (size_t i = 0; i < n; i++) {
		unw_dso_free(dsos[i]->unwind_priv);
		dsos[i]->unwind_priv = NULL;
	}
	free(u);
}
