/* family.c - operator families: ordered glob rules on the leaf frame (and its stack),
 * and the framework operator a stack runs in.  See family-rules.h for the rule format.
 */
#include <ctype.h>
#include <stdio.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "family-rules.h"
#include "paths.h"
#include "rephash.h"
#include "torchops.h"
#include "util.h"

enum cond_key { C_DSO, C_SYM, C_NOTSYM, C_FLAG, C_TRAIT, C_STACK, C_NOTSTACK, C_SAMPLE, C_PATH,
		C_PRIM };

/* A pattern, matched as fnmatch(pat, s, 0) would; most are a literal with a '*' at one
 * end or both (or none), compared directly: the rules are tried on every frame of every
 * sample, and fnmatch was 35% of report's time */
enum glob_kind { G_EXACT, G_PREFIX, G_SUFFIX, G_INFIX, G_FNMATCH };
struct glob {
	char *pat;		/* as written */
	char *lit;		/* the literal, escapes resolved (all but G_FNMATCH) */
	size_t len;
	enum glob_kind kind;
	int lit_start;		/* it starts with a literal byte, lit[0] */
};

struct cond {
	enum cond_key key;
	unsigned mask;		/* C_FLAG / C_TRAIT */
	size_t nr_globs;
	struct glob *globs;
	/* the first bytes a match can start with, where every glob has a literal start
	 * (most names fail on the first byte: one bit test a frame) */
	int any_first;
	uint64_t first[4];
};

struct rule {
	const char *family;	/* interned */
	char *where;		/* "file:line: text" */
	size_t nr_conds;
	struct cond *conds;
};

struct family_rules {
	struct rule *rules;
	size_t nr, alloc;
};

/* ---- parsing ---- */
static const struct { const char *name; unsigned bit; } flag_names[] = {
	{ "kernel", FRAME_KERNEL }, { "jit", FRAME_JIT }, { "fde", FRAME_FDE },
	{ "unknown", FRAME_UNKNOWN }, { "recovered", FRAME_RECOVERED },
	{ "inline", FRAME_INLINE }, { "anon", FRAME_ANON },
};
static const struct { const char *name; unsigned bit; } trait_names[] = {
	{ "pause-loop", TRAIT_PAUSE_LOOP },
};
static const struct { const char *name; unsigned bit; } sample_names[] = {
	{ "cpu", FAMILY_SAMPLE_CPU }, { "wait", FAMILY_SAMPLE_WAIT },
};

static void cond_release(struct cond *c)
{
	for (size_t i = 0; i < c->nr_globs; i++) {
		free(c->globs[i].pat);
		free(c->globs[i].lit);
	}
	free(c->globs);
}

static void rule_release(struct rule *r)
{
	for (size_t i = 0; i < r->nr_conds; i++)
		cond_release(&r->conds[i]);
	free(r->conds);
	free(r->where);
}

/* How pat (n bytes) is matched: a literal between unescaped '*'s at its ends, or fnmatch */
static void glob_compile(struct glob *g, const char *pat, size_t n)
{
	char *lit = xcalloc(n + 1, 1);
	size_t len = 0, stars = 0;
	int lead = 0, trail = 0, meta = 0;

	for (size_t i = 0; i < n; i++) {
		if (pat[i] == '\\' && i + 1 < n) {
			lit[len++] = pat[++i];
		} else if (pat[i] == '*') {
			stars++;
			if (i == 0)
				lead = 1;
			else if (i == n - 1)
				trail = 1;
			else
				meta = 1;
		} else if (pat[i] == '?' || pat[i] == '[' || pat[i] == '\\') {
			meta = 1;
		} else {
			lit[len++] = pat[i];
		}
	}
	g->pat = xstrndup(pat, n);
	g->lit = lit;
	g->len = len;
	g->lit_start = n && pat[0] != '*' && pat[0] != '?' && pat[0] != '[' &&
		       !(pat[0] == '\\' && n == 1);
	if (meta || stars > 2)
		g->kind = G_FNMATCH;
	else if (!stars)
		g->kind = G_EXACT;
	else if (lead && trail)
		g->kind = G_INFIX;
	else if (trail || (lead && n == 1))
		g->kind = G_PREFIX;
	else
		g->kind = G_SUFFIX;
}

