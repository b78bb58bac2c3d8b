"""CuPy-style kernel templates: element-wise and reduction kernels from one-line bodies.

This module owns the generation of GLSL from a template's parameter lists and expressions, and
the objects that launch it. It knows nothing of Vulkan: a template becomes an ordinary cubec
kernel through ``Device.kernel(glsl=...)``, so the same template twice is the same source and hits
cubec's kernel cache (memory, then disk) like any kernel.

    add = cubec.elementwise("float x, float y", "float z", "z = x + y", name="add")
    z = add(x_buf, y_buf)                  # a new buffer shaped like x_buf
    add(x_buf, y_buf, out=z)               # or into a buffer of the caller's

    sumsq = cubec.reduction("float x", "float y", map_expr="x * x", reduce_expr="a + b",
                            identity="0")
    total = sumsq(x_buf)                   # a buffer of one element

A parameter bound to a Python number instead of a buffer is a scalar: it travels in the launch's
metadata (``CUBEC_INFO``), so changing its value recompiles nothing.
"""

import struct
from _thread import allocate_lock  # not `threading`: `import cubec` stays light

__all__ = ["elementwise", "reduction", "ElementwiseKernel", "ReductionKernel"]

# Workgroup size of every generated kernel: a multiple of every subgroup size in use (lavapipe
# 8, NVIDIA 32, AMD 64) and small enough for every Vulkan device (the minimum limit is 128).
_LOCAL_SIZE = 128
# Workgroups per grid row: Vulkan guarantees at least 65535 in x; larger launches use y too.
_MAX_GROUPS_X = 65535
# Workgroups a reduction's first pass uses at most; each reduces a strided share of the input to
# one partial, and the second pass (one workgroup) reduces the partials.
_REDUCE_GROUPS = 256

# Parameter types: the name in a template, the GLSL type, the numpy dtype's name (numpy is
# imported at the first call, not with cubec), the struct code of a scalar in the metadata
# block (std430: natural alignment), and the GLSL extension it needs.
_TYPES = {}
for _names, _glsl, _dtype, _code, _ext in (
    (("float", "float32", "f32"), "float", "float32", "f", None),
    (("double", "float64", "f64"), "double", "float64", "d", None),
    (("int", "int32", "i32"), "int", "int32", "i", None),
    (("uint", "uint32", "u32"), "uint", "uint32", "I", None),
    (("int64", "long", "i64"), "int64_t", "int64", "q", "GL_EXT_shader_explicit_arithmetic_types_int64"),
    (("uint64", "ulong", "u64"), "uint64_t", "uint64", "Q", "GL_EXT_shader_explicit_arithmetic_types_int64"),
):
    for _name in _names:
        _TYPES[_name] = (_glsl, _dtype, _code, _ext)


class _Param:
    """One parameter of a template: its type and name."""

    __slots__ = ("glsl", "dtype", "code", "ext", "name")

    def __init__(self, text, where):
        words = text.split()
        if len(words) != 2:
            raise ValueError(f"{where}: parameter {text.strip()!r} is not 'TYPE NAME'")
        type_name, name = words
        if type_name not in _TYPES:
            raise ValueError(
                f"{where}: parameter {text.strip()!r}: unknown type {type_name!r} "
                f"(known: {', '.join(sorted(_TYPES))})")
        if not name.isidentifier() or name.startswith("_") or name in ("i", "n", "info"):
            raise ValueError(
                f"{where}: parameter name {name!r} is not usable (an identifier, not starting "
                f"with '_', and not one of i, n, info)")
        self.glsl, self.dtype, self.code, self.ext = _TYPES[type_name]
        self.name = name


def _parse_params(text, where):
    if not isinstance(text, str):
        raise TypeError(f"{where} must be a str like 'float x, float y', not {type(text).__name__}")
    params = [_Param(p, where) for p in text.split(",") if p.strip()]
    names = [p.name for p in params]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"{where}: parameter {name!r} appears twice")
    return params


def _np():
    import numpy

    return numpy


def _is_scalar(value):
    return isinstance(value, (int, float, bool, _np().number))


