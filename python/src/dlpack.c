/* DLPack export of buffers: Buffer.__dlpack__(*, stream=None, max_version=None, dl_device=None,
 * copy=None) and Buffer.__dlpack_device__().
 * kDLCUDA: a buffer made exportable (exportable=True) on a device CUDA sees as the same GPU
 * (libcuda present, cubec_cuda_map succeeds) is exported as (kDLCUDA, its CUDA ordinal): the
 * tensor's data is the buffer's CUDA mapping (cuda.c; no copy), and the consumer's stream waits on
 * the GPU for the work queued on the calling thread's cubec stream (cubec_cuda_wait_stream: no
 * host sync). The capsule holds the buffer object (so the mapping, unmapped only at its
 * collection) and a hold on the device (a close() meanwhile is deferred) until the consumer's
 * deleter runs.
 * kDLCPU, everywhere else: where the buffer's memory is host-visible (cubec_buffer_map: lavapipe,
 * CPU devices, integrated GPUs) the capsule hands out the mapped bytes themselves, after the work
 * queued on the buffer (the map waits for it), kept mapped and alive until the consumer's deleter
 * runs; elsewhere (a discrete GPU's device-local memory) it hands out a synchronised copy,
 * flagged IS_COPIED, and copy=False raises BufferError, as the protocol asks. copy=True always
 * copies. Never kDLVulkan: no consumer gives it a meaning. The structs are DLPack's stable C ABI
 * (dlpack.h 1.x), written here rather than taken from Debian's 0.6 header. */
#include <stdlib.h>
#include <string.h>

#include "pycubec.h"

/* ---- DLPack ABI (dlpack.h, v1.0) ------------------------------------------------------- */
typedef struct {
    uint32_t major, minor;
} DLPackVersion;
typedef enum { kDLCPU = 1, kDLCUDA = 2 } DLDeviceType;
typedef struct {
    int32_t device_type;
    int32_t device_id;
} DLDevice;
typedef enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLComplex = 5, kDLBool = 6 } DLDataTypeCode;
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* NULL: compact row-major */
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;
#define DLPACK_FLAG_BITMASK_IS_COPIED (1ull << 1)
/* ------------------------------------------------------------------------------------------ */

#define PYC_DLPACK_MAX_DIMS 32

/* What a capsule owns: the array (kDLCPU: its memory is the tensor's) or the buffer (kDLCUDA:
 * its CUDA mapping is the tensor's, and a hold on its device), the shape, and the tensor. */
typedef struct export_ctx {
    PyObject *array;
    Py_buffer view;
    pyc_buffer *buffer;
    int64_t shape[PYC_DLPACK_MAX_DIMS];
    union {
        DLManagedTensor legacy;
        DLManagedTensorVersioned versioned;
    } t;
} export_ctx;

/* The deleters may run on any thread, with or without the GIL. */
static void free_ctx(export_ctx *ctx)
{
    PyGILState_STATE g = PyGILState_Ensure();
    if (ctx->array) {
        PyBuffer_Release(&ctx->view);
        Py_DECREF(ctx->array);
    }
    if (ctx->buffer) {
        /* The buffer first (its collection unmaps it while the device is open), then the hold
         * (which may run a deferred close); the device object outlives both. */
        pyc_device *d = ctx->buffer->device;
        Py_INCREF((PyObject *)d);
        Py_DECREF((PyObject *)ctx->buffer);
        pyc_device_drop_hold(d);
        Py_DECREF((PyObject *)d);
    }
    free(ctx);
    PyGILState_Release(g);
}
static void delete_legacy(DLManagedTensor *t)
{
    free_ctx((export_ctx *)t->manager_ctx);
}
static void delete_versioned(DLManagedTensorVersioned *t)
{
    free_ctx((export_ctx *)t->manager_ctx);
}

/* A capsule nobody consumed still owns its tensor (a consumer renames it "used_..."). */
static void capsule_legacy(PyObject *capsule)
{
    DLManagedTensor *t = PyCapsule_GetPointer(capsule, "dltensor");
    if (t) {
        t->deleter(t);
    } else {
        PyErr_Clear();
    }
}
static void capsule_versioned(PyObject *capsule)
{
    DLManagedTensorVersioned *t = PyCapsule_GetPointer(capsule, "dltensor_versioned");
    if (t) {
        t->deleter(t);
    } else {
        PyErr_Clear();
    }
}

