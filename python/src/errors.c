/* cubec.Error and its subclasses, one per cubec code, generated from the CUBEC_CODES X-macro of
 * cubec.h so that they cannot drift from the C list; pyc_raise turns a cubec_status into the
 * exception of its code with cubec's whole message (the root cause and the chain). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pycubec.h"

/* CUBEC_OUT_OF_MEMORY -> "OutOfMemory". */
static void class_name(const char *code_name, char *out, size_t cap)
{
    const char *p = code_name + strlen("CUBEC_");
    size_t n = 0;
    int upper = 1;
    for (; *p && n + 1 < cap; p++) {
        if (*p == '_') {
            upper = 1;
            continue;
        }
        out[n++] = (char)(upper ? toupper((unsigned char)*p) : tolower((unsigned char)*p));
        upper = 0;
    }
    out[n] = '\0';
}

/* A second base for the codes whose meaning Python already has a class for, so that
 * `except MemoryError` and the like catch them too. */
static PyObject *builtin_base(cubec_code code)
{
    switch (code) {
    case CUBEC_INVALID_ARGUMENT: return PyExc_ValueError;
    case CUBEC_OUT_OF_MEMORY: return PyExc_MemoryError;
    case CUBEC_TIMEOUT: return PyExc_TimeoutError;
    case CUBEC_UNSUPPORTED: return PyExc_NotImplementedError;
    default: return NULL;
    }
}

static int add_class(PyObject *module, cubec_code code, const char *code_name,
                     const char *description)
{
    char name[64], qualified[80];
    class_name(code_name, name, sizeof name);
    snprintf(qualified, sizeof qualified, "cubec.%s", name);
    PyObject *extra = builtin_base(code);
    PyObject *bases = extra ? PyTuple_Pack(2, pyc.error, extra) : PyTuple_Pack(1, pyc.error);
    PyObject *dict = Py_BuildValue("{s:i,s:s,s:s}", "code", (int)code, "code_name", code_name,
                                   "__doc__", description);
    PyObject *cls = bases && dict ? PyErr_NewException(qualified, bases, dict) : NULL;
    Py_XDECREF(bases);
    Py_XDECREF(dict);
    if (!cls) {
        return -1;
    }
    pyc.code_error[code] = cls;
    Py_INCREF(cls);
    return PyModule_AddObject(module, name, cls) < 0 ? (Py_DECREF(cls), -1) : 0;
}

int pyc_register_errors(PyObject *module)
{
    PyObject *dict = Py_BuildValue("{s:s}", "__doc__",
                                   "A failure cubec reported; `code` and `code_name` say which.");
    if (!dict) {
        return -1;
    }
    pyc.error = PyErr_NewException("cubec.Error", NULL, dict);
    Py_DECREF(dict);
    if (!pyc.error) {
        return -1;
    }
    Py_INCREF(pyc.error);
    if (PyModule_AddObject(module, "Error", pyc.error) < 0) {
        Py_DECREF(pyc.error);
        return -1;
    }
#define PYC_ADD_CODE_(name, value, description)                                                    \
    if ((value) != CUBEC_OK && add_class(module, name, #name, description) < 0) {                  \
        return -1;                                                                                 \
    }
    CUBEC_CODES(PYC_ADD_CODE_)
#undef PYC_ADD_CODE_
    return 0;
}

static PyObject *class_of(cubec_code code)
{
    if ((int)code > 0 && (size_t)code < sizeof pyc.code_error / sizeof pyc.code_error[0] &&
        pyc.code_error[code]) {
        return pyc.code_error[code];
    }
    return pyc.error;
}

PyObject *pyc_raise(cubec_status status)
{
    cubec_code code = cubec_status_code(status);
    PyErr_SetString(class_of(code), cubec_status_message(status));
    cubec_status_free(status);
    return NULL;
}

PyObject *pyc_raise_code(cubec_code code, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    PyObject *message = PyUnicode_FromFormatV(format, ap);
    va_end(ap);
    if (message) {
        PyErr_SetObject(class_of(code), message);
        Py_DECREF(message);
    }
    return NULL;
}
