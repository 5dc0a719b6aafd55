/*
 * py-late.c - an interpreter executable named python3.X whose libpython is not mapped
 * for its first 200 ms of CPU: it spins, then loads the libpython named by PY_LATE_LIB
 * and runs Py_BytesMain(argc, argv) in it.  A recorder that reads the process during the
 * spin sees a python3.X without the interpreter's symbols (t8004: the Python frames
 * must come once the library is in).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *lib = getenv("PY_LATE_LIB");
	volatile unsigned long x = 0;
	double t0 = cpu_s();
	int (*py_main)(int, char **);
	void *h;

	while (cpu_s() - t0 < 0.2)
		x++;
	if (!lib || !(h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL))) {
		fprintf(stderr, "py-late: cannot load PY_LATE_LIB: %s\n", lib ? dlerror() : "unset");
		return 2;
	}
	py_main = (int (*)(int, char **))dlsym(h, "Py_BytesMain");
	if (!py_main) {
		fprintf(stderr, "py-late: no Py_BytesMain in %s\n", lib);
		return 2;
	}
	return py_main(argc, argv);
}
