/* cubec.Window: the nested windows of cubec as context managers. Three kinds, one type, since
 * each is a begin/end pair around a `with` block:
 *   memory  dev.memory_window(mode, stream)  allocation mode of the stream's new buffers
 *           ("auto", "persistent", "dedicated"; docs/memory.md "Modes and windows");
 *   run     dev.run_window(mode, stream)     "dry" or "real" launches on one stream
 *           (docs/dry-runs.md);
 *   dry     cubec.dry_run()                  the process-wide dry run (every device).
 * A window object may be entered again while open (the windows nest in cubec); each exit closes
 * the innermost. Exceptions in the body close the window too and go on. */
#include "pycubec.h"

#include <stdio.h>
#include <string.h>

typedef enum window_kind { WINDOW_MEMORY, WINDOW_RUN, WINDOW_DRY } window_kind;

typedef struct pyc_window {
    PyObject_HEAD pyc_device *device; /* NULL for the process-wide dry run */
    window_kind kind;
    cubec_stream stream;
    int mode;       /* a cubec_memory_mode or cubec_run_mode */
    uint32_t depth; /* how many times this object is entered */
} pyc_window;

static PyTypeObject *window_type;

typedef struct mode_name {
    const char *name;
    int value;
} mode_name;

static const mode_name memory_modes[] = {{"auto", CUBEC_MEMORY_MODE_AUTO},
                                         {"persistent", CUBEC_MEMORY_MODE_PERSISTENT},
                                         {"dedicated", CUBEC_MEMORY_MODE_DEDICATED},
                                         {NULL, 0}};
static const mode_name run_modes[] = {{"dry", CUBEC_RUN_DRY}, {"real", CUBEC_RUN_REAL}, {NULL, 0}};

static const char *kind_name(window_kind kind)
{
    return kind == WINDOW_MEMORY ? "memory_window" : kind == WINDOW_RUN ? "run_window" : "dry_run";
}

/* The mode named by `obj` (one of `modes`' names), or -1 with ValueError listing them. */
static int mode_arg(const char *who, PyObject *obj, const mode_name *modes)
{
    const char *text = PyUnicode_Check(obj) ? PyUnicode_AsUTF8AndSize(obj, NULL) : NULL;
    if (text) {
        for (const mode_name *m = modes; m->name; m++)
            if (strcmp(m->name, text) == 0) return m->value;
    }
    PyErr_Clear();
    PyObject *repr = PyObject_Repr(obj);
    PyErr_Format(PyExc_ValueError, "%s: mode %s is not one of '%s', '%s'%s%s%s", who,
                 repr ? PyUnicode_AsUTF8AndSize(repr, NULL) : "?", modes[0].name, modes[1].name,
                 modes[2].name ? ", '" : "", modes[2].name ? modes[2].name : "",
                 modes[2].name ? "'" : "");
    Py_XDECREF(repr);
    return -1;
}

static PyObject *window_make(PyObject *device, window_kind kind, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"mode", "stream", NULL};
    PyObject *mode = NULL, *stream = Py_None;
    const char *who = kind_name(kind);
    char format[32];
    snprintf(format, sizeof format, "O|O:%s", who);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, names, &mode, &stream)) return NULL;
    const int value = mode_arg(who, mode, kind == WINDOW_MEMORY ? memory_modes : run_modes);
    if (value < 0) return NULL;
    cubec_stream id;
    if (pyc_stream_arg((pyc_device *)device, stream, who, &id) < 0) return NULL;
    pyc_window *self = (pyc_window *)PyType_GenericAlloc(window_type, 0);
    if (!self) return NULL;
    Py_INCREF(device);
    self->device = (pyc_device *)device;
    self->kind = kind;
    self->stream = id;
    self->mode = value;
    return (PyObject *)self;
}

static PyObject *device_memory_window(PyObject *device, PyObject *args, PyObject *kwargs)
{
    return window_make(device, WINDOW_MEMORY, args, kwargs);
}

static PyObject *device_run_window(PyObject *device, PyObject *args, PyObject *kwargs)
{
    return window_make(device, WINDOW_RUN, args, kwargs);
}

static PyObject *dry_run(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    pyc_window *self = (pyc_window *)PyType_GenericAlloc(window_type, 0);
    if (self) self->kind = WINDOW_DRY;
    return (PyObject *)self;
}

/* None of these waits for the GPU: they change what later calls do, so the GIL is kept. */
static cubec_status window_begin(pyc_window *self, cubec_device *dev)
{
    switch (self->kind) {
    case WINDOW_MEMORY:
        return cubec_memory_window_begin(dev, self->stream, (cubec_memory_mode)self->mode);
    case WINDOW_RUN: return cubec_run_window_begin(dev, self->stream, (cubec_run_mode)self->mode);
    case WINDOW_DRY:
    default: return cubec_dry_run_begin();
    }
}

