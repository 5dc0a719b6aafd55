/* fuzz-perfdata.c - libFuzzer harness for the perf.data reader (lib/file/perfdata.c) and what
 * report does with its records (session, process model, dwarf stacks, attribution).
 *
 * The first byte picks how the rest is taken:
 *   even  the file itself, its first 8 bytes forced to perf's magic "PERFILE2", so the
 *         header, attr and id sections, feature sections (hostname, cmdline, event
 *         names, build-ids) and the data section are all mutated
 *   odd   one perf_event_attr (PERF_ATTR_SIZE_VER7 bytes: sample_type, regs and stack
 *         sizes mutated with it) then the data section's records; the harness writes a
 *         well-formed perf.data around them, so mutations reach the records instead of
 *         failing at the header's offsets
 * Seeds in tests/fuzz/corpus/perfdata/: small files of `perf record` -g and
 * --call-graph dwarf (each with a 0 byte in front), and their attr + records (a 1).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "family-rules.h"
#include "fuzz-read.h"

#define ATTR_SZ		PERF_ATTR_SIZE_VER7	/* 128: what Debian 12's perf writes */
#define HDR_SZ		104

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fd = -1;
static char path[64];
static struct family_rules *rules;

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* header | attr, its ids section (offset, size) | one id | data: the layout perf writes */
static int write_wrapped(const uint8_t *data, size_t size)
{
	uint8_t hdr[HDR_SZ], attr[ATTR_SZ + 16], id[8];
	uint64_t attrs_off = HDR_SZ, ids_off = attrs_off + sizeof(attr), data_off = ids_off + 8;

	if (size < ATTR_SZ)
		return -1;
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, "PERFILE2", 8);
	put64(hdr + 8, HDR_SZ);
	put64(hdr + 16, sizeof(attr));
	put64(hdr + 24, attrs_off);
	put64(hdr + 32, sizeof(attr));
	put64(hdr + 40, data_off);
	put64(hdr + 48, size - ATTR_SZ);
	memcpy(attr, data, ATTR_SZ);
	put64(attr + ATTR_SZ, ids_off);
	put64(attr + ATTR_SZ + 8, 8);
	put64(id, 1);
	if (ftruncate(fd, 0) ||
	    pwrite(fd, hdr, sizeof(hdr), 0) != sizeof(hdr) ||
	    pwrite(fd, attr, sizeof(attr), attrs_off) != sizeof(attr) ||
	    pwrite(fd, id, sizeof(id), ids_off) != sizeof(id) ||
	    pwrite(fd, data + ATTR_SZ, size - ATTR_SZ, data_off) != (ssize_t)(size - ATTR_SZ))
		return -1;
	return 0;
}

static int write_raw(const uint8_t *data, size_t size)
{
	if (size < 8 || ftruncate(fd, 0) || pwrite(fd, "PERFILE2", 8, 0) != 8 ||
	    pwrite(fd, data + 8, size - 8, 8) != (ssize_t)(size - 8))
		return -1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fd < 0) {
		fd = memfd_create("dlprof-fuzz-perf", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		rules = family_rules_load(NULL);
		setenv("DLPROF_KALLSYMS", "/dev/null", 1);
	}
	if (!size || (data[0] & 1 ? write_wrapped(data + 1, size - 1) :
				      write_raw(data + 1, size - 1)))
		return 0;
	fuzz_read(path, rules);
	return 0;
}
