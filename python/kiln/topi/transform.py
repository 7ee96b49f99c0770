"""Shape and index transforms: reshape, transpose, concatenate, split, take, pad, expand_dims,
squeeze, broadcast_to and strided_slice. Each returns a te tensor whose elements are read from
the input (no arithmetic on values)."""
from .. import te
from ..error import KilnIndexError, KilnTypeError, KilnValueError
from ..ir import PrimExpr
from ._util import (check_int, check_tensor, check_choice, const_int, dim_str, dims_equal,
                    floor_div, normalize_axes, normalize_axis, shape_of, shape_str, simplify)
from .broadcast import broadcast_shape


def _product(dims):
    total = 1
    for d in dims:
        total = simplify(total * d)
    return total


def _check_dims(dims, api, what):
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, PrimExpr)):
            raise KilnTypeError(f"{api}: {what} must hold ints or integer expressions, found an "
                                f"object of type {type(d).__name__}")


def reshape(a, newshape):
    """a with the shape newshape, reading its elements in row-major order (NumPy's reshape).

    Args:
        a (te.Tensor): the input.
        newshape (tuple of int or PrimExpr): the new dimensions; one of them may be -1, which
            takes the size the others leave.

    Returns:
        te.Tensor

    Raises:
        KilnTypeError: a is not a tensor or a dimension is not an integer.
        KilnValueError: the element counts differ, more than one -1, or a -1 that the other
            dimensions do not divide.
    """
    api = "topi.reshape"
    check_tensor(a, api, "a")
    newshape = list(newshape) if isinstance(newshape, (list, tuple)) else [newshape]
    _check_dims(newshape, api, "newshape")
    in_shape = shape_of(a)
    total = _product(in_shape)
    unknown = [i for i, d in enumerate(newshape) if const_int(d) == -1]
    if len(unknown) > 1:
        raise KilnValueError(f"{api}: newshape {shape_str(newshape)} has more than one -1")
    if unknown:
        known = _product([d for i, d in enumerate(newshape) if i != unknown[0]])
        if isinstance(total, int) and isinstance(known, int) and total % known:
            raise KilnValueError(f"{api}: cannot reshape {a.name} of shape {shape_str(in_shape)} "
                                 f"to {shape_str(newshape)}: {total} elements are not a multiple "
                                 f"of {known}")
        newshape[unknown[0]] = floor_div(total, known)
    newshape = [simplify(d) for d in newshape]
    new_total = _product(newshape)
    if isinstance(total, int) and isinstance(new_total, int) and total != new_total:
        raise KilnValueError(f"{api}: cannot reshape {a.name} of shape {shape_str(in_shape)} "
                             f"({dim_str(total)} elements) to {shape_str(newshape)} "
                             f"({new_total} elements)")

    def fcompute(*indices):
        flat = 0
        for index, dim in zip(indices, newshape):
            flat = flat * dim + index
        source = []
        for dim in reversed(in_shape):
            source.append(te.floormod(flat, dim) if len(source) < len(in_shape) - 1 else flat)
            flat = te.floordiv(flat, dim)
        return a[tuple(reversed(source))]

    return te.compute(newshape, fcompute, name="T_reshape")


def transpose(a, axes=None):
    """a with its axes permuted: out.shape[i] == a.shape[axes[i]] (NumPy's transpose).

    Args:
        a (te.Tensor): the input.
        axes (tuple of int, optional): a permutation of the axes (negative counts from the
            end); default: the axes reversed.

    Returns:
        te.Tensor

    Raises:
        KilnTypeError: a is not a tensor or an axis is not an int.
        KilnIndexError: an axis is out of range.
        KilnValueError: axes is not a permutation of a's axes.
    """
    api = "topi.transpose"
    check_tensor(a, api, "a")
    ndim = a.ndim
    if axes is None:
        axes = list(reversed(range(ndim)))
    if not isinstance(axes, (list, tuple)):
        raise KilnTypeError(f"{api}: axes must be a tuple of ints, found an object of type "
                            f"{type(axes).__name__}")
    axes = [normalize_axis(x, ndim, api, "axes entry") for x in axes]
    if sorted(axes) != list(range(ndim)):
        raise KilnValueError(f"{api}: axes {tuple(axes)} is not a permutation of the {ndim} axes "
                             f"of {a.name}")
    shape = shape_of(a)

    def fcompute(*indices):
        source = [None] * ndim
        for out_axis, in_axis in enumerate(axes):
            source[in_axis] = indices[out_axis]
        return a[tuple(source)]

    return te.compute([shape[x] for x in axes], fcompute, name="T_transpose")


