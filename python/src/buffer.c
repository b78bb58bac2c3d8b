/* cubec.Buffer: a cubec_buffer with a numpy dtype and shape. Its constructors on the device
 * (empty, zeros, buffer), its transfers (numpy, read, write: the GIL is released for the
 * blocking and the large ones; numpy's zero-copy views come from mapping.c), copy and fill, and
 * its release on collection. */
#include <string.h>

#include "pycubec.h"

/* Host copies of at least this many bytes release the GIL (below it the switch costs more than
 * the copy). */
#define PYC_LARGE_COPY ((size_t)64 * 1024)
/* Page-aligned arrays of at least this many bytes are registered for an upload on devices with
 * separate memory (cubec_host_register: the GPU reads them without a staging copy). */
#define PYC_REGISTER_MIN ((uint64_t)1 << 20)

PyObject *pyc_buffer_wrap(pyc_device *device, cubec_buffer buf, uint64_t size, PyObject *dtype,
                          PyObject *shape)
{
    pyc_buffer *b = PyObject_New(pyc_buffer, pyc.buffer_type);
    if (!b) {
        cubec_status_free(cubec_buffer_release(device->dev, buf));
        return NULL;
    }
    Py_INCREF((PyObject *)device);
    Py_INCREF(dtype);
    Py_INCREF(shape);
    b->device = device;
    b->buf = buf;
    b->size = size;
    b->dtype = dtype;
    b->shape = shape;
    b->exportable = 0;
    b->cuda_mapped = 0;
    return (PyObject *)b;
}

static void release_handle(pyc_buffer *b)
{
    cubec_buffer buf = b->buf;
    b->buf.id = 0;
    /* After Device.close() the device freed the buffer itself. */
    if (buf.id && b->device->dev) {
        cubec_status_free(cubec_buffer_release(b->device->dev, buf));
    }
}

static void buffer_dealloc(PyObject *self)
{
    pyc_buffer *b = (pyc_buffer *)self;
    PyTypeObject *tp = Py_TYPE(self);
    pyc_buffer_cuda_unmap(b); /* no capsule uses the mapping any more: each holds the buffer */
    release_handle(b);
    Py_DECREF(b->dtype);
    Py_DECREF(b->shape);
    Py_DECREF((PyObject *)b->device);
    PyObject_Free(self);
    Py_DECREF(tp);
}

/* The buffer's device handle, or NULL with an exception (closed device, released buffer). */
static cubec_device *live(pyc_buffer *b, const char *who)
{
    cubec_device *dev = pyc_device_handle(b->device, who);
    if (dev && !b->buf.id) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT, "%s: the buffer was released", who);
        return NULL;
    }
    return dev;
}

/* Writes host bytes into the buffer (or reads them out of it), registering a large page-aligned
 * range first where that spares a staging copy. */
static cubec_status transfer_host(pyc_device *d, cubec_stream stream, cubec_buffer buf,
                                  uint64_t offset, void *ptr, uint64_t size, int read)
{
    cubec_device *dev = d->dev;
    uint64_t align = d->info.host_register_alignment;
    int registered = 0;
    if (!d->info.unified_memory && size >= PYC_REGISTER_MIN && align &&
        (uintptr_t)ptr % align == 0 && size % align == 0) {
        cubec_status st = cubec_host_register(dev, ptr, size);
        registered = st == NULL;
        /* Already registered (host_empty memory) or not importable: the plain copy is right. */
        cubec_status_free(st);
    }
    cubec_status st = read ? cubec_read(dev, stream, buf, offset, ptr, size)
                           : cubec_write(dev, stream, buf, offset, ptr, size);
    if (registered) {
        cubec_status un = cubec_host_unregister(dev, ptr);
        if (!st) {
            st = un;
        } else {
            cubec_status_free(un);
        }
    }
    return st;
}

static cubec_status write_host(pyc_device *d, cubec_stream stream, cubec_buffer buf,
                               uint64_t offset, void *ptr, uint64_t size)
{
    return transfer_host(d, stream, buf, offset, ptr, size, 0);
}

/* exportable= : a bool, or -1 with TypeError naming `who`. */
static int exportable_arg(PyObject *obj, const char *who)
{
    if (!obj || obj == Py_None || obj == Py_False) {
        return 0;
    }
    if (obj == Py_True) {
        return 1;
    }
    PyErr_Format(PyExc_TypeError, "%s: exportable must be True or False, got %R", who, obj);
    return -1;
}

