/* Zero-copy host views of buffers (cubec_buffer_map): the cubec.Mapping object that a view's
 * numpy array, a DLPack capsule and memoryview(buf) rest on. A Mapping holds the buffer object
 * (so the buffer and its device outlive every view), the map's guard (so the bytes stay in
 * place) and a hold on the device (pyc_device.holds: Device.close() while a view lives is
 * deferred until the last one goes, so a view never points at freed memory). It exposes the
 * bytes through the buffer protocol, writable; its collection releases the guard (the unmap)
 * and the hold. Besides, the Buffer type's buffer protocol (memoryview(buf), numpy.asarray(buf)),
 * which hands out numpy's export of such a view. */
#include "pycubec.h"

typedef struct pyc_mapping {
    PyObject ob_base;
    pyc_buffer *buffer;
    cubec_guard guard;
    void *ptr;
    uint64_t size;
} pyc_mapping;

static PyTypeObject *mapping_type;

static int mapping_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    pyc_mapping *m = (pyc_mapping *)self;
    /* numpy needs an address even for no bytes. */
    static char empty;
    return PyBuffer_FillInfo(view, self, m->ptr ? m->ptr : &empty, (Py_ssize_t)m->size, 0, flags);
}

static void mapping_releasebuffer(PyObject *self, Py_buffer *view)
{
    (void)self;
    (void)view;
}

static void mapping_dealloc(PyObject *self)
{
    pyc_mapping *m = (pyc_mapping *)self;
    PyTypeObject *tp = Py_TYPE(self);
    pyc_device *d = m->buffer->device;
    if (m->guard.id && d->dev) {
        cubec_status_free(cubec_guard_release(d->dev, m->guard));
    }
    if (m->guard.id) {
        pyc_device_drop_hold(d); /* may close a device whose close() waited for this view */
    }
    Py_DECREF((PyObject *)m->buffer);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *mapping_get_nbytes(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong(((pyc_mapping *)self)->size);
}

static PyObject *mapping_get_buffer(PyObject *self, void *c)
{
    (void)c;
    PyObject *b = (PyObject *)((pyc_mapping *)self)->buffer;
    Py_INCREF(b);
    return b;
}

static PyGetSetDef mapping_getset[] = {
    {"nbytes", mapping_get_nbytes, NULL, "Its size in bytes.", NULL},
    {"buffer", mapping_get_buffer, NULL, "The cubec.Buffer it maps.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot mapping_slots[] = {
    {Py_tp_dealloc, mapping_dealloc},
    {Py_bf_getbuffer, mapping_getbuffer},
    {Py_bf_releasebuffer, mapping_releasebuffer},
    {Py_tp_getset, mapping_getset},
    {Py_tp_doc, "A buffer's bytes mapped for the host (the base of a zero-copy Buffer.numpy() "
                "view); unmapped when collected."},
    {0, NULL},
};

static PyType_Spec mapping_spec = {"cubec.Mapping", sizeof(pyc_mapping), 0,
                                   Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                   mapping_slots};

PyObject *pyc_buffer_mapping(pyc_buffer *b, cubec_stream stream, int *out_unsupported)
{
    *out_unsupported = 0;
    cubec_device *dev = b->device->dev;
    void *ptr = NULL;
    cubec_guard guard = {0};
    cubec_status st;
    /* The map waits for the buffer's queued work. */
    PYC_WITHOUT_GIL_ON(b->device, st = cubec_buffer_map(dev, stream, b->buf, &ptr, &guard));
    if (st && cubec_status_code(st) == CUBEC_UNSUPPORTED) {
        *out_unsupported = 1;
        cubec_status_free(st);
        return NULL;
    }
    if (pyc_check(st) < 0) {
        return NULL;
    }
    pyc_mapping *m = PyObject_New(pyc_mapping, mapping_type);
    if (!m) {
        cubec_status_free(cubec_guard_release(dev, guard));
        return NULL;
    }
    Py_INCREF((PyObject *)b);
    m->buffer = b;
    m->guard = guard;
    m->ptr = ptr;
    m->size = b->size;
    pyc_device_take_hold(b->device);
    return (PyObject *)m;
}

PyObject *pyc_buffer_view_array(pyc_buffer *b, cubec_stream stream, int *out_unsupported)
{
    PyObject *m = pyc_buffer_mapping(b, stream, out_unsupported);
    if (!m) {
        return NULL;
    }
    PyObject *np = pyc_numpy();
    Py_ssize_t itemsize = pyc_itemsize(b->dtype);
    PyObject *flat = NULL;
    if (np && itemsize > 0) {
        flat = PyObject_CallMethod(np, "frombuffer", "OOK", m, b->dtype,
                                   (unsigned long long)(b->size / (uint64_t)itemsize));
    }
    Py_DECREF(m);
    if (!flat) {
        return NULL;
    }
    PyObject *arr = PyObject_CallMethod(flat, "reshape", "O", b->shape);
    Py_DECREF(flat);
    return arr;
}

int pyc_buffer_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    pyc_buffer *b = (pyc_buffer *)self;
    if (!pyc_device_handle(b->device, "Buffer (buffer protocol)")) {
        return -1;
    }
    if (!b->buf.id) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT, "Buffer (buffer protocol): the buffer was released");
        return -1;
    }
    int unsupported = 0;
    PyObject *arr = pyc_buffer_view_array(b, CUBEC_STREAM_CURRENT, &unsupported);
    if (!arr) {
        if (unsupported) {
            PyErr_SetString(PyExc_BufferError,
                            "Buffer: its memory is not host-visible on this device, so it has no "
                            "buffer protocol (a copy would not be the buffer); use buf.numpy()");
        }
        return -1;
    }
    /* numpy's export of the view: the format, shape and strides of the buffer's dtype and
     * shape; the array (and through it the Mapping) lives as long as the export. */
    int r = PyObject_GetBuffer(arr, view, flags);
    Py_DECREF(arr);
    return r;
}

int pyc_register_mapping(PyObject *module)
{
    mapping_type = (PyTypeObject *)PyType_FromSpec(&mapping_spec);
    if (!mapping_type) {
        return -1;
    }
    Py_INCREF((PyObject *)mapping_type);
    if (PyModule_AddObject(module, "Mapping", (PyObject *)mapping_type) < 0) {
        Py_DECREF((PyObject *)mapping_type);
        return -1;
    }
    return 0;
}
