/* cubec.Graph: a capture of a stream's launches (cubec_graph_prepare/begin/end) used as a context
 * manager, replayed with one submission (cubec_graph_replay) and destroyed on close() or garbage
 * collection (cubec_graph_destroy).
 *
 *     with dev.capture(stream) as g:   # __enter__: prepare + begin; __exit__: end
 *         k(a, b, groups=...)          # recorded, not run
 *     g.replay()                       # one FASTCALL, one cubec call: the GIL is kept (no wait)
 *
 * The work before the `with` is the warm-up docs/graphs.md asks for: prepare drains the stream,
 * so kernels compiled and buffers made before it are in place when recording begins. */
#include "pycubec.h"

#include <stddef.h>
#include <time.h>

typedef struct pyc_graph {
    PyObject_HEAD pyc_device *device;
    PyObject *stream_obj; /* what capture() was given (None: the capturing thread's stream) */
    cubec_stream stream;  /* the capturing stream, resolved once */
    cubec_graph graph;    /* zero until the capture ends, and again once destroyed */
    int capturing;        /* between __enter__ and __exit__ */
} pyc_graph;

static PyTypeObject *graph_type;

/* Destroys the graph if it has one and the device is still open (a closed device already freed
 * it). Waits for running replays, so the GIL is released meanwhile. */
static cubec_status graph_destroy(pyc_graph *self)
{
    cubec_graph graph = self->graph;
    self->graph.id = 0;
    if (graph.id == 0 || self->device == NULL || self->device->dev == NULL) return NULL;
    cubec_device *dev = self->device->dev;
    cubec_status status;
    PYC_WITHOUT_GIL_ON(self->device, status = cubec_graph_destroy(dev, self->stream, graph));
    return status;
}

/* dev.capture(stream=None): the object `with` enters; nothing happens until then. */
static PyObject *device_capture(PyObject *device, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"stream", NULL};
    PyObject *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:capture", names, &stream)) return NULL;
    cubec_stream id;
    if (pyc_stream_arg((pyc_device *)device, stream, "capture", &id) < 0) return NULL;
    pyc_graph *self = (pyc_graph *)PyType_GenericAlloc(graph_type, 0);
    if (!self) return NULL;
    Py_INCREF(device);
    self->device = (pyc_device *)device;
    Py_INCREF(stream);
    self->stream_obj = stream;
    self->stream = id;
    return (PyObject *)self;
}

static PyObject *graph_enter(PyObject *op, PyObject *unused)
{
    (void)unused;
    pyc_graph *self = (pyc_graph *)op;
    if (self->capturing || self->graph.id != 0)
        return pyc_raise_code(CUBEC_GRAPH_STATE,
                              "capture: this Graph object already %s; call dev.capture() again "
                              "for another graph",
                              self->capturing ? "captures" : "holds a graph");
    cubec_device *dev = pyc_device_handle(self->device, "capture");
    if (!dev) return NULL;
    /* Both calls can wait: prepare drains the stream, begin submits the warm-up. */
    cubec_status status;
    PYC_WITHOUT_GIL_ON(self->device, status = cubec_graph_prepare(dev, self->stream);
                       if (!status) status = cubec_graph_begin(dev, self->stream));
    if (pyc_check(status) < 0) return NULL;
    self->capturing = 1;
    Py_INCREF(op);
    return op;
}

/* Ends the capture. On an exception in the body the graph is ended and dropped and the exception
 * goes on; otherwise a failed capture raises its error (the first failure inside the window). */
