/* placeholder: host */
#include "pycubec.h"

int pyc_register_host(PyObject *module)
{
    (void)module;
    return 0;
}
