/* cubec.Stream (dev.stream()): an explicit stream of one device, with its sync and flush. */
#include "pycubec.h"

static PyObject *device_stream(PyObject *self, PyObject *unused)
{
    (void)unused;
    pyc_device *d = (pyc_device *)self;
    cubec_device *dev = pyc_device_handle(d, "Device.stream");
    cubec_stream id;
    if (!dev || pyc_check(cubec_stream_new(dev, &id)) < 0) {
        return NULL;
    }
    pyc_stream *s = PyObject_New(pyc_stream, pyc.stream_type);
    if (!s) {
        return NULL;
    }
    Py_INCREF((PyObject *)self);
    s->device = d;
    s->id = id;
    return (PyObject *)s;
}

static void stream_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_DECREF(((pyc_stream *)self)->device);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *stream_sync(PyObject *self, PyObject *unused)
{
    (void)unused;
    pyc_stream *s = (pyc_stream *)self;
    cubec_device *dev = pyc_device_handle(s->device, "Stream.sync");
    if (!dev) {
        return NULL;
    }
    cubec_status st;
    PYC_WITHOUT_GIL_ON(s->device, st = cubec_sync(dev, s->id));
    if (pyc_check(st) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *stream_flush(PyObject *self, PyObject *unused)
{
    (void)unused;
    pyc_stream *s = (pyc_stream *)self;
    cubec_device *dev = pyc_device_handle(s->device, "Stream.flush");
    if (!dev || pyc_check(cubec_flush(dev, s->id)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *stream_get_id(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLongLong(((pyc_stream *)self)->id);
}

static PyObject *stream_get_device(PyObject *self, void *closure)
{
    (void)closure;
    PyObject *d = (PyObject *)((pyc_stream *)self)->device;
    Py_INCREF((PyObject *)d);
    return d;
}

static PyObject *stream_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<cubec.Stream %llu>",
                                (unsigned long long)((pyc_stream *)self)->id);
}

static PyMethodDef stream_methods[] = {
    {"sync", stream_sync, METH_NOARGS, "Submits the stream's work and waits for it."},
    {"flush", stream_flush, METH_NOARGS, "Submits the stream's work without waiting."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef stream_getset[] = {
    {"id", stream_get_id, NULL, "The cubec_stream id.", NULL},
    {"device", stream_get_device, NULL, "The stream's device.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot stream_slots[] = {
    {Py_tp_dealloc, stream_dealloc},
    {Py_tp_repr, stream_repr},
    {Py_tp_methods, stream_methods},
    {Py_tp_getset, stream_getset},
    {Py_tp_doc, "A stream of a device (Device.stream()): pass it as stream= to order work."},
    {0, NULL},
};

static PyType_Spec stream_spec = {"cubec.Stream", sizeof(pyc_stream), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                  stream_slots};

static PyMethodDef device_methods[] = {
    {"stream", device_stream, METH_NOARGS, "stream(): a new stream of the device."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_stream(PyObject *module)
{
    (void)module;
    pyc_type_define(PYC_STREAM, &stream_spec, &pyc.stream_type);
    return pyc_type_add(PYC_DEVICE, device_methods, NULL);
}
