/* dev.memory_report(stream=None, format="dict"): the memory report of a device as a
 * Python dict (cubec_memory_report_get: one stream's slot, every field of cubec_memory_report
 * and cubec_pool_report by its C name), as JSON text (cubec_memory_report_json: the whole
 * device, every slot) or as the aligned table (cubec_memory_report_table). */
#include "pycubec.h"

#include <string.h>

/* Adds key = value (a new reference, consumed) to dict; -1 on failure. */
static int put(PyObject *dict, const char *key, PyObject *value)
{
    if (!value) return -1;
    const int rc = PyDict_SetItemString(dict, key, value);
    Py_DECREF(value);
    return rc;
}

static int put_u64(PyObject *dict, const char *key, uint64_t value)
{
    return put(dict, key, PyLong_FromUnsignedLongLong(value));
}

/* A char array of a report: NUL-terminated within its size, cut there if it is not. */
static int put_text(PyObject *dict, const char *key, const char *text, size_t capacity)
{
    return put(dict, key, PyUnicode_FromStringAndSize(text, (Py_ssize_t)strnlen(text, capacity)));
}

static PyObject *pool_dict(const cubec_pool_report *p)
{
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    if (put_text(d, "kind", p->kind, sizeof p->kind) < 0 ||
        put_u64(d, "page_size", p->page_size) < 0 ||
        put_u64(d, "max_slice_size", p->max_slice_size) < 0 || put_u64(d, "pages", p->pages) < 0 ||
        put_u64(d, "pages_peak", p->pages_peak) < 0 ||
        put_u64(d, "allocations", p->allocations) < 0 ||
        put_u64(d, "bytes_in_use", p->bytes_in_use) < 0 ||
        put_u64(d, "bytes_padding", p->bytes_padding) < 0 ||
        put_u64(d, "bytes_reserved", p->bytes_reserved) < 0 || put_u64(d, "cap", p->cap) < 0 ||
        put_u64(d, "dealloc_period", p->dealloc_period) < 0 ||
        put_u64(d, "outdated_pages", p->outdated_pages) < 0 ||
        put_u64(d, "guarded_pages", p->guarded_pages) < 0 ||
        put_u64(d, "relocations", p->relocations) < 0 ||
        put_u64(d, "relocated_bytes", p->relocated_bytes) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *report_dict(const cubec_memory_report *r)
{
    PyObject *d = PyDict_New();
    PyObject *pools = PyList_New(0);
    if (!d || !pools) goto fail;
    const uint32_t count = r->pool_count < CUBEC_MAX_POOLS ? r->pool_count : CUBEC_MAX_POOLS;
    for (uint32_t i = 0; i < count; i++) {
        PyObject *pool = pool_dict(&r->pools[i]);
        if (!pool || PyList_Append(pools, pool) < 0) {
            Py_XDECREF(pool);
            goto fail;
        }
        Py_DECREF(pool);
    }
    const char *window = r->window_mode == CUBEC_MEMORY_MODE_PERSISTENT  ? "persistent"
                         : r->window_mode == CUBEC_MEMORY_MODE_DEDICATED ? "dedicated"
                                                                         : "auto";
    if (put(d, "pools", Py_NewRef(pools)) < 0 || put_u64(d, "bytes_in_use", r->bytes_in_use) < 0 ||
        put_u64(d, "bytes_reserved", r->bytes_reserved) < 0 ||
        put_u64(d, "allocations", r->allocations) < 0 || put_u64(d, "pages", r->pages) < 0 ||
        put_text(d, "preset", r->preset, sizeof r->preset) < 0 ||
        put_u64(d, "pages_unbacked", r->pages_unbacked) < 0 ||
        put(d, "persistent", pool_dict(&r->persistent)) < 0 ||
        put(d, "dedicated", pool_dict(&r->dedicated)) < 0 ||
        put_u64(d, "budget_bytes", r->budget_bytes) < 0 ||
        put_u64(d, "budget_used_bytes", r->budget_used_bytes) < 0 ||
        put_text(d, "budget_source", r->budget_source, sizeof r->budget_source) < 0 ||
        put_u64(d, "budget_returning_bytes", r->budget_returning_bytes) < 0 ||
        put(d, "window_mode", PyUnicode_FromString(window)) < 0 ||
        put_u64(d, "window_depth", r->window_depth) < 0 ||
        put_text(d, "persistent_memory", r->persistent_memory, sizeof r->persistent_memory) < 0)
        goto fail;
    Py_DECREF(pools);
    return d;
fail:
    Py_XDECREF(pools);
    Py_XDECREF(d);
    return NULL;
}

/* A string the library returned, as str; freed either way. */
static PyObject *take_string(cubec_status status, char *text)
{
    if (status) {
        cubec_string_free(text);
        return pyc_raise(status);
    }
    PyObject *s = PyUnicode_FromString(text ? text : "");
    cubec_string_free(text);
    return s;
}

static PyObject *memory_report(PyObject *device, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"stream", "format", NULL};
    PyObject *stream = Py_None;
    const char *format = "dict";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|Os:memory_report", names, &stream, &format))
        return NULL;
    cubec_device *dev = pyc_device_handle((pyc_device *)device, "memory_report");
    if (!dev) return NULL;
    if (strcmp(format, "json") == 0 || strcmp(format, "table") == 0) {
        if (stream != Py_None) {
            PyErr_Format(PyExc_ValueError,
                         "memory_report: format '%s' covers every stream of the device; "
                         "stream= is for format 'dict' only",
                         format);
            return NULL;
        }
        char *text = NULL;
        cubec_status status = format[0] == 'j' ? cubec_memory_report_json(dev, &text)
                                               : cubec_memory_report_table(dev, &text);
        return take_string(status, text);
    }
    if (strcmp(format, "dict") != 0) {
        PyErr_Format(PyExc_ValueError,
                     "memory_report: format '%s' is not one of 'dict', 'json', 'table'", format);
        return NULL;
    }
    cubec_stream id;
    if (pyc_stream_arg((pyc_device *)device, stream, "memory_report", &id) < 0) return NULL;
    /* Large (over 3 KiB of pools): on the heap rather than the stack. */
    cubec_memory_report *report = PyMem_Calloc(1, sizeof *report);
    if (!report) return PyErr_NoMemory();
    report->struct_size = sizeof *report;
    cubec_status status = cubec_memory_report_get(dev, id, report);
    PyObject *result = status ? pyc_raise(status) : report_dict(report);
    PyMem_Free(report);
    return result;
}

/* dev.memory_cleanup(stream=None): returns empty pages to the driver (waits for the
 * work that still uses freed memory, so the GIL is released). */
static PyObject *memory_cleanup(PyObject *device, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"stream", NULL};
    PyObject *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:memory_cleanup", names, &stream))
        return NULL;
    cubec_device *dev = pyc_device_handle((pyc_device *)device, "memory_cleanup");
    cubec_stream id;
    if (!dev || pyc_stream_arg((pyc_device *)device, stream, "memory_cleanup", &id) < 0)
        return NULL;
    cubec_status status;
    PYC_WITHOUT_GIL_ON((pyc_device *)device, status = cubec_memory_cleanup(dev, id));
    if (pyc_check(status) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef memory_report_functions[] = {
    {"memory_report", (PyCFunction)(void (*)(void))memory_report, METH_VARARGS | METH_KEYWORDS,
     "memory_report(stream=None, format='dict'): the memory report as a dict (one "
     "stream's slot), or the whole device as 'json' or 'table' text."},
    {"memory_cleanup", (PyCFunction)(void (*)(void))memory_cleanup, METH_VARARGS | METH_KEYWORDS,
     "memory_cleanup(stream=None): returns every empty page to the driver."},
    {NULL, NULL, 0, NULL},
};

int pyc_register_memory_report(PyObject *module)
{
    (void)module;
    return pyc_type_add(PYC_DEVICE, memory_report_functions, NULL);
}