static int glob_match(const struct glob *g, const char *s)
{
	size_t n;

	switch (g->kind) {
	case G_EXACT:
		return s[0] == g->lit[0] && !strcmp(s, g->lit);
	case G_PREFIX:
		return !g->len || (s[0] == g->lit[0] && !strncmp(s, g->lit, g->len));
	case G_SUFFIX:
		n = strlen(s);
		return n >= g->len && !memcmp(s + n - g->len, g->lit, g->len);
	case G_INFIX:
		return strstr(s, g->lit) != NULL;
	case G_FNMATCH:
		break;
	}
	return !fnmatch(g->pat, s, 0);
}

static int split_globs(struct cond *c, const char *val, size_t len)
{
	const char *p = val, *end = val + len;

	while (p <= end) {
		const char *bar = memchr(p, '|', end - p);
		size_t n = bar ? (size_t)(bar - p) : (size_t)(end - p);

		if (!n)
			return -1;
		c->globs = xrealloc(c->globs, (c->nr_globs + 1) * sizeof(*c->globs));
		glob_compile(&c->globs[c->nr_globs], p, n);
		{
			const struct glob *g = &c->globs[c->nr_globs++];
			unsigned char b = (unsigned char)g->lit[0];

			if (g->lit_start && g->len)
				c->first[b >> 6] |= 1ull << (b & 63);
			else
				c->any_first = 1;
		}
		if (!bar)
			break;
		p = bar + 1;
	}
	return 0;
}

static int parse_names(struct cond *c, const char *name, int line, const char *what,
		       const char *val, size_t len, int is_flag)
{
	const char *p = val, *end = val + len;

	while (p < end) {
		const char *bar = memchr(p, '|', end - p);
		size_t n = bar ? (size_t)(bar - p) : (size_t)(end - p), i, found = 0;

		if (is_flag == 2) {
			for (i = 0; i < ARRAY_SIZE(sample_names); i++)
				if (strlen(sample_names[i].name) == n && !strncmp(sample_names[i].name, p, n)) {
					c->mask |= sample_names[i].bit;
					found = 1;
				}
		} else if (is_flag) {
			for (i = 0; i < ARRAY_SIZE(flag_names); i++)
				if (strlen(flag_names[i].name) == n && !strncmp(flag_names[i].name, p, n)) {
					c->mask |= flag_names[i].bit;
					found = 1;
				}
		} else {
			for (i = 0; i < ARRAY_SIZE(trait_names); i++)
				if (strlen(trait_names[i].name) == n && !strncmp(trait_names[i].name, p, n)) {
					c->mask |= trait_names[i].bit;
					found = 1;
				}
		}
		if (!found)
			return error("%s:%d: unknown %s '%.*s'", name, line, what, (int)n, p);
		if (!bar)
			break;
		p = bar + 1;
	}
	if (!c->mask)
		return error("%s:%d: empty %s", name, line, what);
	return 0;
}

