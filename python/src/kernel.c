/* cubec.Kernel (dev.kernel(glsl= | spirv= | path=, defines=, spec=, name=, include_dirs=,
 * preamble=)): compiles with the
 * GIL released, keeps the reflected interface, and destroys the kernel on collection. Its call,
 * k(*buffers, groups=, info=, stream=), and k.bind(...) are in launch.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pycubec.h"
#include "structmember.h"

/* The defines= dict as cubec_define entries; the strings stay owned by `keep` (a list). */
static int parse_defines(PyObject *obj, cubec_define *out, uint32_t cap, uint32_t *out_count,
                         PyObject *keep)
{
    *out_count = 0;
    if (!obj || obj == Py_None) {
        return 0;
    }
    if (!PyDict_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "Device.kernel: defines must be a dict, not %R", obj);
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(obj, &pos, &key, &value)) {
        if (*out_count == cap) {
            pyc_raise_code(CUBEC_INVALID_ARGUMENT, "Device.kernel: more than %u defines", cap);
            return -1;
        }
        PyObject *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8String(key) : NULL;
        if (!k) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "Device.kernel: define name %R is not a str", key);
            return -1;
        }
        PyObject *v = NULL;
        if (value != Py_None) {
            PyObject *text = PyBool_Check(value)
                                 ? PyUnicode_FromString(value == Py_True ? "1" : "0")
                                 : PyObject_Str(value);
            v = text ? PyUnicode_AsUTF8String(text) : NULL;
            Py_XDECREF(text);
            if (!v) {
                Py_DECREF((PyObject *)k);
                return -1;
            }
        }
        if (PyList_Append(keep, k) < 0 || (v && PyList_Append(keep, v) < 0)) {
            Py_DECREF((PyObject *)k);
            Py_XDECREF(v);
            return -1;
        }
        out[*out_count].name = PyBytes_AsString(k);
        out[*out_count].value = v ? PyBytes_AsString(v) : NULL;
        (*out_count)++;
        Py_DECREF((PyObject *)k);
        Py_XDECREF(v);
    }
    return 0;
}

/* spec={id: value}: an int (its low 32 bits, negative ones as two's complement), a float (its
 * float32 bits) or a bool. */
static int parse_spec(PyObject *obj, cubec_spec_constant *out, uint32_t *out_count)
{
    *out_count = 0;
    if (!obj || obj == Py_None) {
        return 0;
    }
    if (!PyDict_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "Device.kernel: spec must be a dict {id: value}, not %R",
                     obj);
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(obj, &pos, &key, &value)) {
        if (*out_count == CUBEC_MAX_SPEC_CONSTANTS) {
            pyc_raise_code(CUBEC_INVALID_ARGUMENT, "Device.kernel: more than %u spec constants",
                           CUBEC_MAX_SPEC_CONSTANTS);
            return -1;
        }
        long id = PyLong_Check(key) ? PyLong_AsLong(key) : -1;
        if (id < 0 || id > (long)UINT32_MAX) {
            PyErr_Clear();
            pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                           "Device.kernel: spec constant id %R is not a uint32", key);
            return -1;
        }
        uint32_t bits;
        if (PyFloat_Check(value)) {
            float f = (float)PyFloat_AsDouble(value);
            memcpy(&bits, &f, sizeof bits);
        } else if (PyLong_Check(value)) {
            long long v = PyLong_AsLongLong(value);
            if (PyErr_Occurred() || v < INT32_MIN || v > (long long)UINT32_MAX) {
                PyErr_Clear();
                pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                               "Device.kernel: spec constant %ld = %R does not fit 32 bits", id,
                               value);
                return -1;
            }
            bits = (uint32_t)v;
        } else {
            PyErr_Format(PyExc_TypeError,
                         "Device.kernel: spec constant %ld must be an int, float or bool, not %R",
                         id, value);
            return -1;
        }
        out[*out_count].id = (uint32_t)id;
        out[*out_count].value = bits;
        (*out_count)++;
    }
    return 0;
}

/* The bytes of a file (path=: a str, bytes or os.PathLike; an int would be taken by open() as a
 * file descriptor), new reference. */
static PyObject *read_file(PyObject *path_arg)
{
    PyObject *path = PyOS_FSPath(path_arg);
    if (!path) {
        PyErr_Clear();
        return PyErr_Format(PyExc_TypeError,
                            "Device.kernel: path must be a str, bytes or os.PathLike, not %R",
                            path_arg);
    }
    PyObject *io = PyImport_ImportModule("io");
    PyObject *f = io ? PyObject_CallMethod(io, "open", "Os", path, "rb") : NULL;
    Py_XDECREF(io);
    Py_DECREF(path);
    if (!f) {
        return NULL;
    }
    PyObject *data = PyObject_CallMethod(f, "read", NULL);
    PyObject *r = PyObject_CallMethod(f, "close", NULL);
    Py_DECREF(f);
    Py_XDECREF(r);
    return data;
}

