/* TPC-C's server mode (issue 44): not yet in the core. */
#include "register.h"

int tpcc_register(PyObject *module) { return 0; }
