/* The C side of bench/python_bench.py, in the extension so that C and Python are measured in the
 * same process on the same device and objects: _bench_launch times a loop of cubec_launch with
 * the arguments a Python launch would pass, and _bench_transfer times a write and a read between a
 * buffer and pinned (cubec_host_alloc) memory from C, the path host_empty arrays take from Python.
 * Not API: the names start with an underscore. */
#include <time.h>

#include "pycubec.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* _bench_launch(kernel, buffers, groups, info, n, stream=None): seconds per launch of `n`
 * launches and the flush that submits the rest, as `cubec bench`'s launch.enqueue times them
 * (not waiting for the GPU). */
static PyObject *bench_launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs < 5 || nargs > 6 || Py_TYPE(args[0]) != pyc.kernel_type || !PyTuple_Check(args[1])) {
        return PyErr_Format(PyExc_TypeError,
                            "_bench_launch(kernel, buffers, groups, info, n, stream=None)");
    }
    pyc_kernel *k = (pyc_kernel *)args[0];
    Py_ssize_t count = PyTuple_Size(args[1]);
    PyObject *items[32];
    if (count > 32) {
        return PyErr_Format(PyExc_ValueError, "_bench_launch: at most 32 buffers");
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        items[i] = PyTuple_GetItem(args[1], i);
    }
    long n = PyLong_AsLong(args[4]);
    if (n <= 0) {
        return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "_bench_launch: n > 0");
    }
    pyc_launch_args a;
    if (pyc_launch_parse(k, items, count, args[2], args[3], nargs > 5 ? args[5] : NULL, &a) < 0) {
        pyc_launch_args_done(&a);
        return NULL;
    }
    cubec_device *dev = k->device->dev;
    cubec_status st = NULL;
    double t0 = now();
    for (long i = 0; i < n && !st; i++) {
        st = cubec_launch(dev, a.stream, &a.desc);
    }
    if (!st) {
        st = cubec_flush(dev, a.stream);
    }
    double t1 = now();
    pyc_launch_args_done(&a);
    if (st) {
        return pyc_raise(st);
    }
    return PyFloat_FromDouble((t1 - t0) / (double)n);
}

/* _bench_transfer(buffer, host): (upload, download) seconds of one cubec_write + cubec_sync and
 * one cubec_read between the buffer and the memory of `host` (a host_empty array: pinned
 * cubec_host_alloc memory), timed as `cubec bench`'s write.h2d_pinned and read.d2h_pinned. */
static PyObject *bench_transfer(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2 || Py_TYPE(args[0]) != pyc.buffer_type) {
        return PyErr_Format(PyExc_TypeError, "_bench_transfer(buffer, host_array)");
    }
    pyc_buffer *b = (pyc_buffer *)args[0];
    cubec_device *dev = pyc_device_handle(b->device, "_bench_transfer");
    Py_buffer view;
    if (!dev || PyObject_GetBuffer(args[1], &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        return NULL;
    }
    if ((uint64_t)view.len != b->size) {
        PyBuffer_Release(&view);
        return PyErr_Format(PyExc_ValueError, "_bench_transfer: sizes differ");
    }
    cubec_status st;
    double t0, t1, t2;
    pyc_device_take_hold(b->device);
    PyThreadState *unlocked = PyEval_SaveThread();
    t0 = now();
    st = cubec_write(dev, CUBEC_STREAM_CURRENT, b->buf, 0, view.buf, b->size);
    if (!st) {
        st = cubec_sync(dev, CUBEC_STREAM_CURRENT);
    }
    t1 = now();
    if (!st) {
        st = cubec_read(dev, CUBEC_STREAM_CURRENT, b->buf, 0, view.buf, b->size);
    }
    t2 = now();
    PyEval_RestoreThread(unlocked);
    pyc_device_drop_hold(b->device);
    PyBuffer_Release(&view);
    if (st) {
        return pyc_raise(st);
    }
    return Py_BuildValue("(dd)", t1 - t0, t2 - t1);
}

static PyMethodDef functions[] = {
    {"_bench_launch", (PyCFunction)(void (*)(void))bench_launch, METH_FASTCALL,
     "_bench_launch(kernel, buffers, groups, info, n, stream=None): C seconds per launch."},
    {"_bench_transfer", (PyCFunction)(void (*)(void))bench_transfer, METH_FASTCALL,
     "_bench_transfer(buffer, host_array): C (upload, download) seconds."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_bench(PyObject *module)
{
    return PyModule_AddFunctions(module, functions);
}
