/* kbtf.h - the offsets of kernel struct members, read from the running kernel's BTF
 * (/sys/kernel/btf/vmlinux) by a reader of its own: libbpf's parses every type, 70 ms
 * on a 2-core guest at each record, for three offsets. */
#ifndef DLPROF_KBTF_H
#define DLPROF_KBTF_H

#include <stdint.h>

struct kbtf;

/* The BTF at path, read and its types indexed; NULL where it cannot be read or is not
 * BTF (or has a kind this reader does not know). */
struct kbtf *kbtf_open(const char *path);
void kbtf_close(struct kbtf *k);

/* The byte offset of member in struct strct (looked for in its unnamed structs and unions
 * too), where it is size bytes long; else -1. */
long kbtf_member(const struct kbtf *k, const char *strct, const char *member, uint32_t size);

#endif
