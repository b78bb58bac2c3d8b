/* cubec.Communicator: collectives between the devices of one process (cubec_comm_*, docs/python.md
 * "Several devices"). It holds its devices (a strong reference and a hold each: a close() of one
 * meanwhile is deferred until the communicator is closed or collected, since cubec_comm_destroy
 * needs them open) and checks in Python what cubec cannot see from handles alone: that rank r's
 * buffer and stream are of devices[r], and that the buffers' numpy dtypes agree. */
#include <stdlib.h>

#include "pycubec.h"

typedef struct pyc_comm {
    PyObject ob_base;
    cubec_comm *comm;  /* NULL once closed */
    PyObject *devices; /* tuple of pyc_device, rank order */
    uint32_t n;
} pyc_comm;

static PyTypeObject *comm_type;

/* The most ranks a call takes from Python (its per-rank arrays live on the stack). */
#define PYC_MAX_RANKS 64

/* Ends the communicator and drops the holds (which may run a deferred close). */
static void comm_close_now(pyc_comm *c)
{
    if (!c->comm) {
        return;
    }
    cubec_comm *comm = c->comm;
    c->comm = NULL;
    /* Queued collectives still run; destroying waits for nothing. */
    cubec_comm_destroy(comm);
    for (uint32_t r = 0; r < c->n; r++) {
        pyc_device_drop_hold((pyc_device *)PyTuple_GetItem(c->devices, r));
    }
}

/* cubec.Communicator(devices): ranks are the devices in the order given. */
static PyObject *comm_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"devices", NULL};
    PyObject *seq = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Communicator", names, &seq)) {
        return NULL;
    }
    PyObject *devices = PySequence_Tuple(seq);
    if (!devices) {
        PyErr_Clear();
        return PyErr_Format(
            PyExc_TypeError,
            "cubec.Communicator: devices must be a sequence of cubec.Device, not %R", seq);
    }
    Py_ssize_t n = PyTuple_Size(devices);
    if (n > PYC_MAX_RANKS) {
        Py_DECREF(devices);
        return pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                              "cubec.Communicator: %zd devices, at most %d from Python", n,
                              PYC_MAX_RANKS);
    }
    cubec_device **handles = calloc(n ? (size_t)n : 1, sizeof(cubec_device *));
    if (!handles) {
        Py_DECREF(devices);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t r = 0; r < n; r++) {
        PyObject *d = PyTuple_GetItem(devices, r);
        if (Py_TYPE(d) != pyc.device_type) {
            free(handles);
            Py_DECREF(devices);
            return PyErr_Format(PyExc_TypeError,
                                "cubec.Communicator: devices[%zd] must be a cubec.Device, not %R",
                                r, d);
        }
        handles[r] = pyc_device_handle((pyc_device *)d, "cubec.Communicator");
        if (!handles[r]) {
            free(handles);
            Py_DECREF(devices);
            return NULL;
        }
    }
    cubec_comm *comm = NULL;
    cubec_status st = cubec_comm_create(handles, (uint32_t)n, &comm);
    free(handles);
    if (pyc_check(st) < 0) {
        Py_DECREF(devices);
        return NULL;
    }
    pyc_comm *c = (pyc_comm *)PyType_GenericAlloc(type, 0);
    if (!c) {
        cubec_comm_destroy(comm);
        Py_DECREF(devices);
        return NULL;
    }
    c->comm = comm;
    c->devices = devices;
    c->n = (uint32_t)n;
    for (Py_ssize_t r = 0; r < n; r++) {
        pyc_device_take_hold((pyc_device *)PyTuple_GetItem(devices, r));
    }
    return (PyObject *)c;
}

static void comm_dealloc(PyObject *self)
{
    pyc_comm *c = (pyc_comm *)self;
    PyTypeObject *tp = Py_TYPE(self);
    comm_close_now(c);
    Py_XDECREF(c->devices);
    freefunc free_fn = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    free_fn(self);
    Py_DECREF(tp);
}

/* The communicator's handle, or NULL with an error naming `who` (closed, or a device closed). */
static cubec_comm *live(pyc_comm *c, const char *who)
{
    if (!c->comm) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT, "%s: the communicator was closed", who);
        return NULL;
    }
    for (uint32_t r = 0; r < c->n; r++) {
        if (!pyc_device_handle((pyc_device *)PyTuple_GetItem(c->devices, r), who)) {
            return NULL;
        }
    }
    return c->comm;
}

/* One buffer per rank, each of that rank's device, all of one dtype (returned, borrowed, in
 * *io_dtype when it is NULL on entry; else checked against it). ids[r] gets the handles and
 * elems[r] each buffer's element count. */