/* cubec_buffer_create, or cubec_buffer_create_exportable for exportable=True: a page of its own
 * whose memory CUDA can map (cubec_cuda_map, DLPack as kDLCUDA). */
static cubec_status create_buffer(cubec_device *dev, cubec_stream stream, uint64_t size,
                                  int exportable, cubec_buffer *out)
{
    return exportable ? cubec_buffer_create_exportable(dev, stream, size, out)
                      : cubec_buffer_create(dev, stream, size, out);
}

/* Creates a buffer of `shape` and `dtype` on `stream` (new references in *out). */
static PyObject *create(pyc_device *d, PyObject *shape_arg, PyObject *dtype_arg,
                        PyObject *stream_obj, PyObject *exportable_obj, const char *who,
                        cubec_stream *out_stream)
{
    int exportable = exportable_arg(exportable_obj, who);
    if (exportable < 0) {
        return NULL;
    }
    cubec_device *dev = pyc_device_handle(d, who);
    if (!dev || pyc_stream_arg(d, stream_obj, who, out_stream) < 0) {
        return NULL;
    }
    PyObject *dtype = pyc_dtype(dtype_arg);
    if (!dtype) {
        return NULL;
    }
    uint64_t count;
    PyObject *shape = pyc_shape(shape_arg, who, &count);
    Py_ssize_t itemsize = shape ? pyc_itemsize(dtype) : -1;
    PyObject *result = NULL;
    if (itemsize >= 0) {
        if (itemsize && count > UINT64_MAX / (uint64_t)itemsize) {
            PyErr_Format(PyExc_OverflowError, "%s: shape %R of %R overflows 64 bits", who, shape,
                         dtype);
        } else {
            uint64_t size = count * (uint64_t)itemsize;
            cubec_buffer buf;
            if (pyc_check(create_buffer(dev, *out_stream, size, exportable, &buf)) == 0) {
                result = pyc_buffer_wrap(d, buf, size, dtype, shape);
                if (result) {
                    ((pyc_buffer *)result)->exportable = exportable;
                }
            }
        }
    }
    Py_DECREF(dtype);
    Py_XDECREF(shape);
    return result;
}

static const char *const create_names[] = {"shape", "dtype", "stream", "exportable", NULL};

/* dev.empty(shape, dtype=float32, stream=None): contents undefined until written. */
static PyObject *device_empty(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    PyObject *kw[4];
    cubec_stream stream;
    if (pyc_args("Device.empty", args, nargs, kwnames, create_names, 2, 1, kw) < 0) {
        return NULL;
    }
    return create((pyc_device *)self, kw[0], kw[1], kw[2], kw[3], "Device.empty", &stream);
}

/* dev.zeros(shape, dtype=float32, stream=None): filled with zero bytes on the stream. */
static PyObject *device_zeros(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    PyObject *kw[4];
    cubec_stream stream;
    if (pyc_args("Device.zeros", args, nargs, kwnames, create_names, 2, 1, kw) < 0) {
        return NULL;
    }
    pyc_buffer *b = (pyc_buffer *)create((pyc_device *)self, kw[0], kw[1], kw[2], kw[3],
                                         "Device.zeros", &stream);
    if (b && b->size) {
        /* A fill covers multiples of 4 bytes; a tail is written from the host. */
        uint64_t body = b->size & ~(uint64_t)3;
        cubec_status st = body ? cubec_fill(b->device->dev, stream, b->buf, 0, body, 0) : NULL;
        if (!st && body != b->size) {
            static const char zero[4];
            st = cubec_write(b->device->dev, stream, b->buf, body, zero, b->size - body);
        }
        if (pyc_check(st) < 0) {
            Py_DECREF((PyObject *)b);
            return NULL;
        }
    }
    return (PyObject *)b;
}

/* The C-contiguous bytes of an array-like (numpy.ascontiguousarray), new reference. */
static PyObject *contiguous(PyObject *obj)
{
    PyObject *np = pyc_numpy();
    return np ? PyObject_CallMethod(np, "ascontiguousarray", "O", obj) : NULL;
}