/* include_dirs=: a list (or tuple) of str, bytes or os.PathLike, as file system bytes kept by
 * `keep`; *out is PyMem_Malloc'ed (PyMem_Free it). */
static int parse_include_dirs(PyObject *obj, const char ***out, uint32_t *out_count, PyObject *keep)
{
    *out = NULL;
    *out_count = 0;
    if (!obj || obj == Py_None) {
        return 0;
    }
    if (PyUnicode_Check(obj) || PyBytes_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "Device.kernel: include_dirs must be a list of directories, not the single "
                     "%R (write [%R])",
                     obj, obj);
        return -1;
    }
    if (!PyList_Check(obj) && !PyTuple_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "Device.kernel: include_dirs must be a list, not %R", obj);
        return -1;
    }
    Py_ssize_t n = PySequence_Size(obj);
    if (n < 0) {
        return -1;
    }
    const char **dirs = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *dirs);
    if (!dirs) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_GetItem(obj, i), *bytes = NULL;
        if (item && !PyUnicode_FSConverter(item, &bytes)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "Device.kernel: include_dirs[%zd] must be a str, bytes or os.PathLike, "
                         "not %R",
                         i, item);
        } else if (item && PyList_Append(keep, bytes) == 0) {
            dirs[i] = PyBytes_AsString(bytes);
        }
        Py_XDECREF(bytes);
        Py_XDECREF(item);
        if (PyErr_Occurred()) {
            PyMem_Free(dirs);
            return -1;
        }
    }
    *out = dirs;
    *out_count = (uint32_t)n;
    return 0;
}

/* A keyword argument that was given and is not None, else NULL. */
static PyObject *given(PyObject *arg)
{
    return arg && arg != Py_None ? arg : NULL;
}