static int dtype_of(PyObject *dtype, DLDataType *out)
{
    PyObject *kind = PyObject_GetAttrString(dtype, "kind");
    Py_ssize_t itemsize = pyc_itemsize(dtype);
    if (!kind || itemsize < 0) {
        Py_XDECREF(kind);
        return -1;
    }
    int code = PyUnicode_CompareWithASCIIString(kind, "i") == 0   ? kDLInt
               : PyUnicode_CompareWithASCIIString(kind, "u") == 0 ? kDLUInt
               : PyUnicode_CompareWithASCIIString(kind, "f") == 0 ? kDLFloat
               : PyUnicode_CompareWithASCIIString(kind, "c") == 0 ? kDLComplex
               : PyUnicode_CompareWithASCIIString(kind, "b") == 0 ? kDLBool
                                                                  : -1;
    Py_DECREF(kind);
    if (code < 0) {
        PyErr_Format(PyExc_BufferError, "Buffer.__dlpack__: dtype %R has no DLPack type", dtype);
        return -1;
    }
    out->code = (uint8_t)code;
    out->bits = (uint8_t)(itemsize * 8);
    out->lanes = 1;
    return 0;
}

/* Wraps the tensor in a capsule that owns ctx (freed with it when the capsule cannot be made). */
static PyObject *make_capsule(export_ctx *ctx, DLTensor tensor, int versioned, int copied)
{
    PyObject *capsule;
    if (versioned) {
        DLManagedTensorVersioned *t = &ctx->t.versioned;
        t->version = (DLPackVersion){1, 0};
        t->manager_ctx = ctx;
        t->deleter = delete_versioned;
        t->flags = copied ? DLPACK_FLAG_BITMASK_IS_COPIED : 0;
        t->dl_tensor = tensor;
        capsule = PyCapsule_New(t, "dltensor_versioned", capsule_versioned);
    } else {
        DLManagedTensor *t = &ctx->t.legacy;
        t->dl_tensor = tensor;
        t->manager_ctx = ctx;
        t->deleter = delete_legacy;
        capsule = PyCapsule_New(t, "dltensor", capsule_legacy);
    }
    if (!capsule) {
        free_ctx(ctx);
    }
    return capsule;
}

/* Replaces the pending exception by a BufferError "<what>: <its message>" whose __cause__ it is:
 * the protocol's error for an export that cannot be made, with cubec's reason kept. */
static void as_buffer_error(const char *what)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb && value) {
        PyException_SetTraceback(value, tb);
    }
    PyErr_Format(PyExc_BufferError, "%s: %S", what, value ? value : Py_None);
    PyObject *t2, *v2, *tb2;
    PyErr_Fetch(&t2, &v2, &tb2);
    PyErr_NormalizeException(&t2, &v2, &tb2);
    if (v2 && value) {
        PyException_SetCause(v2, value); /* steals value */
        value = NULL;
    }
    PyErr_Restore(t2, v2, tb2);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}

/* Whether the buffer goes out as kDLCUDA when the consumer names no device: it was made
 * exportable and CUDA maps it (libcuda present, the same GPU). No exception either way. */
static int cuda_capable(pyc_buffer *b, cubec_cuda_mapping *m)
{
    if (!b->exportable || !b->buf.id || !b->device->dev || b->device->close_pending) {
        return 0;
    }
    if (pyc_buffer_cuda_map(b, "Buffer.__dlpack__", m) < 0) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* The consumer's stream= for kDLCUDA, as the protocol encodes it: None and 1 the legacy default
 * stream, 2 the per-thread default stream, -1 no synchronisation (*out_sync = 0), other values
 * a CUstream; 0 is refused (ambiguous: the protocol forbids it for CUDA). CUDA's driver takes
 * 1 and 2 as those same streams (CU_STREAM_LEGACY, CU_STREAM_PER_THREAD). */
static int cuda_consumer_stream(PyObject *obj, void **out, int *out_sync)
{
    *out = (void *)(uintptr_t)1;
    *out_sync = 1;
    if (!obj || obj == Py_None) {
        return 0;
    }
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "Buffer.__dlpack__: stream must be an int (a CUDA stream handle), not %R",
                     obj);
        return -1;
    }
    long long v = PyLong_AsLongLong(obj);
    if (PyErr_Occurred() || v == 0 || v < -1) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError,
                     "Buffer.__dlpack__: stream %R is not a DLPack CUDA stream (None, 1: legacy "
                     "default, 2: per-thread default, -1: no synchronisation, or a handle > 2)",
                     obj);
        return -1;
    }
    if (v == -1) {
        *out_sync = 0;
    } else {
        *out = (void *)(uintptr_t)v;
    }
    return 0;
}

/* A new exportable buffer holding a device copy of b (copy=True to kDLCUDA), after the calling
 * thread's stream's work. */