/* dev.buffer(array, stream=None): a buffer holding a copy of the array, its dtype and shape. */
static PyObject *device_buffer(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    pyc_device *d = (pyc_device *)self;
    static const char *const names[] = {"stream", "exportable", NULL};
    PyObject *kw[2];
    if (nargs != 1) {
        return PyErr_Format(PyExc_TypeError, "Device.buffer() takes one array");
    }
    int exportable;
    if (pyc_kwargs("Device.buffer", kwnames, args + nargs, names, kw) < 0 ||
        (exportable = exportable_arg(kw[1], "Device.buffer")) < 0) {
        return NULL;
    }
    cubec_stream stream;
    cubec_device *dev = pyc_device_handle(d, "Device.buffer");
    if (!dev || pyc_stream_arg(d, kw[0], "Device.buffer", &stream) < 0) {
        return NULL;
    }
    PyObject *arr = contiguous(args[0]);
    if (!arr) {
        return NULL;
    }
    PyObject *dtype = pyc_dtype_of(arr);
    PyObject *shape = dtype ? PyObject_GetAttrString(arr, "shape") : NULL;
    Py_buffer view;
    PyObject *result = NULL;
    if (shape && PyObject_GetBuffer(arr, &view, PyBUF_C_CONTIGUOUS) == 0) {
        cubec_buffer buf;
        cubec_status st = create_buffer(dev, stream, (uint64_t)view.len, exportable, &buf);
        if (!st && view.len) {
            if ((size_t)view.len >= PYC_LARGE_COPY) {
                PYC_WITHOUT_GIL_ON(
                    d, st = write_host(d, stream, buf, 0, view.buf, (uint64_t)view.len));
            } else {
                st = write_host(d, stream, buf, 0, view.buf, (uint64_t)view.len);
            }
            if (st) {
                cubec_status_free(cubec_buffer_release(dev, buf));
            }
        }
        if (pyc_check(st) == 0) {
            result = pyc_buffer_wrap(d, buf, (uint64_t)view.len, dtype, shape);
            if (result) {
                ((pyc_buffer *)result)->exportable = exportable;
            }
        }
        PyBuffer_Release(&view);
    }
    Py_XDECREF(dtype);
    Py_XDECREF(shape);
    Py_DECREF(arr);
    return result;
}

