/* Asynchronous reads: buf.read_async(out=None, stream=None) starts a cubec_read_async into a
 * numpy array and returns a cubec.Future. f.result(timeout=None) waits with the GIL released and
 * returns the array; f.done() asks without waiting. cubec/__init__.py adds __await__, so that
 * asyncio code can `await` a future. While the read is in flight the future holds the array's
 * memory and the device open (pyc_device.holds). */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "pycubec.h"

typedef struct pyc_future {
    PyObject ob_base;
    pyc_device *device;
    cubec_event *event; /* NULL once finished (and freed) */
    PyObject *array;    /* the destination, returned by result() */
    PyObject *source;   /* the Buffer read (kept alive for the repr and the error message) */
    Py_buffer view;     /* the destination's bytes, held while the event lives */
    PyObject *error;    /* the exception of a failed read, raised by every result() */
    /* Threads may share a future: one at a time waits in cubec_event_wait without the GIL
     * (`waiting`), others poll; the outcome is kept once known (`settled`), and the event is
     * freed only when no thread is inside a wait on it. */
    int waiting;
    int settled;
} pyc_future;

/* Frees the event and lets go of the destination's bytes and the device. */
static void finish(pyc_future *f)
{
    if (!f->event) {
        return;
    }
    cubec_event *event = f->event;
    f->event = NULL;
    PYC_WITHOUT_GIL(cubec_event_free(event));
    PyBuffer_Release(&f->view);
    pyc_device_drop_hold(f->device);
}

/* Records the outcome of the event (NULL: success) unless one is known already, and finishes
 * when no thread waits on the event. */
static void settle(pyc_future *f, cubec_status st)
{
    if (f->settled) {
        cubec_status_free(st);
    } else if (st) {
        PyObject *type, *value, *tb;
        pyc_raise(st);
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        Py_XDECREF(type);
        Py_XDECREF(tb);
        f->error = value;
    }
    f->settled = 1;
    if (!f->waiting) {
        finish(f);
    }
}

static PyObject *outcome(pyc_future *f)
{
    if (f->error) {
        PyErr_SetObject((PyObject *)Py_TYPE(f->error), f->error);
        return NULL;
    }
    Py_INCREF(f->array);
    return f->array;
}

static PyObject *future_done(PyObject *self, PyObject *unused)
{
    (void)unused;
    pyc_future *f = (pyc_future *)self;
    if (f->event && !f->settled) {
        cubec_status st = cubec_event_query(f->event);
        if (st && cubec_status_code(st) == CUBEC_NOT_READY) {
            cubec_status_free(st);
            Py_RETURN_FALSE;
        }
        settle(f, st);
    }
    Py_RETURN_TRUE;
}

/* result(timeout=None): the array, once the read landed; TimeoutError after `timeout` seconds
 * (the read goes on). */
static PyObject *future_result(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    pyc_future *f = (pyc_future *)self;
    static const char *const names[] = {"timeout", NULL};
    PyObject *kw[1];
    if (pyc_args("Future.result", args, nargs, kwnames, names, 1, 0, kw) < 0) {
        return NULL;
    }
    PyObject *timeout = kw[0];
    if (!f->event || f->settled) {
        return outcome(f);
    }
    cubec_status st;
    int forever = !timeout || timeout == Py_None;
    if (forever && !f->waiting) {
        cubec_event *event = f->event;
        f->waiting = 1;
        PYC_WITHOUT_GIL(st = cubec_event_wait(event));
        f->waiting = 0;
        settle(f, st);
        return outcome(f);
    }
    double seconds = forever ? HUGE_VAL : PyFloat_AsDouble(timeout);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return PyErr_Format(PyExc_TypeError,
                            "Future.result: timeout must be seconds (a number) or None, not %R",
                            timeout);
    }
    /* cubec has no timed wait: poll, backing off from 20 us to 1 ms, without the GIL. */
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    long pause_ns = 20000;
    for (;;) {
        if (!f->event || f->settled) {
            /* Another thread's wait ended while this one slept. */
            return outcome(f);
        }
        st = cubec_event_query(f->event);
        if (!st || cubec_status_code(st) != CUBEC_NOT_READY) {
            settle(f, st);
            return outcome(f);
        }
        cubec_status_free(st);
        clock_gettime(CLOCK_MONOTONIC, &now);
        double elapsed =
            (double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec);
        if (elapsed >= seconds) {
            char text[96];
            snprintf(text, sizeof text, "Future.result: the read was not done after %g s", seconds);
            PyErr_SetString(PyExc_TimeoutError, text);
            return NULL;
        }
        struct timespec pause = {0, pause_ns};
        PYC_WITHOUT_GIL(nanosleep(&pause, NULL));
        pause_ns = pause_ns * 2 > 1000000 ? 1000000 : pause_ns * 2;
    }
}

