/* gil_on.c - an extension module that does not declare that it runs without the GIL: a
 * free-threaded CPython turns its GIL on as it imports it (tests/workloads/gil_late.py,
 * built by tests/t8008 against that interpreter's headers). */
#include <Python.h>

static struct PyModuleDef gil_on_module = { PyModuleDef_HEAD_INIT, "gil_on", NULL, -1, NULL };

PyMODINIT_FUNC PyInit_gil_on(void);
PyMODINIT_FUNC PyInit_gil_on(void)
{
	return PyModule_Create(&gil_on_module);
}
