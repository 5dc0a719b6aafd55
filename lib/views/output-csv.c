/* output-csv.c - RFC 4180 CSV, one header row (see output.h). */
#include <stdio.h>
#include <string.h>

#include "output.h"

static void csv_field(FILE *out, const char *s)
{
	if (!s)
		s = "";
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

void output_csv(FILE *out, const struct report_header *h, struct ct_row **rows, size_t nr,
		const struct output_opts *o)
{
	uint64_t n = h->weight_total ? h->weight_total : h->samples ? h->samples : 1;

	fprintf(out, "self_pct,self,self_ns,total_pct,total,%s,dso\n", h->key ? h->key : "symbol");
	for (size_t i = 0; i < nr && (!o->limit || i < o->limit); i++) {
		const struct ct_row *r = rows[i];

		fprintf(out, "%.4f,%llu,%llu,%.4f,%llu,", 100.0 * r->self / n,
			(unsigned long long)r->self, (unsigned long long)(r->self * h->ns_per_sample),
			100.0 * r->total / n, (unsigned long long)r->total);
		csv_field(out, r->name);
		fputc(',', out);
		csv_field(out, r->dso);
		fputc('\n', out);
	}
}
