/* test-util.c - unit tests of lib/util: JSON strings (json.c) are valid UTF-8 whatever the name
 * they carry holds (a name read from a process can be any bytes); META's comma lists
 * split and looked up alike; and of hash_bytes
 * (lib/util/rephash.c), which keys the tables of stacks, chains and names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "rephash.h"
#include "tap.h"
#include "util.h"

static void json(const char *in, const char *want, const char *what)
{
	struct strbuf sb = STRBUF_INIT;

	json_escape(&sb, in);
	ok(!strcmp(sb.buf, want), what, sb.buf);
	strbuf_release(&sb);
}

/* Stacks that differ in one bit of one address, lengths that differ, and how evenly the
 * low bits (a table's index) spread over stacks and names as record and report meet
 * them */
static void hashes(void)
{
	uint64_t ips[64], h0, *seen;
	unsigned *load;
	int same = 0, worst = 0;
	char msg[128], name[64];

	for (int i = 0; i < 64; i++)
		ips[i] = 0x7f3a12340000ull + (uint64_t)i * 0x1f3 + ((uint64_t)i << 20);
	h0 = hash_bytes(ips, sizeof(ips));
	for (int i = 0; i < 64; i++)
		for (int b = 0; b < 64; b++) {
			ips[i] ^= 1ull << b;
			same += hash_bytes(ips, sizeof(ips)) == h0;
			ips[i] ^= 1ull << b;
		}
	snprintf(msg, sizeof(msg), "%d of 4096", same);
	ok(same == 0, "a stack with one bit of one address changed hashes apart", msg);

	seen = calloc(65, sizeof(*seen));
	memset(ips, 0, sizeof(ips));
	same = 0;
	for (int n = 0; n <= 64; n++) {
		seen[n] = hash_bytes(ips, (size_t)n);
		for (int k = 0; k < n; k++)
			same += seen[k] == seen[n];
	}
	free(seen);
	snprintf(msg, sizeof(msg), "%d pairs alike", same);
	ok(same == 0, "zero bytes of lengths 0..64 hash apart", msg);

	/* 65536 stacks sharing their root side, as a run's are (a leaf and its caller
	 * vary), and 65536 symbol-like names, into 4096 buckets by the low 12 bits: 16 a
	 * bucket on average; a fair hash's fullest bucket holds about 30 */
	load = calloc(4096, sizeof(*load));
	for (unsigned i = 0; i < 65536; i++) {
		for (int k = 0; k < 40; k++)
			ips[k] = 0x55d0c0de1000ull + (uint64_t)k * 0x40;
		ips[0] = 0x7f0012340000ull + (i & 255) * 4;
		ips[1] = 0x7f0012380000ull + (i >> 8) * 16;
		load[hash_bytes(ips, 40 * 8) & 4095]++;
	}
	for (int b = 0; b < 4096; b++)
		if ((int)load[b] > worst)
			worst = (int)load[b];
	snprintf(msg, sizeof(msg), "fullest bucket %d", worst);
	ok(worst <= 48, "stacks that differ at the leaf spread over the low bits", msg);
	memset(load, 0, 4096 * sizeof(*load));
	worst = 0;
	for (unsigned i = 0; i < 65536; i++) {
		int len = snprintf(name, sizeof(name), "at::native::kernel_%u", i);

		load[hash_bytes(name, (size_t)len) & 4095]++;
	}
	for (int b = 0; b < 4096; b++)
		if ((int)load[b] > worst)
			worst = (int)load[b];
	free(load);
	snprintf(msg, sizeof(msg), "fullest bucket %d", worst);
	ok(worst <= 48, "names that differ in a few characters spread over the low bits", msg);
}

/* META's lists ("context-switches,page-faults,..."): items and places agree */
static void lists(void)
{
	char *v[4];
	size_t n = list_split("a,bb,,c,", v, 4);
	char msg[64];

	snprintf(msg, sizeof(msg), "%zu items", n);
	ok(n == 3 && !strcmp(v[0], "a") && !strcmp(v[1], "bb") && !strcmp(v[2], "c"),
	   "list_split: the items, empty ones none", msg);
	ok(list_index("a,bb,,c,", "c") == 3 && list_index("a,bb,,c,", "bb") == 2 &&
	   list_index("a,bb,,c,", "b") == 0 && list_index("", "a") == 0 &&
	   list_index("page-faults", "page-faults") == 1,
	   "list_index: places as list_split counts them, whole items only", "");
	ok(list_split("a,b,c", v + 3, 1) == 1 && !strcmp(v[3], "a"), "list_split: at most max", "");
	for (size_t i = 0; i < 4; i++)
		free(v[i]);
}

int main(void)
{
	hashes();
	lists();
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
