/* Launches: k(*buffers, groups=, info=, stream=, address_reads=, address_writes=) as one vectorcall
 * with the GIL kept (the enqueue does not block), and pre-bound launches, l = k.bind(...) then l()
 * or l(info=...), which skip the argument conversion on every call. */
#include <string.h>

#include "pycubec.h"
#include "structmember.h"

int pyc_groups_arg(PyObject *obj, uint32_t out[3])
{
    out[0] = out[1] = out[2] = 1;
    if (!obj) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT, "launch: groups= is required");
        return -1;
    }
    if (PyLong_Check(obj)) {
        unsigned long v = PyLong_AsUnsignedLong(obj);
        if (PyErr_Occurred() || v > UINT32_MAX) {
            PyErr_Clear();
            pyc_raise_code(CUBEC_INVALID_ARGUMENT, "launch: groups %R is not a uint32", obj);
            return -1;
        }
        out[0] = (uint32_t)v;
        return 0;
    }
    if (!PyTuple_Check(obj) && !PyList_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "launch: groups must be an int or 1-3 ints, not %R", obj);
        return -1;
    }
    Py_ssize_t n = PySequence_Size(obj);
    if (n < 1 || n > 3) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT, "launch: groups %R must hold 1 to 3 counts", obj);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_GetItem(obj, i);
        unsigned long v = item && PyLong_Check(item) ? PyLong_AsUnsignedLong(item) : ~0ul;
        Py_XDECREF(item);
        if (PyErr_Occurred() || v > UINT32_MAX) {
            PyErr_Clear();
            pyc_raise_code(CUBEC_INVALID_ARGUMENT, "launch: groups %R must hold uint32 counts",
                           obj);
            return -1;
        }
        out[i] = (uint32_t)v;
    }
    return 0;
}

/* info= : None, bytes, anything with the buffer protocol (a numpy record or array), or a dict
 * of the block's members by name (info.c). `hold` keeps the bytes until pyc_info_release. */
int pyc_info_arg(pyc_kernel *kernel, PyObject *obj, const void **out_ptr, uint32_t *out_size,
                 pyc_info_hold *hold)
{
    hold->view.obj = NULL;
    hold->heap = NULL;
    *out_ptr = NULL;
    *out_size = 0;
    if (!obj || obj == Py_None) {
        return 0;
    }
    if (PyBytes_Check(obj)) {
        char *p;
        Py_ssize_t n;
        if (PyBytes_AsStringAndSize(obj, &p, &n) < 0) {
            return -1;
        }
        *out_ptr = p;
        *out_size = (uint32_t)n;
        return 0;
    }
    if (PyDict_Check(obj)) {
        uint32_t size = kernel->info.info_size;
        unsigned char *block = hold->local;
        if (size > sizeof hold->local) {
            block = hold->heap = PyMem_Malloc(size);
            if (!block) {
                PyErr_NoMemory();
                return -1;
            }
        }
        memset(block, 0, size);
        if (pyc_info_from_dict(kernel, obj, block) < 0) {
            return -1;
        }
        *out_ptr = block;
        *out_size = size;
        return 0;
    }
    if (PyObject_GetBuffer(obj, &hold->view, PyBUF_C_CONTIGUOUS) < 0) {
        hold->view.obj = NULL;
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "launch of %R: info must be bytes, a numpy record or array, or a dict, not %R",
                     kernel->name, obj);
        return -1;
    }
    *out_ptr = hold->view.buf;
    *out_size = (uint32_t)hold->view.len;
    return 0;
}

void pyc_info_release(pyc_info_hold *hold)
{
    if (hold->view.obj) {
        PyBuffer_Release(&hold->view);
        hold->view.obj = NULL;
    }
    PyMem_Free(hold->heap);
    hold->heap = NULL;
}

void pyc_launch_args_done(pyc_launch_args *args)
{
    pyc_info_release(&args->info);
}

