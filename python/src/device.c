/* cubec.Device (a context manager over cubec_device_open/close), cubec.devices() and the
 * device-wide calls: info, sync, check. Buffers, kernels and streams add their constructors
 * (dev.empty, dev.kernel, dev.stream) from their own files. */
#include <stdio.h>
#include <string.h>

#include "pycubec.h"

static const char *type_name(cubec_device_type t)
{
    switch (t) {
    case CUBEC_DEVICE_TYPE_INTEGRATED: return "integrated";
    case CUBEC_DEVICE_TYPE_DISCRETE: return "discrete";
    case CUBEC_DEVICE_TYPE_VIRTUAL: return "virtual";
    case CUBEC_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
    }
}

/* The fields of cubec_device_info a Python program asks for, as a dict. */
static PyObject *info_dict(const cubec_device_info *info)
{
    PyObject *features = PyList_New(0);
    if (!features) {
        return NULL;
    }
    for (int bit = 0; bit < 64; bit++) {
        const uint64_t feature = (uint64_t)1 << bit;
        if (info->features & feature) {
            PyObject *name = PyUnicode_FromString(cubec_feature_name(feature));
            if (!name || PyList_Append(features, name) < 0) {
                Py_XDECREF(name);
                Py_DECREF(features);
                return NULL;
            }
            Py_DECREF(name);
        }
    }
    PyObject *d = Py_BuildValue(
        "{s:s,s:s,s:I,s:I,s:I,s:s,s:O,s:K,s:K,s:I,s:(III),s:(III),s:I,s:I,s:K,s:I,s:K,s:d,s:N,"
        "s:K,s:I,s:I,s:K}",
        "name", info->name, "driver", info->driver, "vendor_id", info->vendor_id, "device_id",
        info->device_id, "api_version", info->api_version, "type", type_name(info->type),
        "unified_memory", info->unified_memory ? Py_True : Py_False, "max_storage_buffer_range",
        (unsigned long long)info->max_storage_buffer_range, "max_allocation_size",
        (unsigned long long)info->max_allocation_size, "max_push_constants_size",
        info->max_push_constants_size, "max_workgroup_count", info->max_workgroup_count[0],
        info->max_workgroup_count[1], info->max_workgroup_count[2], "max_workgroup_size",
        info->max_workgroup_size[0], info->max_workgroup_size[1], info->max_workgroup_size[2],
        "max_workgroup_invocations", info->max_workgroup_invocations, "max_shared_memory_size",
        info->max_shared_memory_size, "storage_offset_alignment",
        (unsigned long long)info->storage_offset_alignment, "subgroup_size", info->subgroup_size,
        "device_local_heap_size", (unsigned long long)info->device_local_heap_size,
        "timestamp_period_ns", info->timestamp_period_ns, "features", features,
        "host_register_alignment", (unsigned long long)info->host_register_alignment,
        "min_subgroup_size", info->min_subgroup_size, "max_subgroup_size", info->max_subgroup_size,
        "uniform_offset_alignment", (unsigned long long)info->uniform_offset_alignment);
    /* The bounds-checked mode in force: "off", "page" or "buffer" (cubec_device_info.robust). */
    const char *robust = info->robust == CUBEC_ROBUST_BUFFER ? "buffer"
                         : info->robust == CUBEC_ROBUST_PAGE ? "page"
                                                             : "off";
    PyObject *r = d ? PyUnicode_FromString(robust) : NULL;
    if (d && (!r || PyDict_SetItemString(d, "robust", r) < 0)) {
        Py_CLEAR(d);
    }
    Py_XDECREF(r);
    /* Export and import (docs/multi-device.md): the CUBEC_EXTERNAL_* bits, and the physical
     * device's UUID as 32 hex digits (what CUDA's device UUID is compared with). */
    char uuid[33];
    for (size_t i = 0; i < 16; i++)
        snprintf(uuid + 2 * i, 3, "%02x", info->device_uuid[i]);
    PyObject *u = d ? PyUnicode_FromString(uuid) : NULL;
    PyObject *x = d ? PyLong_FromUnsignedLong(info->external_handles) : NULL;
    if (d && (!u || !x || PyDict_SetItemString(d, "device_uuid", u) < 0 ||
              PyDict_SetItemString(d, "external_handles", x) < 0)) {
        Py_CLEAR(d);
    }
    Py_XDECREF(u);
    Py_XDECREF(x);
    /* The backend and its CUBEC_CAPABILITY_* bits by name (docs/api.md, "Device
     * capabilities"), as "features" lists the feature bits. */
    PyObject *caps = d ? PyList_New(0) : NULL;
    for (int bit = 0; caps && bit < 32; bit++) {
        const uint32_t capability = 1u << bit;
        if (!(info->capabilities & capability)) continue;
        PyObject *name = PyUnicode_FromString(cubec_capability_name(capability));
        if (!name || PyList_Append(caps, name) < 0) Py_CLEAR(caps);
        Py_XDECREF(name);
    }
    PyObject *b = d ? PyUnicode_FromString(info->backend) : NULL;
    if (d && (!caps || !b || PyDict_SetItemString(d, "capabilities", caps) < 0 ||
              PyDict_SetItemString(d, "backend", b) < 0)) {
        Py_CLEAR(d);
    }
    Py_XDECREF(caps);
    Py_XDECREF(b);
    return d;
}

