/* cubec.Tuner: autotuning with Python candidates (cubec_tuner_create / cubec_tune_choose /
 * cubec_tune_outcome_get / cubec_tuner_destroy). The Python layer (cubec/tuning.py) turns a
 * dict or list of callables into the (name, callable) pairs this type takes and the result into
 * a named tuple.
 *
 * Each candidate's C `run` calls its Python callable. cubec calls `run` on the thread that called
 * cubec_tune_choose (docs/autotune.md: measuring is ordinary public calls on the caller's
 * thread), and choose() releases the GIL while cubec measures, so `run` takes it back with
 * PyGILState_Ensure. An exception in a candidate becomes the status that rejects it (its type and
 * message are the reason cubec_tune_outcome_get reports); the first such exception is chained to
 * the error choose() raises when every candidate is rejected. */
#include "pycubec.h"

#include <stdio.h>
#include <string.h>

typedef struct pyc_tuner {
    PyObject_HEAD pyc_device *device;
    cubec_tuner *tuner; /* NULL once destroyed */
    PyObject *name;
    uint32_t last_count; /* candidates of the last choose() that reached cubec */
} pyc_tuner;

static PyTypeObject *tuner_type;

/* What one choose() hands its candidates: the callables, the stream to pass, the first
 * exception a candidate raised. */
typedef struct choose_call {
    PyObject *stream_obj; /* NULL: candidates are called with no argument */
    PyObject *first_error;
    cubec_code error_code;
} choose_call;

typedef struct candidate_user {
    choose_call *call;
    PyObject *callable; /* borrowed from the candidates sequence, which choose() holds */
    const char *name;
} candidate_user;

/* The candidate's Python exception as a cubec status: "NAME raised TYPE: MESSAGE". */
static cubec_status status_from_exception(const char *name, PyObject *exc)
{
    PyObject *type_name = PyObject_GetAttrString((PyObject *)Py_TYPE(exc), "__name__");
    PyObject *text = PyObject_Str(exc);
    const char *t = type_name ? PyUnicode_AsUTF8AndSize(type_name, NULL) : NULL;
    const char *m = text ? PyUnicode_AsUTF8AndSize(text, NULL) : NULL;
    PyErr_Clear();
    cubec_status status = cubec_status_new(CUBEC_INVALID_ARGUMENT, "candidate '%s' raised %s: %s",
                                           name, t ? t : "an exception", m ? m : "(no message)");
    Py_XDECREF(type_name);
    Py_XDECREF(text);
    return status;
}

static cubec_status candidate_run(cubec_device *device, cubec_stream stream, void *user)
{
    (void)device;
    (void)stream;
    candidate_user *u = user;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *result;
    if (u->call->stream_obj) {
        PyObject *args = PyTuple_New(0);
        PyObject *kwargs = args ? Py_BuildValue("{s:O}", "stream", u->call->stream_obj) : NULL;
        result = kwargs ? PyObject_Call(u->callable, args, kwargs) : NULL;
        Py_XDECREF(args);
        Py_XDECREF(kwargs);
    } else {
        result = PyObject_CallNoArgs(u->callable);
    }
    cubec_status status = NULL;
    if (result) {
        Py_DECREF(result);
    } else {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb && value) PyException_SetTraceback(value, tb);
        status = status_from_exception(u->name, value ? value : Py_None);
        if (!u->call->first_error && value) {
            u->call->first_error = value;
            value = NULL;
        }
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
    }
    PyGILState_Release(gil);
    return status;
}

static PyObject *tuner_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"device", "name", "warmup", "samples", "memory_only", NULL};
    PyObject *device = NULL, *name = NULL;
    unsigned int warmup = 0, samples = 0;
    int memory_only = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!U|IIp:Tuner", names, pyc.device_type, &device,
                                     &name, &warmup, &samples, &memory_only))
        return NULL;
    cubec_device *dev = pyc_device_handle((pyc_device *)device, "Tuner");
    if (!dev) return NULL;
    const char *text = PyUnicode_AsUTF8AndSize(name, NULL);
    if (!text) return NULL;
    cubec_tuner_desc desc = CUBEC_TUNER_DESC_INIT;
    desc.name = text;
    desc.warmup = warmup;
    desc.samples = samples;
    desc.memory_only = memory_only;
    cubec_tuner *tuner = NULL;
    if (pyc_check(cubec_tuner_create(dev, &desc, &tuner)) < 0) return NULL;
    pyc_tuner *self = (pyc_tuner *)PyType_GenericAlloc(type, 0);
    if (!self) {
        cubec_status_free(cubec_tuner_destroy(tuner));
        return NULL;
    }
    Py_INCREF(device);
    self->device = (pyc_device *)device;
    self->tuner = tuner;
    Py_INCREF(name);
    self->name = name;
    return (PyObject *)self;
}

