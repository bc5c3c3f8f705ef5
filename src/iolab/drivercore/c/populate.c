/* Populate's client mode (issue 44): not yet in the core. */
#include "register.h"

int populate_register(PyObject *module) { return 0; }
