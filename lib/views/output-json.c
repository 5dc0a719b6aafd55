/* output-json.c - one stable JSON object per report (see output.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "output.h"
#include "util.h"

void output_json(FILE *out, const struct report_header *h, struct ct_row **rows, size_t nr,
		 const struct output_opts *o, const char *(*family)(void *ctx, const struct ct_row *r),
		 void *fctx)
{
	uint64_t n = h->weight_total ? h->weight_total : h->samples ? h->samples : 1;
	struct json j;

	json_init(&j, out, JSON_COMPACT);
	json_obj(&j);
	json_ku64(&j, "version", 1);
	json_kobj(&j, "header");
	json_kstr(&j, "file", h->file ? h->file : "");
	json_kstr(&j, "command", h->cmdline);
	json_kstr(&j, "event", h->event ? h->event : "");
	json_kstr(&j, "other_events", h->other_events ? h->other_events : "");
	json_kstr(&j, "sampling", h->sampling ? h->sampling : "");
	json_kstr(&j, "key", h->key ? h->key : "symbol");
	json_ku64(&j, "samples", h->samples);
	json_ku64(&j, "lost", h->lost);
	json_ku64(&j, "duration_ns", h->duration_ns);
	json_ku64(&j, "ns_per_sample", h->ns_per_sample);
	json_kbool(&j, "time_estimated", !h->sample_is_time);
	json_ku64(&j, "complete_stacks", h->complete_stacks);
	json_kbool(&j, "stacks_walked", !h->leaf_only);
	json_ku64(&j, "named", h->named);
	json_ku64(&j, "recovered_stacks", h->recovered_stacks);
	json_ku64(&j, "past_copy_stacks", h->past_copy_stacks);
	json_ku64(&j, "recorded_stacks", h->recorded_stacks);
	json_kobj(&j, "unwind_check");
	json_ku64(&j, "checked", h->unwind_checked);
	json_ku64(&j, "same", h->unwind_same);
	json_ku64(&j, "scan_differs", h->unwind_scan_differs);
	json_ku64(&j, "differs", h->unwind_differs);
	json_ku64(&j, "past_copy", h->unwind_past_copy);
	json_end(&j);
	json_kbool(&j, "truncated", h->truncated);
	json_ku64(&j, "skipped_records", h->skipped);
	json_ku64(&j, "irqs_off_samples", h->irqs_off);
	json_kbool(&j, "raw_irqs", h->raw_irqs);
	json_kobj(&j, "python");
	json_ku64(&j, "thread_samples", h->py_records);
	json_ku64(&j, "merged", h->py_merged);
	json_ku64(&j, "moved", h->py_moved);
	json_ku64(&j, "unreadable", h->py_failed);
	json_ku64(&j, "mismatched", h->py_mismatched);
	json_ku64(&j, "read_delay_ns", h->py_delay_ns);
	json_ku64(&j, "read_at_sample", h->py_at_sample);
	json_end(&j);
	json_karr(&j, "warnings");
	for (size_t i = 0; i < h->nr_warnings; i++)
		json_str(&j, h->warnings[i] ? h->warnings[i] : "");
	json_end(&j);
	json_kobj(&j, "alignment");
	json_ku64(&j, "recordings", h->recordings);
	json_ku64(&j, "anchored", h->anchored);
	json_ku64(&j, "hosts", h->hosts);
	json_ku64(&j, "anchor_err_ns", h->anchor_err_ns);
	json_ku64(&j, "drift_ns", h->drift_ns);
	json_kstr(&j, "text", h->aligned);
	json_end(&j);
	json_kobj(&j, "duplicates");
	json_ku64(&j, "processes", h->dup_procs);
	json_ku64(&j, "samples", h->dup_samples);
	json_end(&j);
	json_kstr(&j, "filter", h->filter);
	json_ku64(&j, "filter_total", h->filter_total);
	json_end(&j);
	json_karr(&j, "rows");
	for (size_t i = 0; i < nr && (!o->limit || i < o->limit); i++) {
		const struct ct_row *r = rows[i];
		const char *fam = family ? family(fctx, r) : NULL;

		json_pre(&j, "\n");
		json_obj(&j);
		json_kstr(&j, "symbol", r->name ? r->name : "");
		json_kstr(&j, "dso", r->dso);
		json_ku64(&j, "self", r->self);
		json_knum(&j, "self_pct", "%.4f", 100.0 * r->self / n);
		json_ku64(&j, "self_ns", r->self * h->ns_per_sample);
		json_ku64(&j, "total", r->total);
		json_knum(&j, "total_pct", "%.4f", 100.0 * r->total / n);
		if (r->flags & FRAME_PYTHON) {
			/* "qualname (file.py:LINE)": the parts, the file with its path */
			const char *open = strrchr(r->name, '(');
			const char *colon = open ? strrchr(open, ':') : NULL;

			if (open && colon && open > r->name + 1) {
				char *fn = xstrndup(r->name, (size_t)(open - 1 - r->name));

				json_kobj(&j, "python");
				json_kstr(&j, "function", fn);
				json_kstr(&j, "file", r->path ? r->path : "");
				json_knum(&j, "line", "%d", atoi(colon + 1));
				json_end(&j);
				free(fn);
			}
		}
		if (r->srcline)
			json_kstr(&j, "srcline", r->srcline);
		if (r->caller) {
			json_kstr(&j, "caller", r->caller);
			json_ku64(&j, "caller_samples", r->caller_count);
		}
		if (fam)
			json_kstr(&j, "family", fam);
		json_end(&j);
	}
	json_raw(&j, "\n");
	json_end(&j);
	json_end(&j);
	json_raw(&j, "\n");
}