int pyc_launch_parse(pyc_kernel *kernel, PyObject *const *args, Py_ssize_t nargs, PyObject *groups,
                     PyObject *info, PyObject *stream, pyc_launch_args *out)
{
    out->info.view.obj = NULL;
    out->info.heap = NULL;
    if (!kernel->kernel.id || !kernel->device->dev || kernel->device->close_pending) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT, "launch of %R: the %s", kernel->name,
                       kernel->kernel.id ? "device is closed" : "kernel was destroyed");
        return -1;
    }
    if (nargs > 32) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT, "launch of %R: %zd buffers, at most 32",
                       kernel->name, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *b = args[i];
        if (Py_TYPE(b) != pyc.buffer_type) {
            PyErr_Format(PyExc_TypeError, "launch of %R: argument %zd is not a cubec.Buffer: %R",
                         kernel->name, i, b);
            return -1;
        }
        if (((pyc_buffer *)b)->device != kernel->device) {
            pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                           "launch of %R: buffer %zd belongs to another device", kernel->name, i);
            return -1;
        }
        out->ids[i] = ((pyc_buffer *)b)->buf;
    }
    out->desc = (cubec_launch_desc)CUBEC_LAUNCH_DESC_INIT;
    out->desc.kernel = kernel->kernel;
    out->desc.buffers = out->ids;
    out->desc.buffer_count = (uint32_t)nargs;
    if (pyc_groups_arg(groups, out->desc.groups) < 0 ||
        pyc_stream_arg(kernel->device, stream, "launch", &out->stream) < 0 ||
        pyc_info_arg(kernel, info, &out->desc.info, &out->desc.info_size, &out->info) < 0) {
        return -1;
    }
    return 0;
}

/* The keyword arguments of a launch (NULL when absent, borrowed). */
typedef struct launch_kw {
    PyObject *groups, *info, *stream, *address_reads, *address_writes;
} launch_kw;

/* The launch's keyword arguments; interned names match by identity first. */
static int launch_kwargs(PyObject *kwnames, PyObject *const *kwvalues, launch_kw *kw)
{
    Py_ssize_t n = PyTuple_Size(kwnames);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = PyTuple_GetItem(kwnames, i);
        PyObject **slot = key == pyc.str_groups   ? &kw->groups
                          : key == pyc.str_info   ? &kw->info
                          : key == pyc.str_stream ? &kw->stream
                                                  : NULL;
        if (!slot) {
            slot =
                PyUnicode_CompareWithASCIIString(key, "groups") == 0           ? &kw->groups
                : PyUnicode_CompareWithASCIIString(key, "info") == 0           ? &kw->info
                : PyUnicode_CompareWithASCIIString(key, "stream") == 0         ? &kw->stream
                : PyUnicode_CompareWithASCIIString(key, "address_reads") == 0  ? &kw->address_reads
                : PyUnicode_CompareWithASCIIString(key, "address_writes") == 0 ? &kw->address_writes
                                                                               : NULL;
        }
        if (!slot) {
            PyErr_Format(PyExc_TypeError, "launch got an unexpected keyword argument '%U'", key);
            return -1;
        }
        *slot = kwvalues[i];
    }
    return 0;
}

/* address_reads= / address_writes=: the Buffers the kernel reaches through device addresses
 * (cubec_launch_desc.address_buffers, docs/kernels.md); one in both lists is read and written.
 * They follow the `nargs` bound buffers in out->ids. */
static int address_args(pyc_kernel *k, Py_ssize_t nargs, const launch_kw *kw, pyc_launch_args *out)
{
    static const char *const names[2] = {"address_reads", "address_writes"};
    PyObject *given[2] = {kw->address_reads, kw->address_writes};
    uint32_t count = 0, masks[2] = {0, 0};
    for (int w = 0; w < 2; w++) {
        if (!given[w] || given[w] == Py_None) {
            continue;
        }
        PyObject *items = PySequence_Tuple(given[w]);
        if (!items) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "launch of %R: %s must be a sequence of cubec.Buffer, "
                         "not %R",
                         k->name, names[w], given[w]);
            return -1;
        }
        for (Py_ssize_t i = 0; i < PyTuple_Size(items); i++) {
            PyObject *b = PyTuple_GetItem(items, i);
            if (Py_TYPE(b) != pyc.buffer_type || ((pyc_buffer *)b)->device != k->device) {
                int other = Py_TYPE(b) == pyc.buffer_type;
                Py_DECREF(items);
                if (other) {
                    pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                                   "launch of %R: %s[%zd] belongs to another device", k->name,
                                   names[w], i);
                } else {
                    PyErr_Format(PyExc_TypeError, "launch of %R: %s[%zd] is not a cubec.Buffer: %R",
                                 k->name, names[w], i, b);
                }
                return -1;
            }
            uint32_t j = 0;
            while (j < count && out->addressed[j] != b) {
                j++;
            }
            if (j == count) {
                if (nargs + (Py_ssize_t)count >= 32) {
                    Py_DECREF(items);
                    pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                                   "launch of %R: more than 32 buffers bound and reached by "
                                   "address",
                                   k->name);
                    return -1;
                }
                /* The tuple holds the items only until here; the call's arguments hold them
                 * for the launch (and bind keeps them). */
                out->addressed[count] = b;
                out->ids[nargs + count] = ((pyc_buffer *)b)->buf;
                count++;
            }
            masks[w] |= 1u << j;
        }
        Py_DECREF(items);
    }
    out->desc.address_buffers = out->ids + nargs;
    out->desc.address_buffer_count = count;
    out->desc.address_reads = masks[0];
    out->desc.address_writes = masks[1];
    return 0;
}

