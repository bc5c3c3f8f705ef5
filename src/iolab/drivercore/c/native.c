/* iolab.drivercore._native: the compiled driver core's module (docs/architecture.md).
 *
 * This file holds the module's own functions; each driver registers its type from its file.
 * Rule for every file here: a thread that runs without the GIL touches no Python object; all
 * conversion between Python and C happens under the GIL, before a run starts or after its
 * workers have handed their results over. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <libpq-fe.h>
#include <mysql.h>

#include "hdr.h"
#include "register.h"

static PyObject *native_bucket(PyObject *self, PyObject *arg) {
    long long us = PyLong_AsLongLong(arg);
    if (us == -1 && PyErr_Occurred()) return NULL;
    return PyLong_FromLong(hdr_bucket(us));
}

static PyObject *native_libraries(PyObject *self, PyObject *unused) {
    /* the client libraries the core was linked with and runs on */
    return Py_BuildValue("{s:i,s:s}", "libpq", PQlibVersion(), "libmariadb",
                         mysql_get_client_info());
}

static PyMethodDef native_methods[] = {
    {"bucket", native_bucket, METH_O, "HdrHistogram's bucket index of a value in us."},
    {"libraries", native_libraries, METH_NOARGS, "The client libraries' versions."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "iolab.drivercore._native",
    .m_doc = "iolab's compiled driver core: the hot loops of populate and TPC-C.",
    .m_size = -1,
    .m_methods = native_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&native_module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "HDR_BUCKETS", HDR_BUCKETS) < 0 || populate_register(m) < 0 ||
        tpcc_register(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