static int parse_rule(struct rule *r, const char *name, int line, char *text)
{
	char *p = text, *tok;
	static const struct { const char *key; enum cond_key k; } keys[] = {
		{ "dso", C_DSO }, { "sym", C_SYM }, { "notsym", C_NOTSYM }, { "flag", C_FLAG },
		{ "trait", C_TRAIT }, { "stack", C_STACK }, { "notstack", C_NOTSTACK },
		{ "sample", C_SAMPLE },
		{ "path", C_PATH }, { "prim", C_PRIM },
	};

	memset(r, 0, sizeof(*r));
	tok = strsep(&p, " \t");
	for (const char *q = tok; *q && strcmp(tok, FAMILY_CALLER); q++)
		if (!islower((unsigned char)*q) && !isdigit((unsigned char)*q) && *q != '-' && *q != '_')
			return error("%s:%d: bad family name '%s' (want [a-z0-9_-]+, or %s)", name,
				     line, tok, FAMILY_CALLER);
	r->family = str_intern(tok, strlen(tok));
	while (p) {
		char *eq;
		struct cond c;
		size_t i;

		tok = strsep(&p, " \t");
		if (!*tok)
			continue;
		eq = strchr(tok, '=');
		if (!eq)
			return error("%s:%d: condition '%s' is not KEY=PATTERN", name, line, tok);
		memset(&c, 0, sizeof(c));
		for (i = 0; i < ARRAY_SIZE(keys); i++)
			if (strlen(keys[i].key) == (size_t)(eq - tok) && !strncmp(keys[i].key, tok, eq - tok))
				break;
		if (i == ARRAY_SIZE(keys))
			return error("%s:%d: unknown key '%.*s' (want dso, path, sym, notsym, flag, trait, stack, notstack, sample or prim)",
				     name, line, (int)(eq - tok), tok);
		c.key = keys[i].k;
		if (!eq[1]) {
			return error("%s:%d: empty pattern for '%.*s'", name, line, (int)(eq - tok), tok);
		} else if (c.key == C_FLAG || c.key == C_TRAIT || c.key == C_SAMPLE) {
			if (parse_names(&c, name, line, c.key == C_FLAG ? "flag" : c.key == C_TRAIT ?
					"trait" : "sample kind", eq + 1, strlen(eq + 1),
					c.key == C_FLAG ? 1 : c.key == C_SAMPLE ? 2 : 0))
				return -1;
		} else if (split_globs(&c, eq + 1, strlen(eq + 1))) {
			cond_release(&c);
			return error("%s:%d: empty alternative in '%s'", name, line, tok);
		}
		r->conds = xrealloc(r->conds, (r->nr_conds + 1) * sizeof(*r->conds));
		r->conds[r->nr_conds++] = c;
	}
	if (!r->nr_conds)
		return error("%s:%d: rule for '%s' has no condition", name, line, r->family);
	return 0;
}

struct family_rules *family_rules_new(void)
{
	return xcalloc(1, sizeof(struct family_rules));
}

int family_rules_add_text(struct family_rules *r, const char *name, const char *text,
			  int front)
{
	struct rule *add = NULL;
	size_t nr = 0, alloc = 0;
	const char *p = text;
	int line = 0;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *buf = xstrndup(p, len), *s, *e, *hash;

		line++;
		p += len + (nl ? 1 : 0);
		hash = strchr(buf, '#');
		if (hash)
			*hash = '\0';
		for (s = buf; *s == ' ' || *s == '\t' || *s == '\r'; s++)
			;
		for (e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'); e--)
			;
		*e = '\0';
		if (!*s) {
			free(buf);
			continue;
		}
		ALLOC_GROW(add, nr + 1, alloc);
		add[nr].where = NULL;
		{
			char *copy = xstrdup(s);
			int ret = parse_rule(&add[nr], name, line, copy);

			free(copy);
			if (ret) {
				rule_release(&add[nr]);
				for (size_t i = 0; i < nr; i++)
					rule_release(&add[i]);
				free(add);
				free(buf);
				return -1;
			}
		}
		/* normalize whitespace for the listing */
		{
			char *w = s, *q;

			for (q = s; *q; q++) {
				char ch = *q == '\t' ? ' ' : *q;

				if (ch == ' ' && w > s && w[-1] == ' ')
					continue;
				*w++ = ch;
			}
			*w = '\0';
		}
		add[nr].where = xasprintf("%s:%d: %s", name, line, s);
		nr++;
		free(buf);
	}
	if (!nr) {
		free(add);
		return 0;	/* comments only */
	}
	ALLOC_GROW(r->rules, r->nr + nr, r->alloc);
	if (front) {
		memmove(r->rules + nr, r->rules, r->nr * sizeof(*r->rules));
		memcpy(r->rules, add, nr * sizeof(*add));
	} else {
		memcpy(r->rules + r->nr, add, nr * sizeof(*add));
	}
	r->nr += nr;
	free(add);
	return 0;
}

