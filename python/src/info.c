/* Metadata by name: the members of a kernel's CUBEC_INFO block as cubec_kernel_info_field reports
 * them, read once when the kernel is made, so that k(..., info={"n": 1000, "alpha": 2.0}) fills
 * the std430 block without a numpy record that mirrors it; and Kernel.info_fields, which lists
 * them. Every member must be given (a forgotten one would launch as zero); a name the block does
 * not have is refused listing the names it has. */
#include <string.h>

#include "pycubec.h"

typedef struct pyc_info_field {
    PyObject *name; /* interned: the keys of a literal dict match by identity */
    cubec_info_field f;
} pyc_info_field;

/* Bytes of one component of each cubec_info_type, and the numpy dtype name it converts with
 * (NULL: cannot be filled from Python values). */
static uint32_t component_bytes(cubec_info_type type, const char **out_dtype)
{
    switch (type) {
    case CUBEC_INFO_BOOL: *out_dtype = "uint32"; return 4;
    case CUBEC_INFO_INT8: *out_dtype = "int8"; return 1;
    case CUBEC_INFO_UINT8: *out_dtype = "uint8"; return 1;
    case CUBEC_INFO_INT16: *out_dtype = "int16"; return 2;
    case CUBEC_INFO_UINT16: *out_dtype = "uint16"; return 2;
    case CUBEC_INFO_FLOAT16: *out_dtype = "float16"; return 2;
    case CUBEC_INFO_INT32: *out_dtype = "int32"; return 4;
    case CUBEC_INFO_UINT32: *out_dtype = "uint32"; return 4;
    case CUBEC_INFO_FLOAT32: *out_dtype = "float32"; return 4;
    case CUBEC_INFO_INT64: *out_dtype = "int64"; return 8;
    case CUBEC_INFO_UINT64: *out_dtype = "uint64"; return 8;
    case CUBEC_INFO_FLOAT64: *out_dtype = "float64"; return 8;
    case CUBEC_INFO_ADDRESS: *out_dtype = "uint64"; return 8;
    default: *out_dtype = NULL; return 0;
    }
}

static const char *type_name(cubec_info_type type)
{
    static const char *const names[] = {"other",  "bool",    "int8",    "uint8",  "int16",
                                        "uint16", "float16", "int32",   "uint32", "float32",
                                        "int64",  "uint64",  "float64", "struct", "address"};
    return (unsigned)type < sizeof names / sizeof names[0] ? names[type] : "other";
}

int pyc_kernel_load_fields(pyc_kernel *k)
{
    k->fields = NULL;
    k->field_count = 0;
    uint32_t n = k->info.info_field_count;
    if (!n) {
        return 0;
    }
    k->fields = PyMem_Calloc(n, sizeof *k->fields);
    if (!k->fields) {
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        pyc_info_field *field = &k->fields[i];
        field->f.struct_size = sizeof field->f;
        if (pyc_check(cubec_kernel_get_info_field(k->device->dev, k->kernel, i, &field->f)) < 0) {
            return -1;
        }
        field->name = PyUnicode_InternFromString(field->f.name);
        field->f.name = NULL; /* the device's string: not kept past this call */
        if (!field->name) {
            return -1;
        }
        k->field_count = i + 1;
    }
    return 0;
}

void pyc_kernel_free_fields(pyc_kernel *k)
{
    for (uint32_t i = 0; i < k->field_count; i++) {
        Py_XDECREF(k->fields[i].name);
    }
    PyMem_Free(k->fields);
    k->fields = NULL;
    k->field_count = 0;
}

/* The names of the block's members, "n, alpha", for messages. */
static PyObject *field_names(pyc_kernel *k)
{
    PyObject *list = PyList_New(0);
    for (uint32_t i = 0; list && i < k->field_count; i++) {
        if (PyList_Append(list, k->fields[i].name) < 0) {
            Py_CLEAR(list);
        }
    }
    if (!list) {
        return NULL;
    }
    PyObject *sep = PyUnicode_FromString(", ");
    PyObject *joined = sep ? PyUnicode_Join(sep, list) : NULL;
    Py_XDECREF(sep);
    Py_DECREF(list);
    return joined;
}

