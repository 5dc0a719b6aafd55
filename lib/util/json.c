/* json.c - the JSON writer (json.h).  A document is written by one thread: its stream
 * is not locked for each comma. */
#include <stdarg.h>

#include "json.h"
#include "util.h"

/* Bytes of the well-formed UTF-8 sequence at p (1-4), 0 when it is not one. */
static size_t utf8_len(const unsigned char *p)
{
	size_t n = p[0] < 0xc2 ? 0 : p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : p[0] < 0xf5 ? 4 : 0;

	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	/* no overlong forms, no surrogates, nothing past U+10FFFF */
	if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
	    (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
		return 0;
	return n;
}

void json_escape(struct strbuf *sb, const char *s)
{
	strbuf_addch(sb, '"');
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		size_t n;

		if (*p == '"' || *p == '\\') {
			strbuf_addf(sb, "\\%c", *p);
		} else if (*p < 0x20) {
			strbuf_addf(sb, "\\u%04x", *p);
		} else if (*p < 0x80) {
			strbuf_addch(sb, (char)*p);
		} else if ((n = utf8_len(p))) {
			strbuf_add(sb, p, n);
			p += n - 1;
		} else {
			/* a name read from a process or a file that is not UTF-8: JSON must be */
			strbuf_addstr(sb, "\\ufffd");
		}
	}
	strbuf_addch(sb, '"');
}

static void put_string(FILE *out, const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	const char *str = s ? s : "", *p = str;

	/* most keys and names are plain ASCII: written as they are */
	while ((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x80 && *p != '"' && *p != '\\')
		p++;
	if (!*p) {
		fputc_unlocked('"', out);
		fwrite_unlocked(str, 1, (size_t)(p - str), out);
		fputc_unlocked('"', out);
		return;
	}
	json_escape(&sb, str);
	fwrite_unlocked(sb.buf, 1, sb.len, out);
	strbuf_release(&sb);
}

struct json *json_mem_open(struct json_mem *m, enum json_layout layout)
{
	FILE *f;

	m->buf = NULL;
	m->len = 0;
	f = open_memstream(&m->buf, &m->len);
	if (!f)
		die("out of memory");
	json_init(&m->j, f, layout);
	return &m->j;
}

char *json_mem_close(struct json_mem *m)
{
	fclose(m->j.out);
	return m->buf;
}

void json_init(struct json *j, FILE *out, enum json_layout layout)
{
	*j = (struct json){ .out = out, .layout = layout };
}

void json_layout(struct json *j, enum json_layout layout)
{
	j->layout = layout;
}

void json_pre(struct json *j, const char *s)
{
	j->pre = s;
}

void json_raw(struct json *j, const char *s)
{
	fputs_unlocked(s, j->out);
}

/* Before an item: its comma, then the caller's text or the layout's space.  After a
 * key, the value follows the key's colon. */
static void item(struct json *j)
{
	if (j->after_key) {
		j->after_key = 0;
		return;
	}
	if (j->depth) {
		if (j->items[j->depth - 1]++)
			fputc_unlocked(',', j->out);
		if (j->pre)
			fputs_unlocked(j->pre, j->out);
		else if (j->items[j->depth - 1] > 1 && j->layout == JSON_SPACED)
			fputc_unlocked(' ', j->out);
	} else if (j->pre) {
		fputs_unlocked(j->pre, j->out);
	}
	j->pre = NULL;
}

static void open_level(struct json *j, char open, char close)
{
	item(j);
	if (j->depth == JSON_MAX_DEPTH)
		die("json: nested deeper than %d", JSON_MAX_DEPTH);
	fputc_unlocked(open, j->out);
	j->items[j->depth] = 0;
	j->close[j->depth++] = close;
}

void json_obj(struct json *j)
{
	open_level(j, '{', '}');
}

void json_arr(struct json *j)
{
	open_level(j, '[', ']');
}

void json_end(struct json *j)
{
	if (!j->depth)
		die("json: end of nothing open");
	j->pre = NULL;
	fputc_unlocked(j->close[--j->depth], j->out);
}

void json_key(struct json *j, const char *key)
{
	item(j);
	put_string(j->out, key);
	fputs_unlocked(j->layout == JSON_SPACED ? ": " : ":", j->out);
	j->after_key = 1;
}

void json_lit(struct json *j, const char *text)
{
	item(j);
	fputs_unlocked(text, j->out);
}

void json_str(struct json *j, const char *s)
{
	item(j);
	if (s)
		put_string(j->out, s);
	else
		fputs_unlocked("null", j->out);
}

void json_u64(struct json *j, uint64_t v)
{
	item(j);
	fprintf(j->out, "%llu", (unsigned long long)v);
}

void json_i64(struct json *j, int64_t v)
{
	item(j);
	fprintf(j->out, "%lld", (long long)v);
}

void json_bool(struct json *j, int v)
{
	json_lit(j, v ? "true" : "false");
}

void json_null(struct json *j)
{
	json_lit(j, "null");
}

void json_num(struct json *j, const char *fmt, ...)
{
	va_list ap;

	item(j);
	va_start(ap, fmt);
	vfprintf(j->out, fmt, ap);
	va_end(ap);
}

void json_kstr(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_str(j, s);
}

void json_ku64(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	json_u64(j, v);
}

void json_ki64(struct json *j, const char *key, int64_t v)
{
	json_key(j, key);
	json_i64(j, v);
}

void json_kbool(struct json *j, const char *key, int v)
{
	json_key(j, key);
	json_bool(j, v);
}

void json_knull(struct json *j, const char *key)
{
	json_key(j, key);
	json_null(j);
}

void json_knum(struct json *j, const char *key, const char *fmt, ...)
{
	va_list ap;

	json_key(j, key);
	item(j);
	va_start(ap, fmt);
	vfprintf(j->out, fmt, ap);
	va_end(ap);
}

void json_klit(struct json *j, const char *key, const char *text)
{
	json_key(j, key);
	json_lit(j, text);
}

void json_kobj(struct json *j, const char *key)
{
	json_key(j, key);
	json_obj(j);
}

void json_karr(struct json *j, const char *key)
{
	json_key(j, key);
	json_arr(j);
}
