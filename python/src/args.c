/* Argument helpers shared by the types: keyword parsing for METH_FASTCALL calls, shapes and
 * dtypes (numpy, imported on first use so that `import cubec` does not pay for it), streams,
 * the closed-device check, and tp_call for the vectorcall types. */
#include <string.h>

#include "pycubec.h"

int pyc_kwargs(const char *who, PyObject *kwnames, PyObject *const *kwvalues,
               const char *const *names, PyObject **out)
{
    size_t count = 0;
    while (names[count]) {
        out[count++] = NULL;
    }
    if (!kwnames) {
        return 0;
    }
    Py_ssize_t n = PyTuple_Size(kwnames);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = PyTuple_GetItem(kwnames, i);
        size_t j = 0;
        for (; j < count; j++) {
            if (PyUnicode_CompareWithASCIIString(key, names[j]) == 0) {
                break;
            }
        }
        if (j == count) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", who, key);
            return -1;
        }
        if (out[j]) {
            PyErr_Format(PyExc_TypeError, "%s() got keyword argument '%s' twice", who, names[j]);
            return -1;
        }
        out[j] = kwvalues[i];
    }
    return 0;
}

int pyc_args(const char *who, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
             const char *const *names, Py_ssize_t max_positional, Py_ssize_t required,
             PyObject **out)
{
    if (nargs > max_positional) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %zd positional argument%s", who,
                     max_positional, max_positional == 1 ? "" : "s");
        return -1;
    }
    if (pyc_kwargs(who, kwnames, args + nargs, names, out) < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() got '%s' twice", who, names[i]);
            return -1;
        }
        out[i] = args[i];
    }
    for (Py_ssize_t i = 0; i < required; i++) {
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() needs a %s", who, names[i]);
            return -1;
        }
    }
    return 0;
}

PyObject *pyc_numpy(void)
{
    if (!pyc.numpy) {
        pyc.numpy = PyImport_ImportModule("numpy");
    }
    return pyc.numpy;
}

/* Refuses dtypes that hold Python objects: their bytes are pointers into this process. */
static PyObject *plain(PyObject *dtype)
{
    PyObject *has = dtype ? PyObject_GetAttrString(dtype, "hasobject") : NULL;
    int refused = has ? PyObject_IsTrue(has) : -1;
    Py_XDECREF(has);
    if (refused) {
        if (refused > 0) {
            pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                           "dtype %R holds Python objects, which device memory cannot", dtype);
        }
        Py_XDECREF(dtype);
        return NULL;
    }
    return dtype;
}

PyObject *pyc_dtype(PyObject *obj)
{
    PyObject *np = pyc_numpy();
    if (!np) {
        return NULL;
    }
    /* float32 is the default element, as GLSL's float is. */
    if (!obj || obj == Py_None) {
        return PyObject_CallMethod(np, "dtype", "s", "float32");
    }
    return plain(PyObject_CallMethod(np, "dtype", "O", obj));
}

PyObject *pyc_dtype_of(PyObject *array)
{
    return plain(PyObject_GetAttrString(array, "dtype"));
}

Py_ssize_t pyc_itemsize(PyObject *dtype)
{
    PyObject *v = PyObject_GetAttrString(dtype, "itemsize");
    if (!v) {
        return -1;
    }
    Py_ssize_t n = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    return n;
}

PyObject *pyc_shape(PyObject *obj, const char *who, uint64_t *out_count)
{
    PyObject *tuple;
    if (PyLong_Check(obj)) {
        tuple = PyTuple_Pack(1, obj);
    } else {
        tuple = PySequence_Tuple(obj);
        if (!tuple) {
            PyErr_Clear();
            return PyErr_Format(PyExc_TypeError,
                                "%s: shape must be an int or a sequence of ints, not %R", who, obj);
        }
    }
    if (!tuple) {
        return NULL;
    }
    uint64_t count = 1;
    Py_ssize_t n = PyTuple_Size(tuple);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GetItem(tuple, i);
        long long v = PyLong_Check(item) ? PyLong_AsLongLong(item) : -1;
        if (v < 0) {
            PyErr_Clear();
            Py_DECREF(tuple);
            return PyErr_Format(PyExc_ValueError,
                                "%s: shape must hold ints >= 0, got %R at index %zd", who, item, i);
        }
        if (v != 0 && count > UINT64_MAX / (uint64_t)v) {
            Py_DECREF(tuple);
            return PyErr_Format(PyExc_OverflowError, "%s: shape %R overflows 64 bits", who, obj);
        }
        count *= (uint64_t)v;
    }
    *out_count = count;
    return tuple;
}

cubec_device *pyc_device_handle(pyc_device *device, const char *who)
{
    if (!device->dev || device->close_pending) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT, "%s: the device is closed", who);
        return NULL;
    }
    return device->dev;
}

int pyc_stream_arg(pyc_device *device, PyObject *obj, const char *who, cubec_stream *out)
{
    if (!obj || obj == Py_None) {
        *out = CUBEC_STREAM_CURRENT;
        return 0;
    }
    if (Py_TYPE(obj) != pyc.stream_type) {
        PyErr_Format(PyExc_TypeError, "%s: stream must be a cubec.Stream or None, not %R", who,
                     obj);
        return -1;
    }
    pyc_stream *s = (pyc_stream *)obj;
    if (s->device != device) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT, "%s: stream %llu belongs to another device", who,
                       (unsigned long long)s->id);
        return -1;
    }
    *out = s->id;
    return 0;
}

PyObject *pyc_call_via_vectorcall(PyObject *self, PyObject *args, PyObject *kwargs)
{
    pyc_vectorcallfunc fn = *(pyc_vectorcallfunc *)((char *)self + sizeof(PyObject));
    Py_ssize_t nargs = PyTuple_Size(args);
    Py_ssize_t nkw = kwargs ? PyDict_Size(kwargs) : 0;
    PyObject *stack[64];
    if (nargs + nkw > 64) {
        return PyErr_Format(PyExc_TypeError, "too many arguments (%zd)", nargs + nkw);
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        stack[i] = PyTuple_GetItem(args, i);
    }
    PyObject *kwnames = NULL;
    if (nkw) {
        kwnames = PyTuple_New(nkw);
        if (!kwnames) {
            return NULL;
        }
        Py_ssize_t pos = 0, i = 0;
        PyObject *key, *value;
        while (PyDict_Next(kwargs, &pos, &key, &value)) {
            Py_INCREF(key);
            PyTuple_SetItem(kwnames, i, key);
            stack[nargs + i++] = value;
        }
    }
    PyObject *result = fn(self, stack, (size_t)nargs, kwnames);
    Py_XDECREF(kwnames);
    return result;
}