def _is_buffer(value):
    # A cubec buffer (or anything that looks like one): what the launch binds. Numbers are scalars.
    return hasattr(value, "dtype") and hasattr(value, "shape") and hasattr(value, "device")


def _element_count(buf):
    count = 1
    for extent in buf.shape:
        count *= extent
    return count


def _groups_for(n):
    """Workgroups of _LOCAL_SIZE invocations that cover `n` elements."""
    return (n + _LOCAL_SIZE - 1) // _LOCAL_SIZE


def _check_dtype(who, p, buf):
    """Refuses a buffer whose dtype is not the parameter's."""
    np = _np()
    if np.dtype(buf.dtype) != np.dtype(p.dtype):
        raise TypeError(f"{who}() {p.name!r}: a buffer of {np.dtype(buf.dtype)}, "
                        f"the template says {p.dtype}")


def _split_inputs(who, in_params, args):
    """The call's inputs as (buffers in order, {name: scalar}); each buffer's dtype checked."""
    if len(args) != len(in_params):
        raise TypeError(f"{who}() takes {len(in_params)} inputs "
                        f"({', '.join(p.name for p in in_params)}), got {len(args)}")
    buffers, scalar_values = [], {}
    for p, a in zip(in_params, args):
        if _is_buffer(a):
            _check_dtype(who, p, a)
            buffers.append(a)
        elif _is_scalar(a):
            scalar_values[p.name] = a
        else:
            raise TypeError(f"{who}() input {p.name!r}: a cubec buffer or a number, "
                            f"not {type(a).__name__}")
    return buffers, scalar_values


