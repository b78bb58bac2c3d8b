/* The module cubec._cubec: its definition, PyInit__cubec (which runs every part's registration
 * in the order of parts.h) and the shutdown that cubec/__init__.py registers with atexit. */
#include "pycubec.h"

pyc_state pyc;

/* Closes the devices still open, newest first, before the interpreter tears down the objects
 * that point at them: their buffers' and kernels' releases are then skipped, and no Vulkan
 * object outlives the loader. A device whose host_empty memory numpy arrays still reference is
 * left open: the process is ending, and freeing that memory could crash a later finalizer. */
static PyObject *shutdown(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    while (pyc.open_devices) {
        pyc_device *d = pyc.open_devices;
        pyc.open_devices = d->next_open;
        d->next_open = NULL;
        if (d->dev && d->holds == 0) {
            cubec_device *dev = d->dev;
            d->dev = NULL;
            PYC_WITHOUT_GIL(cubec_device_close(dev));
        }
    }
    pyc.default_device = NULL;
    Py_RETURN_NONE;
}

/* The device calls default to when none is named: the first opened that is still open. */
static PyObject *default_device(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (!pyc.default_device) {
        return pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                              "no device is open; open one or pass device=");
    }
    Py_INCREF((PyObject *)pyc.default_device);
    return (PyObject *)pyc.default_device;
}

static PyMethodDef module_methods[] = {
    {"_default_device", default_device, METH_NOARGS, "The first device opened still open."},
    {"_shutdown", shutdown, METH_NOARGS, "Closes every open device (run at interpreter exit)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_cubec",
    "cubec's C extension (see the cubec package).",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__cubec(void);
PyMODINIT_FUNC PyInit__cubec(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m) {
        return NULL;
    }
    pyc.module = m;
    pyc.str_groups = PyUnicode_InternFromString("groups");
    pyc.str_info = PyUnicode_InternFromString("info");
    pyc.str_stream = PyUnicode_InternFromString("stream");
    if (!pyc.str_groups || !pyc.str_info || !pyc.str_stream) {
        Py_DECREF(m);
        return NULL;
    }
#define PYC_PART(name)                                                                             \
    if (pyc_register_##name(m) < 0) {                                                              \
        Py_DECREF(m);                                                                              \
        return NULL;                                                                               \
    }
#include "parts.h"
#undef PYC_PART
    if (pyc_types_make(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "VERSION_MAJOR", CUBEC_VERSION_MAJOR) < 0 ||
        PyModule_AddIntConstant(m, "VERSION_MINOR", CUBEC_VERSION_MINOR) < 0 ||
        PyModule_AddIntConstant(m, "VERSION_PATCH", CUBEC_VERSION_PATCH) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