static pyc_info_field *find(pyc_kernel *k, PyObject *key)
{
    for (uint32_t i = 0; i < k->field_count; i++) {
        if (k->fields[i].name == key) {
            return &k->fields[i];
        }
    }
    if (!PyUnicode_Check(key)) {
        return NULL;
    }
    for (uint32_t i = 0; i < k->field_count; i++) {
        if (PyUnicode_Compare(k->fields[i].name, key) == 0) {
            return &k->fields[i];
        }
    }
    return NULL;
}

/* A scalar member from a Python number (ints, floats, bools, numpy scalars), without numpy. */
static int put_scalar(pyc_kernel *k, const pyc_info_field *field, PyObject *value,
                      unsigned char *dst)
{
    const cubec_info_field *f = &field->f;
    switch (f->type) {
    case CUBEC_INFO_FLOAT32: {
        double v = PyFloat_AsDouble(value);
        float x = (float)v;
        if (v == -1.0 && PyErr_Occurred()) {
            break;
        }
        memcpy(dst, &x, sizeof x);
        return 0;
    }
    case CUBEC_INFO_FLOAT64: {
        double v = PyFloat_AsDouble(value);
        if (v == -1.0 && PyErr_Occurred()) {
            break;
        }
        memcpy(dst, &v, sizeof v);
        return 0;
    }
    case CUBEC_INFO_INT32:
    case CUBEC_INFO_UINT32:
    case CUBEC_INFO_INT64:
    case CUBEC_INFO_UINT64:
    case CUBEC_INFO_ADDRESS: {
        int is_signed = f->type == CUBEC_INFO_INT32 || f->type == CUBEC_INFO_INT64;
        int wide = f->type != CUBEC_INFO_INT32 && f->type != CUBEC_INFO_UINT32;
        PyObject *index = PyNumber_Index(value);
        if (!index) {
            break;
        }
        int overflow = 0;
        long long s = 0;
        unsigned long long u = 0;
        if (is_signed) {
            s = PyLong_AsLongLongAndOverflow(index, &overflow);
            overflow |= !wide && (s < INT32_MIN || s > INT32_MAX);
        } else {
            u = PyLong_AsUnsignedLongLong(index);
            if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                overflow = 1;
            }
            overflow |= !wide && u > UINT32_MAX;
        }
        Py_DECREF(index);
        if (PyErr_Occurred()) {
            break;
        }
        if (overflow) {
            pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                           "launch of %R: info member '%U' (%s) cannot hold %R", k->name,
                           field->name, type_name(f->type), value);
            return -1;
        }
        if (wide) {
            uint64_t bits = is_signed ? (uint64_t)s : u;
            memcpy(dst, &bits, sizeof bits);
        } else {
            uint32_t bits = is_signed ? (uint32_t)(int32_t)s : (uint32_t)u;
            memcpy(dst, &bits, sizeof bits);
        }
        return 0;
    }
    case CUBEC_INFO_BOOL: {
        int truth = PyObject_IsTrue(value);
        if (truth < 0) {
            break;
        }
        uint32_t bits = (uint32_t)truth;
        memcpy(dst, &bits, sizeof bits);
        return 0;
    }
    default: return 1; /* numpy converts it */
    }
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "launch of %R: info member '%U' is a %s, not %R", k->name,
                 field->name, type_name(f->type), value);
    return -1;
}

/* Any member: numpy converts the value to the component type, then the components go to their
 * std430 places (array elements array_stride apart, matrix columns matrix_stride apart). A matrix
 * is given column by column, as GLSL stores it. */
