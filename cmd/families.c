/* families.c - `dlprof families`: list the operator-family rules, or explain one symbol. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "family.h"
#include "family-rules.h"
#include "parse-options.h"
#include "util.h"

/* --batch: one stack per input line, tab-separated: FLAGS, DSO, leaf symbol, then outer
 * frames' symbols (innermost first).  FLAGS is "-" or letters: k kernel, j JIT, a anonymous
 * memory, p the leaf function spins around PAUSE.  Prints the family per line, so that
 * other tools' samples (perf script) are classified by the very same rules. */
static int explain_batch(const struct family_rules *r)
{
	char *buf = NULL;
	size_t cap = 0;
	ssize_t len;
	struct frame fr[64];
	char *field[ARRAY_SIZE(fr) + 2];
	int ret = EXIT_OK;

	while ((len = getline(&buf, &cap, stdin)) >= 0) {
		size_t nf = 0, nr, i;
		char *p = buf;

		if (len && buf[len - 1] == '\n')
			buf[len - 1] = 0;
		unsigned flags = 0, traits = 0;

		while (nf < ARRAY_SIZE(field)) {
			field[nf++] = p;
			p = strchr(p, '\t');
			if (!p)
				break;
			*p++ = 0;
		}
		if (nf < 3) {
			error("batch line needs FLAGS, DSO and SYMBOL: '%s'", buf);
			ret = EXIT_PARTIAL;
			printf("?\n");
			continue;
		}
		for (p = field[0]; *p; p++) {
			if (*p == 'k')
				flags |= FRAME_KERNEL;
			else if (*p == 'j')
				flags |= FRAME_JIT;
			else if (*p == 'a')
				flags |= FRAME_ANON;
			else if (*p == 'p')
				traits |= TRAIT_PAUSE_LOOP;
		}
		memset(fr, 0, sizeof(fr));
		for (i = 2, nr = 0; i < nf && nr < ARRAY_SIZE(fr); i++, nr++) {
			fr[nr].sym = field[i];
			fr[nr].dso = field[1];
			fr[nr].flags = nr ? flags & FRAME_KERNEL : flags;
		}
		fr[0].traits = traits;
		printf("%s\n", family_classify(r, fr, nr, NULL));
	}
	free(buf);
	return ret;
}

static const char *const families_usage[] = {
	"dlprof families [--families FILE]",
	"dlprof families --explain SYMBOL [--dso DSO] [--path PATH] [--kernel|--jit] [--pause-loop]\n"
	"                         [--prim KIND] [SYM...]",
	"dlprof families --batch < FRAMES",
	NULL
};

int cmd_families(int argc, const char **argv)
{
	const char *extra = NULL, *explain = NULL, *dso = NULL, *path = NULL, *prim = NULL;
	int kernel = 0, jit = 0, pause_loop = 0, list_families = 0, batch = 0;
	struct option opts[] = {
		OPT_STRING(0, "families", &extra, "FILE", "rules to put in front of the built-in ones"),
		OPT_STRING(0, "explain", &explain, "SYMBOL", "say which rule classifies a leaf symbol"),
		OPT_STRING(0, "dso", &dso, "DSO", "the symbol's DSO short name (with --explain)"),
		OPT_STRING(0, "path", &path, "PATH", "the DSO's path as mapped (with --explain)"),
		OPT_STRING(0, "prim", &prim, "KIND", "the oneDNN primitive it ran in: convolution, "
			   "reorder, ... (with --explain)"),
		OPT_BOOL(0, "kernel", &kernel, "the frame is kernel code (with --explain)"),
		OPT_BOOL(0, "jit", &jit, "the frame is a named JIT kernel (with --explain)"),
		OPT_BOOL(0, "pause-loop", &pause_loop, "the function spins around PAUSE (with --explain)"),
		OPT_BOOL(0, "names", &list_families, "list only the family names"),
		OPT_BOOL(0, "batch", &batch, "classify tab-separated stacks read from stdin"),
		OPT_END()
	};
	struct family_rules *r;
	int n;

	n = parse_options(argc, argv, opts, families_usage, 0);
	if (n < 0)
		return PARSE_OPT_EXIT_CODE(n);
	if (n && !explain) {
		error("unexpected argument '%s' (see 'dlprof families -h')", argv[0]);
		return EXIT_USAGE;
	}
	r = family_rules_load(extra);
	if (!r)
		return EXIT_FATAL;
	if (batch) {
		n = explain_batch(r);
		family_rules_free(r);
		return n;
	}
	if (explain) {
		struct frame fr[64];
		struct family_ctx ctx = { FAMILY_SAMPLE_CPU, prim };
		size_t nr = 0;
		const char *rule, *fam;

		memset(fr, 0, sizeof(fr));
		fr[0].sym = explain;
		fr[0].dso = dso ? dso : (kernel ? "[kernel.kallsyms]" : jit ? "[jit]" : "[unknown]");
		fr[0].dso_path = path;
		fr[0].flags = (kernel ? FRAME_KERNEL : 0) | (jit ? FRAME_JIT : 0);
		fr[0].traits = pause_loop ? TRAIT_PAUSE_LOOP : 0;
		nr = 1;
		/* remaining arguments: outer frames of the stack, innermost first */
		for (int i = 0; i < n && nr < ARRAY_SIZE(fr); i++, nr++) {
			fr[nr].sym = argv[i];
			fr[nr].dso = fr[0].dso;
			fr[nr].flags = fr[0].flags & FRAME_KERNEL;
		}
		fam = family_classify_ctx(r, fr, nr, &ctx, &rule);
		printf("family: %s\n", fam);
		printf("rule:   %s\n", rule);
		if (family_isa_from_name(explain))
			printf("isa:    %s\n", family_isa_from_name(explain));
		{
			const char *op = family_op_from_stack(fr, nr);

			printf("op:     %s\n", op ? op : "(no op)");
		}
	} else if (list_families) {
		const char **names;
		size_t nf = family_rules_families(r, &names);

		for (size_t i = 0; i < nf; i++)
			printf("%s\n", names[i]);
		free((void *)names);
	} else {
		for (size_t i = 0; i < family_rules_count(r); i++) {
			const char *where;
			const char *fam = family_rule_family(r, i, &where);

			(void)fam;
			printf("%s\n", where);
		}
	}
	family_rules_free(r);
	return EXIT_OK;
}