/* The arguments of k(...) and of k.bind(...), which take the same ones: buffers by position,
 * groups=, info= and stream= by keyword, converted into `out`. On failure `out` is released
 * already; on success the caller releases it (pyc_launch_args_done). `stream_obj` gets the
 * stream= object (borrowed, NULL when absent), which a bound launch keeps alive. */
static int launch_args(pyc_kernel *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                       pyc_launch_args *out, PyObject **stream_obj)
{
    launch_kw kw = {NULL, NULL, NULL, NULL, NULL};
    out->info.view.obj = NULL;
    out->info.heap = NULL;
    if ((kwnames && launch_kwargs(kwnames, args + nargs, &kw) < 0) ||
        pyc_launch_parse(k, args, nargs, kw.groups, kw.info, kw.stream, out) < 0 ||
        ((kw.address_reads || kw.address_writes) && address_args(k, nargs, &kw, out) < 0)) {
        pyc_launch_args_done(out);
        return -1;
    }
    *stream_obj = kw.stream;
    return 0;
}

PyObject *pyc_kernel_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    pyc_kernel *k = (pyc_kernel *)self;
    Py_ssize_t nargs = PYC_NARGS(nargsf);
    pyc_launch_args a;
    PyObject *stream = NULL;
    if (launch_args(k, args, nargs, kwnames, &a, &stream) < 0) {
        return NULL;
    }
    cubec_status st = cubec_launch(k->device->dev, a.stream, &a.desc);
    pyc_launch_args_done(&a);
    if (st) {
        return pyc_raise(st);
    }
    Py_RETURN_NONE;
}

/* l() / l(info=...): the bound launch, with new metadata if given. */
static PyObject *launch_call(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    pyc_launch *l = (pyc_launch *)self;
    Py_ssize_t nargs = PYC_NARGS(nargsf);
    cubec_device *dev = l->kernel->device->close_pending ? NULL : l->kernel->device->dev;
    if (!dev || !l->kernel->kernel.id) {
        return pyc_raise_code(CUBEC_INVALID_ARGUMENT, "launch of %R: the %s", l->kernel->name,
                              dev ? "kernel was destroyed" : "device is closed");
    }
    if (!kwnames && nargs == 0) {
        cubec_status st = cubec_launch(dev, l->stream, &l->desc);
        if (st) {
            return pyc_raise(st);
        }
        Py_RETURN_NONE;
    }
    launch_kw kw = {NULL, NULL, NULL, NULL, NULL};
    if (nargs || launch_kwargs(kwnames, args + nargs, &kw) < 0 || kw.groups || kw.stream ||
        kw.address_reads || kw.address_writes) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "a bound launch takes only info=");
        }
        return NULL;
    }
    cubec_launch_desc desc = l->desc;
    pyc_info_hold hold;
    if (pyc_info_arg(l->kernel, kw.info, &desc.info, &desc.info_size, &hold) < 0) {
        pyc_info_release(&hold);
        return NULL;
    }
    cubec_status st = cubec_launch(dev, l->stream, &desc);
    pyc_info_release(&hold);
    if (st) {
        return pyc_raise(st);
    }
    Py_RETURN_NONE;
}

/* k.bind(*buffers, groups=, info=None, stream=None, address_reads=None, address_writes=None): a
 * Launch with everything converted once. */
