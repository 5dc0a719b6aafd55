/* dnnl-test.h - what the oneDNN test workloads share: a failed call ends the program
 * with its name (PROG, defined before the include), and memory in a primitive's own
 * layout filled with small values. */
#ifndef DLPROF_DNNL_TEST_H
#define DLPROF_DNNL_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <dnnl.h>

static void check(dnnl_status_t st, const char *what)
{
	if (st != dnnl_success) {
		fprintf(stderr, PROG ": oneDNN call '%s' failed with status %d\n", what, (int)st);
		exit(2);
	}
}

static dnnl_memory_t make_mem(const dnnl_memory_desc_t *md, dnnl_engine_t eng, unsigned seed)
{
	dnnl_memory_t m;
	float *p;
	size_t n = dnnl_memory_desc_get_size(md) / sizeof(float);

	check(dnnl_memory_create(&m, md, eng, DNNL_MEMORY_ALLOCATE), "dnnl_memory_create");
	check(dnnl_memory_get_data_handle(m, (void **)&p), "dnnl_memory_get_data_handle");
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
	}
	return m;
}

#endif
