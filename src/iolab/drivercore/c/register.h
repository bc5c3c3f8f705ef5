/* Each driver of the core adds its Python types to the module from its own file. */
#ifndef IOLAB_REGISTER_H
#define IOLAB_REGISTER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

int populate_register(PyObject *module); /* populate.c: populate's client mode */
int tpcc_register(PyObject *module);     /* tpcc.c: TPC-C's server mode */

#endif
