/* test-json.c - the JSON writer (lib/util/json.c): commas and colons in both layouts,
 * nesting, line breaks before rows, NULL strings, escapes, and the result parsed back. */
#include "json.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

/* Write a small document with each layout into a buffer */
static char *doc(enum json_layout layout, int rows)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json j;

	json_init(&j, f, layout);
	json_obj(&j);
	json_kstr(&j, "kind", "op");
	json_knum(&j, "pct", "%.2f", 12.5);
	json_kstr(&j, "none", NULL);
	json_kbool(&j, "ok", 1);
	json_ki64(&j, "shift", -3);
	json_karr(&j, "rows");
	for (int i = 0; i < rows; i++) {
		json_pre(&j, "\n  ");
		json_obj(&j);
		json_ku64(&j, "n", (uint64_t)i);
		json_kstr(&j, "name", i ? "a\"b\\c\n" : "x");
		json_karr(&j, "v");
		json_u64(&j, 1);
		json_lit(&j, "2");
		json_end(&j);
		json_end(&j);
	}
	json_raw(&j, "\n");
	json_end(&j);
	json_kobj(&j, "empty");
	json_end(&j);
	json_end(&j);
	fclose(f);
	return buf;
}

int main(void)
{
	char *c = doc(JSON_COMPACT, 2), *s = doc(JSON_SPACED, 2), *e = doc(JSON_SPACED, 0);

	ok(!strcmp(c, "{\"kind\":\"op\",\"pct\":12.50,\"none\":null,\"ok\":true,\"shift\":-3,"
		      "\"rows\":[\n  {\"n\":0,\"name\":\"x\",\"v\":[1,2]},\n  {\"n\":1,"
		      "\"name\":\"a\\\"b\\\\c\\u000a\",\"v\":[1,2]}\n],\"empty\":{}}"),
	   "compact: commas without spaces, rows on their own lines, escapes", c);
	ok(!strcmp(s, "{\"kind\": \"op\", \"pct\": 12.50, \"none\": null, \"ok\": true, "
		      "\"shift\": -3, \"rows\": [\n  {\"n\": 0, \"name\": \"x\", \"v\": [1, 2]},\n"
		      "  {\"n\": 1, \"name\": \"a\\\"b\\\\c\\u000a\", \"v\": [1, 2]}\n], \"empty\": {}}"),
	   "spaced: a space after each comma and colon, none after a row's break", s);
	ok(!strcmp(e, "{\"kind\": \"op\", \"pct\": 12.50, \"none\": null, \"ok\": true, "
		      "\"shift\": -3, \"rows\": [\n], \"empty\": {}}"),
	   "an empty array keeps the break before its bracket", e);
	free(c);
	free(s);
	free(e);
	return tap_done();
}