static PyObject *device_kernel(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    pyc_device *d = (pyc_device *)self;
    static const char *const names[] = {"glsl",         "spirv",    "path",     "defines",
                                        "spec",         "name",     "optimize", "entry",
                                        "include_dirs", "preamble", NULL};
    PyObject *kw[10];
    if (nargs) {
        return PyErr_Format(PyExc_TypeError,
                            "Device.kernel() takes keywords only: glsl=, spirv= or path=");
    }
    if (pyc_kwargs("Device.kernel", kwnames, args, names, kw) < 0) {
        return NULL;
    }
    cubec_device *dev = pyc_device_handle(d, "Device.kernel");
    if (!dev) {
        return NULL;
    }
    PyObject *glsl_arg = given(kw[0]), *spirv_arg = given(kw[1]), *path_arg = given(kw[2]);
    int sources = (glsl_arg != NULL) + (spirv_arg != NULL) + (path_arg != NULL);
    if (sources != 1) {
        return pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                              "Device.kernel: give exactly one of glsl=, spirv= and path= (got %d)",
                              sources);
    }
    PyObject *keep = PyList_New(0);
    if (!keep) {
        return NULL;
    }
    PyObject *result = NULL, *glsl = NULL, *spirv = NULL, *name_obj = NULL;
    Py_buffer spirv_view = {0};
    const char **include_dirs = NULL;
    cubec_kernel_desc desc = CUBEC_KERNEL_DESC_INIT;
    cubec_define defines[256];
    cubec_spec_constant spec[CUBEC_MAX_SPEC_CONSTANTS];
    if (path_arg) {
        PyObject *data = read_file(path_arg);
        if (!data) {
            goto done;
        }
        /* A file of SPIR-V starts with the magic number; anything else is GLSL. */
        const unsigned char *p = (const unsigned char *)PyBytes_AsString(data);
        if (PyBytes_Size(data) >= 4 && p[0] == 0x03 && p[1] == 0x02 && p[2] == 0x23 &&
            p[3] == 0x07) {
            spirv = data;
        } else {
            glsl = data;
        }
        if (!kw[5] || kw[5] == Py_None) {
            name_obj = PyObject_Str(path_arg);
        }
        /* The file's path: #include "x" looks next to it, and messages name it. */
        PyObject *fs_path = NULL;
        if (glsl && PyUnicode_FSConverter(path_arg, &fs_path)) {
            desc.glsl_path = PyBytes_AsString(fs_path);
            int bad = PyList_Append(keep, fs_path) < 0;
            Py_DECREF(fs_path);
            if (bad) {
                goto done;
            }
        } else if (PyErr_Occurred()) {
            goto done;
        }
    } else if (glsl_arg) {
        if (!PyUnicode_Check(glsl_arg)) {
            PyErr_Format(PyExc_TypeError, "Device.kernel: glsl must be a str, not %R", glsl_arg);
            goto done;
        }
        glsl = PyUnicode_AsUTF8String(glsl_arg);
        if (!glsl) {
            goto done;
        }
    } else if (spirv_arg) {
        Py_INCREF(spirv_arg);
        spirv = spirv_arg;
    }
    if (glsl) {
        desc.glsl = PyBytes_AsString(glsl);
    } else if (spirv) {
        if (PyObject_GetBuffer(spirv, &spirv_view, PyBUF_SIMPLE) < 0) {
            goto done;
        }
        if (spirv_view.len % 4 != 0) {
            pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                           "Device.kernel: spirv holds %zd bytes, not a multiple of 4",
                           spirv_view.len);
            goto done;
        }
        desc.spirv = (const uint32_t *)spirv_view.buf;
        desc.spirv_words = (size_t)spirv_view.len / 4;
    }
    if (kw[5] && kw[5] != Py_None) {
        name_obj = PyObject_Str(kw[5]);
    }
    PyObject *name_bytes = name_obj ? PyUnicode_AsUTF8String(name_obj) : NULL;
    if (name_bytes) {
        desc.name = PyBytes_AsString(name_bytes);
        if (PyList_Append(keep, name_bytes) < 0) {
            Py_DECREF(name_bytes);
            goto done;
        }
        Py_DECREF(name_bytes);
    } else if (name_obj) {
        goto done;
    }
    PyObject *entry = kw[7] && kw[7] != Py_None ? PyUnicode_AsUTF8String(kw[7]) : NULL;
    if (entry) {
        desc.entry_point = PyBytes_AsString(entry);
        int bad = PyList_Append(keep, entry) < 0;
        Py_DECREF(entry);
        if (bad) {
            goto done;
        }
    } else if (PyErr_Occurred()) {
        goto done;
    }
    desc.optimize = kw[6] ? PyObject_IsTrue(kw[6]) : 0;
    if (parse_defines(kw[3], defines, 256, &desc.define_count, keep) < 0 ||
        parse_spec(kw[4], spec, &desc.spec_constant_count) < 0) {
        goto done;
    }
    desc.defines = defines;
    desc.spec_constants = spec;
    if (parse_include_dirs(kw[8], &include_dirs, &desc.include_dir_count, keep) < 0) {
        goto done;
    }
    desc.include_dirs = include_dirs;
    if (given(kw[9])) {
        if (!PyUnicode_Check(kw[9])) {
            PyErr_Format(PyExc_TypeError, "Device.kernel: preamble must be a str, not %R", kw[9]);
            goto done;
        }
        PyObject *preamble = PyUnicode_AsUTF8String(kw[9]);
        if (!preamble || PyList_Append(keep, preamble) < 0) {
            Py_XDECREF(preamble);
            goto done;
        }
        desc.preamble = PyBytes_AsString(preamble);
        Py_DECREF(preamble);
    }

    pyc_kernel *k = PyObject_New(pyc_kernel, pyc.kernel_type);
    if (!k) {
        goto done;
    }
    k->kernel.id = 0;
    k->vectorcall = NULL;
    k->fields = NULL;
    k->field_count = 0;
    Py_INCREF((PyObject *)d);
    k->device = d;
    k->name = name_obj ? (Py_INCREF(name_obj), name_obj) : PyUnicode_FromString("kernel");
    cubec_status st;
    pyc_device_take_hold(d);
    PyThreadState *unlocked = PyEval_SaveThread();
    st = cubec_kernel_create(dev, &desc, &k->kernel);
    if (!st) {
        k->info = (cubec_kernel_info)CUBEC_KERNEL_INFO_INIT;
        st = cubec_kernel_get_info(dev, k->kernel, &k->info);
    }
    PyEval_RestoreThread(unlocked);
    pyc_device_drop_hold(d);
    if (pyc_check(st) < 0) {
        Py_DECREF((PyObject *)k);
        goto done;
    }
    if (pyc_kernel_load_fields(k) < 0) {
        Py_DECREF((PyObject *)k);
        goto done;
    }
    k->vectorcall = pyc_kernel_call;
    result = (PyObject *)k;
done:
    PyMem_Free(include_dirs);
    if (spirv_view.obj) {
        PyBuffer_Release(&spirv_view);
    }
    Py_XDECREF(glsl);
    Py_XDECREF(spirv);
    Py_XDECREF(name_obj);
    Py_DECREF(keep);
    return result;
}

