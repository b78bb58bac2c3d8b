/* placeholder: bench */
#include "pycubec.h"

int pyc_register_bench(PyObject *module)
{
    (void)module;
    return 0;
}
