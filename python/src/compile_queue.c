/* The compile queue from Python (cubec_kernel_queue / cubec_kernel_wait /
 * cubec_kernel_compile_queued; docs/kernels.md "The compile queue"):
 *
 *     with dev.compile_queue() as q:      # kernels compile on cubec's workers, in parallel
 *         a = q.kernel(glsl=A)            # returns at once
 *         b = q.kernel(path="b.comp", defines={"N": 4})
 *     a(x, y, groups=...)                 # the block's exit waited for every queued kernel
 *
 * q.kernel returns an ordinary cubec.Kernel whose interface (bindings, info size) is read once
 * its compilation is done: at the block's exit, at k.wait(), or at its first launch, whichever
 * comes first. Until then the kernel's call goes through queued_call, which waits for that
 * kernel alone and then hands the object over to the core's launch path. The exit raises the
 * first compile error (cubec_kernel_compile_queued's, naming how many failed); a kernel that
 * failed keeps its error and raises it at each launch. */
#include "pycubec.h"

#include <stdio.h>
#include <string.h>

typedef struct pyc_compile_queue {
    PyObject_HEAD pyc_device *device;
    PyObject *kernels; /* the kernels q.kernel queued, to finish at the exit */
    int open;
} pyc_compile_queue;

static PyTypeObject *queue_type;

/* Makes a compiled kernel what dev.kernel would have made: its interface and metadata members
 * read (the members for info= dicts, pyc_kernel_load_fields), its calls straight to the core's
 * launch path from then on. */
static int kernel_ready(pyc_kernel *k, const cubec_kernel_info *info)
{
    k->info = *info;
    if (pyc_kernel_load_fields(k) < 0) {
        pyc_kernel_free_fields(k);
        return -1;
    }
    k->vectorcall = pyc_kernel_call;
    return 0;
}

/* Waits for a queued kernel (GIL released) and makes it ready. */
static int kernel_finish(pyc_kernel *k)
{
    if (k->vectorcall == pyc_kernel_call) return 0;
    cubec_device *dev = pyc_device_handle(k->device, "compile_queue");
    if (!dev) return -1;
    cubec_kernel_info info = CUBEC_KERNEL_INFO_INIT;
    cubec_status status;
    PYC_WITHOUT_GIL_ON(k->device, status = cubec_kernel_wait(dev, k->kernel);
                       if (!status) status = cubec_kernel_get_info(dev, k->kernel, &info));
    if (pyc_check(status) < 0) return -1;
    return kernel_ready(k, &info);
}

/* The call of a kernel still compiling: finish it, then launch as any kernel. */
static PyObject *queued_call(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    if (kernel_finish((pyc_kernel *)self) < 0) return NULL;
    return pyc_kernel_call(self, args, nargsf, kwnames);
}

/* k.wait(): waits for the kernel's compilation (a no-op once done); raises its compile error. */
static PyObject *kernel_wait(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (kernel_finish((pyc_kernel *)self) < 0) return NULL;
    Py_RETURN_NONE;
}

/* defines= as cubec_define entries; the strings stay owned by `keep`. */
static int defines_arg(PyObject *obj, cubec_define *out, uint32_t cap, uint32_t *out_count,
                       PyObject *keep)
{
    *out_count = 0;
    if (!obj || obj == Py_None) return 0;
    if (!PyDict_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "compile_queue.kernel: defines must be a dict, not %R", obj);
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(obj, &pos, &key, &value)) {
        if (*out_count == cap) {
            pyc_raise_code(CUBEC_INVALID_ARGUMENT, "compile_queue.kernel: more than %u defines",
                           cap);
            return -1;
        }
        if (!PyUnicode_Check(key)) {
            PyErr_Format(PyExc_TypeError, "compile_queue.kernel: define name %R is not a str", key);
            return -1;
        }
        PyObject *text = value == Py_None ? NULL : PyObject_Str(value);
        if (value != Py_None && !text) return -1;
        if (PyList_Append(keep, key) < 0 || (text && PyList_Append(keep, text) < 0)) {
            Py_XDECREF(text);
            return -1;
        }
        Py_XDECREF(text); /* kept alive by `keep` */
        out[*out_count].name = PyUnicode_AsUTF8AndSize(key, NULL);
        out[*out_count].value = text ? PyUnicode_AsUTF8AndSize(text, NULL) : NULL;
        if (!out[*out_count].name || (text && !out[*out_count].value)) return -1;
        (*out_count)++;
    }
    return 0;
}

