/* placeholder: future */
#include "pycubec.h"

int pyc_register_future(PyObject *module)
{
    (void)module;
    return 0;
}
