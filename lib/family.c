/* family.c - operator families (placeholder: everything is "other"; replaced shortly) */
#include <stdlib.h>

#include "family.h"
#include "util.h"

struct family_rules {
	int dummy;
};

struct family_rules *family_rules_load(const char *extra_path)
{
	return xcalloc(1, sizeof(struct family_rules));
}

void family_rules_free(struct family_rules *r)
{
	free(r);
}

const char *family_classify(const struct family_rules *r, const struct frame *frames,
			    size_t nr, const char **rule_out)
{
	if (rule_out)
		*rule_out = "(built-in): other";
	return "other";
}

const char *op_from_stack(const struct frame *frames, size_t nr)
{
	return NULL;
}