static void kernel_dealloc(PyObject *self)
{
    pyc_kernel *k = (pyc_kernel *)self;
    PyTypeObject *tp = Py_TYPE(self);
    if (k->kernel.id && k->device->dev) {
        cubec_status_free(cubec_kernel_destroy(k->device->dev, k->kernel));
    }
    pyc_kernel_free_fields(k);
    Py_XDECREF(k->name);
    Py_DECREF((PyObject *)k->device);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *get_bindings(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(((pyc_kernel *)self)->info.binding_count);
}
static PyObject *get_info_size(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLong(((pyc_kernel *)self)->info.info_size);
}
static PyObject *get_workgroup_size(PyObject *self, void *c)
{
    (void)c;
    const uint32_t *w = ((pyc_kernel *)self)->info.workgroup_size;
    return Py_BuildValue("(III)", w[0], w[1], w[2]);
}
static PyObject *get_shared_memory_size(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong(((pyc_kernel *)self)->info.shared_memory_size);
}
static PyObject *get_access(PyObject *self, void *c)
{
    (void)c;
    const cubec_kernel_info *info = &((pyc_kernel *)self)->info;
    PyObject *t = PyTuple_New(info->binding_count);
    for (uint32_t i = 0; t && i < info->binding_count; i++) {
        /* None: a binding the module leaves out (a gap), whose buffer is not bound. */
        if (info->access[i] == 0) {
            Py_INCREF(Py_None);
            PyTuple_SetItem(t, i, Py_None);
            continue;
        }
        const char *a = info->access[i] == CUBEC_ACCESS_READ    ? "r"
                        : info->access[i] == CUBEC_ACCESS_WRITE ? "w"
                                                                : "rw";
        PyTuple_SetItem(t, i, PyUnicode_FromString(a));
    }
    return t;
}
static PyObject *get_name(PyObject *self, void *c)
{
    (void)c;
    PyObject *v = ((pyc_kernel *)self)->name;
    Py_INCREF(v);
    return v;
}
static PyObject *get_device(PyObject *self, void *c)
{
    (void)c;
    PyObject *v = (PyObject *)((pyc_kernel *)self)->device;
    Py_INCREF(v);
    return v;
}

static PyObject *kernel_repr(PyObject *self)
{
    pyc_kernel *k = (pyc_kernel *)self;
    return PyUnicode_FromFormat("<cubec.Kernel %R: %u buffers, %u info bytes>", k->name,
                                k->info.binding_count, k->info.info_size);
}

static PyGetSetDef kernel_getset[] = {
    {"bindings", get_bindings, NULL, "Storage buffers a launch passes.", NULL},
    {"info_size", get_info_size, NULL, "Bytes of metadata (info=) a launch passes.", NULL},
    {"workgroup_size", get_workgroup_size, NULL,
     "The local size (x, y, z), with the kernel's specialization constants.", NULL},
    {"shared_memory_size", get_shared_memory_size, NULL,
     "Bytes of shared memory, with the kernel's specialization constants.", NULL},
    {"access", get_access, NULL, "Each binding's access: 'r', 'w' or 'rw'.", NULL},
    {"name", get_name, NULL, "The kernel's name.", NULL},
    {"device", get_device, NULL, "Its device.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef kernel_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(pyc_kernel, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot kernel_slots[] = {
    {Py_tp_dealloc, kernel_dealloc},
    {Py_tp_repr, kernel_repr},
    {Py_tp_call, pyc_call_via_vectorcall},
    {Py_tp_members, kernel_members},
    {Py_tp_getset, kernel_getset},
    {Py_tp_doc, "A compiled kernel (Device.kernel). k(*buffers, groups=, info=, stream=) "
                "launches it; k.bind(...) makes a pre-bound Launch."},
    {0, NULL},
};

static PyType_Spec kernel_spec = {"cubec.Kernel", sizeof(pyc_kernel), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION |
                                      Py_TPFLAGS_HAVE_VECTORCALL,
                                  kernel_slots};

static PyMethodDef device_methods[] = {
    {"kernel", (PyCFunction)(void (*)(void))device_kernel, METH_FASTCALL | METH_KEYWORDS,
     "kernel(glsl=|spirv=|path=, defines=None, spec=None, name=None, optimize=False, "
     "entry=None, include_dirs=None, preamble=None): compiles (or finds in the cache) a kernel. "
     "#include \"x\" looks next to path= first, then in include_dirs; preamble is inserted "
     "after #version."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_kernel(PyObject *module)
{
    (void)module;
    pyc_type_define(PYC_KERNEL, &kernel_spec, &pyc.kernel_type);
    return pyc_type_add(PYC_DEVICE, device_methods, NULL);
}