/* The text of a GLSL file (path=), new reference. */
static PyObject *read_text(PyObject *path)
{
    PyObject *io = PyImport_ImportModule("io");
    PyObject *f = io ? PyObject_CallMethod(io, "open", "Oss", path, "r", "utf-8") : NULL;
    Py_XDECREF(io);
    if (!f) return NULL;
    PyObject *text = PyObject_CallMethod(f, "read", NULL);
    PyObject *closed = PyObject_CallMethod(f, "close", NULL);
    Py_DECREF(f);
    if (!closed) Py_CLEAR(text);
    Py_XDECREF(closed);
    return text;
}

/* q.kernel(glsl= | path=, defines=None, name=None, optimize=False): queues a GLSL kernel. */
static PyObject *queue_kernel(PyObject *op, PyObject *args, PyObject *kwargs)
{
    pyc_compile_queue *self = (pyc_compile_queue *)op;
    static char *names[] = {"glsl", "path", "defines", "name", "optimize", NULL};
    PyObject *glsl = Py_None, *path = Py_None, *defines = Py_None, *name = Py_None;
    int optimize = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOOp:kernel", names, &glsl, &path, &defines,
                                     &name, &optimize))
        return NULL;
    if (!self->open)
        return pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                              "compile_queue.kernel: the queue's `with` block is not open");
    cubec_device *dev = pyc_device_handle(self->device, "compile_queue.kernel");
    if (!dev) return NULL;
    if ((glsl == Py_None) == (path == Py_None))
        return pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                              "compile_queue.kernel: give exactly one of glsl= and path=");
    PyObject *keep = PyList_New(0);
    PyObject *source = NULL, *name_obj = NULL, *result = NULL;
    if (!keep) return NULL;
    if (path != Py_None) {
        source = read_text(path);
        name_obj = name == Py_None ? PyObject_Str(path) : PyObject_Str(name);
    } else if (!PyUnicode_Check(glsl)) {
        PyErr_Format(PyExc_TypeError, "compile_queue.kernel: glsl must be a str, not %R", glsl);
        goto done;
    } else {
        source = Py_NewRef(glsl);
        name_obj = name == Py_None ? PyUnicode_FromString("kernel") : PyObject_Str(name);
    }
    if (!source || !name_obj) goto done;
    cubec_define define_list[256];
    cubec_kernel_desc desc = CUBEC_KERNEL_DESC_INIT;
    desc.glsl = PyUnicode_AsUTF8AndSize(source, NULL);
    desc.name = PyUnicode_AsUTF8AndSize(name_obj, NULL);
    desc.optimize = optimize;
    if (!desc.glsl || !desc.name ||
        defines_arg(defines, define_list, 256, &desc.define_count, keep) < 0)
        goto done;
    desc.defines = define_list;
    cubec_kernel handle = {0};
    /* Checks the desc and hands the compilation to the workers: does not wait. */
    if (pyc_check(cubec_kernel_queue(dev, &desc, &handle)) < 0) goto done;
    pyc_kernel *k = PyObject_New(pyc_kernel, pyc.kernel_type);
    if (!k) {
        cubec_status_free(cubec_kernel_destroy(dev, handle));
        goto done;
    }
    memset(&k->info, 0, sizeof k->info);
    k->fields = NULL; /* read when the compilation is done (kernel_ready) */
    k->field_count = 0;
    k->vectorcall = queued_call;
    Py_INCREF((PyObject *)self->device);
    k->device = self->device;
    k->kernel = handle;
    k->name = Py_NewRef(name_obj);
    if (PyList_Append(self->kernels, (PyObject *)k) < 0) {
        Py_DECREF((PyObject *)k);
        goto done;
    }
    result = (PyObject *)k;
done:
    Py_XDECREF(source);
    Py_XDECREF(name_obj);
    Py_DECREF(keep);
    return result;
}

static PyObject *device_compile_queue(PyObject *device, PyObject *unused)
{
    (void)unused;
    pyc_compile_queue *self = (pyc_compile_queue *)PyType_GenericAlloc(queue_type, 0);
    if (!self) return NULL;
    self->kernels = PyList_New(0);
    if (!self->kernels) {
        Py_DECREF((PyObject *)self);
        return NULL;
    }
    Py_INCREF(device);
    self->device = (pyc_device *)device;
    return (PyObject *)self;
}

static PyObject *queue_enter(PyObject *op, PyObject *unused)
{
    (void)unused;
    pyc_compile_queue *self = (pyc_compile_queue *)op;
    if (self->open)
        return pyc_raise_code(CUBEC_INVALID_ARGUMENT, "compile_queue: the queue is already open");
    if (!pyc_device_handle(self->device, "compile_queue")) return NULL;
    self->open = 1;
    return Py_NewRef(op);
}