def concatenate(a_tuple, axis=0):
    """The tensors joined along axis (NumPy's concatenate).

    Args:
        a_tuple (list of te.Tensor): tensors of one dtype and rank, equal except along axis.
        axis (int): the axis to join along.

    Returns:
        te.Tensor

    Raises:
        KilnTypeError: an entry is not a tensor, or the dtypes differ.
        KilnIndexError: axis is out of range.
        KilnValueError: no tensor, or the ranks or the other dimensions differ.
    """
    api = "topi.concatenate"
    tensors = list(a_tuple) if isinstance(a_tuple, (list, tuple)) else [a_tuple]
    if not tensors:
        raise KilnValueError(f"{api}: expected at least one tensor, found none")
    for t in tensors:
        check_tensor(t, api, "each entry of a_tuple")
    first = tensors[0]
    axis = normalize_axis(axis, first.ndim, api)
    base = shape_of(first)
    for t in tensors[1:]:
        shape = shape_of(t)
        if t.dtype != first.dtype:
            raise KilnTypeError(f"{api}: the tensors {first.name} and {t.name} must have the same "
                                f"dtype, found {first.dtype} and {t.dtype}")
        if len(shape) != len(base) or not all(
                dims_equal(x, y) for i, (x, y) in enumerate(zip(shape, base)) if i != axis):
            raise KilnValueError(f"{api}: tensor {t.name} of shape {shape_str(shape)} does not "
                                 f"match {first.name} of shape {shape_str(base)} except along "
                                 f"axis {axis}")
    offsets, total = [], 0
    for t in tensors:
        offsets.append(total)
        total = simplify(total + t.shape[axis])
    out_shape = list(base)
    out_shape[axis] = total

    def fcompute(*indices):
        def read(t, offset):
            source = list(indices)
            source[axis] = indices[axis] - offset
            return t[tuple(source)]
        value = read(tensors[-1], offsets[-1])
        for t, offset in zip(reversed(tensors[:-1]), reversed(offsets[:-1])):
            value = te.if_then_else(indices[axis] < offset + t.shape[axis], read(t, offset),
                                    value)
        return value

    return te.compute(out_shape, fcompute, name="T_concat")


