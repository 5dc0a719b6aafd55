/* isaprof.c - check-isa -i: which ISA class the profiled samples ran in. */
#include "isa.h"
#include "util.h"

int isaprof_run(const char *path, int json, int top, unsigned scan_flags)
{
	(void)json; (void)top; (void)scan_flags;
	error("check-isa -i '%s': not implemented yet", path);
	return 2;
}