int family_rules_add_file(struct family_rules *r, const char *path, int front)
{
	struct strbuf sb = STRBUF_INIT;
	int ret;

	ret = strbuf_read_file(&sb, path, 4 << 20);
	if (ret < 0) {
		strbuf_release(&sb);
		return error("unable to read rules '%s': %s", path, strerror(-ret));
	}
	if (memchr(sb.buf, '\0', sb.len)) {
		strbuf_release(&sb);
		return error("'%s': not a text file", path);
	}
	ret = family_rules_add_text(r, path, sb.buf, front);
	strbuf_release(&sb);
	return ret;
}

struct family_rules *family_rules_load(const char *extra_path)
{
	struct family_rules *r = family_rules_new();
	char *builtin = dlprof_datafile("families.rules");

	if (!builtin) {
		error("unable to find 'families.rules' (set DLPROF_DATADIR)");
		family_rules_free(r);
		return NULL;
	}
	if (family_rules_add_file(r, builtin, 0) ||
	    (extra_path && family_rules_add_file(r, extra_path, 1))) {
		free(builtin);
		family_rules_free(r);
		return NULL;
	}
	free(builtin);
	return r;
}

void family_rules_free(struct family_rules *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nr; i++)
		rule_release(&r->rules[i]);
	free(r->rules);
	free(r);
}

size_t family_rules_count(const struct family_rules *r)
{
	return r->nr;
}

const char *family_rule_family(const struct family_rules *r, size_t i, const char **where)
{
	if (i >= r->nr)
		return NULL;
	if (where)
		*where = r->rules[i].where;
	return r->rules[i].family;
}

size_t family_rules_families(const struct family_rules *r, const char ***out)
{
	const char **v = xcalloc(r->nr + 1, sizeof(*v));
	size_t n = 0, i, j;
	int have_other = 0;

	for (i = 0; i < r->nr; i++) {
		for (j = 0; j < n; j++)
			if (v[j] == r->rules[i].family)
				break;
		if (j == n) {
			if (!strcmp(r->rules[i].family, "other")) {
				have_other = 1;
				continue;
			}
			v[n++] = r->rules[i].family;
		}
	}
	(void)have_other;
	v[n++] = str_intern("other", 5);
	*out = v;
	return n;
}

/* ---- matching ---- */
static int glob_any(const struct cond *c, const char *s)
{
	unsigned char b;

	if (!s)
		return 0;
	b = (unsigned char)s[0];
	if (!c->any_first && !(c->first[b >> 6] & (1ull << (b & 63))))
		return 0;
	for (size_t i = 0; i < c->nr_globs; i++)
		if (glob_match(&c->globs[i], s))
			return 1;
	return 0;
}

/* The leaf as the rules see it: a Python frame that replaced the interpreter's eval loop
 * (pystack.h) is the loop itself, in the interpreter's DSO (the Python frame carries it):
 * the CPU ran the interpreter, and the line stays on the stack for stack= and the views */
static const struct frame *rule_leaf(const struct frame *frames, struct frame *tmp)
{
	if (!(frames[0].flags & FRAME_PYTHON))
		return &frames[0];
	memset(tmp, 0, sizeof(*tmp));
	tmp->sym = "_PyEval_EvalFrameDefault";
	tmp->dso = frames[0].dso;
	return tmp;
}

static int cond_match(const struct cond *c, const struct frame *f, const struct frame *frames,
		      size_t nr, const struct family_ctx *ctx)
{
	switch (c->key) {
	case C_SAMPLE:
		return (c->mask & ctx->kind) != 0;
	case C_DSO:
		return glob_any(c, f->dso);
	case C_PATH:
		return glob_any(c, f->dso_path);
	case C_SYM:
		return glob_any(c, f->sym);
	case C_NOTSYM:
		return !glob_any(c, f->sym);
	case C_FLAG:
		return (f->flags & c->mask) != 0;
	case C_TRAIT:
		return (f->traits & c->mask) != 0;
	case C_PRIM:
		return glob_any(c, ctx->prim);
	case C_STACK:
	case C_NOTSTACK:
		for (size_t i = 0; i < nr; i++)
			if (glob_any(c, frames[i].sym))
				return c->key == C_STACK;
		return c->key == C_NOTSTACK;
	}
	return 0;
}

