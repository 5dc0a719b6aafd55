/* torchops.h - PyTorch operator names as torch.profiler spells them.
 *
 * torchops_split(dso_path, "fill__Scalar", 12) returns 5: the operator is "fill_" and the
 * overload "Scalar" starts at 6 (split + 1).  It returns len when the name has no
 * overload.  dso_path is the library holding the at::_ops code (its .rodata carries the
 * schemas, read once per path); NULL or an unreadable file: common overload names decide.
 */
#ifndef DLPROF_TORCHOPS_H
#define DLPROF_TORCHOPS_H

#include <stddef.h>

size_t torchops_split(const char *dso_path, const char *ident, size_t len);

#endif
