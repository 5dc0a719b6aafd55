/* test-util.c - unit tests of lib/util.c: JSON strings are valid UTF-8 whatever the name
 * they carry holds (a name read from a process can be any bytes). */
#include <string.h>

#include "tap.h"
#include "util.h"

static void json(const char *in, const char *want, const char *what)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_add_json_str(&sb, in);
	ok(!strcmp(sb.buf, want), what, sb.buf);
	strbuf_release(&sb);
}

int main(void)
{
	json("plain", "\"plain\"", "ASCII as it is");
	json("a\"b\\c\n", "\"a\\\"b\\\\c\\u000a\"", "quote, backslash, control character escaped");
	json("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80\"",
	     "2-, 3- and 4-byte UTF-8 kept");
	json("x\xf5\x90\x80\x80y", "\"x\\ufffd\\ufffd\\ufffd\\ufffdy\"",
	     "a lead byte past U+10FFFF (0xf5, what a freed str read as) replaced");
	json("\xc3", "\"\\ufffd\"", "a sequence cut by the end of the string replaced");
	json("\xc0\x80", "\"\\ufffd\\ufffd\"", "an overlong form replaced");
	json("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"", "a surrogate replaced");
	json("\xe6\x97", "\"\\ufffd\\ufffd\"", "a 3-byte sequence missing its last byte replaced");
	json(NULL, "\"\"", "NULL is the empty string");
	return tap_done();
}