const char *family_classify(const struct family_rules *r, const struct frame *frames,
			    size_t nr, const char **rule_out)
{
	struct family_ctx ctx = { FAMILY_SAMPLE_CPU, NULL };

	return family_classify_ctx(r, frames, nr, &ctx, rule_out);
}

const char *family_classify_ctx(const struct family_rules *r, const struct frame *frames,
				size_t nr, const struct family_ctx *ctx, const char **rule_out)
{
	struct frame tmp;
	const struct frame *leaf;

	if (rule_out)
		*rule_out = "(no rule matched)";
	if (!r || !frames || !nr)
		return "other";
	leaf = rule_leaf(frames, &tmp);
	for (size_t i = 0; i < r->nr; i++) {
		const struct rule *ru = &r->rules[i];
		size_t j;

		for (j = 0; j < ru->nr_conds; j++)
			if (!cond_match(&ru->conds[j], leaf, frames, nr, ctx))
				break;
		if (j == ru->nr_conds) {
			/* a helper that runs for its caller: the caller's family, where the
			 * stack has one (else the rules after this one) */
			if (!strcmp(ru->family, FAMILY_CALLER)) {
				if (nr > 1 && !(frames[0].flags & FRAME_PYTHON))
					return family_classify_ctx(r, frames + 1, nr - 1, ctx,
								   rule_out);
				continue;
			}
			if (rule_out)
				*rule_out = ru->where;
			return ru->family;
		}
	}
	return "other";
}

/* ---- ISA attribute ---- */
const char *family_isa_from_name(const char *name)
{
	static const struct { const char *needle, *isa; } tab[] = {
		{ "avx512_core_amx", "amx" }, { "amx", "amx" },
		{ "avx512_core_bf16", "avx512_core_bf16" }, { "avx512_core_vnni", "avx512_core_vnni" },
		{ "avx512_core", "avx512_core" }, { "avx512_common", "avx512_common" },
		{ "avx512_mic", "avx512_mic" }, { "avx512", "avx512" }, { "AVX512", "avx512" },
		{ "avx2_vnni", "avx2_vnni" }, { "avx2", "avx2" }, { "AVX2", "avx2" },
		{ "avx", "avx" }, { "sse41", "sse41" }, { "sse4", "sse41" }, { "_uni_", "uni" },
	};

	if (!name)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(tab); i++)
		if (strstr(name, tab[i].needle))
			return tab[i].isa;
	return NULL;
}

/* ---- operators ---- */

/* Where PREFIX starts the qualified name in SYM: at the start, or after a return type. */
static const char *find_qualified(const char *sym, const char *prefix)
{
	const char *p = sym;

	if (!sym)
		return NULL;
	while ((p = strstr(p, prefix))) {
		if (p == sym || p[-1] == ' ')
			return p;
		p++;
	}
	return NULL;
}

/* Copy the top-level qualified name of a demangled C++ symbol (before the parameter list,
 * with template arguments and lambda braces skipped) into components. */
static size_t split_qualified(const char *sym, const char **comp, size_t *clen, size_t max)
{
	size_t n = 0;
	int depth = 0;
	const char *start = sym, *p;

	for (p = sym; *p; p++) {
		char ch = *p;

		if (ch == '<' || ch == '{' || ch == '[') {
			depth++;
		} else if (ch == '>' || ch == '}' || ch == ']') {
			if (depth)
				depth--;
		} else if (ch == '(' && !depth) {
			if (!strncmp(start, "(anonymous namespace)", 21)) {
				p = start + 20;
				continue;
			}
			if (p > start && p - start >= 8 && !strncmp(p - 8, "operator", 8))
				continue;
			break;
		} else if (ch == '(') {
			depth++;
		} else if (ch == ')') {
			if (depth)
				depth--;
		} else if (ch == ':' && p[1] == ':' && !depth) {
			if (n < max) {
				comp[n] = start;
				clen[n] = p - start;
				n++;
			}
			p++;
			start = p + 1;
		}
	}
	if (n < max && p > start) {
		comp[n] = start;
		clen[n] = p - start;
		n++;
	}
	return n;
}

