/* fuzz-recording.c - libFuzzer harness for the readers of dlprof recordings.
 *
 * The input is a run of records as they lie inside an inflated chunk (u32 type, u32
 * length, payload, zero padding to 8 bytes: docs/FORMAT.md).  The harness writes them as
 * a real recording (recwriter, split into side-band and sample chunks as record does),
 * so the mutations reach the records rather than dying at a chunk checksum, then reads
 * it the way report does: the session (every record type), the process model, the
 * unwinder (copied stacks and stacks unwound while recording), the symbolizer, the
 * attribution, with and without the off-CPU view.  With FUZZ_RAW in the environment the
 * input is instead taken as the file itself (header and chunk parsing).
 *
 *   make fuzz FUZZ_SECONDS=N      (tests/fuzz.mk)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "family-rules.h"
#include "fuzz-read.h"
#include "recfile.h"

static int fd = -1;
static char path[64];
static struct family_rules *rules;

/* Write the records of data[0..size) as a recording at path.  Returns 0, or -1 when the
 * input holds no whole record. */
static int write_records(const uint8_t *data, size_t size)
{
	struct recwriter *w;
	size_t off = 0;
	int n = 0;

	if (ftruncate(fd, 0))
		return -1;
	w = recwriter_open(path);
	if (!w)
		return -1;
	recwriter_split_samples(w);
	while (off + 8 <= size) {
		uint32_t type, len;

		memcpy(&type, data + off, 4);
		memcpy(&len, data + off + 4, 4);
		off += 8;
		if (len > size - off)
			break;
		/* the writer takes any type; its own size cap is the writer's business */
		if (len <= (1u << 24) && recwriter_add(w, type, data + off, len) == 0)
			n++;
		off += (len + 7u) & ~7u;
	}
	recwriter_close(w);
	return n ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fd < 0) {
		fd = memfd_create("dlprof-fuzz", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		rules = family_rules_load(NULL);
		/* a recording without kernel symbols would read /proc/kallsyms each time */
		setenv("DLPROF_KALLSYMS", "/dev/null", 1);
	}
	if (getenv("FUZZ_RAW")) {
		if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
			return 0;
	} else if (write_records(data, size)) {
		return 0;
	}
	fuzz_read(path, rules);
	return 0;
}