def split(ary, indices_or_sections, axis=0):
    """ary cut along axis (NumPy's split).

    Args:
        ary (te.Tensor): the input.
        indices_or_sections (int or list of int): a number of equal sections, or the
            increasing indices where each piece starts (after the first).
        axis (int): the axis to cut.

    Returns:
        list of te.Tensor

    Raises:
        KilnTypeError: ary is not a tensor or indices_or_sections is not an int or a list.
        KilnIndexError: axis is out of range.
        KilnValueError: sections that do not divide the axis (or a symbolic axis with
            sections), or indices that decrease or exceed the axis.
    """
    api = "topi.split"
    check_tensor(ary, api, "ary")
    axis = normalize_axis(axis, ary.ndim, api)
    shape = shape_of(ary)
    extent = shape[axis]
    if isinstance(indices_or_sections, int) and not isinstance(indices_or_sections, bool):
        sections = check_int(indices_or_sections, api, "indices_or_sections", minimum=1)
        if not isinstance(extent, int) or extent % sections:
            raise KilnValueError(f"{api}: {sections} sections do not divide axis {axis} of "
                                 f"{ary.name} (extent {dim_str(extent)})")
        starts = [i * (extent // sections) for i in range(sections)]
    elif isinstance(indices_or_sections, (list, tuple)):
        starts = [0] + [check_int(i, api, "an index of indices_or_sections")
                        for i in indices_or_sections]
        bad = [x for x, y in zip(starts, starts[1:]) if y < x]
        if bad or (isinstance(extent, int) and starts[-1] > extent):
            raise KilnValueError(f"{api}: indices {list(indices_or_sections)} must increase and "
                                 f"stay within axis {axis} of {ary.name} (extent "
                                 f"{dim_str(extent)})")
    else:
        raise KilnTypeError(f"{api}: indices_or_sections must be an int or a list of ints, "
                            f"found an object of type {type(indices_or_sections).__name__}")
    ends = starts[1:] + [extent]
    pieces = []
    for start, end in zip(starts, ends):
        out_shape = list(shape)
        out_shape[axis] = simplify(end - start)

        def fcompute(*indices, start=start):
            source = list(indices)
            source[axis] = indices[axis] + start
            return ary[tuple(source)]

        pieces.append(te.compute(out_shape, fcompute, name="T_split"))
    return pieces


def take(a, indices, axis=None, mode="clip"):
    """The elements of a at indices along axis (NumPy's take; an embedding lookup is
    ``take(weight, ids, axis=0)``).

    Args:
        a (te.Tensor): the source.
        indices (te.Tensor): integer indices.
        axis (int, optional): the axis indexed; default: a flattened.
        mode (str): what an index outside [0, n) does: "clip" (clamped into range, TVM's
            default), "wrap" (taken modulo n, so -1 is the last) or "fast" (no check: an index
            out of range is undefined behaviour).

    Returns:
        te.Tensor: of shape a.shape[:axis] + indices.shape + a.shape[axis + 1:].

    Raises:
        KilnTypeError: a or indices is not a tensor, or indices is not an integer tensor.
        KilnIndexError: axis is out of range.
        KilnValueError: mode is unknown.
    """
    api = "topi.take"
    check_tensor(a, api, "a")
    check_tensor(indices, api, "indices")
    if not indices.dtype.startswith(("int", "uint")):
        raise KilnTypeError(f"{api}: indices {indices.name} must have an integer dtype, found "
                            f"{indices.dtype}")
    check_choice(mode, ("clip", "wrap", "fast"), api, "mode")
    if axis is None:
        a = reshape(a, [_product(shape_of(a))])
        axis = 0
    axis = normalize_axis(axis, a.ndim, api)
    shape = shape_of(a)
    extent = shape[axis]
    index_shape = shape_of(indices)
    out_shape = shape[:axis] + index_shape + shape[axis + 1:]
    count = len(index_shape)

    def fcompute(*out):
        index = indices[tuple(out[axis:axis + count])]
        if mode == "clip":
            index = te.min(te.max(index, 0), extent - 1)
        elif mode == "wrap":
            index = te.floormod(index, extent)
        source = list(out[:axis]) + [index] + list(out[axis + count:])
        return a[tuple(source)]

    return te.compute(out_shape, fcompute, name="T_take")


def pad(data, pad_before, pad_after=None, pad_value=0.0, name="PadInput"):
    """data with pad_value around it: pad_before[i] elements before and pad_after[i] after
    along each axis i (TVM's topi.nn.pad).

    Args:
        data (te.Tensor): the input.
        pad_before (list of int or PrimExpr): one entry per axis, non-negative.
        pad_after (list of int or PrimExpr, optional): one entry per axis; default pad_before.
        pad_value (number or PrimExpr): the fill value, in data's dtype.
        name (str): the output's name.

    Returns:
        te.Tensor

    Raises:
        KilnTypeError: data is not a tensor or an entry is not an integer.
        KilnValueError: a list does not have one entry per axis, or an entry is negative.
    """
    api = "topi.pad"
    check_tensor(data, api, "data")
    pad_after = pad_before if pad_after is None else pad_after
    for what, values in (("pad_before", pad_before), ("pad_after", pad_after)):
        if not isinstance(values, (list, tuple)):
            raise KilnTypeError(f"{api}: {what} must be a list with one entry per axis, found an "
                                f"object of type {type(values).__name__}")
        _check_dims(values, api, what)
        if len(values) != data.ndim:
            raise KilnValueError(f"{api}: {what} must have one entry per axis of {data.name} "
                                 f"({data.ndim}), found {len(values)}")
        if any(const_int(v) is not None and const_int(v) < 0 for v in values):
            raise KilnValueError(f"{api}: {what} must not be negative, found {list(values)}")
    shape = shape_of(data)
    out_shape = [simplify(d + b + e) for d, b, e in zip(shape, pad_before, pad_after)]

    def fcompute(*indices):
        conditions, source = [], []
        for index, dim, before, after in zip(indices, shape, pad_before, pad_after):
            if const_int(before) != 0:
                conditions.append(index >= before)
            if const_int(after) != 0:
                conditions.append(index < before + dim)
            source.append(index - before)
        value = data[tuple(source)]
        if not conditions:
            return value
        if isinstance(pad_value, PrimExpr):
            fill = pad_value.astype(data.dtype)
        else:
            fill = te.const(pad_value, data.dtype)
        return te.if_then_else(te.all(*conditions), value, fill)

    return te.compute(out_shape, fcompute, name=name)


def expand_dims(a, axis, num_newaxis=1):
    """a with num_newaxis dimensions of 1 inserted at axis (TVM's expand_dims).

    Args:
        a (te.Tensor): the input.
        axis (int): where the new axes go, in [-a.ndim - 1, a.ndim].
        num_newaxis (int): how many axes to insert.

    Returns:
        te.Tensor

    Raises:
        KilnTypeError: a is not a tensor or axis is not an int.
        KilnIndexError: axis is out of range.
        KilnValueError: num_newaxis is negative.
    """
    api = "topi.expand_dims"
    check_tensor(a, api, "a")
    check_int(axis, api, "axis")
    if not -a.ndim - 1 <= axis <= a.ndim:
        raise KilnIndexError(f"{api}: axis {axis} is out of range for inserting into a tensor of "
                             f"{a.ndim} dimensions (expected {-a.ndim - 1} <= axis <= {a.ndim})")
    axis = axis + a.ndim + 1 if axis < 0 else axis
    check_int(num_newaxis, api, "num_newaxis", minimum=0)
    shape = shape_of(a)
    out_shape = shape[:axis] + [1] * num_newaxis + shape[axis:]

    def fcompute(*indices):
        return a[tuple(indices[:axis]) + tuple(indices[axis + num_newaxis:])]

    return te.compute(out_shape, fcompute, name="T_expand_dims")


def squeeze(a, axis=None):
    """a without the given dimensions of 1 (NumPy's squeeze).

    Args:
        a (te.Tensor): the input.
        axis (int, tuple of int or None): the axes to remove, each of extent 1; None removes
            every constant dimension of 1.

    Returns:
        te.Tensor

    Raises:
        KilnTypeError: a is not a tensor or an axis is not an int.
        KilnIndexError: an axis is out of range.
        KilnValueError: an axis named does not have extent 1.
    """
    api = "topi.squeeze"
    check_tensor(a, api, "a")
    shape = shape_of(a)
    if axis is None:
        axes = [i for i, d in enumerate(shape) if const_int(d) == 1]
    else:
        axes = normalize_axes(axis, a.ndim, api)
        for x in axes:
            if const_int(shape[x]) != 1:
                raise KilnValueError(f"{api}: axis {x} of {a.name} must have extent 1 to be "
                                     f"removed, found {dim_str(shape[x])}")
    kept = [i for i in range(a.ndim) if i not in axes]

    def fcompute(*indices):
        source = [0] * a.ndim
        for index, i in zip(indices, kept):
            source[i] = index
        return a[tuple(source)]

    return te.compute([shape[i] for i in kept], fcompute, name="T_squeeze")


def broadcast_to(data, shape):
    """data broadcast to shape by NumPy's rules.

    Args:
        data (te.Tensor): the input.
        shape (tuple of int or PrimExpr): the target shape.

    Returns:
        te.Tensor

    Raises:
        KilnTypeError: data is not a tensor or a dimension is not an integer.
        KilnValueError: data's shape does not broadcast to shape.
    """
    api = "topi.broadcast_to"
    check_tensor(data, api, "data")
    shape = [simplify(d) for d in (shape if isinstance(shape, (list, tuple)) else [shape])]
    _check_dims(shape, api, "shape")
    source_shape = shape_of(data)
    result = broadcast_shape(source_shape, shape, api, (data.name, "the target shape"))
    if len(source_shape) > len(shape) or not all(dims_equal(r, s) for r, s in zip(result, shape)):
        raise KilnValueError(f"{api}: {data.name} of shape {shape_str(source_shape)} does not "
                             f"broadcast to {shape_str(shape)}")
    offset = len(shape) - data.ndim

    def fcompute(*indices):
        return data[tuple(0 if const_int(d) == 1 else i
                          for d, i in zip(source_shape, indices[offset:]))]

    return te.compute(shape, fcompute, name="T_broadcast_to")


def strided_slice(a, begin, end, strides=None, axes=None):
    """a[begin:end:strides] along the given axes, with Python's slice rules (negative indices
    count from the end, bounds are clamped) on constant dimensions.

    Args:
        a (te.Tensor): the input.
        begin, end (list of int or None): the bounds, one per sliced axis; None takes the whole
            axis in the direction of the stride.
        strides (list of int, optional): the steps, non-zero; default 1.
        axes (list of int, optional): the axes sliced; default the first len(begin) axes.

    Returns:
        te.Tensor

    Raises:
        KilnTypeError: a is not a tensor or an entry is not an int or None.
        KilnIndexError: an axis is out of range.
        KilnValueError: the lists differ in length, a stride is 0, or a symbolic dimension is
            sliced with a negative stride or index.
    """
    api = "topi.strided_slice"
    check_tensor(a, api, "a")
    for what, values in (("begin", begin), ("end", end), ("strides", strides), ("axes", axes)):
        if values is not None and not isinstance(values, (list, tuple)):
            raise KilnTypeError(f"{api}: {what} must be a list with one entry per sliced axis, "
                                f"found an object of type {type(values).__name__}")
    begin, end = list(begin), list(end)
    strides = [1] * len(begin) if strides is None else list(strides)
    axes = list(range(len(begin))) if axes is None else list(axes)
    if not len(begin) == len(end) == len(strides) == len(axes):
        raise KilnValueError(f"{api}: begin, end, strides and axes must have one entry per sliced "
                             f"axis, found lengths {len(begin)}, {len(end)}, {len(strides)} and "
                             f"{len(axes)}")
    axes = [normalize_axis(x, a.ndim, api, "axes entry") for x in axes]
    shape = shape_of(a)
    starts, steps, out_shape = [0] * a.ndim, [1] * a.ndim, list(shape)
    for x, b, e, s in zip(axes, begin, end, strides):
        for what, v in (("begin", b), ("end", e)):
            if v is not None:
                check_int(v, api, f"an entry of {what}")
        check_int(s, api, "an entry of strides")
        if s == 0:
            raise KilnValueError(f"{api}: the stride of axis {x} must not be 0")
        dim = shape[x]
        if isinstance(dim, int):
            start, stop, step = slice(b, e, s).indices(dim)
            starts[x], steps[x] = start, step
            out_shape[x] = len(range(start, stop, step))
        else:
            if s < 0 or (b is not None and b < 0) or (e is not None and e < 0):
                raise KilnValueError(f"{api}: axis {x} of {a.name} is symbolic ({dim}); slice it "
                                     f"with a positive stride and non-negative bounds")
            start = b or 0
            stop = dim if e is None else te.min(dim, e)
            starts[x], steps[x] = start, s
            out_shape[x] = simplify(te.max(floor_div(stop - start + s - 1, s), 0))
        if out_shape[x] == 0:
            raise KilnValueError(f"{api}: the slice of axis {x} of {a.name} is empty")

    def fcompute(*indices):
        return a[tuple(start + step * i for start, step, i in zip(starts, steps, indices))]

    return te.compute(out_shape, fcompute, name="T_strided_slice")