static const char *source_name(cubec_tune_source source)
{
    switch (source) {
    case CUBEC_TUNE_MEASURED: return "measured";
    case CUBEC_TUNE_MEMORY: return "memory";
    case CUBEC_TUNE_DISK: return "disk";
    case CUBEC_TUNE_SINGLE: return "single";
    }
    return "unknown";
}

static cubec_tuner *tuner_handle(pyc_tuner *self, const char *who)
{
    if (self->tuner) return self->tuner;
    pyc_raise_code(CUBEC_INVALID_ARGUMENT, "%s: the tuner is closed", who);
    return NULL;
}

/* choose(key, candidates, stream=None, checksum=0) -> (index, source, median_ns).
 * `candidates` is a sequence of (name, callable) pairs. */
static PyObject *tuner_choose(PyObject *op, PyObject *args, PyObject *kwargs)
{
    pyc_tuner *self = (pyc_tuner *)op;
    static char *names[] = {"key", "candidates", "stream", "checksum", NULL};
    const char *key = NULL;
    PyObject *candidates = NULL, *stream_obj = Py_None;
    unsigned long long checksum = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sO|OK:choose", names, &key, &candidates,
                                     &stream_obj, &checksum))
        return NULL;
    cubec_tuner *tuner = tuner_handle(self, "choose");
    cubec_device *dev = tuner ? pyc_device_handle(self->device, "choose") : NULL;
    if (!dev) return NULL;
    cubec_stream stream;
    if (pyc_stream_arg(self->device, stream_obj, "choose", &stream) < 0) return NULL;
    PyObject *seq = PySequence_Tuple(candidates);
    if (!seq) return NULL;
    const Py_ssize_t count = PyTuple_Size(seq);
    if (count < 1 || count > (Py_ssize_t)CUBEC_TUNE_MAX_CANDIDATES) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "choose: %zd candidates; 1 to %u are allowed", count,
                     (unsigned)CUBEC_TUNE_MAX_CANDIDATES);
        return NULL;
    }
    cubec_tune_candidate *c = PyMem_Calloc((size_t)count, sizeof *c);
    candidate_user *users = PyMem_Calloc((size_t)count, sizeof *users);
    choose_call call = {.stream_obj = stream_obj == Py_None ? NULL : stream_obj};
    PyObject *result = NULL;
    if (!c || !users) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *pair = PyTuple_GetItem(seq, i);
        PyObject *name = NULL, *callable = NULL;
        if (!PyTuple_Check(pair) || PyTuple_Size(pair) != 2 ||
            !PyUnicode_Check(name = PyTuple_GetItem(pair, 0)) ||
            !PyCallable_Check(callable = PyTuple_GetItem(pair, 1))) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "choose: candidate %zd is not a (name: str, callable) pair", i);
            goto done;
        }
        users[i].call = &call;
        users[i].callable = callable;
        users[i].name = PyUnicode_AsUTF8AndSize(name, NULL);
        if (!users[i].name) goto done;
        c[i].name = users[i].name;
        c[i].run = candidate_run;
        c[i].user = &users[i];
    }
    cubec_tune_request request = CUBEC_TUNE_REQUEST_INIT;
    request.key = key;
    request.candidates = c;
    request.candidate_count = (uint32_t)count;
    request.checksum = checksum;
    cubec_tune_result r = CUBEC_TUNE_RESULT_INIT;
    cubec_status status;
    /* Measuring runs and profiles every candidate (waits for the GPU); the candidates take the
     * GIL back to run their Python code. */
    PYC_WITHOUT_GIL_ON(self->device, status = cubec_tune_choose(tuner, stream, &request, &r));
    self->last_count = (uint32_t)count;
    if (status) {
        pyc_raise(status);
        if (call.first_error) {
            /* Chain the candidate's own exception (with its traceback) as the cause. */
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            if (value) PyException_SetCause(value, Py_NewRef(call.first_error));
            PyErr_Restore(type, value, tb);
        }
        goto done;
    }
    result =
        Py_BuildValue("(IsK)", r.index, source_name(r.source), (unsigned long long)r.median_ns);
done:
    Py_XDECREF(call.first_error);
    PyMem_Free(c);
    PyMem_Free(users);
    Py_DECREF(seq);
    return result;
}

