/* The core types' assembly: each type's own file defines its spec, other files add methods and
 * properties to it (so that a new feature lives in its own file), and pyc_types_make creates
 * the types from the merged tables once every part of parts.h has registered. */
#include <string.h>

#include "pycubec.h"

#define PYC_MAX_METHODS 96
#define PYC_MAX_GETSET 48
#define PYC_MAX_SLOTS 32

typedef struct type_entry {
    PyType_Spec *spec;
    PyTypeObject **out;
    PyMethodDef methods[PYC_MAX_METHODS + 1];
    size_t method_count;
    PyGetSetDef getset[PYC_MAX_GETSET + 1];
    size_t getset_count;
    PyType_Slot slots[PYC_MAX_SLOTS + 1];
} type_entry;

static type_entry types[PYC_TYPE_COUNT];

static int append(type_entry *t, PyMethodDef *methods, PyGetSetDef *getset)
{
    for (; methods && methods->ml_name; methods++) {
        if (t->method_count == PYC_MAX_METHODS) {
            PyErr_SetString(PyExc_RuntimeError, "cubec: too many methods on one type");
            return -1;
        }
        t->methods[t->method_count++] = *methods;
    }
    for (; getset && getset->name; getset++) {
        if (t->getset_count == PYC_MAX_GETSET) {
            PyErr_SetString(PyExc_RuntimeError, "cubec: too many properties on one type");
            return -1;
        }
        t->getset[t->getset_count++] = *getset;
    }
    return 0;
}

void pyc_type_define(pyc_type_id id, PyType_Spec *spec, PyTypeObject **out)
{
    types[id].spec = spec;
    types[id].out = out;
}

int pyc_type_add(pyc_type_id id, PyMethodDef *methods, PyGetSetDef *getset)
{
    return append(&types[id], methods, getset);
}

int pyc_types_make(PyObject *module)
{
    for (int id = 0; id < PYC_TYPE_COUNT; id++) {
        type_entry *t = &types[id];
        if (!t->spec) {
            continue;
        }
        size_t n = 0;
        for (PyType_Slot *s = t->spec->slots; s->slot; s++) {
            if (s->slot == Py_tp_methods) {
                if (append(t, s->pfunc, NULL) < 0) {
                    return -1;
                }
            } else if (s->slot == Py_tp_getset) {
                if (append(t, NULL, s->pfunc) < 0) {
                    return -1;
                }
            } else if (n < PYC_MAX_SLOTS - 2) {
                t->slots[n++] = *s;
            }
        }
        memset(&t->methods[t->method_count], 0, sizeof t->methods[0]);
        memset(&t->getset[t->getset_count], 0, sizeof t->getset[0]);
        t->slots[n++] = (PyType_Slot){Py_tp_methods, t->methods};
        t->slots[n++] = (PyType_Slot){Py_tp_getset, t->getset};
        t->slots[n] = (PyType_Slot){0, NULL};
        PyType_Spec spec = *t->spec;
        spec.slots = t->slots;
        PyObject *type = PyType_FromSpec(&spec);
        if (!type) {
            return -1;
        }
        *t->out = (PyTypeObject *)type;
        const char *dot = strrchr(spec.name, '.');
        Py_INCREF(type);
        if (PyModule_AddObject(module, dot ? dot + 1 : spec.name, type) < 0) {
            Py_DECREF(type);
            return -1;
        }
    }
    return 0;
}