/* Waits for every kernel queued before the exit (cubec_kernel_compile_queued, GIL released),
 * then reads the interface of each kernel of this block that compiled. */
static PyObject *queue_exit(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    pyc_compile_queue *self = (pyc_compile_queue *)op;
    const int body_raised = nargs > 0 && args[0] != Py_None;
    if (!self->open) Py_RETURN_FALSE;
    self->open = 0;
    cubec_device *dev = pyc_device_handle(self->device, "compile_queue");
    if (!dev) {
        if (!body_raised) return NULL;
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    cubec_status status;
    PYC_WITHOUT_GIL_ON(self->device, status = cubec_kernel_compile_queued(dev));
    /* Each kernel that compiled is made ready; one that failed keeps queued_call, which raises
     * its error at every launch. */
    const Py_ssize_t count = PyList_Size(self->kernels);
    for (Py_ssize_t i = 0; i < count; i++) {
        pyc_kernel *k = (pyc_kernel *)PyList_GetItem(self->kernels, i);
        cubec_kernel_info info = CUBEC_KERNEL_INFO_INIT;
        cubec_status own = cubec_kernel_get_info(dev, k->kernel, &info);
        if (own) {
            cubec_status_free(own);
            continue;
        }
        if (k->vectorcall != pyc_kernel_call && kernel_ready(k, &info) < 0) {
            cubec_status_free(status);
            return NULL;
        }
    }
    if (PyList_SetSlice(self->kernels, 0, count, NULL) < 0) PyErr_Clear();
    if (body_raised) {
        cubec_status_free(status);
        Py_RETURN_FALSE;
    }
    if (pyc_check(status) < 0) return NULL;
    Py_RETURN_FALSE;
}

static int queue_traverse(PyObject *op, visitproc visit, void *arg)
{
    pyc_compile_queue *self = (pyc_compile_queue *)op;
    Py_VISIT((PyObject *)self->device);
    Py_VISIT(self->kernels);
    Py_VISIT(Py_TYPE(op));
    return 0;
}

static int queue_clear(PyObject *op)
{
    Py_CLEAR(((pyc_compile_queue *)op)->kernels);
    return 0;
}

static void queue_dealloc(PyObject *op)
{
    pyc_compile_queue *self = (pyc_compile_queue *)op;
    PyTypeObject *type = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    Py_CLEAR(self->kernels);
    Py_CLEAR(self->device);
    PyObject_GC_Del(op);
    Py_DECREF(type);
}

static PyMethodDef queue_methods[] = {
    {"__enter__", queue_enter, METH_NOARGS, "Opens the queue."},
    {"__exit__", (PyCFunction)(void (*)(void))queue_exit, METH_FASTCALL,
     "Waits for every queued kernel (cubec_kernel_compile_queued); raises the first error."},
    {"kernel", (PyCFunction)(void (*)(void))queue_kernel, METH_VARARGS | METH_KEYWORDS,
     "kernel(glsl= | path=, defines=None, name=None, optimize=False): queues a GLSL kernel "
     "(cubec_kernel_queue) and returns its Kernel at once."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot queue_slots[] = {
    {Py_tp_doc, "A `with dev.compile_queue() as q:` block: q.kernel() queues kernels that compile "
                "in parallel; the exit waits for them."},
    {Py_tp_dealloc, queue_dealloc},
    {Py_tp_traverse, queue_traverse},
    {Py_tp_clear, queue_clear},
    {Py_tp_methods, queue_methods},
    {0, NULL},
};

static PyType_Spec queue_spec = {
    .name = "cubec.CompileQueue",
    .basicsize = sizeof(pyc_compile_queue),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = queue_slots,
};

static PyMethodDef device_methods[] = {
    {"compile_queue", device_compile_queue, METH_NOARGS,
     "compile_queue(): a `with` block whose q.kernel() calls queue kernels to compile in "
     "parallel (cubec_kernel_queue); the exit waits for them all."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef kernel_methods[] = {
    {"wait", kernel_wait, METH_NOARGS,
     "wait(): waits for a queued kernel's compilation (cubec_kernel_wait); raises its error."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_compile_queue(PyObject *module)
{
    queue_type = (PyTypeObject *)PyType_FromSpec(&queue_spec);
    if (!queue_type) return -1;
    if (PyModule_AddObjectRef(module, "CompileQueue", (PyObject *)queue_type) < 0) return -1;
    if (pyc_type_add(PYC_DEVICE, device_methods, NULL) < 0) return -1;
    return pyc_type_add(PYC_KERNEL, kernel_methods, NULL);
}