static PyObject *graph_exit(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    pyc_graph *self = (pyc_graph *)op;
    const int body_raised = nargs > 0 && args[0] != Py_None;
    if (!self->capturing) Py_RETURN_FALSE;
    self->capturing = 0;
    cubec_device *dev = pyc_device_handle(self->device, "capture");
    if (!dev) {
        /* The device closed inside the body: it took the capture with it. The body's own
         * exception, if any, is the one to see. */
        if (!body_raised) return NULL;
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    cubec_graph graph = {0};
    cubec_status status;
    PYC_WITHOUT_GIL_ON(self->device, status = cubec_graph_end(dev, self->stream, &graph));
    self->graph = graph;
    if (body_raised) {
        cubec_status_free(status);
        cubec_status_free(graph_destroy(self));
        Py_RETURN_FALSE;
    }
    if (pyc_check(status) < 0) return NULL;
    Py_RETURN_FALSE;
}

/* g.replay(stream=None): after the work queued on the stream (default: the capturing one). */
static PyObject *graph_replay(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    pyc_graph *self = (pyc_graph *)op;
    cubec_stream stream = self->stream;
    if (nargs > 1 || kwnames) {
        static const char *const names[] = {"stream", NULL};
        PyObject *kw[1];
        if (pyc_args("replay", args, nargs, kwnames, names, 1, 0, kw) < 0) return NULL;
        if (kw[0] && pyc_stream_arg(self->device, kw[0], "replay", &stream) < 0) return NULL;
    } else if (nargs == 1 && pyc_stream_arg(self->device, args[0], "replay", &stream) < 0) {
        return NULL;
    }
    cubec_device *dev = pyc_device_handle(self->device, "replay");
    if (!dev) return NULL;
    /* Enqueue only (one submission, no wait): the GIL is kept, as for a launch. */
    if (pyc_check(cubec_graph_replay(dev, stream, self->graph)) < 0) return NULL;
    Py_RETURN_NONE;
}

/* g._replay_loop_c(count) -> seconds: `count` replays from a C loop, timed around the loop only
 * (the caller syncs the stream after, untimed). The reference the bench script compares g.replay()
 * from Python with (section 3 of issue 23: within 0.5 us of C), in the same process, on the
 * same graph and stream. */
static PyObject *graph_replay_loop_c(PyObject *op, PyObject *arg)
{
    pyc_graph *self = (pyc_graph *)op;
    const long count = PyLong_AsLong(arg);
    if (count < 0 || PyErr_Occurred()) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "_replay_loop_c: count %ld is negative", count);
        return NULL;
    }
    cubec_device *dev = pyc_device_handle(self->device, "replay");
    if (!dev) return NULL;
    struct timespec t0, t1;
    cubec_status status = NULL;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < count && !status; i++)
        status = cubec_graph_replay(dev, self->stream, self->graph);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (pyc_check(status) < 0) return NULL;
    return PyFloat_FromDouble((double)(t1.tv_sec - t0.tv_sec) +
                              (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
}

static PyObject *graph_close(PyObject *op, PyObject *unused)
{
    (void)unused;
    if (pyc_check(graph_destroy((pyc_graph *)op)) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *graph_get_handle(PyObject *op, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLongLong(((pyc_graph *)op)->graph.id);
}

static PyObject *graph_get_device(PyObject *op, void *closure)
{
    (void)closure;
    return Py_NewRef((PyObject *)((pyc_graph *)op)->device);
}

static PyObject *graph_get_stream(PyObject *op, void *closure)
{
    (void)closure;
    return Py_NewRef(((pyc_graph *)op)->stream_obj);
}

static int graph_traverse(PyObject *op, visitproc visit, void *arg)
{
    pyc_graph *self = (pyc_graph *)op;
    Py_VISIT((PyObject *)self->device);
    Py_VISIT(self->stream_obj);
    Py_VISIT(Py_TYPE(op));
    return 0;
}

static void graph_dealloc(PyObject *op)
{
    pyc_graph *self = (pyc_graph *)op;
    PyTypeObject *type = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    /* A capture left open (the `with` never exited: a generator dropped mid-body) is ended so
     * the stream is usable again; its graph, if any, is dropped with the rest. */
    if (self->capturing && self->device && self->device->dev) {
        cubec_graph graph = {0};
        cubec_status_free(cubec_graph_end(self->device->dev, self->stream, &graph));
        self->graph = graph;
    }
    cubec_status status = graph_destroy(self);
    if (status) {
        /* Nowhere to raise from a deallocator: report it the way Python reports such errors. */
        PyObject *type_, *value, *tb;
        PyErr_Fetch(&type_, &value, &tb);
        pyc_raise(status);
        PyErr_WriteUnraisable(op);
        PyErr_Restore(type_, value, tb);
    }
    Py_CLEAR(self->stream_obj);
    Py_CLEAR(self->device);
    PyObject_GC_Del(op);
    Py_DECREF(type);
}

static PyMethodDef graph_methods[] = {
    {"__enter__", graph_enter, METH_NOARGS, "Prepares the stream and starts recording."},
    {"__exit__", (PyCFunction)(void (*)(void))graph_exit, METH_FASTCALL,
     "Ends the capture (dropping it if the body raised)."},
    {"replay", (PyCFunction)(void (*)(void))graph_replay, METH_FASTCALL | METH_KEYWORDS,
     "replay(stream=None): submits the graph once after the stream's queued work (no wait)."},
    {"_replay_loop_c", graph_replay_loop_c, METH_O,
     "_replay_loop_c(count) -> seconds: count replays from a C loop (for the bench script)."},
    {"close", graph_close, METH_NOARGS,
     "Waits for running replays and frees the graph (also done on garbage collection)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef graph_getset[] = {
    {"handle", graph_get_handle, NULL, "the cubec_graph id (0: none)", NULL},
    {"device", graph_get_device, NULL, "the Device", NULL},
    {"stream", graph_get_stream, NULL, "the stream given to capture()", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot graph_slots[] = {
    {Py_tp_doc, "A graph captured by a `with dev.capture(stream) as g:` block; g.replay() "
                "submits it."},
    {Py_tp_dealloc, graph_dealloc},
    {Py_tp_traverse, graph_traverse},
    {Py_tp_methods, graph_methods},
    {Py_tp_getset, graph_getset},
    {0, NULL},
};

static PyType_Spec graph_spec = {
    .name = "cubec.Graph",
    .basicsize = sizeof(pyc_graph),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = graph_slots,
};

static PyMethodDef device_methods[] = {
    {"capture", (PyCFunction)(void (*)(void))device_capture, METH_VARARGS | METH_KEYWORDS,
     "capture(stream=None): a Graph recording the launches of a `with` block on `stream` "
     "(cubec_graph_prepare + begin on entry, end on exit); g.replay() submits them at once."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_graph(PyObject *module)
{
    graph_type = (PyTypeObject *)PyType_FromSpec(&graph_spec);
    if (!graph_type) return -1;
    if (PyModule_AddObjectRef(module, "Graph", (PyObject *)graph_type) < 0) return -1;
    return pyc_type_add(PYC_DEVICE, device_methods, NULL);
}