/* A component without its template arguments; 0 when it is not an identifier. */
static size_t ident_len(const char *c, size_t len)
{
	size_t i;

	if (!len || !(isalpha((unsigned char)c[0]) || c[0] == '_'))
		return 0;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)c[i]) && c[i] != '_')
			break;
	if (i == 8 && !strncmp(c, "operator", 8))
		return 0;
	return i;
}

static const char *op_name(const char *prefix, const char *c, size_t len)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf), "%s%.*s", prefix, (int)len, c);

	if (n < 0 || (size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	return str_intern(buf, n);
}

static int comp_is(const char *c, size_t len, const char *s)
{
	return strlen(s) == len && !strncmp(c, s, len);
}

/*
 * A torch.compile (Inductor) C++ kernel fuses ATen operators, and its name says which:
 * "cpp_fused_" then the sorted names of the original ATen operators joined by "_", then
 * "_N" (torch/_inductor/utils.py get_fused_kernel_name, descriptive_names
 * "original_aten", the default).  An operator's own underscores make the split
 * ambiguous: the names of more than one word are listed (the longest one that matches
 * is taken), any other word is an operator of its own; a leading underscore ("_softmax")
 * shows as an empty word.  Returns "fused(aten::gelu, aten::native_layer_norm)", or
 * NULL when sym is no such kernel.
 */
static const char *const multiword_ops[] = {
	"native_layer_norm", "native_layer_norm_backward", "native_batch_norm",
	"native_batch_norm_backward", "_native_batch_norm_legit",
	"_native_batch_norm_legit_no_training", "_native_batch_norm_legit_functional",
	"native_group_norm", "native_group_norm_backward", "layer_norm", "batch_norm",
	"group_norm", "max_pool2d_with_indices", "max_pool2d_with_indices_backward",
	"max_pool3d_with_indices", "avg_pool2d", "avg_pool2d_backward", "avg_pool3d",
	"adaptive_avg_pool2d", "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward",
	"_softmax", "_softmax_backward_data", "_log_softmax", "_log_softmax_backward_data",
	"log_softmax", "gelu_backward", "threshold_backward", "sigmoid_backward",
	"tanh_backward", "silu_backward", "hardtanh_backward", "leaky_relu",
	"leaky_relu_backward", "hardswish_backward", "hardsigmoid_backward", "clamp_min",
	"clamp_max", "masked_fill", "scalar_tensor", "index_select", "index_put",
	"embedding_dense_backward", "nll_loss_forward", "nll_loss_backward", "mse_loss",
	"mse_loss_backward", "binary_cross_entropy", "smooth_l1_loss", "native_dropout",
	"native_dropout_backward", "upsample_nearest2d", "upsample_bilinear2d",
	"_to_copy", "constant_pad_nd", "new_zeros", "new_ones", "new_empty", "zeros_like",
	"ones_like", "full_like", "empty_like", "rand_like", "randn_like", "var_mean",
	"logical_not", "logical_and", "logical_or", "bitwise_and", "bitwise_or",
	"bitwise_not", "convolution_backward", "_unsafe_view", "_reshape_alias",
	"scaled_dot_product_attention", "_scaled_dot_product_flash_attention_for_cpu",
	"rsub", "erf_inv", "lift_fresh", "as_strided", "select_scatter", "slice_scatter",
	"index_add", "scatter_add", "slice_backward", "select_backward",
	"_weight_norm_interface", "repeat_interleave",
};

static const char *inductor_fused_op(const struct frame *f)
{
	const char *s = f->sym, *w[64];
	size_t wl[64], nw = 0, end, i;
	struct strbuf sb = STRBUF_INIT;
	const char *ret;

	if (strncmp(s, "cpp_fused_", 10) || !f->dso_path || !strstr(f->dso_path, "/torchinductor_"))
		return NULL;
	s += 10;
	end = strlen(s);
	while (end && isdigit((unsigned char)s[end - 1]))
		end--;
	if (!end || end == strlen(s) || s[end - 1] != '_')
		return NULL;	/* no "_N" */
	end--;
	for (const char *p = s; p <= s + end && nw < ARRAY_SIZE(w);) {
		const char *u = memchr(p, '_', (size_t)(s + end - p));

		if (!u)
			u = s + end;
		w[nw] = p;
		wl[nw++] = (size_t)(u - p);
		p = u + 1;
	}
	strbuf_addstr(&sb, "fused(");
	for (i = 0; i < nw;) {
		size_t take = 1, lead = !wl[i] && i + 1 < nw;	/* "_softmax": "", "softmax" */
		const char *from = w[i];

		/* the longest listed name starting here */
		for (size_t k = ARRAY_SIZE(multiword_ops); k--;) {
			const char *m = multiword_ops[k];
			size_t ml = strlen(m), words = 1;

			if (ml > (size_t)(s + end - from) || strncmp(from, m, ml) ||
			    (from + ml < s + end && from[ml] != '_'))
				continue;
			for (size_t c = 0; c < ml; c++)
				words += m[c] == '_';
			if (words > take)
				take = words;
		}
		if (take == 1 && lead)
			take = 2;
		if (take > nw - i)
			take = nw - i;
		strbuf_addf(&sb, "%saten::%.*s", sb.len > 6 ? ", " : "",
			    (int)(w[i + take - 1] + wl[i + take - 1] - from), from);
		i += take;
	}
	strbuf_addch(&sb, ')');
	ret = str_intern(sb.buf, sb.len);
	strbuf_release(&sb);
	return ret;
}

/* What one frame says of the operator, by the rules of family_op_from_stack in their order:
 * [0] at::_ops::<op>::call / ::redispatch, or a torch.compile kernel's fused operators;
 * [1] at::native::...::<fn>; [2] an autograd node of torch::autograd::generated; [3] a
 * hand-written autograd node (torch::autograd::AccumulateGrad::apply, ...).  listed: the
 * frame names at::_ops:: or torch::autograd::generated:: (family_ops_on_stack). */
struct frame_ops {
	const char *sym, *dso_path;
	const char *op[4];
	int listed;
};

static void frame_ops_find(const struct frame *f, struct frame_ops *fo)
{
	const char *comp[16];
	size_t clen[16], n, k, id;
	const char *s = find_qualified(f->sym, "at::_ops::");

	memset(fo, 0, sizeof(*fo));
	fo->sym = f->sym;
	fo->dso_path = f->dso_path;
	fo->listed = f->sym && (strstr(f->sym, "at::_ops::") ||
				strstr(f->sym, "torch::autograd::generated::"));
	if (!s) {
		fo->op[0] = inductor_fused_op(f);
	} else {
		n = split_qualified(s, comp, clen, ARRAY_SIZE(comp));
		if (n >= 4 && (comp_is(comp[3], ident_len(comp[3], clen[3]), "call") ||
			       comp_is(comp[3], ident_len(comp[3], clen[3]), "redispatch")) &&
		    ident_len(comp[2], clen[2])) {
			size_t len = ident_len(comp[2], clen[2]);
			size_t cut = torchops_split(f->dso_path, comp[2], len);
			char buf[256];
			int w;

			if (cut >= len) {
				fo->op[0] = op_name("aten::", comp[2], len);
			} else {
				/* "aten::fill_.Scalar": the overload after the dot */
				w = snprintf(buf, sizeof(buf), "%.*s.%.*s", (int)cut, comp[2],
					     (int)(len - cut - 1), comp[2] + cut + 1);
				fo->op[0] = op_name("aten::", buf, w < (int)sizeof(buf) ? (size_t)w :
						    sizeof(buf) - 1);
			}
		}
	}
	if ((s = find_qualified(f->sym, "at::native::"))) {
		n = split_qualified(s, comp, clen, ARRAY_SIZE(comp));
		id = 0;
		for (k = n; k > 2; k--) {
			id = ident_len(comp[k - 1], clen[k - 1]);
			if (id)
				break;
		}
		if (id)
			fo->op[1] = op_name("aten::", comp[k - 1], id);
	}
	if ((s = find_qualified(f->sym, "torch::autograd::generated::"))) {
		n = split_qualified(s, comp, clen, ARRAY_SIZE(comp));
		/* a node's method (Node::apply), not a free function of the namespace */
		if (n >= 5 && (id = ident_len(comp[3], clen[3])))
			fo->op[2] = op_name("autograd::", comp[3], id);
	}
	if ((s = find_qualified(f->sym, "torch::autograd::"))) {
		n = split_qualified(s, comp, clen, ARRAY_SIZE(comp));
		if (n == 4 && comp_is(comp[3], ident_len(comp[3], clen[3]), "apply") &&
		    (id = ident_len(comp[2], clen[2])) && id == clen[2])
			fo->op[3] = op_name("autograd::", comp[2], id);
	}
}

/* frame_ops_find() once a frame (its symbol and file, interned): a CNN's report asked
 * the same few thousand frames for their operator a few million times, each a strstr
 * of four prefixes over a C++ name */
static struct u64map frame_ops_memo;
static pthread_mutex_t frame_ops_lock = PTHREAD_MUTEX_INITIALIZER;

static void frame_ops_of(const struct frame *f, struct frame_ops *out)
{
	uint64_t key = hash_u64((uint64_t)(uintptr_t)f->sym ^
				hash_u64((uint64_t)(uintptr_t)f->dso_path));
	struct frame_ops *fo;

	pthread_mutex_lock(&frame_ops_lock);
	if (!frame_ops_memo.cap)
		u64map_init(&frame_ops_memo);
	fo = u64map_get(&frame_ops_memo, key);
	if (fo && fo->sym == f->sym && fo->dso_path == f->dso_path) {
		*out = *fo;
		pthread_mutex_unlock(&frame_ops_lock);
		return;
	}
	pthread_mutex_unlock(&frame_ops_lock);
	frame_ops_find(f, out);
	if (fo)
		return;	/* (another frame has the key: asked again each time) */
	fo = xmalloc(sizeof(*fo));
	*fo = *out;
	pthread_mutex_lock(&frame_ops_lock);
	if (!u64map_get(&frame_ops_memo, key))
		u64map_put(&frame_ops_memo, key, fo);
	else
		free(fo);
	pthread_mutex_unlock(&frame_ops_lock);
}

const char *family_op_from_stack(const struct frame *frames, size_t nr)
{
	struct frame_ops fo[64];
	size_t i, p, n = nr < ARRAY_SIZE(fo) ? nr : ARRAY_SIZE(fo);

	/* innermost at::_ops::<op>::call / ::redispatch, or a torch.compile kernel's fused
	 * operators below it; else innermost at::native::...::<fn>; else an autograd node;
	 * else a hand-written autograd node */
	for (i = 0; i < n; i++)
		frame_ops_of(&frames[i], &fo[i]);
	for (p = 0; p < 4; p++) {
		for (i = 0; i < nr; i++) {
			struct frame_ops deep;
			const struct frame_ops *x;

			if (i < n) {
				x = &fo[i];
			} else {	/* (a stack deeper than fo[]: asked each pass) */
				frame_ops_of(&frames[i], &deep);
				x = &deep;
			}
			if (x->op[p])
				return x->op[p];
		}
	}
	return NULL;
}

int family_omp_runtime_dso(const char *dso)
{
	return dso && (!strncmp(dso, "libgomp", 7) || !strncmp(dso, "libiomp", 7) ||
		       !strncmp(dso, "libomp", 6));
}

size_t family_ops_on_stack(const struct frame *frames, size_t nr, const char **out, size_t max)
{
	size_t n = 0, i, j;

	for (i = 0; i < nr && n < max; i++) {
		struct frame_ops fo;
		const char *o = NULL;

		frame_ops_of(&frames[i], &fo);
		if (!fo.listed)
			continue;
		for (size_t p = 0; p < 4 && !o; p++)
			o = fo.op[p];	/* (family_op_from_stack of this frame alone) */
		if (!o)
			continue;
		for (j = 0; j < n && out[j] != o; j++)
			;
		if (j == n)
			out[n++] = o;
	}
	return n;
}
