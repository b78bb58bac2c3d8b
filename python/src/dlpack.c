/* DLPack export of buffers: Buffer.__dlpack__(*, stream=None, max_version=None, dl_device=None,
 * copy=None) and Buffer.__dlpack_device__(). The device is always kDLCPU: where the buffer's
 * memory is host-visible (cubec_buffer_map: lavapipe, CPU devices, integrated GPUs) the capsule
 * hands out the mapped bytes themselves, after the work queued on the buffer (the map waits for
 * it), kept mapped and alive until the consumer's deleter runs; elsewhere (a discrete GPU's
 * device-local memory) it hands out a synchronised copy, flagged IS_COPIED, and copy=False
 * raises BufferError, as the protocol asks. copy=True always copies. Never kDLVulkan: no
 * consumer gives it a meaning. The structs are DLPack's stable C ABI (dlpack.h 1.x), written
 * here rather than taken from Debian's 0.6 header. */
#include <stdlib.h>
#include <string.h>

#include "pycubec.h"

/* ---- DLPack ABI (dlpack.h, v1.0) ------------------------------------------------------- */
typedef struct {
    uint32_t major, minor;
} DLPackVersion;
typedef enum { kDLCPU = 1 } DLDeviceType;
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

/* What a capsule owns: the array (its memory is the tensor's), the shape, and the tensor. */
typedef struct export_ctx {
    PyObject *array;
    Py_buffer view;
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
    PyBuffer_Release(&ctx->view);
    Py_DECREF(ctx->array);
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
    if (kw[0] && kw[0] != Py_None) {
        /* kDLCPU data: the protocol allows no stream. */
        return PyErr_Format(PyExc_ValueError,
                            "Buffer.__dlpack__: stream must be None for kDLCPU, got %R", kw[0]);
    }
    if (kw[2] && kw[2] != Py_None) {
        int type = -1, id = -1;
        if (!PyTuple_Check(kw[2]) || !PyArg_ParseTuple(kw[2], "ii", &type, &id)) {
            PyErr_Clear();
            return PyErr_Format(PyExc_TypeError,
                                "Buffer.__dlpack__: dl_device must be a tuple (type, id), not %R",
                                kw[2]);
        }
        if (type != kDLCPU || id != 0) {
            return PyErr_Format(PyExc_BufferError,
                                "Buffer.__dlpack__: cannot export to dl_device (%d, %d); only "
                                "kDLCPU (1, 0)",
                                type, id);
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
    PyObject *array = NULL;
    int copied = 1;
    if (copy != 1) {
        if (!pyc_device_handle(b->device, "Buffer.__dlpack__")) {
            return NULL;
        }
        if (!b->buf.id) {
            return pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                                  "Buffer.__dlpack__: the buffer was released");
        }
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

static PyObject *buffer_dlpack_device(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return Py_BuildValue("(ii)", kDLCPU, 0);
}

static PyMethodDef buffer_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))buffer_dlpack, METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): a kDLCPU "
     "capsule of the mapped bytes where the buffer is host-visible, else of a synchronised "
     "copy (copy=False raises BufferError there)."},
    {"__dlpack_device__", buffer_dlpack_device, METH_NOARGS, "(kDLCPU, 0)."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_dlpack(PyObject *module)
{
    (void)module;
    return pyc_type_add(PYC_BUFFER, buffer_methods, NULL);
}
