/* test-kbtf.c - kernel struct members' offsets read by kbtf.h, against libbpf's own
 * parse of the same BTF (btf__parse_raw), the independent reference.
 *
 * usage: test-kbtf [FILE]   (default /sys/kernel/btf/vmlinux: the running kernel's)
 * For each member of every struct named below, and for perf_sample_data's and
 * bpf_perf_event_data_kern's whole lists: the same offset where libbpf's member is
 * byte-aligned and 8 bytes long, -1 where not; members of unnamed structs and unions
 * found through them; a member of another size, a missing member or struct: -1; a file
 * that is not BTF: NULL; the same offset from the file read through a pipe (the way
 * where it cannot be mapped: sysfs before Linux 6.16).  TAP output. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "kbtf.h"

#include "unit/tap.h"

/* libbpf's answer: member's offset in struct id (looked for in unnamed members too),
 * where it is size bytes long, else -1 */
static long ref_member(const struct btf *b, uint32_t id, const char *name, long size)
{
	const struct btf_type *t = btf__type_by_id(b, id);
	const struct btf_member *m;

	if (!t || !(btf_is_struct(t) || btf_is_union(t)))
		return -1;
	m = btf_members(t);
	for (uint16_t i = 0; i < btf_vlen(t); i++, m++) {
		const char *mn = btf__name_by_offset(b, m->name_off);
		uint32_t bits = btf_member_bit_offset(t, i);
		long off;

		if (bits % 8 || btf_member_bitfield_size(t, i))
			continue;
		if (mn && *mn) {
			if (!strcmp(mn, name))
				return btf__resolve_size(b, m->type) == size ? (long)(bits / 8) : -1;
			continue;
		}
		off = ref_member(b, btf__resolve_type(b, m->type), name, size);
		if (off >= 0)
			return off + bits / 8;
	}
	return -1;
}

/* every member of struct name, at sizes 8 and 4: kbtf's offsets are libbpf's */
static int same_members(const struct kbtf *k, const struct btf *b, const char *name, int *nr)
{
	int32_t id = btf__find_by_name_kind(b, name, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(b, (uint32_t)id) : NULL;
	const struct btf_member *m;
	int bad = 0;

	if (!t)
		return 1;
	m = btf_members(t);
	for (uint16_t i = 0; i < btf_vlen(t); i++, m++) {
		const char *mn = btf__name_by_offset(b, m->name_off);

		for (long size = 4; mn && *mn && size <= 8; size += 4) {
			long want = ref_member(b, (uint32_t)id, mn, size);
			long got = kbtf_member(k, name, mn, (uint32_t)size);

			++*nr;
			if (got != want) {
				printf("# %s.%s (%ld bytes): %ld, libbpf %ld\n", name, mn, size, got, want);
				bad++;
			}
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/sys/kernel/btf/vmlinux";
	struct btf *b = btf__parse_raw(path);
	struct kbtf *k = kbtf_open(path);
	const char *structs[] = { "perf_sample_data", "bpf_perf_event_data_kern", "task_struct",
				  "perf_event_attr", "sk_buff" };
	char got[64];
	int nr = 0, bad = 0;
	int32_t id;

	if (!b) {
		printf("1..0 # SKIP libbpf cannot read %s\n", path);
		return 0;
	}
	ok(k != NULL, "the kernel's BTF read and its types indexed", NULL);
	for (size_t s = 0; s < sizeof(structs) / sizeof(structs[0]); s++)
		bad += same_members(k, b, structs[s], &nr);
	snprintf(got, sizeof(got), "%d of %d differ", bad, nr);
	ok(!bad && nr > 100, "every member of five structs at the offset libbpf gives", got);
	/* the three the program reads (pybpf.c, sample_time_offsets) */
	id = btf__find_by_name_kind(b, "perf_sample_data", BTF_KIND_STRUCT);
	snprintf(got, sizeof(got), "%ld", kbtf_member(k, "perf_sample_data", "time", 8));
	ok(id > 0 && kbtf_member(k, "perf_sample_data", "time", 8) > 0 &&
	   kbtf_member(k, "perf_sample_data", "time", 8) ==
	   ref_member(b, (uint32_t)id, "time", 8), "perf_sample_data.time", got);
	/* task_struct.pid is 4 bytes: asked as 8, not taken */
	snprintf(got, sizeof(got), "%ld", kbtf_member(k, "task_struct", "pid", 8));
	ok(kbtf_member(k, "task_struct", "pid", 8) == -1 &&
	   kbtf_member(k, "task_struct", "pid", 4) > 0, "a member of another size: -1", got);
	ok(kbtf_member(k, "perf_sample_data", "no_such_member", 8) == -1 &&
	   kbtf_member(k, "no_such_struct_dlprof", "time", 8) == -1 &&
	   kbtf_member(NULL, "perf_sample_data", "time", 8) == -1,
	   "a missing member or struct, or no BTF: -1", NULL);
	{
		/* through a pipe: read, not mapped */
		int fds[2], in;
		pid_t child;
		char fdpath[64];
		struct kbtf *kp;
		long want = kbtf_member(k, "perf_sample_data", "time", 8);

		if (pipe(fds))
			return 1;
		child = fork();
		if (child == 0) {
			char buf[65536];
			ssize_t n;

			close(fds[0]);
			in = open(path, O_RDONLY);
			while (in >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
				if (write(fds[1], buf, (size_t)n) != n)
					break;
			_exit(0);
		}
		close(fds[1]);
		snprintf(fdpath, sizeof(fdpath), "/dev/fd/%d", fds[0]);
		kp = kbtf_open(fdpath);
		snprintf(got, sizeof(got), "%ld", kbtf_member(kp, "perf_sample_data", "time", 8));
		ok(kp && want > 0 && kbtf_member(kp, "perf_sample_data", "time", 8) == want,
		   "read through a pipe: the same", got);
		kbtf_close(kp);
		close(fds[0]);
		waitpid(child, NULL, 0);
	}
	ok(kbtf_open("/proc/self/status") == NULL && kbtf_open("/nonexistent/btf") == NULL,
	   "a file that is not BTF, or none: NULL", NULL);
	kbtf_close(k);
	btf__free(b);
	return tap_done();
}