static pyc_buffer *exportable_copy(pyc_buffer *b)
{
    cubec_device *dev = b->device->dev;
    cubec_buffer buf;
    if (pyc_check(cubec_buffer_create_exportable(dev, CUBEC_STREAM_CURRENT, b->size, &buf)) < 0) {
        return NULL;
    }
    cubec_status st = cubec_copy(dev, CUBEC_STREAM_CURRENT, b->buf, 0, buf, 0, b->size);
    if (st) {
        cubec_status_free(cubec_buffer_release(dev, buf));
        pyc_raise(st);
        return NULL;
    }
    pyc_buffer *c = (pyc_buffer *)pyc_buffer_wrap(b->device, buf, b->size, b->dtype, b->shape);
    if (c) {
        c->exportable = 1;
    }
    return c;
}

/* The kDLCUDA capsule: the mapping's pointer, the consumer's stream made to wait for the calling
 * thread's cubec stream. want_id is the ordinal dl_device asked for, or -1. */
static PyObject *export_cuda(pyc_buffer *b, PyObject *stream_obj, int copy, int versioned,
                             int want_id, DLDataType dt)
{
    void *cuda_stream;
    int sync;
    if (cuda_consumer_stream(stream_obj, &cuda_stream, &sync) < 0) {
        return NULL;
    }
    if (!b->exportable) {
        /* Said before any work is queued (copy=True would otherwise copy first). */
        return PyErr_Format(PyExc_BufferError,
                            "Buffer.__dlpack__: cannot export as kDLCUDA: the buffer was not "
                            "made exportable (Device.empty, zeros or buffer with "
                            "exportable=True): only exportable memory can be mapped into CUDA");
    }
    pyc_buffer *src = b;
    Py_INCREF((PyObject *)src);
    if (copy == 1) {
        Py_DECREF((PyObject *)src);
        src = exportable_copy(b);
        if (!src) {
            return NULL;
        }
    }
    cubec_cuda_mapping m;
    if (pyc_buffer_cuda_map(src, "Buffer.__dlpack__", &m) < 0) {
        as_buffer_error("Buffer.__dlpack__: cannot export as kDLCUDA");
        Py_DECREF((PyObject *)src);
        return NULL;
    }
    if (want_id >= 0 && m.cuda_device != want_id) {
        Py_DECREF((PyObject *)src);
        return PyErr_Format(PyExc_BufferError,
                            "Buffer.__dlpack__: dl_device (2, %d) asked, but the buffer is on "
                            "CUDA device %d",
                            want_id, m.cuda_device);
    }
    if (sync) {
        cubec_status st;
        PYC_WITHOUT_GIL_ON(src->device, st = cubec_cuda_wait_stream(
                                            src->device->dev, CUBEC_STREAM_CURRENT, cuda_stream));
        if (pyc_check(st) < 0) {
            Py_DECREF((PyObject *)src);
            return NULL;
        }
    }
    export_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        Py_DECREF((PyObject *)src);
        return PyErr_NoMemory();
    }
    ctx->buffer = src; /* takes the reference */
    pyc_device_take_hold(src->device);
    Py_ssize_t ndim = PyTuple_Size(b->shape);
    for (Py_ssize_t i = 0; i < ndim; i++) {
        ctx->shape[i] = PyLong_AsLongLong(PyTuple_GetItem(b->shape, i));
    }
    DLTensor tensor = {(void *)(uintptr_t)m.device_ptr,
                       {kDLCUDA, m.cuda_device},
                       (int32_t)ndim,
                       dt,
                       ctx->shape,
                       NULL,
                       0};
    return make_capsule(ctx, tensor, versioned, copy == 1);
}

