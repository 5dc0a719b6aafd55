/* tabw.h - the table writer of the views: the columns said once, each row's cells given
 * once, rendered as an aligned text table, a JSON array of objects or CSV.
 *
 *	struct tabw *t = tabw_new();
 *	tabw_col(t, "Samples", "samples", TABW_NUM);
 *	tabw_col(t, "Operator", "op", TABW_TEXT);
 *	tabw_row(t); tabw_u64(t, 1234); tabw_str(t, "aten::conv2d");
 *	tabw_print(t, stdout, OUT_TEXT);
 *	tabw_free(t);
 *
 * A cell has the text the table shows and the value JSON and CSV give: a number's
 * digits, a string, or none (null, an empty CSV field).  A column may be of some of the
 * formats only, be laid out in the text table at a fixed width, cut, and in an order of
 * its own (tabw_add).
 */
#ifndef DLPROF_TABW_H
#define DLPROF_TABW_H

#include <stdint.h>
#include <stdio.h>

#include "util.h"	/* enum out_format */

enum { TABW_TEXT = 0, TABW_NUM = 1 };	/* left-aligned text; right-aligned number */

/* the formats a column is in (0: all) */
#define TABW_IN_TEXT	(1u << 0)
#define TABW_IN_JSON	(1u << 1)
#define TABW_IN_CSV	(1u << 2)
#define TABW_IN_NONE	(1u << 3)	/* in none (of this table) */

struct tabw_colspec {
	const char *head;	/* the text table's header */
	const char *key;	/* the JSON key and CSV header */
	int kind;		/* TABW_TEXT, TABW_NUM */
	unsigned in;		/* TABW_IN_*; 0: every format */
	int width;		/* text: its width; 0: its widest cell */
	int cut;		/* text: cells cut to width */
	int gap;		/* text: blanks before it; 0: the table's (tabw_gap) */
	int text_at;		/* text: its place among the columns; 0: as added */
	int omit;		/* JSON: a cell without a value leaves its key out */
};

struct tabw;
struct json;

struct tabw *tabw_new(void);
void tabw_free(struct tabw *t);
/* A column: its text header, its JSON key and CSV header */
void tabw_col(struct tabw *t, const char *head, const char *key, int kind);
void tabw_add(struct tabw *t, const struct tabw_colspec *c);
/* The blanks between text columns (2 unless said) */
void tabw_gap(struct tabw *t, int gap);
/* JSON rows: text before each row (NULL: "\n " before each but the first) and before
 * the closing bracket; TABW_ROWS_INLINE: the rows one after another as the document's
 * layout spaces them */
#define TABW_ROWS_INLINE ((const char *)1)
void tabw_json_rows(struct tabw *t, const char *before_row, const char *before_end);

/* A new row; its cells follow in the columns' order (as added) */
void tabw_row(struct tabw *t);
void tabw_str(struct tabw *t, const char *s);
/* a count: "12,345" in text, 12345 in JSON and CSV */
void tabw_u64(struct tabw *t, uint64_t v);
/* a figure with that many decimals in text, %.6g in JSON and CSV */
void tabw_num(struct tabw *t, double v, int decimals);
/* no value: "-" in text, null in JSON, empty in CSV */
void tabw_none(struct tabw *t);
/* text as the table shows it; json: the value's JSON (a number's digits, true, a
 * prepared array), NULL for none */
void tabw_cell(struct tabw *t, const char *text, const char *json);
/* text as the table shows it (a name cut, say); s: the string JSON and CSV give, NULL
 * for none */
void tabw_cell_str(struct tabw *t, const char *text, const char *s);
/* A share: "12.3%" (decimals in text), 12.34 in JSON and CSV */
void tabw_pct(struct tabw *t, double pct, int decimals);
/* A count as it is: 12345 in every format */
void tabw_count(struct tabw *t, uint64_t v);
/* A time: "318.3 ms" in text (output_duration_ns), its nanoseconds in JSON and CSV */
void tabw_ns(struct tabw *t, double ns);
/* Text printed after the current row in the text table only (a wrapped list) */
void tabw_note(struct tabw *t, const char *text);

/* The whole table; JSON: an array of one object per row (no newline after it) */
void tabw_print(struct tabw *t, FILE *out, enum out_format as);
/* The table as the next value of a JSON document: that array */
void tabw_json(struct tabw *t, struct json *j);
/* The table as the last member of j's object, under key, a row a line; then the object
 * closed and its line ended: {..., "rows": [
 *   {...}
 * ]} */
void tabw_json_last(struct tabw *t, struct json *j, const char *key);

#endif