/* Called on cubec's threads for each message of the validation layer (cubec logs it too). */
static void on_validation(void *user, const char *message)
{
    (void)message;
    __atomic_fetch_add(&((pyc_device *)user)->validation_messages, 1, __ATOMIC_RELAXED);
}

/* cubec.devices(): the info of every Vulkan device, without opening any. */
static PyObject *devices(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    uint32_t count = 0;
    cubec_status st;
    PYC_WITHOUT_GIL(st = cubec_device_get_count(&count));
    if (pyc_check(st) < 0) {
        return NULL;
    }
    PyObject *list = PyList_New(0);
    for (uint32_t i = 0; list && i < count; i++) {
        cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
        PYC_WITHOUT_GIL(st = cubec_device_peek(i, &info));
        if (pyc_check(st) < 0) {
            Py_DECREF(list);
            return NULL;
        }
        PyObject *d = info_dict(&info);
        PyObject *index = PyLong_FromUnsignedLong(i);
        if (!d || !index || PyDict_SetItemString(d, "index", index) < 0 ||
            PyList_Append(list, d) < 0) {
            Py_XDECREF(d);
            Py_XDECREF(index);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(d);
        Py_DECREF(index);
    }
    return list;
}

/* Device(device=None, *, validation=None, backend=None, robust=None): `device` is an index in
 * Vulkan's order, a part of the name, or None for the best one (CUBEC_DEVICE may choose);
 * robust=True asks for the bounds-checked mode (cubec_device_desc.robust). */
static PyObject *device_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"device", "validation", "backend", "robust", NULL};
    PyObject *which = Py_None, *validation = Py_None, *robust = Py_None;
    const char *backend = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$OzO:Device", keywords, &which, &validation,
                                     &backend, &robust)) {
        return NULL;
    }
    cubec_device_desc desc = CUBEC_DEVICE_DESC_INIT;
    desc.backend = backend;
    PyObject *name_bytes = NULL;
    if (PyLong_Check(which)) {
        long index = PyLong_AsLong(which);
        if (index < 0 || index > (long)UINT32_MAX) {
            PyErr_Clear();
            return pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                                  "cubec.Device: device index %R is out of range", which);
        }
        desc.select_by_index = 1;
        desc.index = (uint32_t)index;
    } else if (PyUnicode_Check(which)) {
        name_bytes = PyUnicode_AsUTF8String(which);
        if (!name_bytes) {
            return NULL;
        }
        desc.name = PyBytes_AsString(name_bytes);
    } else if (which != Py_None) {
        return PyErr_Format(PyExc_TypeError,
                            "cubec.Device: device must be an index, a name or None, not %R", which);
    }
    if (validation != Py_None) {
        desc.validation = PyObject_IsTrue(validation);
    }
    if (robust != Py_None) {
        desc.robust = PyObject_IsTrue(robust);
    }
    pyc_device *self = (pyc_device *)PyType_GenericAlloc(type, 0);
    if (!self) {
        Py_XDECREF(name_bytes);
        return NULL;
    }
    desc.on_validation = on_validation;
    desc.on_validation_user = self;
    cubec_device *dev = NULL;
    cubec_status st;
    PyThreadState *unlocked = PyEval_SaveThread();
    st = cubec_device_open(&desc, &dev);
    if (!st) {
        self->info = (cubec_device_info)CUBEC_DEVICE_INFO_INIT;
        st = cubec_device_get_info(dev, &self->info);
        if (st) {
            cubec_device_close(dev);
            dev = NULL;
        }
    }
    PyEval_RestoreThread(unlocked);
    Py_XDECREF(name_bytes);
    if (pyc_check(st) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    self->dev = dev;
    self->next_open = pyc.open_devices;
    pyc.open_devices = self;
    if (!pyc.default_device) {
        pyc.default_device = self;
    }
    return (PyObject *)self;
}

static void unlink_open(pyc_device *self)
{
    for (pyc_device **p = &pyc.open_devices; *p; p = &(*p)->next_open) {
        if (*p == self) {
            *p = self->next_open;
            break;
        }
    }
    self->next_open = NULL;
    if (pyc.default_device == self) {
        pyc.default_device = NULL;
    }
}

void pyc_device_take_hold(pyc_device *self)
{
    self->holds++;
}

void pyc_device_drop_hold(pyc_device *self)
{
    if (--self->holds == 0 && self->close_pending) {
        pyc_device_close_now(self);
    }
}

void pyc_device_close_now(pyc_device *self)
{
    unlink_open(self);
    if (!self->dev) {
        return;
    }
    if (self->holds > 0) {
        self->close_pending = 1;
        return;
    }
    cubec_device *dev = self->dev;
    self->dev = NULL;
    self->close_pending = 0;
    PYC_WITHOUT_GIL(cubec_device_close(dev));
}

