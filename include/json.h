/* json.h - one JSON writer for every view: nesting, commas and escaping kept in one
 * place, the layout (compact or spaced, line breaks) chosen by the caller.
 *
 *	struct json j;
 *	json_init(&j, stdout, JSON_SPACED);
 *	json_obj(&j);
 *	json_kstr(&j, "kind", "op");
 *	json_knum(&j, "pct", "%.2f", 12.5);
 *	json_karr(&j, "rows");
 *	for (...) { json_pre(&j, "\n  "); json_obj(&j); ...; json_end(&j); }
 *	json_raw(&j, "\n");
 *	json_end(&j);			(the array)
 *	json_end(&j);			(the object)
 *
 * gives {"kind": "op", "pct": 12.50, "rows": [
 *   {...},
 *   {...}
 * ]}
 */
#ifndef DLPROF_JSON_H
#define DLPROF_JSON_H

#include <stdint.h>
#include <stdio.h>

struct strbuf;

#define JSON_MAX_DEPTH 32

enum json_layout {
	JSON_COMPACT,	/* {"a":1,"b":[2,3]} */
	JSON_SPACED,	/* {"a": 1, "b": [2, 3]} */
};

struct json {
	FILE *out;
	enum json_layout layout;
	const char *pre;	/* written before the next item, after its comma */
	int after_key;		/* a key was written: the value follows it directly */
	unsigned depth;
	unsigned items[JSON_MAX_DEPTH];	/* items written at each open level */
	char close[JSON_MAX_DEPTH];	/* '}' or ']' */
};

void json_init(struct json *j, FILE *out, enum json_layout layout);
/* The layout of what follows (a view may nest a compact part in a spaced one) */
void json_layout(struct json *j, enum json_layout layout);
/* Open an object or an array as the next value; json_end closes the innermost one */
void json_obj(struct json *j);
void json_arr(struct json *j);
void json_end(struct json *j);
/* Text written before the next item (key or array element), after its comma and in
 * place of the layout's space: "\n  " starts each row of an array on its own line. */
void json_pre(struct json *j, const char *s);
/* Text written as is, now: "\n" before a closing bracket, say */
void json_raw(struct json *j, const char *s);
/* An object's key; its value is the next call */
void json_key(struct json *j, const char *key);

/* Values.  json_str(NULL) writes null. */
void json_str(struct json *j, const char *s);
void json_u64(struct json *j, uint64_t v);
void json_i64(struct json *j, int64_t v);
void json_bool(struct json *j, int v);
void json_null(struct json *j);
/* A number as fmt prints it ("%.2f", "%.6g") */
void json_num(struct json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A value that is JSON already (a number's digits, a prepared object) */
void json_lit(struct json *j, const char *text);

/* A document written into memory (a cell's value, prepared for a table): json_mem_close
 * ends it and hands back its text, the caller's to free */
struct json_mem {
	struct json j;
	char *buf;
	size_t len;
};
struct json *json_mem_open(struct json_mem *m, enum json_layout layout);
char *json_mem_close(struct json_mem *m);

/* Append s as a JSON string literal: quoted, '"' and '\\' escaped, control characters
 * as \\u00XX, what is not well-formed UTF-8 as \\ufffd (JSON must be UTF-8); NULL gives "" */
void json_escape(struct strbuf *sb, const char *s);

/* Key and value in one call */
void json_kstr(struct json *j, const char *key, const char *s);
void json_ku64(struct json *j, const char *key, uint64_t v);
void json_ki64(struct json *j, const char *key, int64_t v);
void json_kbool(struct json *j, const char *key, int v);
void json_knull(struct json *j, const char *key);
void json_knum(struct json *j, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void json_klit(struct json *j, const char *key, const char *text);
void json_kobj(struct json *j, const char *key);
void json_karr(struct json *j, const char *key);

#endif