static PyObject *kernel_bind(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    pyc_kernel *k = (pyc_kernel *)self;
    pyc_launch_args a;
    PyObject *stream = NULL;
    if (launch_args(k, args, nargs, kwnames, &a, &stream) < 0) {
        return NULL;
    }
    pyc_launch *l = PyObject_New(pyc_launch, pyc.launch_type);
    if (!l) {
        pyc_launch_args_done(&a);
        return NULL;
    }
    l->vectorcall = launch_call;
    Py_INCREF((PyObject *)k);
    l->kernel = k;
    l->stream = a.stream;
    l->stream_obj = stream && stream != Py_None ? (Py_INCREF(stream), stream) : NULL;
    l->info = NULL;
    l->buffers = PyTuple_New(nargs);
    uint32_t reached = a.desc.address_buffer_count;
    l->addressed = reached ? PyTuple_New(reached) : NULL;
    l->desc = a.desc;
    memcpy(l->ids, a.ids, sizeof(cubec_buffer) * ((size_t)nargs + reached));
    l->desc.buffers = l->ids;
    l->desc.address_buffers = l->ids + nargs;
    if (l->buffers) {
        for (Py_ssize_t i = 0; i < nargs; i++) {
            Py_INCREF(args[i]);
            PyTuple_SetItem(l->buffers, i, args[i]);
        }
    }
    for (uint32_t i = 0; l->addressed && i < reached; i++) {
        Py_INCREF(a.addressed[i]);
        PyTuple_SetItem(l->addressed, i, a.addressed[i]);
    }
    if (a.desc.info_size) {
        l->info = PyMem_Malloc(a.desc.info_size);
        if (l->info) {
            memcpy(l->info, a.desc.info, a.desc.info_size);
        }
    }
    l->desc.info = l->info;
    pyc_launch_args_done(&a);
    if (!l->buffers || (reached && !l->addressed) || (a.desc.info_size && !l->info)) {
        Py_DECREF(l);
        return PyErr_NoMemory();
    }
    return (PyObject *)l;
}

static void launch_dealloc(PyObject *self)
{
    pyc_launch *l = (pyc_launch *)self;
    PyTypeObject *tp = Py_TYPE(self);
    PyMem_Free(l->info);
    Py_XDECREF(l->buffers);
    Py_XDECREF(l->addressed);
    Py_XDECREF(l->stream_obj);
    Py_DECREF((PyObject *)l->kernel);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *launch_get_kernel(PyObject *self, void *c)
{
    (void)c;
    PyObject *v = (PyObject *)((pyc_launch *)self)->kernel;
    Py_INCREF(v);
    return v;
}

static PyObject *launch_get_buffers(PyObject *self, void *c)
{
    (void)c;
    PyObject *v = ((pyc_launch *)self)->buffers;
    Py_INCREF(v);
    return v;
}

static PyGetSetDef launch_getset[] = {
    {"kernel", launch_get_kernel, NULL, "The kernel it launches.", NULL},
    {"buffers", launch_get_buffers, NULL, "The buffers it binds (kept alive).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef launch_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(pyc_launch, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot launch_slots[] = {
    {Py_tp_dealloc, launch_dealloc},
    {Py_tp_call, pyc_call_via_vectorcall},
    {Py_tp_members, launch_members},
    {Py_tp_getset, launch_getset},
    {Py_tp_doc, "A pre-bound launch (Kernel.bind): l() queues it, l(info=...) with new "
                "metadata."},
    {0, NULL},
};

static PyType_Spec launch_spec = {"cubec.Launch", sizeof(pyc_launch), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION |
                                      Py_TPFLAGS_HAVE_VECTORCALL,
                                  launch_slots};

static PyMethodDef kernel_methods[] = {
    {"bind", (PyCFunction)(void (*)(void))kernel_bind, METH_FASTCALL | METH_KEYWORDS,
     "bind(*buffers, groups=, info=None, stream=None, address_reads=None, address_writes=None): "
     "a pre-bound Launch."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_launch(PyObject *module)
{
    (void)module;
    pyc_type_define(PYC_LAUNCH, &launch_spec, &pyc.launch_type);
    return pyc_type_add(PYC_KERNEL, kernel_methods, NULL);
}