static cubec_status window_end(pyc_window *self, cubec_device *dev)
{
    switch (self->kind) {
    case WINDOW_MEMORY: return cubec_memory_window_end(dev, self->stream);
    case WINDOW_RUN: return cubec_run_window_end(dev, self->stream);
    case WINDOW_DRY:
    default: return cubec_dry_run_end();
    }
}

static PyObject *window_enter(PyObject *op, PyObject *unused)
{
    (void)unused;
    pyc_window *self = (pyc_window *)op;
    cubec_device *dev = NULL;
    if (self->device && !(dev = pyc_device_handle(self->device, kind_name(self->kind))))
        return NULL;
    if (pyc_check(window_begin(self, dev)) < 0) return NULL;
    self->depth++;
    Py_INCREF(op);
    return op;
}

static PyObject *window_exit(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    pyc_window *self = (pyc_window *)op;
    const int body_raised = nargs > 0 && args[0] != Py_None;
    if (self->depth == 0) Py_RETURN_FALSE;
    self->depth--;
    cubec_device *dev = NULL;
    if (self->device && !(dev = pyc_device_handle(self->device, kind_name(self->kind)))) {
        /* A closed device took its windows with it; the body's exception, if any, goes on. */
        if (!body_raised) return NULL;
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    cubec_status status = window_end(self, dev);
    if (body_raised) {
        cubec_status_free(status);
        Py_RETURN_FALSE;
    }
    if (pyc_check(status) < 0) return NULL;
    Py_RETURN_FALSE;
}

static PyObject *window_get_depth(PyObject *op, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(((pyc_window *)op)->depth);
}

static int window_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT((PyObject *)((pyc_window *)op)->device);
    Py_VISIT(Py_TYPE(op));
    return 0;
}

static void window_dealloc(PyObject *op)
{
    pyc_window *self = (pyc_window *)op;
    PyTypeObject *type = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    /* Blocks never exited (a generator dropped mid-body) close their windows, so a stream is
     * not left dry or in a memory mode by an object nobody holds. */
    while (self->depth > 0) {
        self->depth--;
        if (self->device && !self->device->dev) break;
        cubec_status_free(window_end(self, self->device ? self->device->dev : NULL));
    }
    Py_CLEAR(self->device);
    PyObject_GC_Del(op);
    Py_DECREF(type);
}

static PyMethodDef window_methods[] = {
    {"__enter__", window_enter, METH_NOARGS, "Opens the window."},
    {"__exit__", (PyCFunction)(void (*)(void))window_exit, METH_FASTCALL,
     "Closes the innermost window."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef window_getset[] = {
    {"depth", window_get_depth, NULL, "how many times this window is entered now", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot window_slots[] = {
    {Py_tp_doc, "A cubec window (memory mode, run mode or the process-wide dry run) as a "
                "context manager."},
    {Py_tp_dealloc, window_dealloc},
    {Py_tp_traverse, window_traverse},
    {Py_tp_methods, window_methods},
    {Py_tp_getset, window_getset},
    {0, NULL},
};

static PyType_Spec window_spec = {
    .name = "cubec.Window",
    .basicsize = sizeof(pyc_window),
    /* Made by memory_window(), run_window() and dry_run() only: a bare Window has no kind. */
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = window_slots,
};

static PyMethodDef device_methods[] = {
    {"memory_window", (PyCFunction)(void (*)(void))device_memory_window,
     METH_VARARGS | METH_KEYWORDS,
     "memory_window(mode, stream=None): a `with` block in which the buffers `stream` creates are "
     "allocated by mode 'auto', 'persistent' or 'dedicated' (docs/memory.md)."},
    {"run_window", (PyCFunction)(void (*)(void))device_run_window, METH_VARARGS | METH_KEYWORDS,
     "run_window(mode, stream=None): a `with` block in which launches on `stream` are 'dry' "
     "(checked, compiled, dropped) or 'real' (docs/dry-runs.md)."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef window_functions[] = {
    {"dry_run", dry_run, METH_NOARGS,
     "dry_run(): the process-wide dry run (cubec_dry_run_begin/end) as a `with` block."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_window(PyObject *module)
{
    window_type = (PyTypeObject *)PyType_FromSpec(&window_spec);
    if (!window_type) return -1;
    if (PyModule_AddObjectRef(module, "Window", (PyObject *)window_type) < 0) return -1;
    if (PyModule_AddFunctions(module, window_functions) < 0) return -1;
    return pyc_type_add(PYC_DEVICE, device_methods, NULL);
}
