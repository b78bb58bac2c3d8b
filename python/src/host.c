/* Registered host memory for numpy: cubec.host_empty(shape, dtype) and Device.host_empty return
 * a numpy array in cubec_host_alloc memory (transfers to and from it skip the staging copy).
 * The array's base is a HostMemory object that exposes the bytes through the buffer protocol
 * and frees them (cubec_host_free, after the transfers using them) when the array dies; it holds
 * the device open meanwhile (pyc_device.holds). */
#include "pycubec.h"

typedef struct pyc_host_memory {
    PyObject ob_base;
    pyc_device *device;
    void *ptr;
    uint64_t size;
} pyc_host_memory;

static int host_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    pyc_host_memory *h = (pyc_host_memory *)self;
    return PyBuffer_FillInfo(view, self, h->ptr, (Py_ssize_t)h->size, 0, flags);
}

static void host_releasebuffer(PyObject *self, Py_buffer *view)
{
    (void)self;
    (void)view;
}

static void host_dealloc(PyObject *self)
{
    pyc_host_memory *h = (pyc_host_memory *)self;
    PyTypeObject *tp = Py_TYPE(self);
    if (h->ptr && h->device->dev) {
        cubec_device *dev = h->device->dev;
        cubec_status st;
        PYC_WITHOUT_GIL(st = cubec_host_free(dev, h->ptr));
        cubec_status_free(st);
    }
    if (h->ptr) {
        pyc_device_drop_hold(h->device);
    }
    Py_DECREF((PyObject *)h->device);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *host_get_nbytes(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong(((pyc_host_memory *)self)->size);
}

static PyGetSetDef host_getset[] = {
    {"nbytes", host_get_nbytes, NULL, "Its size in bytes.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot host_slots[] = {
    {Py_tp_dealloc, host_dealloc},
    {Py_bf_getbuffer, host_getbuffer},
    {Py_bf_releasebuffer, host_releasebuffer},
    {Py_tp_getset, host_getset},
    {Py_tp_doc, "Pinned host memory of a device (the base of a host_empty array)."},
    {0, NULL},
};

static PyType_Spec host_spec = {"cubec.HostMemory", sizeof(pyc_host_memory), 0,
                                Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, host_slots};

/* An array of `shape` and `dtype` over new pinned memory of `d`. */
static PyObject *host_empty_on(pyc_device *d, PyObject *shape_arg, PyObject *dtype_arg)
{
    cubec_device *dev = pyc_device_handle(d, "host_empty");
    if (!dev) {
        return NULL;
    }
    PyObject *dtype = pyc_dtype(dtype_arg);
    uint64_t count = 0;
    PyObject *shape = dtype ? pyc_shape(shape_arg, "host_empty", &count) : NULL;
    Py_ssize_t itemsize = shape ? pyc_itemsize(dtype) : -1;
    PyObject *result = NULL;
    if (itemsize < 0) {
        goto done;
    }
    if (itemsize && count > UINT64_MAX / (uint64_t)itemsize) {
        PyErr_Format(PyExc_OverflowError, "host_empty: shape %R overflows 64 bits", shape);
        goto done;
    }
    uint64_t size = count * (uint64_t)itemsize;
    pyc_host_memory *h = PyObject_New(pyc_host_memory, pyc.host_memory_type);
    if (!h) {
        goto done;
    }
    Py_INCREF((PyObject *)d);
    h->device = d;
    h->size = size;
    h->ptr = NULL;
    void *ptr = NULL;
    cubec_status st;
    /* A zero-size array still gets a page of its own: numpy needs an address. */
    PYC_WITHOUT_GIL_ON(d, st = cubec_host_alloc(dev, size ? size : 1, &ptr));
    if (pyc_check(st) < 0) {
        Py_DECREF((PyObject *)h);
        goto done;
    }
    h->ptr = ptr;
    pyc_device_take_hold(d);
    PyObject *np = pyc_numpy();
    PyObject *flat = np ? PyObject_CallMethod(np, "frombuffer", "OOK", (PyObject *)h, dtype,
                                              (unsigned long long)count)
                        : NULL;
    Py_DECREF((PyObject *)h);
    if (flat) {
        result = PyObject_CallMethod(flat, "reshape", "O", shape);
        Py_DECREF(flat);
    }
done:
    Py_XDECREF(dtype);
    Py_XDECREF(shape);
    return result;
}

static const char *const names[] = {"shape", "dtype", "device", NULL};

/* cubec.host_empty(shape, dtype=float32, device=None): on `device`, or the first device opened
 * that is still open. */
static PyObject *module_host_empty(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames)
{
    (void)self;
    PyObject *kw[3];
    if (pyc_args("host_empty", args, nargs, kwnames, names, 2, 1, kw) < 0) {
        return NULL;
    }
    pyc_device *d = pyc.default_device;
    if (kw[2] && kw[2] != Py_None) {
        if (Py_TYPE(kw[2]) != pyc.device_type) {
            return PyErr_Format(PyExc_TypeError,
                                "host_empty: device must be a cubec.Device, not %R", kw[2]);
        }
        d = (pyc_device *)kw[2];
    }
    if (!d) {
        return pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                              "host_empty: no device is open; open one or pass device=");
    }
    return host_empty_on(d, kw[0], kw[1]);
}

/* dev.host_empty(shape, dtype=float32). */
static PyObject *device_host_empty(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames)
{
    PyObject *kw[3];
    if (pyc_args("Device.host_empty", args, nargs, kwnames, names, 2, 1, kw) < 0) {
        return NULL;
    }
    if (kw[2]) {
        return PyErr_Format(PyExc_TypeError, "Device.host_empty() takes no device=");
    }
    return host_empty_on((pyc_device *)self, kw[0], kw[1]);
}

static PyMethodDef module_functions[] = {
    {"host_empty", (PyCFunction)(void (*)(void))module_host_empty, METH_FASTCALL | METH_KEYWORDS,
     "host_empty(shape, dtype=float32, device=None): a numpy array in pinned, registered host "
     "memory (the fast transfer path)."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef device_methods[] = {
    {"host_empty", (PyCFunction)(void (*)(void))device_host_empty, METH_FASTCALL | METH_KEYWORDS,
     "host_empty(shape, dtype=float32): a numpy array in this device's pinned host memory."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_host(PyObject *module)
{
    pyc.host_memory_type = (PyTypeObject *)PyType_FromSpec(&host_spec);
    if (!pyc.host_memory_type) {
        return -1;
    }
    Py_INCREF((PyObject *)pyc.host_memory_type);
    if (PyModule_AddObject(module, "HostMemory", (PyObject *)pyc.host_memory_type) < 0) {
        Py_DECREF((PyObject *)pyc.host_memory_type);
        return -1;
    }
    if (PyModule_AddFunctions(module, module_functions) < 0) {
        return -1;
    }
    return pyc_type_add(PYC_DEVICE, device_methods, NULL);
}