/* Reads the whole buffer into `out` (a writable C-contiguous array of the buffer's size). */
static int read_into(pyc_buffer *b, cubec_stream stream, PyObject *out, const char *who)
{
    Py_buffer view;
    if (PyObject_GetBuffer(out, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        return -1;
    }
    if ((uint64_t)view.len != b->size) {
        PyBuffer_Release(&view);
        pyc_raise_code(CUBEC_INVALID_ARGUMENT, "%s: out holds %zd bytes, the buffer %llu", who,
                       view.len, (unsigned long long)b->size);
        return -1;
    }
    cubec_status st;
    PYC_WITHOUT_GIL_ON(b->device,
                       st = transfer_host(b->device, stream, b->buf, 0, view.buf, b->size, 1));
    PyBuffer_Release(&view);
    return pyc_check(st);
}

/* A new numpy array of the buffer's shape and dtype (numpy.empty). */
static PyObject *new_array(pyc_buffer *b)
{
    PyObject *np = pyc_numpy();
    return np ? PyObject_CallMethod(np, "empty", "OO", b->shape, b->dtype) : NULL;
}

/* buf.numpy(stream=None, copy=None): the buffer's contents after the stream's work on it. Where
 * its memory is host-visible (cubec_buffer_map) a zero-copy view whose base (a cubec.Mapping)
 * keeps the buffer and its device alive and unmaps when collected; elsewhere a new array.
 * copy=True always copies; copy=False raises BufferError where only a copy is possible. */
static PyObject *buffer_numpy(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    pyc_buffer *b = (pyc_buffer *)self;
    static const char *const names[] = {"stream", "copy", NULL};
    PyObject *kw[2];
    if (nargs) {
        return PyErr_Format(PyExc_TypeError, "Buffer.numpy() takes only stream= and copy=");
    }
    cubec_stream stream;
    cubec_device *dev = live(b, "Buffer.numpy");
    if (!dev || pyc_kwargs("Buffer.numpy", kwnames, args, names, kw) < 0 ||
        pyc_stream_arg(b->device, kw[0], "Buffer.numpy", &stream) < 0) {
        return NULL;
    }
    int copy = -1; /* None: a view where possible */
    if (kw[1] && kw[1] != Py_None) {
        copy = PyObject_IsTrue(kw[1]);
        if (copy < 0) {
            return NULL;
        }
    }
    if (copy != 1) {
        int unsupported = 0;
        PyObject *view = pyc_buffer_view_array(b, stream, &unsupported);
        if (view || !unsupported) {
            return view;
        }
        if (copy == 0) {
            return PyErr_Format(PyExc_BufferError,
                                "Buffer.numpy: copy=False, but the buffer's memory is not "
                                "host-visible on this device: only a copy can be made");
        }
    }
    PyObject *arr = new_array(b);
    if (arr && read_into(b, stream, arr, "Buffer.numpy") < 0) {
        Py_CLEAR(arr);
    }
    return arr;
}

/* buf.read(out=None, stream=None): reads into `out` (returned) or a new array. */
static PyObject *buffer_read(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    pyc_buffer *b = (pyc_buffer *)self;
    static const char *const names[] = {"out", "stream", NULL};
    PyObject *kw[2];
    if (pyc_args("Buffer.read", args, nargs, kwnames, names, 1, 0, kw) < 0) {
        return NULL;
    }
    PyObject *out = kw[0];
    cubec_stream stream;
    cubec_device *dev = live(b, "Buffer.read");
    if (!dev || pyc_stream_arg(b->device, kw[1], "Buffer.read", &stream) < 0) {
        return NULL;
    }
    PyObject *arr = out && out != Py_None ? (Py_INCREF(out), out) : new_array(b);
    if (arr && read_into(b, stream, arr, "Buffer.read") < 0) {
        Py_CLEAR(arr);
    }
    return arr;
}

/* buf.write(array, offset=0, stream=None): writes the array's bytes at a byte offset. */
static PyObject *buffer_write(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    pyc_buffer *b = (pyc_buffer *)self;
    static const char *const names[] = {"offset", "stream", NULL};
    PyObject *kw[2];
    if (nargs != 1) {
        return PyErr_Format(PyExc_TypeError, "Buffer.write() takes one array");
    }
    cubec_stream stream;
    cubec_device *dev = live(b, "Buffer.write");
    if (!dev || pyc_kwargs("Buffer.write", kwnames, args + nargs, names, kw) < 0 ||
        pyc_stream_arg(b->device, kw[1], "Buffer.write", &stream) < 0) {
        return NULL;
    }
    unsigned long long offset = kw[0] ? PyLong_AsUnsignedLongLong(kw[0]) : 0;
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                              "Buffer.write: offset must be an int >= 0, got %R", kw[0]);
    }
    PyObject *arr = contiguous(args[0]);
    Py_buffer view;
    if (!arr || PyObject_GetBuffer(arr, &view, PyBUF_C_CONTIGUOUS) < 0) {
        Py_XDECREF(arr);
        return NULL;
    }
    cubec_status st;
    if ((size_t)view.len >= PYC_LARGE_COPY) {
        PYC_WITHOUT_GIL_ON(b->device, st = write_host(b->device, stream, b->buf, offset, view.buf,
                                                      (uint64_t)view.len));
    } else {
        st = cubec_write(dev, stream, b->buf, offset, view.buf, (uint64_t)view.len);
    }
    PyBuffer_Release(&view);
    Py_DECREF(arr);
    if (pyc_check(st) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* buf.fill(value, stream=None): `value` is converted to the buffer's dtype; its element must be
 * 1, 2 or 4 bytes (repeated into the 32-bit pattern cubec_fill takes) and the size a multiple
 * of 4 bytes. */
static PyObject *buffer_fill(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    pyc_buffer *b = (pyc_buffer *)self;
    static const char *const names[] = {"stream", NULL};
    PyObject *kw[1];
    if (nargs != 1) {
        return PyErr_Format(PyExc_TypeError, "Buffer.fill() takes one value");
    }
    cubec_stream stream;
    cubec_device *dev = live(b, "Buffer.fill");
    if (!dev || pyc_kwargs("Buffer.fill", kwnames, args + nargs, names, kw) < 0 ||
        pyc_stream_arg(b->device, kw[0], "Buffer.fill", &stream) < 0) {
        return NULL;
    }
    PyObject *np = pyc_numpy();
    PyObject *scalar = np ? PyObject_CallMethod(np, "array", "OO", args[0], b->dtype) : NULL;
    PyObject *bytes = scalar ? PyObject_CallMethod(scalar, "tobytes", NULL) : NULL;
    Py_XDECREF(scalar);
    if (!bytes) {
        return NULL;
    }
    Py_ssize_t n = PyBytes_Size(bytes);
    const unsigned char *p = (const unsigned char *)PyBytes_AsString(bytes);
    uint32_t pattern = 0;
    if (n != 1 && n != 2 && n != 4) {
        Py_DECREF(bytes);
        return pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                              "Buffer.fill: elements of %zd bytes cannot be a 32-bit pattern", n);
    }
    for (int i = 0; i < 4; i++) {
        pattern |= (uint32_t)p[i % n] << (8 * i);
    }
    Py_DECREF(bytes);
    if (pyc_check(cubec_fill(dev, stream, b->buf, 0, b->size, pattern)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* buf.copy_to(dst, size=None, src_offset=0, dst_offset=0, stream=None, dst_stream=None): a device
 * copy; to a buffer of another device, cubec_copy_peer (ordered after `stream`'s writers of this
 * buffer and before dst_stream's later work, without waiting: docs/multi-device-paths.md). */
static PyObject *buffer_copy_to(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames)
{
    pyc_buffer *b = (pyc_buffer *)self;
    static const char *const names[] = {"size",   "src_offset", "dst_offset",
                                        "stream", "dst_stream", NULL};
    PyObject *kw[5];
    if (nargs != 1 || Py_TYPE(args[0]) != pyc.buffer_type) {
        return PyErr_Format(PyExc_TypeError, "Buffer.copy_to() takes one destination Buffer");
    }
    pyc_buffer *dst = (pyc_buffer *)args[0];
    cubec_stream stream, dst_stream;
    cubec_device *dev = live(b, "Buffer.copy_to");
    cubec_device *to = dev ? live(dst, "Buffer.copy_to (dst)") : NULL;
    if (!to || pyc_kwargs("Buffer.copy_to", kwnames, args + nargs, names, kw) < 0 ||
        pyc_stream_arg(b->device, kw[3], "Buffer.copy_to", &stream) < 0 ||
        pyc_stream_arg(dst->device, kw[4], "Buffer.copy_to (dst_stream)", &dst_stream) < 0) {
        return NULL;
    }
    unsigned long long v[3] = {b->size < dst->size ? b->size : dst->size, 0, 0};
    for (int i = 0; i < 3; i++) {
        if (kw[i] && kw[i] != Py_None) {
            v[i] = PyLong_AsUnsignedLongLong(kw[i]);
            if (PyErr_Occurred()) {
                PyErr_Clear();
                return pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                                      "Buffer.copy_to: %s must be an int >= 0, got %R", names[i],
                                      kw[i]);
            }
        }
    }
    cubec_status st = to == dev ? cubec_copy(dev, stream, b->buf, v[1], dst->buf, v[2], v[0])
                                : cubec_copy_peer(dev, stream, b->buf, v[1], to, dst_stream,
                                                  dst->buf, v[2], v[0]);
    if (pyc_check(st) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* buf.copy(stream=None): a new buffer of the same dtype and shape with a device copy. */
static PyObject *buffer_copy(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    pyc_buffer *b = (pyc_buffer *)self;
    static const char *const names[] = {"stream", NULL};
    PyObject *kw[1];
    if (nargs) {
        return PyErr_Format(PyExc_TypeError, "Buffer.copy() takes only stream=");
    }
    cubec_stream stream;
    cubec_device *dev = live(b, "Buffer.copy");
    if (!dev || pyc_kwargs("Buffer.copy", kwnames, args, names, kw) < 0 ||
        pyc_stream_arg(b->device, kw[0], "Buffer.copy", &stream) < 0) {
        return NULL;
    }
    cubec_buffer buf;
    if (pyc_check(cubec_buffer_create(dev, stream, b->size, &buf)) < 0) {
        return NULL;
    }
    cubec_status st = b->size ? cubec_copy(dev, stream, b->buf, 0, buf, 0, b->size) : NULL;
    if (st) {
        cubec_status_free(cubec_buffer_release(dev, buf));
        return pyc_raise(st);
    }
    return pyc_buffer_wrap(b->device, buf, b->size, b->dtype, b->shape);
}

static PyObject *buffer_release(PyObject *self, PyObject *unused)
{
    (void)unused;
    release_handle((pyc_buffer *)self);
    Py_RETURN_NONE;
}

static PyObject *get_shape(PyObject *self, void *c)
{
    (void)c;
    PyObject *v = ((pyc_buffer *)self)->shape;
    Py_INCREF(v);
    return v;
}
static PyObject *get_dtype(PyObject *self, void *c)
{
    (void)c;
    PyObject *v = ((pyc_buffer *)self)->dtype;
    Py_INCREF(v);
    return v;
}
static PyObject *get_nbytes(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong(((pyc_buffer *)self)->size);
}
static PyObject *get_device(PyObject *self, void *c)
{
    (void)c;
    PyObject *v = (PyObject *)((pyc_buffer *)self)->device;
    Py_INCREF(v);
    return v;
}
static PyObject *get_handle(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong(((pyc_buffer *)self)->buf.id);
}

static PyObject *get_exportable(PyObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(((pyc_buffer *)self)->exportable);
}

static PyObject *buffer_repr(PyObject *self)
{
    pyc_buffer *b = (pyc_buffer *)self;
    return PyUnicode_FromFormat("<cubec.Buffer shape=%R dtype=%R%s>", b->shape, b->dtype,
                                b->buf.id ? "" : " (released)");
}

#define PYC_FAST(fn) (PyCFunction)(void (*)(void))(fn), METH_FASTCALL | METH_KEYWORDS

static PyMethodDef buffer_methods[] = {
    {"numpy", PYC_FAST(buffer_numpy),
     "numpy(stream=None, copy=None): the contents as a zero-copy view where the memory is "
     "host-visible, else a copy (copy=True: always a copy; copy=False: BufferError instead of "
     "one)."},
    {"read", PYC_FAST(buffer_read), "read(out=None, stream=None): reads into out or a new array."},
    {"write", PYC_FAST(buffer_write), "write(array, offset=0, stream=None): writes the bytes."},
    {"fill", PYC_FAST(buffer_fill), "fill(value, stream=None): every element set to value."},
    {"copy", PYC_FAST(buffer_copy), "copy(stream=None): a new buffer with a device copy."},
    {"copy_to", PYC_FAST(buffer_copy_to),
     "copy_to(dst, size=None, src_offset=0, dst_offset=0, stream=None, dst_stream=None): a "
     "device copy, also to a buffer of another device (cubec_copy_peer)."},
    {"release", buffer_release, METH_NOARGS,
     "Drops the handle now (the memory returns once queued work is done)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef buffer_getset[] = {
    {"shape", get_shape, NULL, "The shape it was made with.", NULL},
    {"dtype", get_dtype, NULL, "The numpy dtype it was made with.", NULL},
    {"nbytes", get_nbytes, NULL, "Its size in bytes.", NULL},
    {"device", get_device, NULL, "Its device.", NULL},
    {"handle", get_handle, NULL, "The cubec_buffer id (0 once released).", NULL},
    {"exportable", get_exportable, NULL,
     "Whether it was made with exportable=True (memory CUDA can map).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot buffer_slots[] = {
    {Py_tp_dealloc, buffer_dealloc},
    {Py_tp_repr, buffer_repr},
    {Py_tp_methods, buffer_methods},
    {Py_tp_getset, buffer_getset},
    {Py_bf_getbuffer, pyc_buffer_getbuffer}, /* mapping.c: memoryview(buf) where host-visible */
    {Py_tp_doc, "Device memory with a numpy dtype and shape (Device.empty, zeros, buffer)."},
    {0, NULL},
};

static PyType_Spec buffer_spec = {"cubec.Buffer", sizeof(pyc_buffer), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                  buffer_slots};

static PyMethodDef device_methods[] = {
    {"empty", PYC_FAST(device_empty),
     "empty(shape, dtype=float32, stream=None, exportable=False): a new buffer (exportable: "
     "memory CUDA can map, for DLPack as kDLCUDA)."},
    {"zeros", PYC_FAST(device_zeros),
     "zeros(shape, dtype=float32, stream=None, exportable=False): zero-filled."},
    {"buffer", PYC_FAST(device_buffer),
     "buffer(array, stream=None, exportable=False): a buffer holding a copy of the array (dtype "
     "and shape kept)."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_buffer(PyObject *module)
{
    (void)module;
    pyc_type_define(PYC_BUFFER, &buffer_spec, &pyc.buffer_type);
    return pyc_type_add(PYC_DEVICE, device_methods, NULL);
}