static int put_numpy(pyc_kernel *k, const pyc_info_field *field, PyObject *value,
                     unsigned char *block)
{
    const cubec_info_field *f = &field->f;
    const char *dtype;
    uint32_t bytes = component_bytes(f->type, &dtype);
    if (!dtype) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                       "launch of %R: info member '%U' is a %s, which a dict cannot fill; pass "
                       "the block as bytes or a numpy record",
                       k->name, field->name, type_name(f->type));
        return -1;
    }
    uint64_t elements = f->array_length ? f->array_length : 1;
    uint64_t per_element = (uint64_t)f->vector_size * f->columns;
    uint64_t count = elements * per_element;
    PyObject *np = pyc_numpy();
    PyObject *arr = np ? PyObject_CallMethod(np, "ascontiguousarray", "Os", value, dtype) : NULL;
    Py_buffer view;
    if (!arr || PyObject_GetBuffer(arr, &view, PyBUF_C_CONTIGUOUS) < 0) {
        Py_XDECREF(arr);
        return -1;
    }
    int rc = 0;
    if ((uint64_t)view.len != count * bytes) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                       "launch of %R: info member '%U' holds %llu %s values, got %zd in %R",
                       k->name, field->name, (unsigned long long)count, type_name(f->type),
                       view.len / (Py_ssize_t)bytes, value);
        rc = -1;
    } else {
        const unsigned char *src = view.buf;
        uint32_t column_stride = f->matrix_stride ? f->matrix_stride : f->vector_size * bytes;
        for (uint64_t e = 0; e < elements; e++) {
            for (uint32_t c = 0; c < f->columns; c++) {
                unsigned char *dst =
                    block + f->offset + e * f->array_stride + (uint64_t)c * column_stride;
                memcpy(dst, src, (size_t)f->vector_size * bytes);
                src += (size_t)f->vector_size * bytes;
            }
        }
    }
    PyBuffer_Release(&view);
    Py_DECREF(arr);
    return rc;
}

int pyc_info_from_dict(pyc_kernel *k, PyObject *dict, unsigned char *block)
{
    if (!k->field_count) {
        pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                       "launch of %R: info= is a dict, but the kernel's block lists no members "
                       "(no CUBEC_INFO, or a SPIR-V push-constant block)",
                       k->name);
        return -1;
    }
    Py_ssize_t pos = 0, given = 0;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        pyc_info_field *field = find(k, key);
        if (!field) {
            PyObject *names = field_names(k);
            if (names) {
                pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                               "launch of %R: the info block has no member %R (it has: %U)",
                               k->name, key, names);
                Py_DECREF(names);
            }
            return -1;
        }
        const cubec_info_field *f = &field->f;
        int rc = 1;
        if (f->vector_size == 1 && f->columns == 1 && f->array_length == 0) {
            rc = put_scalar(k, field, value, block + f->offset);
        }
        if (rc == 1) {
            rc = put_numpy(k, field, value, block);
        }
        if (rc < 0) {
            return -1;
        }
        given++;
    }
    if ((uint32_t)given != k->field_count) {
        for (uint32_t i = 0; i < k->field_count; i++) {
            PyObject *v = PyDict_GetItemWithError(dict, k->fields[i].name);
            if (!v && !PyErr_Occurred()) {
                pyc_raise_code(CUBEC_INVALID_ARGUMENT,
                               "launch of %R: info dict lacks member '%U' (every member is "
                               "needed: a missing one would launch as zero)",
                               k->name, k->fields[i].name);
                return -1;
            }
        }
        return -1;
    }
    return 0;
}

/* Kernel.info_fields: the members as dicts (name, offset, size, type, vector_size, columns,
 * array_length, array_stride, matrix_stride). */
static PyObject *get_info_fields(PyObject *self, void *c)
{
    (void)c;
    pyc_kernel *k = (pyc_kernel *)self;
    PyObject *t = PyTuple_New(k->field_count);
    for (uint32_t i = 0; t && i < k->field_count; i++) {
        const cubec_info_field *f = &k->fields[i].f;
        PyObject *d = Py_BuildValue("{s:O,s:I,s:I,s:s,s:I,s:I,s:I,s:I,s:I}", "name",
                                    k->fields[i].name, "offset", f->offset, "size", f->size, "type",
                                    type_name(f->type), "vector_size", f->vector_size, "columns",
                                    f->columns, "array_length", f->array_length, "array_stride",
                                    f->array_stride, "matrix_stride", f->matrix_stride);
        if (!d) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SetItem(t, i, d);
    }
    return t;
}

static PyGetSetDef kernel_getset[] = {
    {"info_fields", get_info_fields, NULL,
     "The metadata block's members, in offset order: what an info= dict fills.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

int pyc_register_info(PyObject *module)
{
    (void)module;
    return pyc_type_add(PYC_KERNEL, NULL, kernel_getset);
}
