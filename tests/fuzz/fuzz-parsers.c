/* fuzz-parsers.c - libFuzzer harness for dlprof's smaller parsers of outside input.
 *
 * The first byte picks the parser, the rest is its input:
 *   0  a family rules file (--families FILE), then a classification with the rules
 *   1  a perf map (/tmp/perf-PID.map), then look-ups
 *   2  a jitdump (jit-PID.dump), then look-ups and code bytes
 *   3  an ITT collector file (libdlprof-itt.so's output), then every query
 * Seeds in tests/fuzz/corpus/parsers/ (made from real files, each with its byte).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "family-rules.h"
#include "family.h"
#include "frame.h"
#include "itt.h"
#include "jitsym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void itt_fn(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv)
{
	(*(size_t *)ctx)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data + 1;
	size_t n = size ? size - 1 : 0;

	if (!size)
		return 0;
	switch (data[0] % 4) {
	case 0: {
		struct family_rules *r = family_rules_new();
		char *text = malloc(n + 1);
		struct frame f = { 0x1000, 0x1000, "gomp_team_barrier_wait_end", "libgomp.so.1",
				   NULL, NULL, 0, 0 };
		const char **fams;

		memcpy(text, p, n);
		text[n] = '\0';
		if (!family_rules_add_text(r, "fuzz.rules", text, 0)) {
			family_classify(r, &f, 1, NULL);
			{
				/* a switch-out in a primitive: the sample= and prim= keys too */
				struct family_ctx ctx = { FAMILY_SAMPLE_WAIT, "convolution" };

				family_classify_ctx(r, &f, 1, &ctx, NULL);
			}
			family_rules_families(r, &fams);
			free(fams);
		}
		free(text);
		family_rules_free(r);
		break;
	}
	case 1:
	case 2: {
		struct jitsyms *j = jitsyms_new();
		uint64_t start;
		const uint8_t *code;
		size_t len;

		jitsyms_set_quiet(j, 1);
		if (data[0] % 4 == 1)
			jitsyms_add_perfmap(j, 42, (const char *)p, n, "fuzz");
		else
			jitsyms_add_jitdump(j, 42, p, n, "fuzz");
		for (uint64_t a = 0; a < 64; a++) {
			uint64_t addr = a << 12 | 0x7f0000000000ull;

			jitsyms_find(j, 42, addr);
			jitsym_code(j, 42, addr, &start, &code, &len);
		}
		jitsyms_free(j);
		break;
	}
	case 3: {
		struct itt_data *d = itt_data_new();
		size_t k = 0, i = 0;
		uint64_t calls, total, call_ns;

		itt_data_add(d, p, n);
		itt_data_finish(d);
		itt_each_interval(d, itt_fn, &k);
		itt_each_call(d, itt_fn, &k);
		while (itt_name_stats(d, i, &calls, &total, &call_ns))
			i++;
		itt_lookup(d, 1, 1, 1000);
		for (uint64_t t = 0; t < 64; t++)
			itt_prim_at(d, 1, 1, t * 1000);
		for (i = 0; itt_prim_each(d, i); i++)
			;
		itt_data_free(d);
		break;
	}
	}
	return 0;
}
