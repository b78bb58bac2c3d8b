/* placeholder: dlpack */
#include "pycubec.h"

int pyc_register_dlpack(PyObject *module)
{
    (void)module;
    return 0;
}
