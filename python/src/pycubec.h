/* The Python extension's shared declarations: the object struct of every type, the module's
 * global state, and the helpers the files share (errors, argument parsing, streams, numpy).
 * Each .c file owns one type or one concern and adds it to the module through the registration
 * function that parts.h lists; a new file adds one line there. Written against the Limited API
 * of CPython 3.11 (one abi3 module for 3.11 and later). */
#ifndef PYCUBEC_H
#define PYCUBEC_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include <cubec/cubec.h>

/* Vectorcall is in the stable ABI from 3.12 only, but 3.11 already honours the flag and the
 * "__vectorcalloffset__" member on types made by PyType_FromSpec: kernels and pre-bound launches
 * use it so that k(...) is one call without an argument tuple or dict. */
#ifndef Py_TPFLAGS_HAVE_VECTORCALL
#define Py_TPFLAGS_HAVE_VECTORCALL (1UL << 11)
#endif
typedef PyObject *(*pyc_vectorcallfunc)(PyObject *callable, PyObject *const *args, size_t nargsf,
                                        PyObject *kwnames);
/* PyVectorcall_NARGS: the offset flag lives in the top bit. */
#define PYC_NARGS(nargsf) ((Py_ssize_t)((nargsf) & ~((size_t)1 << (8 * sizeof(size_t) - 1))))

/* ---- objects ---------------------------------------------------------------------------- */

/* cubec.Device: an open cubec_device. Every other object holds a strong reference to its
 * device, so the struct outlives them; after close() `dev` is NULL and their releases are
 * skipped (cubec_device_close freed what they held). */
typedef struct pyc_device {
    PyObject ob_base;
    cubec_device *dev; /* NULL once closed */
    cubec_device_info info;
    /* Objects that need the device open until they go: host_empty() memory numpy arrays point
     * at (cubec_device_close would free it) and reads still in flight into Python memory. A
     * close() while any lives is deferred until the last goes (pyc_device_drop_hold). */
    Py_ssize_t holds;
    int close_pending;
    struct pyc_device *next_open; /* the list of open devices, closed in order at exit */
    /* Messages of the validation layer (Device(validation=True)), counted on cubec's threads:
     * no Python runs there. */
    unsigned long validation_messages;
} pyc_device;

/* cubec.Buffer: a cubec_buffer with the numpy dtype and shape it was made with. */
typedef struct pyc_buffer {
    PyObject ob_base;
    pyc_device *device;
    cubec_buffer buf; /* zero once released */
    uint64_t size;
    PyObject *dtype; /* a numpy.dtype */
    PyObject *shape; /* a tuple of ints */
    int exportable;  /* made by cubec_buffer_create_exportable (exportable=True) */
    /* The buffer id cubec_cuda_map mapped into CUDA (0: none). The mapping outlives release():
     * a DLPack capsule's consumer may still use it; the buffer's collection unmaps it. */
    uint64_t cuda_mapped;
} pyc_buffer;

/* cubec.Kernel: a compiled kernel and its reflected interface. */
typedef struct pyc_kernel {
    PyObject ob_base;
    pyc_vectorcallfunc vectorcall;
    pyc_device *device;
    cubec_kernel kernel; /* zero once destroyed */
    cubec_kernel_info info;
    PyObject *name;
    /* The metadata block's members (cubec_kernel_info_field), for info= dicts; info.c. */
    struct pyc_info_field *fields;
    uint32_t field_count;
} pyc_kernel;

/* cubec.Launch: a launch with its buffers, groups, metadata and stream bound once (k.bind). */
typedef struct pyc_launch {
    PyObject ob_base;
    pyc_vectorcallfunc vectorcall;
    pyc_kernel *kernel;
    PyObject *buffers; /* tuple of the bound pyc_buffer objects, kept alive */
    PyObject *stream_obj;
    cubec_stream stream;
    cubec_launch_desc desc;
    cubec_buffer ids[32]; /* the bound buffers, then those reached by address */
    void *info;           /* PyMem copy of the bound metadata, or NULL */
    PyObject *addressed;  /* tuple of the Buffers reached by address, kept alive, or NULL */
} pyc_launch;

/* cubec.Stream: a stream id of one device. */
typedef struct pyc_stream {
    PyObject ob_base;
    pyc_device *device;
    cubec_stream id;
} pyc_stream;

/* The module's state: one interpreter, so globals (a multi-phase module would pay a lookup per
 * call to find them). */
