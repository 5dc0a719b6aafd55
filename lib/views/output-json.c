/* output-json.c - one stable JSON object per report (see output.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "util.h"

void output_json(FILE *out, const struct report_header *h, struct ct_row **rows, size_t nr,
		 const struct output_opts *o, const char *(*family)(void *ctx, const struct ct_row *r),
		 void *fctx)
{
	uint64_t n = h->weight_total ? h->weight_total : h->samples ? h->samples : 1;

	fprintf(out, "{\"version\":1,\"header\":{\"file\":");
	fput_json_str(out, h->file);
	fprintf(out, ",\"command\":");
	if (h->cmdline)
		fput_json_str(out, h->cmdline);
	else
		fputs("null", out);
	fprintf(out, ",\"event\":");
	fput_json_str(out, h->event);
	fprintf(out, ",\"other_events\":");
	fput_json_str(out, h->other_events ? h->other_events : "");
	fprintf(out, ",\"sampling\":");
	fput_json_str(out, h->sampling);
	fprintf(out, ",\"key\":");
	fput_json_str(out, h->key ? h->key : "symbol");
	fprintf(out, ",\"samples\":%llu,\"lost\":%llu,\"duration_ns\":%llu,"
		"\"ns_per_sample\":%llu,\"time_estimated\":%s,\"complete_stacks\":%llu,"
		"\"stacks_walked\":%s,\"named\":%llu,\"recovered_stacks\":%llu,\"recorded_stacks\":%llu,"
		"\"unwind_check\":{\"checked\":%llu,\"same\":%llu,\"scan_differs\":%llu,"
		"\"differs\":%llu},\"truncated\":%s,\"skipped_records\":%llu,"
		"\"irqs_off_samples\":%llu,\"raw_irqs\":%s,\"python\":{\"thread_samples\":%llu,"
		"\"merged\":%llu,\"moved\":%llu,\"unreadable\":%llu,\"mismatched\":%llu,"
		"\"read_delay_ns\":%llu,\"read_at_sample\":%llu},"
		"\"warnings\":[",
		(unsigned long long)h->samples, (unsigned long long)h->lost,
		(unsigned long long)h->duration_ns, (unsigned long long)h->ns_per_sample,
		h->sample_is_time ? "false" : "true", (unsigned long long)h->complete_stacks,
		h->leaf_only ? "false" : "true", (unsigned long long)h->named, (unsigned long long)h->recovered_stacks,
		(unsigned long long)h->recorded_stacks, (unsigned long long)h->unwind_checked,
		(unsigned long long)h->unwind_same, (unsigned long long)h->unwind_scan_differs,
		(unsigned long long)h->unwind_differs, h->truncated ? "true" : "false",
		(unsigned long long)h->skipped, (unsigned long long)h->irqs_off,
		h->raw_irqs ? "true" : "false", (unsigned long long)h->py_records,
		(unsigned long long)h->py_merged, (unsigned long long)h->py_moved,
		(unsigned long long)h->py_failed, (unsigned long long)h->py_mismatched,
		(unsigned long long)h->py_delay_ns, (unsigned long long)h->py_at_sample);
	for (size_t i = 0; i < h->nr_warnings; i++) {
		if (i)
			fputc(',', out);
		fput_json_str(out, h->warnings[i]);
	}
	fprintf(out, "],\"alignment\":{\"recordings\":%zu,\"anchored\":%zu,\"hosts\":%zu,"
		"\"anchor_err_ns\":%llu,\"drift_ns\":%llu,\"text\":", h->recordings, h->anchored,
		h->hosts, (unsigned long long)h->anchor_err_ns, (unsigned long long)h->drift_ns);
	if (h->aligned)
		fput_json_str(out, h->aligned);
	else
		fputs("null", out);
	fprintf(out, "},\"duplicates\":{\"processes\":%zu,\"samples\":%llu}",
		h->dup_procs, (unsigned long long)h->dup_samples);
	fprintf(out, ",\"filter\":");
	if (h->filter)
		fput_json_str(out, h->filter);
	else
		fputs("null", out);
	fprintf(out, ",\"filter_total\":%llu},\"rows\":[", (unsigned long long)h->filter_total);
	for (size_t i = 0; i < nr && (!o->limit || i < o->limit); i++) {
		const struct ct_row *r = rows[i];
		const char *fam = family ? family(fctx, r) : NULL;

		fprintf(out, "%s\n{\"symbol\":", i ? "," : "");
		fput_json_str(out, r->name);
		fprintf(out, ",\"dso\":");
		if (r->dso)
			fput_json_str(out, r->dso);
		else
			fputs("null", out);
		fprintf(out, ",\"self\":%llu,\"self_pct\":%.4f,\"self_ns\":%llu,\"total\":%llu,\"total_pct\":%.4f",
			(unsigned long long)r->self, 100.0 * r->self / n,
			(unsigned long long)(r->self * h->ns_per_sample),
			(unsigned long long)r->total, 100.0 * r->total / n);
		if (r->flags & FRAME_PYTHON) {
			/* "qualname (file.py:LINE)": the parts, the file with its path */
			const char *open = strrchr(r->name, '(');
			const char *colon = open ? strrchr(open, ':') : NULL;

			if (open && colon && open > r->name + 1) {
				fprintf(out, ",\"python\":{\"function\":");
				char *fn = xstrndup(r->name, (size_t)(open - 1 - r->name));

				fput_json_str(out, fn);
				free(fn);
				fprintf(out, ",\"file\":");
				fput_json_str(out, r->path ? r->path : "");
				fprintf(out, ",\"line\":%d}", atoi(colon + 1));
			}
		}
		if (r->srcline) {
			fprintf(out, ",\"srcline\":");
			fput_json_str(out, r->srcline);
		}
		if (r->caller) {
			fprintf(out, ",\"caller\":");
			fput_json_str(out, r->caller);
			fprintf(out, ",\"caller_samples\":%llu", (unsigned long long)r->caller_count);
		}
		if (fam) {
			fprintf(out, ",\"family\":");
			fput_json_str(out, fam);
		}
		fputc('}', out);
	}
	fprintf(out, "\n]}\n");
}