static int rank_buffers(pyc_comm *c, PyObject *obj, const char *who, const char *arg,
                        cubec_buffer *ids, PyObject **io_dtype, uint64_t *elems)
{
    PyObject *seq = PySequence_Tuple(obj);
    if (!seq) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: %s must be a sequence of cubec.Buffer, one per rank",
                     who, arg);
        return -1;
    }
    int result = -1;
    Py_ssize_t n = PyTuple_Size(seq);
    if ((uint32_t)n != c->n) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                       "%s: %s holds %zd buffers, the communicator has %u ranks", who, arg, n,
                       c->n);
        goto done;
    }
    for (Py_ssize_t r = 0; r < n; r++) {
        PyObject *item = PyTuple_GetItem(seq, r);
        if (Py_TYPE(item) != pyc.buffer_type) {
            PyErr_Format(PyExc_TypeError, "%s: %s[%zd] must be a cubec.Buffer, not %R", who, arg, r,
                         item);
            goto done;
        }
        pyc_buffer *b = (pyc_buffer *)item;
        if ((PyObject *)b->device != PyTuple_GetItem(c->devices, r)) {
            /* Two opens of one GPU print alike: name the rank whose device it is. */
            Py_ssize_t owner = -1;
            for (uint32_t i = 0; i < c->n && owner < 0; i++) {
                if (PyTuple_GetItem(c->devices, i) == (PyObject *)b->device) {
                    owner = i;
                }
            }
            if (owner >= 0) {
                pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                               "%s: %s[%zd] is a buffer of rank %zd's device, not rank %zd's", who,
                               arg, r, owner, r);
            } else {
                pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                               "%s: %s[%zd] is a buffer of a device outside the communicator", who,
                               arg, r);
            }
            goto done;
        }
        if (!b->buf.id) {
            pyc_raise_code(CUBEC_INVALID_ARGUMENT, "%s: %s[%zd] was released", who, arg, r);
            goto done;
        }
        Py_ssize_t itemsize = pyc_itemsize(b->dtype);
        if (itemsize <= 0) {
            goto done;
        }
        elems[r] = b->size / (uint64_t)itemsize;
        if (!*io_dtype) {
            *io_dtype = b->dtype;
        } else {
            int eq = PyObject_RichCompareBool(b->dtype, *io_dtype, Py_EQ);
            if (eq < 0) {
                goto done;
            }
            if (!eq) {
                PyErr_Format(PyExc_TypeError, "%s: %s[%zd] holds %R, the others %R", who, arg, r,
                             b->dtype, *io_dtype);
                goto done;
            }
        }
        ids[r] = b->buf;
    }
    result = 0;
done:
    Py_DECREF(seq);
    return result;
}

/* streams= : None (every rank's calling-thread stream) or one entry per rank, each None or a
 * cubec.Stream of that rank's device. */
static int rank_streams(pyc_comm *c, PyObject *obj, const char *who, cubec_stream *ids)
{
    if (!obj || obj == Py_None) {
        for (uint32_t r = 0; r < c->n; r++) {
            ids[r] = CUBEC_STREAM_CURRENT;
        }
        return 0;
    }
    PyObject *seq = PySequence_Tuple(obj);
    if (!seq) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: streams must be None or a sequence, one per rank", who);
        return -1;
    }
    Py_ssize_t n = PyTuple_Size(seq);
    int result = 0;
    if ((uint32_t)n != c->n) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                       "%s: streams holds %zd entries, the communicator has %u ranks", who, n,
                       c->n);
        result = -1;
    }
    for (Py_ssize_t r = 0; r < n && result == 0; r++) {
        result = pyc_stream_arg((pyc_device *)PyTuple_GetItem(c->devices, r),
                                PyTuple_GetItem(seq, r), who, &ids[r]);
    }
    Py_DECREF(seq);
    return result;
}

/* The cubec_dtype of a numpy dtype (float32, float16, int32). */
static int dtype_arg(PyObject *dtype, const char *who, cubec_dtype *out)
{
    static const struct {
        const char *name;
        int value;
    } known[] = {{"float32", 1}, {"float16", 2}, {"int32", 3}};
    PyObject *name = PyObject_GetAttrString(dtype, "name");
    if (!name) {
        return -1;
    }
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (PyUnicode_CompareWithASCIIString(name, known[i].name) == 0) {
            Py_DECREF(name);
            *out = (cubec_dtype)known[i].value;
            return 0;
        }
    }
    PyErr_Format(PyExc_TypeError,
                 "%s: the buffers hold %U; collectives take float32, float16 or "
                 "int32",
                 who, name);
    Py_DECREF(name);
    return -1;
}