typedef struct pyc_state {
    PyObject *module;
    PyTypeObject *device_type, *buffer_type, *kernel_type, *launch_type, *stream_type, *future_type,
        *host_memory_type;
    PyObject *error;          /* cubec.Error */
    PyObject *code_error[64]; /* the subclass of each code, by value */
    PyObject *numpy;          /* imported on first use: `import cubec` stays fast */
    PyObject *str_groups, *str_info, *str_stream; /* interned keyword names */
    pyc_device *open_devices;
    pyc_device *default_device; /* cubec.host_empty's device when none is named */
} pyc_state;

extern pyc_state pyc;

/* Runs `stmt` with the GIL released: every call that can block (a wait for the GPU, a compile,
 * a device open, a large host copy). Enqueues keep the GIL: they take microseconds. */
#define PYC_WITHOUT_GIL(stmt)                                                                      \
    do {                                                                                           \
        PyThreadState *pyc_unlocked_ = PyEval_SaveThread();                                        \
        stmt;                                                                                      \
        PyEval_RestoreThread(pyc_unlocked_);                                                       \
    } while (0)

/* PYC_WITHOUT_GIL for a call on `device`: a hold keeps the device open meanwhile, so that a
 * close() from another thread waits for the call instead of freeing what it uses. */
#define PYC_WITHOUT_GIL_ON(device, stmt)                                                           \
    do {                                                                                           \
        pyc_device_take_hold(device);                                                              \
        PYC_WITHOUT_GIL(stmt);                                                                     \
        pyc_device_drop_hold(device);                                                              \
    } while (0)

/* ---- helpers ------------------------------------------------------------------------------ */

/* Raises the exception of `status` (its code's class, cubec's whole message) and frees it;
 * returns NULL. */
PyObject *pyc_raise(cubec_status status);
/* 0 for a NULL status; otherwise raises it and returns -1. */
static inline int pyc_check(cubec_status status)
{
    if (!status) {
        return 0;
    }
    pyc_raise(status);
    return -1;
}
/* Raises the class of `code` with a message of the binding's own (PyUnicode_FromFormat's
 * format: %R and %U work, %g does not). */
PyObject *pyc_raise_code(cubec_code code, const char *format, ...);

/* Takes and drops a hold on an open device (see pyc_device.holds); dropping the last one of a
 * device whose close() was deferred closes it. */
void pyc_device_take_hold(pyc_device *device);
void pyc_device_drop_hold(pyc_device *device);
/* Closes the device now, or once its last hold goes. */
void pyc_device_close_now(pyc_device *device);

/* The device's handle, or NULL with an exception naming `who` when it is closed. */
cubec_device *pyc_device_handle(pyc_device *device, const char *who);
/* stream= : None is the calling thread's stream; a cubec.Stream must be of `device`. */
int pyc_stream_arg(pyc_device *device, PyObject *obj, const char *who, cubec_stream *out);
/* The numpy module (imported on first use), borrowed; NULL with ImportError. */
PyObject *pyc_numpy(void);
/* numpy.dtype(obj) (float32 for NULL or None), new reference; dtypes that hold Python objects
 * are refused. */
PyObject *pyc_dtype(PyObject *obj);
/* The dtype of an array, refused as pyc_dtype refuses, new reference. */
PyObject *pyc_dtype_of(PyObject *array);
/* A shape argument (an int or a sequence of ints >= 0) as a tuple, and the element count. */
PyObject *pyc_shape(PyObject *obj, const char *who, uint64_t *out_count);
/* The itemsize of a numpy dtype, or -1 with an exception. */
Py_ssize_t pyc_itemsize(PyObject *dtype);

/* Keyword arguments of a METH_FASTCALL|METH_KEYWORDS call: names[i] (NULL-terminated list)
 * gets its value in out[i] (borrowed; NULL when absent). Unknown or repeated names raise
 * TypeError naming `who`. */
int pyc_kwargs(const char *who, PyObject *kwnames, PyObject *const *kwvalues,
               const char *const *names, PyObject **out);
/* Positional and keyword arguments together: the first nargs names (at most max_positional)
 * take the positional values, the others come by keyword as in pyc_kwargs; a name given both
 * ways, or one of the first `required` names given neither way, raises TypeError naming `who`. */
int pyc_args(const char *who, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
             const char *const *names, Py_ssize_t max_positional, Py_ssize_t required,
             PyObject **out);

/* Creates a Buffer object that takes over `buf` (released on failure). */
PyObject *pyc_buffer_wrap(pyc_device *device, cubec_buffer buf, uint64_t size, PyObject *dtype,
                          PyObject *shape);