static PyObject *buffer_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    pyc_buffer *b = (pyc_buffer *)self;
    static const char *const names[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *kw[4];
    if (nargs) {
        return PyErr_Format(PyExc_TypeError, "Buffer.__dlpack__() takes keyword arguments only");
    }
    if (pyc_kwargs("Buffer.__dlpack__", kwnames, args, names, kw) < 0) {
        return NULL;
    }
    int want = 0, want_id = -1; /* the device dl_device names (0: none named) */
    if (kw[2] && kw[2] != Py_None) {
        if (!PyTuple_Check(kw[2]) || !PyArg_ParseTuple(kw[2], "ii", &want, &want_id)) {
            PyErr_Clear();
            return PyErr_Format(PyExc_TypeError,
                                "Buffer.__dlpack__: dl_device must be a tuple (type, id), not %R",
                                kw[2]);
        }
        if (!(want == kDLCPU && want_id == 0) && !(want == kDLCUDA && want_id >= 0)) {
            return PyErr_Format(PyExc_BufferError,
                                "Buffer.__dlpack__: cannot export to dl_device (%d, %d); only "
                                "kDLCPU (1, 0), or kDLCUDA (2, N) for an exportable buffer",
                                want, want_id);
        }
    }
    int copy = -1; /* None: the mapped bytes where possible */
    if (kw[3] && kw[3] != Py_None) {
        copy = PyObject_IsTrue(kw[3]);
        if (copy < 0) {
            return NULL;
        }
    }
    int versioned = 0;
    if (kw[1] && kw[1] != Py_None) {
        int major = 0, minor = 0;
        if (!PyTuple_Check(kw[1]) || !PyArg_ParseTuple(kw[1], "ii", &major, &minor)) {
            PyErr_Clear();
            return PyErr_Format(
                PyExc_TypeError,
                "Buffer.__dlpack__: max_version must be a tuple (major, minor), not %R", kw[1]);
        }
        versioned = major >= 1;
    }
    PyObject *shape = b->shape;
    Py_ssize_t ndim = PyTuple_Size(shape);
    if (ndim > PYC_DLPACK_MAX_DIMS) {
        return PyErr_Format(PyExc_BufferError, "Buffer.__dlpack__: %zd dimensions, at most %d",
                            ndim, PYC_DLPACK_MAX_DIMS);
    }
    DLDataType dt;
    if (dtype_of(b->dtype, &dt) < 0) {
        return NULL;
    }
    if (!pyc_device_handle(b->device, "Buffer.__dlpack__")) {
        return NULL;
    }
    if (!b->buf.id) {
        return pyc_raise_code(CUBEC_INVALID_ARGUMENT, "Buffer.__dlpack__: the buffer was released");
    }
    cubec_cuda_mapping m;
    if (want == kDLCUDA || (want == 0 && cuda_capable(b, &m))) {
        return export_cuda(b, kw[0], copy, versioned, want_id, dt);
    }
    if (kw[0] && kw[0] != Py_None) {
        /* kDLCPU data: the protocol allows no stream. */
        return PyErr_Format(PyExc_ValueError,
                            "Buffer.__dlpack__: stream must be None for kDLCPU, got %R", kw[0]);
    }
    PyObject *array = NULL;
    int copied = 1;
    if (copy != 1) {
        int unsupported = 0;
        array = pyc_buffer_view_array(b, CUBEC_STREAM_CURRENT, &unsupported);
        if (!array && !unsupported) {
            return NULL;
        }
        if (!array && copy == 0) {
            return PyErr_Format(PyExc_BufferError,
                                "Buffer.__dlpack__: copy=False, but the buffer's memory is not "
                                "host-visible on this device: exporting it needs a copy");
        }
        copied = array == NULL;
    }
    if (!array) {
        /* buf.numpy(copy=True): a synchronised copy. */
        PyObject *method = PyObject_GetAttrString(self, "numpy");
        PyObject *noargs = PyTuple_New(0);
        PyObject *kwargs = Py_BuildValue("{s:O}", "copy", Py_True);
        if (method && noargs && kwargs) {
            array = PyObject_Call(method, noargs, kwargs);
        }
        Py_XDECREF(method);
        Py_XDECREF(noargs);
        Py_XDECREF(kwargs);
    }
    if (!array) {
        return NULL;
    }
    export_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        Py_DECREF(array);
        return PyErr_NoMemory();
    }
    ctx->array = array;
    if (PyObject_GetBuffer(array, &ctx->view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        Py_DECREF(array);
        free(ctx);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < ndim; i++) {
        ctx->shape[i] = PyLong_AsLongLong(PyTuple_GetItem(shape, i));
    }
    DLTensor tensor = {ctx->view.buf, {kDLCPU, 0}, (int32_t)ndim, dt, ctx->shape, NULL, 0};
    return make_capsule(ctx, tensor, versioned, copied);
}

/* (kDLCUDA, ordinal) for an exportable buffer CUDA maps, else (kDLCPU, 0). */
static PyObject *buffer_dlpack_device(PyObject *self, PyObject *unused)
{
    (void)unused;
    cubec_cuda_mapping m;
    if (cuda_capable((pyc_buffer *)self, &m)) {
        return Py_BuildValue("(ii)", kDLCUDA, m.cuda_device);
    }
    return Py_BuildValue("(ii)", kDLCPU, 0);
}

static PyMethodDef buffer_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))buffer_dlpack, METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): a kDLCUDA "
     "capsule of the buffer's CUDA mapping for an exportable buffer where CUDA is present (the "
     "consumer's stream waits for the calling thread's cubec stream); else a kDLCPU capsule of "
     "the mapped bytes where the buffer is host-visible, else of a synchronised copy "
     "(copy=False raises BufferError there)."},
    {"__dlpack_device__", buffer_dlpack_device, METH_NOARGS,
     "(kDLCUDA, ordinal) for an exportable buffer CUDA maps, else (kDLCPU, 0)."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_dlpack(PyObject *module)
{
    (void)module;
    return pyc_type_add(PYC_BUFFER, buffer_methods, NULL);
}