static int op_arg(PyObject *obj, const char *who, cubec_reduce_op *out)
{
    *out = CUBEC_REDUCE_SUM;
    if (!obj || obj == Py_None) {
        return 0;
    }
    if (PyUnicode_Check(obj) && PyUnicode_CompareWithASCIIString(obj, "sum") == 0) {
        return 0;
    }
    if (PyUnicode_Check(obj) && PyUnicode_CompareWithASCIIString(obj, "max") == 0) {
        *out = CUBEC_REDUCE_MAX;
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "%s: op must be 'sum' or 'max', got %R", who, obj);
    return -1;
}

/* count= : None (the default given) or an int >= 0. */
static int count_arg(PyObject *obj, const char *who, const char *arg, uint64_t *io)
{
    if (!obj || obj == Py_None) {
        return 0;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(obj);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        pyc_raise_code(CUBEC_INVALID_ARGUMENT, "%s: %s must be an int >= 0, got %R", who, arg, obj);
        return -1;
    }
    *io = v;
    return 0;
}

/* comm.all_reduce(buffers, op="sum", count=None, streams=None): in place on every rank
 * (cubec_comm_all_reduce); count defaults to buffers[0]'s element count. */
static PyObject *comm_all_reduce(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames)
{
    static const char *const who = "Communicator.all_reduce";
    pyc_comm *c = (pyc_comm *)self;
    static const char *const names[] = {"buffers", "op", "count", "streams", NULL};
    PyObject *kw[4];
    if (pyc_args(who, args, nargs, kwnames, names, 2, 1, kw) < 0 || !live(c, who)) {
        return NULL;
    }
    cubec_buffer ids[PYC_MAX_RANKS];
    cubec_stream streams[PYC_MAX_RANKS];
    uint64_t elems[PYC_MAX_RANKS] = {0};
    PyObject *dtype = NULL;
    cubec_dtype dt;
    cubec_reduce_op op;
    if (rank_buffers(c, kw[0], who, "buffers", ids, &dtype, elems) < 0 ||
        dtype_arg(dtype, who, &dt) < 0 || op_arg(kw[1], who, &op) < 0) {
        return NULL;
    }
    uint64_t count = elems[0];
    if (count_arg(kw[2], who, "count", &count) < 0 || rank_streams(c, kw[3], who, streams) < 0) {
        return NULL;
    }
    /* Kept under the GIL, as every enqueue is: another thread's close() cannot destroy the
     * communicator meanwhile. Only the first reduction compiles (its kernel, on rank 0). */
    cubec_status st = cubec_comm_all_reduce(c->comm, ids, streams, count, dt, op);
    if (pyc_check(st) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* root= and rank= : an int >= 0 (cubec refuses one past the ranks, by name). */
static int rank_arg(PyObject *obj, const char *who, const char *arg, uint32_t *out)
{
    uint64_t v = *out;
    if (count_arg(obj, who, arg, &v) < 0) {
        return -1;
    }
    if (v > UINT32_MAX) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT, "%s: %s %R is past any rank", who, arg, obj);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

/* comm.broadcast(buffers, root=0, count=None, streams=None): buffers[root]'s first count elements
 * (default: all of buffers[root]) into every other rank's buffer (cubec_comm_broadcast). */
static PyObject *comm_broadcast(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames)
{
    static const char *const who = "Communicator.broadcast";
    pyc_comm *c = (pyc_comm *)self;
    static const char *const names[] = {"buffers", "root", "count", "streams", NULL};
    PyObject *kw[4];
    if (pyc_args(who, args, nargs, kwnames, names, 2, 1, kw) < 0 || !live(c, who)) {
        return NULL;
    }
    cubec_buffer ids[PYC_MAX_RANKS];
    cubec_stream streams[PYC_MAX_RANKS];
    uint64_t elems[PYC_MAX_RANKS] = {0};
    PyObject *dtype = NULL;
    cubec_dtype dt;
    uint32_t root = 0;
    if (rank_buffers(c, kw[0], who, "buffers", ids, &dtype, elems) < 0 ||
        dtype_arg(dtype, who, &dt) < 0 || rank_arg(kw[1], who, "root", &root) < 0) {
        return NULL;
    }
    uint64_t count = root < c->n ? elems[root] : 0;
    if (count_arg(kw[2], who, "count", &count) < 0 || rank_streams(c, kw[3], who, streams) < 0) {
        return NULL;
    }
    if (pyc_check(cubec_comm_broadcast(c->comm, ids, streams, count, dt, root)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* The inputs and outputs of all_gather and reduce_scatter: two buffers per rank, one dtype. */
static int in_out_buffers(pyc_comm *c, PyObject *in, PyObject *out, const char *who,
                          cubec_buffer *in_ids, cubec_buffer *out_ids, uint64_t *in_elems,
                          uint64_t *out_elems, cubec_dtype *dt)
{
    PyObject *dtype = NULL;
    if (rank_buffers(c, in, who, "inputs", in_ids, &dtype, in_elems) < 0 ||
        rank_buffers(c, out, who, "outputs", out_ids, &dtype, out_elems) < 0) {
        return -1;
    }
    return dtype_arg(dtype, who, dt);
}

/* comm.all_gather(inputs, outputs, total=None, streams=None): every rank's shard of total
 * elements (comm.shard; inputs[r] holds rank r's) into every outputs[q] at its offset
 * (cubec_comm_all_gather); total defaults to outputs[0]'s elements. */
static PyObject *comm_all_gather(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames)
{
    static const char *const who = "Communicator.all_gather";
    pyc_comm *c = (pyc_comm *)self;
    static const char *const names[] = {"inputs", "outputs", "total", "streams", NULL};
    PyObject *kw[4];
    if (pyc_args(who, args, nargs, kwnames, names, 2, 2, kw) < 0 || !live(c, who)) {
        return NULL;
    }
    cubec_buffer in[PYC_MAX_RANKS], out[PYC_MAX_RANKS];
    cubec_stream streams[PYC_MAX_RANKS];
    uint64_t in_elems[PYC_MAX_RANKS] = {0}, out_elems[PYC_MAX_RANKS] = {0};
    cubec_dtype dt;
    if (in_out_buffers(c, kw[0], kw[1], who, in, out, in_elems, out_elems, &dt) < 0) {
        return NULL;
    }
    uint64_t total = out_elems[0];
    if (count_arg(kw[2], who, "total", &total) < 0 || rank_streams(c, kw[3], who, streams) < 0) {
        return NULL;
    }
    if (pyc_check(cubec_comm_all_gather(c->comm, in, out, streams, total, dt)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* comm.reduce_scatter(inputs, outputs, op="sum", total=None, streams=None): op over the ranks of
 * inputs[r] (total elements each; default: inputs[0]'s), rank r's shard into outputs[r]
 * (cubec_comm_reduce_scatter). */
static PyObject *comm_reduce_scatter(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                     PyObject *kwnames)
{
    static const char *const who = "Communicator.reduce_scatter";
    pyc_comm *c = (pyc_comm *)self;
    static const char *const names[] = {"inputs", "outputs", "op", "total", "streams", NULL};
    PyObject *kw[5];
    if (pyc_args(who, args, nargs, kwnames, names, 3, 2, kw) < 0 || !live(c, who)) {
        return NULL;
    }
    cubec_buffer in[PYC_MAX_RANKS], out[PYC_MAX_RANKS];
    cubec_stream streams[PYC_MAX_RANKS];
    uint64_t in_elems[PYC_MAX_RANKS] = {0}, out_elems[PYC_MAX_RANKS] = {0};
    cubec_dtype dt;
    cubec_reduce_op op;
    if (in_out_buffers(c, kw[0], kw[1], who, in, out, in_elems, out_elems, &dt) < 0 ||
        op_arg(kw[2], who, &op) < 0) {
        return NULL;
    }
    uint64_t total = in_elems[0];
    if (count_arg(kw[3], who, "total", &total) < 0 || rank_streams(c, kw[4], who, streams) < 0) {
        return NULL;
    }
    if (pyc_check(cubec_comm_reduce_scatter(c->comm, in, out, streams, total, dt, op)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* comm.shard(total, rank) -> (offset, count): rank's part of total elements in all_gather and
 * reduce_scatter (cubec_comm_shard). */
static PyObject *comm_shard(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    static const char *const who = "Communicator.shard";
    pyc_comm *c = (pyc_comm *)self;
    static const char *const names[] = {"total", "rank", NULL};
    PyObject *kw[2];
    uint64_t total = 0, offset = 0, count = 0;
    uint32_t rank = 0;
    if (pyc_args(who, args, nargs, kwnames, names, 2, 2, kw) < 0 || !live(c, who) ||
        count_arg(kw[0], who, "total", &total) < 0 || rank_arg(kw[1], who, "rank", &rank) < 0 ||
        pyc_check(cubec_comm_shard(c->comm, total, rank, &offset, &count)) < 0) {
        return NULL;
    }
    return Py_BuildValue("(KK)", (unsigned long long)offset, (unsigned long long)count);
}

static PyObject *comm_close(PyObject *self, PyObject *unused)
{
    (void)unused;
    comm_close_now((pyc_comm *)self);
    Py_RETURN_NONE;
}

static PyObject *comm_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

static PyObject *comm_exit(PyObject *self, PyObject *args)
{
    (void)args;
    comm_close_now((pyc_comm *)self);
    Py_RETURN_FALSE;
}

static PyObject *comm_get_devices(PyObject *self, void *closure)
{
    (void)closure;
    PyObject *v = ((pyc_comm *)self)->devices;
    Py_INCREF(v);
    return v;
}

static PyObject *comm_get_size(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(((pyc_comm *)self)->n);
}

static PyObject *comm_get_transport(PyObject *self, void *closure)
{
    (void)closure;
    pyc_comm *c = (pyc_comm *)self;
    cubec_comm_info info = CUBEC_COMM_INFO_INIT;
    if (!live(c, "Communicator.transport") || pyc_check(cubec_comm_get_info(c->comm, &info)) < 0) {
        return NULL;
    }
    return PyUnicode_FromString(info.transport);
}

static PyObject *comm_get_transport_reason(PyObject *self, void *closure)
{
    (void)closure;
    pyc_comm *c = (pyc_comm *)self;
    cubec_comm_info info = CUBEC_COMM_INFO_INIT;
    if (!live(c, "Communicator.transport_reason") ||
        pyc_check(cubec_comm_get_info(c->comm, &info)) < 0) {
        return NULL;
    }
    return PyUnicode_FromString(info.transport_reason);
}

static PyObject *comm_get_closed(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(((pyc_comm *)self)->comm == NULL);
}

#define PYC_FAST(fn) (PyCFunction)(void (*)(void))(fn), METH_FASTCALL | METH_KEYWORDS

static PyMethodDef comm_methods[] = {
    {"all_reduce", PYC_FAST(comm_all_reduce),
     "all_reduce(buffers, op='sum', count=None, streams=None): in place on every rank, "
     "buffers[r] of devices[r]; count defaults to buffers[0]'s elements."},
    {"broadcast", PYC_FAST(comm_broadcast),
     "broadcast(buffers, root=0, count=None, streams=None): buffers[root] into every rank's; "
     "count defaults to buffers[root]'s elements."},
    {"all_gather", PYC_FAST(comm_all_gather),
     "all_gather(inputs, outputs, total=None, streams=None): every rank's shard (shard()) of "
     "total elements into every output; total defaults to outputs[0]'s elements."},
    {"reduce_scatter", PYC_FAST(comm_reduce_scatter),
     "reduce_scatter(inputs, outputs, op='sum', total=None, streams=None): op over the ranks' "
     "inputs, rank r's shard into outputs[r]; total defaults to inputs[0]'s elements."},
    {"shard", PYC_FAST(comm_shard),
     "shard(total, rank) -> (offset, count): rank's part of total elements."},
    {"close", comm_close, METH_NOARGS, "Frees the communicator (queued collectives still run)."},
    {"__enter__", comm_enter, METH_NOARGS, NULL},
    {"__exit__", comm_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef comm_getset[] = {
    {"devices", comm_get_devices, NULL, "The devices, in rank order.", NULL},
    {"size", comm_get_size, NULL, "The number of ranks.", NULL},
    {"closed", comm_get_closed, NULL, "Whether close() ran.", NULL},
    {"transport", comm_get_transport, NULL,
     "The transport cubec chose at creation ('nccl' or 'ring').", NULL},
    {"transport_reason", comm_get_transport_reason, NULL,
     "Why the transports before the chosen one were not taken ('' when the first was).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot comm_slots[] = {
    {Py_tp_new, comm_new},
    {Py_tp_dealloc, comm_dealloc},
    {Py_tp_methods, comm_methods},
    {Py_tp_getset, comm_getset},
    {Py_tp_doc, "Communicator(devices): collectives between open devices of this process; rank r "
                "is devices[r]."},
    {0, NULL},
};

static PyType_Spec comm_spec = {"cubec.Communicator", sizeof(pyc_comm), 0, Py_TPFLAGS_DEFAULT,
                                comm_slots};

int pyc_register_comm(PyObject *module)
{
    comm_type = (PyTypeObject *)PyType_FromSpec(&comm_spec);
    if (!comm_type) {
        return -1;
    }
    Py_INCREF((PyObject *)comm_type);
    if (PyModule_AddObject(module, "Communicator", (PyObject *)comm_type) < 0) {
        Py_DECREF((PyObject *)comm_type);
        return -1;
    }
    return 0;
}