/* outcome(index) -> dict: what the last choose() found of candidate `index`. */
static PyObject *tuner_outcome(PyObject *op, PyObject *arg)
{
    pyc_tuner *self = (pyc_tuner *)op;
    cubec_tuner *tuner = tuner_handle(self, "outcome");
    if (!tuner) return NULL;
    const unsigned long index = PyLong_AsUnsignedLong(arg);
    if (PyErr_Occurred()) return NULL;
    cubec_tune_outcome o = CUBEC_TUNE_OUTCOME_INIT;
    if (pyc_check(cubec_tune_outcome_get(tuner, (uint32_t)index, &o)) < 0) return NULL;
    const char *state = o.state == CUBEC_TUNE_TIMED      ? "timed"
                        : o.state == CUBEC_TUNE_REJECTED ? "rejected"
                                                         : "not_run";
    return Py_BuildValue("{s:s,s:s,s:K,s:K,s:I,s:s}", "state", state, "code",
                         o.state == CUBEC_TUNE_REJECTED ? cubec_code_name(o.code) : "CUBEC_OK",
                         "median_ns", (unsigned long long)o.median_ns, "min_ns",
                         (unsigned long long)o.min_ns, "samples", o.samples, "reason",
                         o.state == CUBEC_TUNE_REJECTED ? o.reason : "");
}

static PyObject *tuner_close(PyObject *op, PyObject *unused)
{
    (void)unused;
    pyc_tuner *self = (pyc_tuner *)op;
    cubec_tuner *tuner = self->tuner;
    if (!tuner) Py_RETURN_NONE;
    /* Refused (and kept) while another thread measures with it; then it stays open. */
    if (pyc_check(cubec_tuner_destroy(tuner)) < 0) return NULL;
    self->tuner = NULL;
    Py_RETURN_NONE;
}

static PyObject *tuner_get_name(PyObject *op, void *closure)
{
    (void)closure;
    return Py_NewRef(((pyc_tuner *)op)->name);
}

static PyObject *tuner_get_device(PyObject *op, void *closure)
{
    (void)closure;
    return Py_NewRef((PyObject *)((pyc_tuner *)op)->device);
}

static int tuner_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT((PyObject *)((pyc_tuner *)op)->device);
    Py_VISIT(Py_TYPE(op));
    return 0;
}

static void tuner_dealloc(PyObject *op)
{
    pyc_tuner *self = (pyc_tuner *)op;
    PyTypeObject *type = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    /* A tuner holds no device object (src/tune/autotune.c frees only its own memory and disk
     * cache), so it is destroyed even after its device closed. Nothing can be measuring: choose()
     * holds a reference to the object while it runs. */
    if (self->tuner) cubec_status_free(cubec_tuner_destroy(self->tuner));
    self->tuner = NULL;
    Py_CLEAR(self->name);
    Py_CLEAR(self->device);
    PyObject_GC_Del(op);
    Py_DECREF(type);
}

static PyMethodDef tuner_methods[] = {
    {"choose", (PyCFunction)(void (*)(void))tuner_choose, METH_VARARGS | METH_KEYWORDS,
     "choose(key, candidates, stream=None, checksum=0) -> (index, source, median_ns): the fastest "
     "of the (name, callable) candidates for `key`."},
    {"outcome", tuner_outcome, METH_O,
     "outcome(index) -> dict: state, code, median_ns, min_ns, samples, reason of candidate "
     "`index` in the last choose()."},
    {"close", tuner_close, METH_NOARGS, "Destroys the tuner (its choices on disk stay)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef tuner_getset[] = {
    {"name", tuner_get_name, NULL, "the tuner's name (its namespace on disk)", NULL},
    {"device", tuner_get_device, NULL, "the Device", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot tuner_slots[] = {
    {Py_tp_doc, "_Tuner(device, name, warmup=0, samples=0, memory_only=False): cubec's autotuner "
                "with Python candidates (use cubec.Tuner)."},
    {Py_tp_new, tuner_new},
    {Py_tp_dealloc, tuner_dealloc},
    {Py_tp_traverse, tuner_traverse},
    {Py_tp_methods, tuner_methods},
    {Py_tp_getset, tuner_getset},
    {0, NULL},
};

static PyType_Spec tuner_spec = {
    .name = "cubec._Tuner",
    .basicsize = sizeof(pyc_tuner),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = tuner_slots,
};

int pyc_register_tune(PyObject *module)
{
    tuner_type = (PyTypeObject *)PyType_FromSpec(&tuner_spec);
    if (!tuner_type) return -1;
    return PyModule_AddObjectRef(module, "_Tuner", (PyObject *)tuner_type);
}
