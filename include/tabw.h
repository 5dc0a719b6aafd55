/* tabw.h - a small table writer: the columns said once, each row's cells given once,
 * rendered as an aligned text table, a JSON array of objects or CSV.
 *
 *	struct tabw *t = tabw_new();
 *	tabw_col(t, "Samples", "samples", TABW_NUM);
 *	tabw_col(t, "Operator", "op", TABW_TEXT);
 *	tabw_row(t); tabw_u64(t, 1234); tabw_str(t, "aten::conv2d");
 *	tabw_print(t, stdout, TABW_AS_TEXT);
 *	tabw_free(t);
 */
#ifndef DLPROF_TABW_H
#define DLPROF_TABW_H

#include <stdint.h>
#include <stdio.h>

enum { TABW_TEXT = 0, TABW_NUM = 1 };	/* left-aligned text; right-aligned number */
enum tabw_as { TABW_AS_TEXT, TABW_AS_JSON, TABW_AS_CSV };

struct tabw;
struct json;

struct tabw *tabw_new(void);
void tabw_free(struct tabw *t);
/* A column: its text header, its JSON key and CSV header */
void tabw_col(struct tabw *t, const char *head, const char *key, int kind);
/* A new row; its cells follow in the columns' order */
void tabw_row(struct tabw *t);
void tabw_str(struct tabw *t, const char *s);
/* a count: "12,345" in text, 12345 in JSON and CSV */
void tabw_u64(struct tabw *t, uint64_t v);
/* a figure with that many decimals in text, %.6g in JSON and CSV */
void tabw_num(struct tabw *t, double v, int decimals);
/* no value: "-" in text, null in JSON, empty in CSV */
void tabw_none(struct tabw *t);
/* The whole table; JSON: an array of one object per row (no newline after it) */
void tabw_print(struct tabw *t, FILE *out, enum tabw_as as);
/* The table as the next value of a JSON document: that array */
void tabw_json(struct tabw *t, struct json *j);

#endif
