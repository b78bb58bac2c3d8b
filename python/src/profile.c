/* cubec.Profile: the GPU time of the work a `with` block queues on one stream
 * (cubec_profile_begin / end), abandoned (cubec_profile_abandon) when the block raises.
 *
 *     with dev.profile(stream) as p:
 *         k(a, b, groups=...)
 *     p.result      # {'duration_ns': ..., 'method': 'device', 'begin_ns': ..., 'end_ns': ...}
 *     p.duration_ns # the same duration, the figure most callers want */
#include "pycubec.h"

typedef struct pyc_profile {
    PyObject_HEAD pyc_device *device;
    cubec_stream stream;
    cubec_profile profile; /* the open profile's token; zero outside the block */
    int open, done;
    cubec_profile_result result;
} pyc_profile;

static PyTypeObject *profile_type;

/* dev.profile(stream=None): the object `with` enters. */
static PyObject *device_profile(PyObject *device, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"stream", NULL};
    PyObject *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:profile", names, &stream)) return NULL;
    cubec_stream id;
    if (pyc_stream_arg((pyc_device *)device, stream, "profile", &id) < 0) return NULL;
    pyc_profile *self = (pyc_profile *)PyType_GenericAlloc(profile_type, 0);
    if (!self) return NULL;
    Py_INCREF(device);
    self->device = (pyc_device *)device;
    self->stream = id;
    return (PyObject *)self;
}

static PyObject *profile_enter(PyObject *op, PyObject *unused)
{
    (void)unused;
    pyc_profile *self = (pyc_profile *)op;
    if (self->open)
        return pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                              "profile: this Profile is already open; nest dev.profile() calls "
                              "instead of re-entering one");
    cubec_device *dev = pyc_device_handle(self->device, "profile");
    if (!dev) return NULL;
    cubec_profile profile = {0};
    cubec_status status;
    /* System timing syncs the stream here. */
    PYC_WITHOUT_GIL_ON(self->device, status = cubec_profile_begin(dev, self->stream, &profile));
    if (pyc_check(status) < 0) return NULL;
    self->profile = profile;
    self->open = 1;
    self->done = 0;
    Py_INCREF(op);
    return op;
}

/* Ends the profile (waits for the work), or abandons it when the body raised: a time of work
 * that may not have been queued is never reported. */
static PyObject *profile_exit(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    pyc_profile *self = (pyc_profile *)op;
    const int body_raised = nargs > 0 && args[0] != Py_None;
    if (!self->open) Py_RETURN_FALSE;
    self->open = 0;
    cubec_profile profile = self->profile;
    self->profile.id = 0;
    cubec_device *dev = pyc_device_handle(self->device, "profile");
    if (!dev) {
        /* The device closed inside the block and took the profile with it. */
        if (!body_raised) return NULL;
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    if (body_raised) {
        cubec_status_free(cubec_profile_abandon(dev, self->stream, profile));
        Py_RETURN_FALSE;
    }
    cubec_profile_result result = CUBEC_PROFILE_RESULT_INIT;
    cubec_status status;
    PYC_WITHOUT_GIL_ON(self->device,
                       status = cubec_profile_end(dev, self->stream, profile, &result));
    if (pyc_check(status) < 0) return NULL;
    self->result = result;
    self->done = 1;
    Py_RETURN_FALSE;
}

static int profile_require_done(pyc_profile *self)
{
    if (self->done) return 0;
    pyc_raise_code(CUBEC_INVALID_ARGUMENT, "profile: no result yet: %s",
                   self->open ? "the `with` block is still open" : "the profile never ended");
    return -1;
}

static PyObject *profile_get_result(PyObject *op, void *closure)
{
    (void)closure;
    pyc_profile *self = (pyc_profile *)op;
    if (profile_require_done(self) < 0) return NULL;
    const char *method = self->result.method == CUBEC_TIMING_DEVICE ? "device" : "system";
    return Py_BuildValue("{s:K,s:s,s:K,s:K}", "duration_ns",
                         (unsigned long long)self->result.duration_ns, "method", method, "begin_ns",
                         (unsigned long long)self->result.begin_ns, "end_ns",
                         (unsigned long long)self->result.end_ns);
}

static PyObject *profile_get_duration_ns(PyObject *op, void *closure)
{
    (void)closure;
    pyc_profile *self = (pyc_profile *)op;
    if (profile_require_done(self) < 0) return NULL;
    return PyLong_FromUnsignedLongLong(self->result.duration_ns);
}

static int profile_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT((PyObject *)((pyc_profile *)op)->device);
    Py_VISIT(Py_TYPE(op));
    return 0;
}

static void profile_dealloc(PyObject *op)
{
    pyc_profile *self = (pyc_profile *)op;
    PyTypeObject *type = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    /* A block never exited (a generator dropped mid-body): drop the profile, measure nothing. */
    if (self->open && self->device && self->device->dev)
        cubec_status_free(cubec_profile_abandon(self->device->dev, self->stream, self->profile));
    Py_CLEAR(self->device);
    PyObject_GC_Del(op);
    Py_DECREF(type);
}

static PyMethodDef profile_methods[] = {
    {"__enter__", profile_enter, METH_NOARGS, "Starts the profile (cubec_profile_begin)."},
    {"__exit__", (PyCFunction)(void (*)(void))profile_exit, METH_FASTCALL,
     "Ends the profile (cubec_profile_end), or abandons it if the body raised."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef profile_getset[] = {
    {"result", profile_get_result, NULL,
     "dict of cubec_profile_result: duration_ns, method ('device' or 'system'), begin_ns, "
     "end_ns (CLOCK_MONOTONIC)",
     NULL},
    {"duration_ns", profile_get_duration_ns, NULL, "the GPU time of the block's work", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot profile_slots[] = {
    {Py_tp_doc, "The GPU time of the work a `with dev.profile(stream) as p:` block queues."},
    {Py_tp_dealloc, profile_dealloc},
    {Py_tp_traverse, profile_traverse},
    {Py_tp_methods, profile_methods},
    {Py_tp_getset, profile_getset},
    {0, NULL},
};

static PyType_Spec profile_spec = {
    .name = "cubec.Profile",
    .basicsize = sizeof(pyc_profile),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = profile_slots,
};

static PyMethodDef device_methods[] = {
    {"profile", (PyCFunction)(void (*)(void))device_profile, METH_VARARGS | METH_KEYWORDS,
     "profile(stream=None): a Profile of the work a `with` block queues on `stream` "
     "(cubec_profile_begin / end; abandoned if the block raises)."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_profile(PyObject *module)
{
    profile_type = (PyTypeObject *)PyType_FromSpec(&profile_spec);
    if (!profile_type) return -1;
    if (PyModule_AddObjectRef(module, "Profile", (PyObject *)profile_type) < 0) return -1;
    return pyc_type_add(PYC_DEVICE, device_methods, NULL);
}
