/* opcalls.bpf.c - record --op-calls: one call of a PyTorch operator (opcalls.c).
 *
 * Attached as one uprobe_multi link to the entry of every operator in a library that
 * holds them, each offset's cookie the operator's index.  Counts per process and
 * operator; record sums the processes it recorded.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#define OC_MAX_ENTRIES 65536

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OC_MAX_ENTRIES);
	__type(key, __u64);	/* tgid << 32 | operator */
	__type(value, __u64);	/* calls */
} calls SEC(".maps");

/* (a full table: the calls it could not count) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dropped SEC(".maps");

/* record in a PID namespace of its own (a container): the processes as it knows them */
const volatile __u64 pidns_dev, pidns_ino;

SEC("kprobe")
int oc_call(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), key;
	struct bpf_pidns_info ns;

	if (pidns_ino) {
		if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
			return 0;	/* (not a process of record's namespace) */
		id = (__u64)ns.tgid << 32;
	}
	key = (id & 0xffffffff00000000ull) | (bpf_get_attach_cookie(ctx) & 0xffffffffull);
	__u64 one = 1, *n = bpf_map_lookup_elem(&calls, &key);
	__u32 zero = 0;

	if (n) {
		__sync_fetch_and_add(n, 1);
		return 0;
	}
	if (bpf_map_update_elem(&calls, &key, &one, BPF_NOEXIST)) {
		n = bpf_map_lookup_elem(&calls, &key);	/* (another cpu put it first) */
		if (n)
			__sync_fetch_and_add(n, 1);
		else if ((n = bpf_map_lookup_elem(&dropped, &zero)))
			__sync_fetch_and_add(n, 1);
	}
	return 0;
}
