/* CUDA on the same GPU from Python (docs/python.md, "CUDA and PyTorch"): a Buffer's CUDA mapping
 * (Buffer.cuda_map, cubec_cuda_map: made once per buffer object and kept until its collection, so
 * every DLPack capsule of it shares one device pointer) and the stream handoffs both ways, on the
 * GPU: Device.cuda_wait_stream (cubec_cuda_wait_stream: a CUDA stream waits for a cubec stream's
 * work) and Device.stream_wait_cuda (cubec_stream_wait_cuda: a cubec stream waits for a CUDA
 * stream's work). Where libcuda is absent the calls raise cubec.Unsupported with cubec's reason;
 * dlpack.c builds the kDLCUDA capsules on these. */
#include "pycubec.h"

int pyc_buffer_cuda_map(pyc_buffer *b, const char *who, cubec_cuda_mapping *out)
{
    cubec_device *dev = pyc_device_handle(b->device, who);
    if (!dev) {
        return -1;
    }
    if (!b->buf.id) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT, "%s: the buffer was released", who);
        return -1;
    }
    if (!b->exportable) {
        /* cubec_cuda_map's own refusal names only the handle: say what to do from Python. */
        pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                       "%s: the buffer was not made exportable (Device.empty, zeros or buffer "
                       "with exportable=True): only exportable memory can be mapped into CUDA",
                       who);
        return -1;
    }
    *out = (cubec_cuda_mapping)CUBEC_CUDA_MAPPING_INIT;
    cubec_status st;
    /* The first call loads libcuda and imports the memory: milliseconds. */
    PYC_WITHOUT_GIL_ON(b->device, st = cubec_cuda_map(dev, b->buf, out));
    if (pyc_check(st) < 0) {
        return -1;
    }
    b->cuda_mapped = b->buf.id;
    return 0;
}

void pyc_buffer_cuda_unmap(pyc_buffer *b)
{
    uint64_t id = b->cuda_mapped;
    b->cuda_mapped = 0;
    /* After Device.close() the device ended its mappings itself. */
    if (id && b->device->dev) {
        cubec_status_free(cubec_cuda_unmap(b->device->dev, (cubec_buffer){id}));
    }
}

/* buf.cuda_map(): {"device_ptr", "size", "cuda_device"} of the buffer's memory in CUDA's primary
 * context (no copy). The mapping orders nothing (Device.cuda_wait_stream does). */
static PyObject *buffer_cuda_map(PyObject *self, PyObject *unused)
{
    (void)unused;
    cubec_cuda_mapping m;
    if (pyc_buffer_cuda_map((pyc_buffer *)self, "Buffer.cuda_map", &m) < 0) {
        return NULL;
    }
    return Py_BuildValue("{s:K,s:K,s:i}", "device_ptr", (unsigned long long)m.device_ptr, "size",
                         (unsigned long long)m.size, "cuda_device", m.cuda_device);
}

/* A CUDA stream argument as a CUstream: None or 0 (CUDA's default stream), an int (the handle:
 * 1 and 2 are CUDA's CU_STREAM_LEGACY and CU_STREAM_PER_THREAD), or an object with the handle in
 * `cuda_stream` (torch.cuda.Stream) or `ptr` (cupy.cuda.Stream). */
static int cuda_stream_arg(PyObject *obj, const char *who, void **out)
{
    *out = NULL;
    if (!obj || obj == Py_None) {
        return 0;
    }
    PyObject *handle = NULL;
    if (PyLong_Check(obj)) {
        handle = obj;
        Py_INCREF(handle);
    } else if (PyObject_HasAttrString(obj, "cuda_stream")) {
        handle = PyObject_GetAttrString(obj, "cuda_stream");
    } else if (PyObject_HasAttrString(obj, "ptr")) {
        handle = PyObject_GetAttrString(obj, "ptr");
    }
    if (!handle || !PyLong_Check(handle)) {
        Py_XDECREF(handle);
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "%s: cuda_stream must be None, an int (a CUstream) or a stream with "
                     "cuda_stream or ptr (torch, CuPy), got %R",
                     who, obj);
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(handle);
    Py_DECREF(handle);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        pyc_raise_code(CUBEC_INVALID_ARGUMENT, "%s: cuda_stream must be a handle >= 0, got %R", who,
                       obj);
        return -1;
    }
    *out = (void *)(uintptr_t)v;
    return 0;
}

/* The two handoffs take the same arguments: (cuda_stream, stream=None). */
typedef cubec_status (*handoff_fn)(cubec_device *device, cubec_stream stream, void *cuda_stream);

static PyObject *handoff(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                         const char *who, handoff_fn fn)
{
    pyc_device *d = (pyc_device *)self;
    static const char *const names[] = {"cuda_stream", "stream", NULL};
    PyObject *kw[2];
    if (pyc_args(who, args, nargs, kwnames, names, 1, 1, kw) < 0) {
        return NULL;
    }
    cubec_stream stream;
    void *cuda_stream;
    cubec_device *dev = pyc_device_handle(d, who);
    if (!dev || pyc_stream_arg(d, kw[1], who, &stream) < 0 ||
        cuda_stream_arg(kw[0], who, &cuda_stream) < 0) {
        return NULL;
    }
    cubec_status st;
    PYC_WITHOUT_GIL_ON(d, st = fn(dev, stream, cuda_stream));
    if (pyc_check(st) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* dev.cuda_wait_stream(cuda_stream, stream=None): CUDA work queued on cuda_stream afterwards runs
 * after the work queued on the cubec stream so far (submitted by this call); nobody waits. */
static PyObject *device_cuda_wait_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                         PyObject *kwnames)
{
    return handoff(self, args, nargs, kwnames, "Device.cuda_wait_stream", cubec_cuda_wait_stream);
}

/* dev.stream_wait_cuda(cuda_stream, stream=None): cubec work queued on the stream afterwards runs
 * after the work queued on cuda_stream so far (cubec_stream_wait_cuda); nobody waits. */
static PyObject *device_stream_wait_cuda(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                         PyObject *kwnames)
{
    return handoff(self, args, nargs, kwnames, "Device.stream_wait_cuda", cubec_stream_wait_cuda);
}

static PyMethodDef buffer_methods[] = {
    {"cuda_map", buffer_cuda_map, METH_NOARGS,
     "cuda_map(): {'device_ptr', 'size', 'cuda_device'}: the buffer's memory in CUDA's primary "
     "context, no copy (exportable buffers; kept until the buffer is collected)."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef device_methods[] = {
    {"cuda_wait_stream", (PyCFunction)(void (*)(void))device_cuda_wait_stream,
     METH_FASTCALL | METH_KEYWORDS,
     "cuda_wait_stream(cuda_stream, stream=None): CUDA work queued on cuda_stream afterwards "
     "runs after the cubec stream's work so far (a wait on the GPU, not the host)."},
    {"stream_wait_cuda", (PyCFunction)(void (*)(void))device_stream_wait_cuda,
     METH_FASTCALL | METH_KEYWORDS,
     "stream_wait_cuda(cuda_stream, stream=None): cubec work queued on the stream afterwards "
     "runs after cuda_stream's work so far (a wait on the GPU, not the host)."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_cuda(PyObject *module)
{
    (void)module;
    if (pyc_type_add(PYC_BUFFER, buffer_methods, NULL) < 0) {
        return -1;
    }
    return pyc_type_add(PYC_DEVICE, device_methods, NULL);
}