/* cuda.c: the buffer mapped into CUDA (cubec_cuda_map, made once and kept until the buffer
 * object is collected); -1 with the cubec error raised. */
int pyc_buffer_cuda_map(pyc_buffer *b, const char *who, cubec_cuda_mapping *out);
/* cuda.c: ends the buffer's CUDA mapping, if any (at its collection). */
void pyc_buffer_cuda_unmap(pyc_buffer *b);
/* mapping.c: a zero-copy view of the buffer's bytes (cubec_buffer_map, after the stream's work on
 * the buffer): the Mapping object (buffer protocol, bytes) or a numpy array of the buffer's dtype
 * and shape over it, whose base keeps the buffer, its device and the map alive. NULL with
 * *out_unsupported set and no exception where the memory is not host-visible (then copy);
 * NULL with an exception on other errors. */
PyObject *pyc_buffer_mapping(pyc_buffer *b, cubec_stream stream, int *out_unsupported);
PyObject *pyc_buffer_view_array(pyc_buffer *b, cubec_stream stream, int *out_unsupported);
/* The Buffer type's bf_getbuffer: numpy's export of such a view, BufferError where the memory is
 * not host-visible. */
int pyc_buffer_getbuffer(PyObject *self, Py_buffer *view, int flags);
/* Fills `desc` from a launch's arguments (see launch.c); used by k(...) and k.bind(...). */
/* A launch's metadata bytes while they are in use: a borrowed buffer (bytes, a numpy record),
 * or a block built from an info= dict, in `local` or, when larger, on the heap. */
typedef struct pyc_info_hold {
    Py_buffer view; /* held while view.obj != NULL */
    void *heap;
    unsigned char local[128];
} pyc_info_hold;
void pyc_info_release(pyc_info_hold *hold);

typedef struct pyc_launch_args {
    cubec_launch_desc desc;
    cubec_buffer ids[32]; /* the bound buffers, then those reached by address */
    cubec_stream stream;
    pyc_info_hold info;
    PyObject *addressed[32]; /* the Buffers reached by address (borrowed) */
} pyc_launch_args;
int pyc_launch_parse(pyc_kernel *kernel, PyObject *const *args, Py_ssize_t nargs, PyObject *groups,
                     PyObject *info, PyObject *stream, pyc_launch_args *out);
void pyc_launch_args_done(pyc_launch_args *args);
int pyc_groups_arg(PyObject *obj, uint32_t out[3]);
int pyc_info_arg(pyc_kernel *kernel, PyObject *obj, const void **out_ptr, uint32_t *out_size,
                 pyc_info_hold *hold);
/* info.c: reads the kernel's metadata members after its creation (the GIL held); frees them. */
int pyc_kernel_load_fields(pyc_kernel *kernel);
void pyc_kernel_free_fields(pyc_kernel *kernel);
/* info.c: fills `block` (info_size bytes, zeroed) from an info= dict, every member by name. */
int pyc_info_from_dict(pyc_kernel *kernel, PyObject *dict, unsigned char *block);

/* k(*buffers, groups=, info=, stream=): the kernel's vectorcall (launch.c). */
PyObject *pyc_kernel_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);

/* tp_call for types whose calls go through vectorcall: converts the tuple and dict. */
PyObject *pyc_call_via_vectorcall(PyObject *self, PyObject *args, PyObject *kwargs);

/* The types whose methods other files may add to (dev.capture() from graph.c, say): each type's
 * file defines it with pyc_type_define during registration, any part adds methods or
 * properties with pyc_type_add, and module.c makes the types after every part registered. */
typedef enum pyc_type_id {
    PYC_DEVICE,
    PYC_BUFFER,
    PYC_KERNEL,
    PYC_LAUNCH,
    PYC_STREAM,
    PYC_TYPE_COUNT
} pyc_type_id;
/* `spec` (static) may carry its own Py_tp_methods / Py_tp_getset; *out is set when made. */
void pyc_type_define(pyc_type_id id, PyType_Spec *spec, PyTypeObject **out);
/* Adds a static, NULL-terminated table (either may be NULL). Returns -1 with an exception when
 * the type's table is full. */
int pyc_type_add(pyc_type_id id, PyMethodDef *methods, PyGetSetDef *getset);
/* Makes every defined type and adds it to the module under its spec's short name. */
int pyc_types_make(PyObject *module);

/* Registration, one per file (parts.h lists them in order). */
#define PYC_PART(name) int pyc_register_##name(PyObject *module);
#include "parts.h"
#undef PYC_PART

#endif