def _grid(groups):
    """Workgroup counts covering `groups` workgroups: x up to the guaranteed limit, then y."""
    if groups <= _MAX_GROUPS_X:
        return (max(groups, 1), 1, 1)
    return (_MAX_GROUPS_X, (groups + _MAX_GROUPS_X - 1) // _MAX_GROUPS_X, 1)


def _info_block(scalars):
    """The CUBEC_INFO members and a struct format for the element count `n` and `scalars`.

    8-byte scalars come first so that no member needs padding: the block's size is then the sum
    of its members, whatever rule a device rounds the block by."""
    ordered = sorted(scalars, key=lambda p: -struct.calcsize(p.code))
    members = "".join(f"{p.glsl} {p.name};" for p in ordered) + "uint n;"
    fmt = "<" + "".join(p.code for p in ordered) + "I"
    return ordered, members, fmt


def _header(params):
    exts = sorted({p.ext for p in params if p.ext})
    lines = ["#version 450"]
    lines += [f"#extension {e} : require" for e in exts]
    return "\n".join(lines) + "\n"


def _pack(fmt, ordered, scalar_values, n):
    values = []
    for p in ordered:
        v = scalar_values[p.name]
        values.append(float(v) if p.code in "fd" else int(v))
    try:
        return struct.pack(fmt, *values, n)
    except struct.error as e:
        raise ValueError(f"a scalar does not fit its type: {e}") from None


class _PerDevice:
    """The kernels a template compiled, one per device and set of scalar parameters.

    The key holds id(device); the kernel object keeps its device alive, so the id cannot be
    reused while the entry exists."""

    def __init__(self):
        self._lock = allocate_lock()
        self._kernels = {}

    def get(self, device, key, make):
        full = (id(device), key)
        with self._lock:
            kernel = self._kernels.get(full)
        if kernel is not None:
            return kernel
        kernel = make()  # compiles without the lock (cubec shares concurrent compilations)
        with self._lock:
            return self._kernels.setdefault(full, kernel)

    def clear(self):
        with self._lock:
            self._kernels.clear()


class ElementwiseKernel:
    """A kernel applying `operation` to every element: see :func:`elementwise`."""

    def __init__(self, in_params, out_params, operation, name="elementwise", preamble=""):
        self.in_params = _parse_params(in_params, "in_params")
        self.out_params = _parse_params(out_params, "out_params")
        if not self.out_params:
            raise ValueError("out_params: at least one output is needed")
        names = [p.name for p in self.in_params + self.out_params]
        for n in names:
            if names.count(n) > 1:
                raise ValueError(f"parameter {n!r} is both an input and an output")
        if not isinstance(operation, str) or not operation.strip():
            raise ValueError(f"operation must be a non-empty str, not {operation!r}")
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"name must be an identifier, not {name!r}")
        self.operation = operation
        self.name = name
        self.preamble = preamble
        self._kernels = _PerDevice()

    def source(self, scalar_names=()):
        """The GLSL of this template with the inputs in `scalar_names` passed as scalars."""
        scalar_names = set(scalar_names)
        arrays = [p for p in self.in_params if p.name not in scalar_names] + self.out_params
        scalars = [p for p in self.in_params if p.name in scalar_names]
        _, members, _ = _info_block(scalars)
        out_names = {p.name for p in self.out_params}
        src = [_header(self.in_params + self.out_params)]
        src.append(f"layout(local_size_x = {_LOCAL_SIZE}) in;\n")
        for binding, p in enumerate(arrays):
            access = "writeonly " if p.name in out_names else "readonly "
            src.append(f"layout(set = 0, binding = {binding}) {access}buffer B_{p.name} "
                       f"{{ {p.glsl} _{p.name}[]; }};\n")
        src.append(f"CUBEC_INFO({members})\n")
        src.append(self.preamble + "\n")
        src.append("void main()\n{\n")
        src.append(f"    uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * "
                   f"{_LOCAL_SIZE}u + gl_LocalInvocationID.x;\n")
        src.append("    uint n = info.n;\n")
        src.append("    if (i >= n) return;\n")
        for p in self.in_params:
            value = f"info.{p.name}" if p.name in scalar_names else f"_{p.name}[i]"
            src.append(f"    {p.glsl} {p.name} = {value};\n")
        for p in self.out_params:
            src.append(f"    {p.glsl} {p.name};\n")
        src.append(f"    {{\n        {self.operation};\n    }}\n")
        for p in self.out_params:
            src.append(f"    _{p.name}[i] = {p.name};\n")
        src.append("}\n")
        return "".join(src)

    def kernel(self, device, scalar_names=()):
        """The cubec kernel of this template on `device` (compiled once per device)."""
        key = tuple(sorted(scalar_names))
        return self._kernels.get(
            device, key, lambda: device.kernel(glsl=self.source(key), name=self.name))

    def __call__(self, *args, out=None, stream=None, size=None):
        """Launches on every element; returns the output buffer (a tuple for several).

        `out`: the output buffer (a tuple for several); new buffers shaped like the first input
        buffer otherwise. `size`: the element count (default: the first array's)."""
        buffers, scalar_values = _split_inputs(self.name, self.in_params, args)
        outs = self._outputs(out, buffers, size)
        arrays = buffers + list(outs)
        if not arrays:
            raise TypeError(f"{self.name}(): no buffer among the arguments")
        device = arrays[0].device
        n = size if size is not None else _element_count(arrays[0])
        for p, b in zip([p for p in self.in_params if p.name not in scalar_values]
                        + self.out_params, arrays):
            if _element_count(b) < n:
                raise ValueError(f"{self.name}() {p.name!r}: {_element_count(b)} elements, "
                                 f"fewer than the {n} launched")
        scalars = [p for p in self.in_params if p.name in scalar_values]
        ordered, _, fmt = _info_block(scalars)
        info = _pack(fmt, ordered, scalar_values, n)
        k = self.kernel(device, tuple(p.name for p in scalars))
        groups = _grid(_groups_for(n))
        if n > 0:
            k(*arrays, groups=groups, info=info, stream=stream)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _outputs(self, out, buffers, size):
        if out is None:
            if not buffers:
                raise TypeError(f"{self.name}(): out= is needed when every input is a scalar")
            like = buffers[0]
            shape = (size,) if size is not None else tuple(like.shape)
            return [like.device.empty(shape, p.dtype) for p in self.out_params]
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outs) != len(self.out_params):
            raise TypeError(f"{self.name}(): out= holds {len(outs)} buffers, the template has "
                            f"{len(self.out_params)} outputs")
        for p, o in zip(self.out_params, outs):
            if not _is_buffer(o):
                raise TypeError(f"{self.name}() output {p.name!r}: a cubec buffer, not "
                                f"{type(o).__name__}")
            _check_dtype(self.name, p, o)
        return outs