static PyObject *device_close(PyObject *self, PyObject *unused)
{
    (void)unused;
    pyc_device_close_now((pyc_device *)self);
    Py_RETURN_NONE;
}

static void device_dealloc(PyObject *self)
{
    /* Every object of the device holds a reference to it: nothing of it is left here. */
    pyc_device_close_now((pyc_device *)self);
    PyTypeObject *tp = Py_TYPE(self);
    freefunc free_fn = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    free_fn(self);
    Py_DECREF(tp);
}

static PyObject *device_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF((PyObject *)self);
    return self;
}

static PyObject *device_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)args;
    (void)nargs;
    pyc_device_close_now((pyc_device *)self);
    Py_RETURN_FALSE;
}

/* dev.sync(stream=None): submits and waits for the stream's work (the GIL is released). */
static PyObject *device_sync(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    pyc_device *d = (pyc_device *)self;
    static const char *const names[] = {"stream", NULL};
    PyObject *kw[1];
    if (pyc_args("Device.sync", args, nargs, kwnames, names, 1, 0, kw) < 0) {
        return NULL;
    }
    PyObject *stream_obj = kw[0];
    cubec_device *dev = pyc_device_handle(d, "Device.sync");
    cubec_stream stream;
    if (!dev || pyc_stream_arg(d, stream_obj, "Device.sync", &stream) < 0) {
        return NULL;
    }
    cubec_status st;
    PYC_WITHOUT_GIL_ON(d, st = cubec_sync(dev, stream));
    if (pyc_check(st) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* dev.check(*buffers): raises the failure the first of them carries (cubec_check). */
static PyObject *device_check(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    pyc_device *d = (pyc_device *)self;
    cubec_device *dev = pyc_device_handle(d, "Device.check");
    if (!dev) {
        return NULL;
    }
    cubec_buffer ids[64];
    if (nargs > 64) {
        return pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                              "Device.check: at most 64 buffers at once, got %zd", nargs);
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (Py_TYPE(args[i]) != pyc.buffer_type) {
            return PyErr_Format(PyExc_TypeError, "Device.check: argument %zd is not a Buffer", i);
        }
        ids[i] = ((pyc_buffer *)args[i])->buf;
    }
    if (pyc_check(cubec_check(dev, ids, (uint32_t)nargs)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *device_get_info(PyObject *self, void *closure)
{
    (void)closure;
    return info_dict(&((pyc_device *)self)->info);
}

static PyObject *device_get_closed(PyObject *self, void *closure)
{
    (void)closure;
    pyc_device *d = (pyc_device *)self;
    return PyBool_FromLong(!d->dev || d->close_pending);
}

static PyObject *device_get_validation_messages(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(
        __atomic_load_n(&((pyc_device *)self)->validation_messages, __ATOMIC_RELAXED));
}

static PyObject *device_repr(PyObject *self)
{
    pyc_device *d = (pyc_device *)self;
    return PyUnicode_FromFormat("<cubec.Device '%s'%s>", d->info.name,
                                d->dev && !d->close_pending ? "" : " (closed)");
}

static PyMethodDef device_methods[] = {
    {"close", device_close, METH_NOARGS,
     "Waits for the device's work and closes it; later calls on it raise InvalidArgument."},
    {"__enter__", device_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))device_exit, METH_FASTCALL, NULL},
    {"sync", (PyCFunction)(void (*)(void))device_sync, METH_FASTCALL | METH_KEYWORDS,
     "sync(stream=None): submits the stream's work and waits for it."},
    {"check", (PyCFunction)(void (*)(void))device_check, METH_FASTCALL,
     "check(*buffers): raises the failure the first of the buffers carries."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef device_getset[] = {
    {"info", device_get_info, NULL, "The device's cubec_device_info as a dict.", NULL},
    {"closed", device_get_closed, NULL, "True once close() was called.", NULL},
    {"validation_messages", device_get_validation_messages, NULL,
     "How many messages the validation layer reported (validation=True or CUBEC_VALIDATION=1).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot device_slots[] = {
    {Py_tp_new, device_new},
    {Py_tp_dealloc, device_dealloc},
    {Py_tp_repr, device_repr},
    {Py_tp_methods, device_methods},
    {Py_tp_getset, device_getset},
    {Py_tp_doc, "Device(device=None, *, validation=None, backend=None, robust=None): an open "
                "cubec device (an index, part of a name, or None for the best one); a context "
                "manager. robust=True turns on the bounds-checked mode."},
    {0, NULL},
};

static PyType_Spec device_spec = {"cubec.Device", sizeof(pyc_device), 0, Py_TPFLAGS_DEFAULT,
                                  device_slots};

static PyMethodDef module_functions[] = {
    {"devices", devices, METH_NOARGS, "devices(): the info dict of every device, with its index."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_device(PyObject *module)
{
    pyc_type_define(PYC_DEVICE, &device_spec, &pyc.device_type);
    return PyModule_AddFunctions(module, module_functions);
}