static void future_dealloc(PyObject *self)
{
    pyc_future *f = (pyc_future *)self;
    PyTypeObject *tp = Py_TYPE(self);
    /* cubec_event_free waits for the read: the array's memory is written until then. */
    finish(f);
    Py_XDECREF(f->array);
    Py_XDECREF(f->source);
    Py_XDECREF(f->error);
    Py_DECREF((PyObject *)f->device);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyMethodDef future_methods[] = {
    {"result", (PyCFunction)(void (*)(void))future_result, METH_FASTCALL | METH_KEYWORDS,
     "result(timeout=None): waits (GIL released) and returns the array."},
    {"done", future_done, METH_NOARGS, "True once the read has finished."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot future_slots[] = {
    {Py_tp_dealloc, future_dealloc},
    {Py_tp_methods, future_methods},
    {Py_tp_doc, "An asynchronous read (Buffer.read_async): result(timeout), done(), await."},
    {0, NULL},
};

static PyType_Spec future_spec = {"cubec.Future", sizeof(pyc_future), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                  future_slots};

/* buf.read_async(out=None, stream=None): a Future of the buffer's contents. */
static PyObject *buffer_read_async(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames)
{
    pyc_buffer *b = (pyc_buffer *)self;
    static const char *const names[] = {"out", "stream", NULL};
    PyObject *kw[2];
    if (pyc_args("Buffer.read_async", args, nargs, kwnames, names, 1, 0, kw) < 0) {
        return NULL;
    }
    PyObject *out = kw[0];
    cubec_stream stream;
    cubec_device *dev = pyc_device_handle(b->device, "Buffer.read_async");
    if (!dev || pyc_stream_arg(b->device, kw[1], "Buffer.read_async", &stream) < 0) {
        return NULL;
    }
    if (!b->buf.id) {
        return pyc_raise_code(CUBEC_INVALID_ARGUMENT, "Buffer.read_async: the buffer was released");
    }
    PyObject *array;
    if (out && out != Py_None) {
        Py_INCREF(out);
        array = out;
    } else {
        PyObject *np = pyc_numpy();
        array = np ? PyObject_CallMethod(np, "empty", "OO", b->shape, b->dtype) : NULL;
        if (!array) {
            return NULL;
        }
    }
    pyc_future *f = PyObject_New(pyc_future, pyc.future_type);
    if (!f) {
        Py_DECREF(array);
        return NULL;
    }
    Py_INCREF((PyObject *)b->device);
    f->device = b->device;
    f->event = NULL;
    f->array = array;
    Py_INCREF(self);
    f->source = self;
    f->error = NULL;
    f->waiting = 0;
    f->settled = 0;
    if (PyObject_GetBuffer(array, &f->view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        Py_DECREF((PyObject *)f);
        return NULL;
    }
    if ((uint64_t)f->view.len != b->size) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                       "Buffer.read_async: out holds %zd bytes, the buffer %llu", f->view.len,
                       (unsigned long long)b->size);
        PyBuffer_Release(&f->view);
        Py_DECREF((PyObject *)f);
        return NULL;
    }
    cubec_event *event = NULL;
    cubec_status st = cubec_read_async(dev, stream, b->buf, 0, f->view.buf, b->size, &event);
    if (st) {
        PyBuffer_Release(&f->view);
        Py_DECREF((PyObject *)f);
        return pyc_raise(st);
    }
    f->event = event;
    pyc_device_take_hold(b->device);
    return (PyObject *)f;
}

static PyMethodDef buffer_methods[] = {
    {"read_async", (PyCFunction)(void (*)(void))buffer_read_async, METH_FASTCALL | METH_KEYWORDS,
     "read_async(out=None, stream=None): starts a read; returns a Future of the array."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_future(PyObject *module)
{
    pyc.future_type = (PyTypeObject *)PyType_FromSpec(&future_spec);
    if (!pyc.future_type) {
        return -1;
    }
    Py_INCREF((PyObject *)pyc.future_type);
    if (PyModule_AddObject(module, "Future", (PyObject *)pyc.future_type) < 0) {
        Py_DECREF((PyObject *)pyc.future_type);
        return -1;
    }
    return pyc_type_add(PYC_BUFFER, buffer_methods, NULL);
}