class ReductionKernel:
    """A reduction of every element to one value: see :func:`reduction`."""

    def __init__(self, in_params, out_params, map_expr, reduce_expr, identity,
                 post_map_expr=None, name="reduction", reduce_type=None, preamble=""):
        self.in_params = _parse_params(in_params, "in_params")
        self.out_params = _parse_params(out_params, "out_params")
        if len(self.out_params) != 1:
            raise ValueError(f"out_params: a reduction has one output, not "
                             f"{len(self.out_params)}")
        if not self.in_params:
            raise ValueError("in_params: a reduction needs at least one input")
        for what, text in (("map_expr", map_expr), ("reduce_expr", reduce_expr),
                           ("identity", identity)):
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"{what} must be a non-empty str, not {text!r}")
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"name must be an identifier, not {name!r}")
        out = self.out_params[0]
        if reduce_type is not None and reduce_type not in _TYPES:
            raise ValueError(f"reduce_type {reduce_type!r} is not a known type")
        self.reduce_type = _TYPES[reduce_type][0] if reduce_type else out.glsl
        self.map_expr = map_expr
        self.reduce_expr = reduce_expr
        self.identity = identity
        self.post_map_expr = post_map_expr or f"{out.name} = a"
        self.name = name
        self.preamble = preamble
        self._kernels = _PerDevice()

    def _source(self, scalar_names, final):
        """First pass (final=False): each workgroup maps and reduces a strided share of the
        input into one partial. Second pass (final=True): one workgroup reduces the partials and
        applies post_map_expr."""
        out = self.out_params[0]
        rt = self.reduce_type
        scalars = [p for p in self.in_params if p.name in scalar_names]
        _, members, _ = _info_block(scalars)
        src = [_header(self.in_params + self.out_params)]
        src.append(f"layout(local_size_x = {_LOCAL_SIZE}) in;\n")
        if final:
            src.append(f"layout(set = 0, binding = 0) readonly buffer B_partial "
                       f"{{ {rt} _partial_in[]; }};\n")
            src.append(f"layout(set = 0, binding = 1) writeonly buffer B_{out.name} "
                       f"{{ {out.glsl} _{out.name}[]; }};\n")
        else:
            binding = 0
            for p in self.in_params:
                if p.name in scalar_names:
                    continue
                src.append(f"layout(set = 0, binding = {binding}) readonly buffer B_{p.name} "
                           f"{{ {p.glsl} _{p.name}[]; }};\n")
                binding += 1
            src.append(f"layout(set = 0, binding = {binding}) writeonly buffer B_partial "
                       f"{{ {rt} _partial_out[]; }};\n")
        src.append(f"CUBEC_INFO({members})\n")
        src.append(f"shared {rt} _shared[{_LOCAL_SIZE}];\n")
        src.append(self.preamble + "\n")
        src.append(f"{rt} _reduce({rt} a, {rt} b) {{ return ({self.reduce_expr}); }}\n")
        if not final:
            src.append(f"{rt} _map(uint i) {{\n")
            for p in self.in_params:
                value = f"info.{p.name}" if p.name in scalar_names else f"_{p.name}[i]"
                src.append(f"    {p.glsl} {p.name} = {value};\n")
            src.append(f"    return {rt}({self.map_expr});\n}}\n")
        src.append("void main()\n{\n")
        src.append("    uint t = gl_LocalInvocationID.x;\n")
        src.append(f"    {rt} a = {rt}({self.identity});\n")
        if final:
            src.append(f"    for (uint i = t; i < info.n; i += {_LOCAL_SIZE}u) "
                       f"a = _reduce(a, _partial_in[i]);\n")
        else:
            src.append(f"    uint stride = gl_NumWorkGroups.x * {_LOCAL_SIZE}u;\n")
            src.append(f"    for (uint i = gl_WorkGroupID.x * {_LOCAL_SIZE}u + t; i < info.n; "
                       f"i += stride) a = _reduce(a, _map(i));\n")
        src.append("    _shared[t] = a;\n    barrier();\n")
        src.append(f"    for (uint s = {_LOCAL_SIZE // 2}u; s > 0u; s >>= 1) {{\n"
                   "        if (t < s) _shared[t] = _reduce(_shared[t], _shared[t + s]);\n"
                   "        barrier();\n    }\n")
        src.append("    if (t != 0u) return;\n")
        src.append("    a = _shared[0];\n")
        if final:
            src.append(f"    {out.glsl} {out.name};\n")
            src.append(f"    {{\n        {self.post_map_expr};\n    }}\n")
            src.append(f"    _{out.name}[0] = {out.name};\n")
        else:
            src.append("    _partial_out[gl_WorkGroupID.x] = a;\n")
        src.append("}\n")
        return "".join(src)

    def source(self, scalar_names=()):
        """The GLSL of both passes (first, second) with `scalar_names` passed as scalars."""
        return (self._source(set(scalar_names), False), self._source(set(), True))

    def kernels(self, device, scalar_names=()):
        key = tuple(sorted(scalar_names))
        first = self._kernels.get(device, ("map",) + key, lambda: device.kernel(
            glsl=self._source(set(key), False), name=self.name))
        second = self._kernels.get(device, ("final",), lambda: device.kernel(
            glsl=self._source(set(), True), name=self.name + "_final"))
        return first, second

    def __call__(self, *args, out=None, stream=None):
        """Reduces every element of the inputs; returns `out` or a new one-element buffer."""
        buffers, scalar_values = _split_inputs(self.name, self.in_params, args)
        if not buffers:
            raise TypeError(f"{self.name}(): at least one input must be a buffer")
        device = buffers[0].device
        n = _element_count(buffers[0])
        for b in buffers[1:]:
            if _element_count(b) != n:
                raise ValueError(f"{self.name}(): inputs of {n} and {_element_count(b)} elements")
        o = self.out_params[0]
        if out is None:
            out = device.empty((1,), o.dtype)
        elif not _is_buffer(out) or _np().dtype(out.dtype) != _np().dtype(o.dtype):
            raise TypeError(f"{self.name}() out=: a cubec buffer of {o.dtype}")
        rt_dtype = next(d for g, d, _, _ in _TYPES.values() if g == self.reduce_type)
        groups = max(1, min(_REDUCE_GROUPS, _groups_for(n)))
        partial = device.empty((groups,), rt_dtype)
        scalars = [p for p in self.in_params if p.name in scalar_values]
        ordered, _, fmt = _info_block(scalars)
        first, second = self.kernels(device, tuple(p.name for p in scalars))
        first(*buffers, partial, groups=(groups, 1, 1),
              info=_pack(fmt, ordered, scalar_values, n), stream=stream)
        second(partial, out, groups=(1, 1, 1), info=struct.pack("<I", groups), stream=stream)
        return out


def elementwise(in_params, out_params, operation, name="elementwise", preamble=""):
    """An element-wise kernel from a one-line body, as CuPy's ElementwiseKernel.

    `in_params` and `out_params` are comma-separated 'TYPE NAME' lists (types: float, double,
    int, uint, int64, uint64, or numpy's float32 ...). `operation` is GLSL run once per element
    with each parameter as a local variable; `i` is the element's index and `n` the count.
    `preamble` is GLSL placed before main (helper functions)."""
    return ElementwiseKernel(in_params, out_params, operation, name=name, preamble=preamble)


def reduction(in_params, out_params, map_expr, reduce_expr, identity, post_map_expr=None,
              name="reduction", reduce_type=None, preamble=""):
    """A reduction of every element to one value, as CuPy's ReductionKernel.

    `map_expr` (an expression of the inputs) gives each element's value, `reduce_expr` (of `a`
    and `b`) combines two, `identity` is the neutral value, and `post_map_expr` (a statement of
    `a` assigning the output; default 'OUT = a') turns the result into the output."""
    return ReductionKernel(in_params, out_params, map_expr, reduce_expr, identity,
                           post_map_expr=post_map_expr, name=name, reduce_type=reduce_type,
                           preamble=preamble)
