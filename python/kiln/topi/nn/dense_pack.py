"""Dense layers over pre-packed weights, as TVM's CPU topi has them: dense_pack reads a weight
packed into column panels [N / bn, K, bn] ("NC{bn}n"), so that the inner loop of the product
loads bn contiguous columns; dense_int8 multiplies uint8 data by an int8 weight packed for the
x86 VNNI dot product [N / lanes, K / 4, lanes, 4] ("NC16n4c" for AVX-512 VNNI, "NC8n4c" for
AVX-VNNI) or into panels, accumulating in int32.
pack_dense_weight and pack_dense_weight_int8 pack a NumPy weight once, ahead of time (or build
the packing as a te stage); the panel width comes from the target's register tile
(kiln.target.gemm_blocking), never from this machine's."""
import numpy as np

from ... import te, tir
from ...error import KilnTypeError, KilnValueError
from ...target import Target, gemm_blocking
from .._util import (FLOAT16_TYPES, check_int, check_ndim, check_same_dtype, check_tensor,
                     const_int, dim_str, shape_of, shape_str)
from ..transform import pad
from .dense import _add_bias

# The intrinsics whose lanes x 4 bytes the NC{lanes}n4c layouts are made for, the preferred
# first: AVX-512 VNNI (zmm), then AVX-VNNI (the VEX-encoded form on ymm).
VNNI_INTRINSICS = (("x86.avx512.vnni.dot_16x4_u8s8s32", 16), ("x86.avxvnni.dot_8x4_u8s8s32", 8))
VNNI_DEPTH = 4
# The lanes of the layout when VNNI is asked for on a target without it.
DEFAULT_VNNI_LANES = 16


def vnni_lanes(target="llvm"):
    """The int32 lanes of the widest x86 VNNI dot-product intrinsic ``target`` has the features
    of: 16 with AVX-512 VNNI (vpdpbusd on zmm), 8 with AVX-VNNI only (vpdpbusd on ymm), None
    without either. pack_dense_weight_int8 packs NC{lanes}n4c for it. Asks the target, not the
    machine: ``vnni_lanes("llvm -mcpu=alderlake")`` is 8 on any host.

    Args:
        target (str or kiln.target.Target): a CPU target; default "llvm", this CPU.

    Returns:
        int or None

    Raises:
        KilnTypeError: target is not a target string or a Target.
        KilnValueError: target is not a valid target string.

    Example:
        lanes = topi.nn.vnni_lanes("llvm -mcpu=znver4")  # 16
    """
    target = _target(target, "topi.nn.vnni_lanes")
    for name, lanes in VNNI_INTRINSICS:
        features = tir.TensorIntrin.get(name).required_features
        if all(target.has_feature(f) for f in features):
            return lanes
    return None


def has_vnni(target="llvm"):
    """Whether ``target`` has the features of an x86 VNNI dot-product intrinsic (AVX-512 VNNI or
    AVX-VNNI), which the default schedule of dense_int8 uses on an NC16n4c or NC8n4c weight
    (vnni_lanes says which). Asks the target, not the machine: ``has_vnni("llvm
    -mcpu=icelake-server")`` is True on any host.

    Args:
        target (str or kiln.target.Target): a CPU target; default "llvm", this CPU.

    Returns:
        bool

    Raises:
        KilnTypeError: target is not a target string or a Target.
        KilnValueError: target is not a valid target string.

    Example:
        vnni = topi.nn.has_vnni("llvm -mcpu=znver4")  # True
    """
    return vnni_lanes(_target(target, "topi.nn.has_vnni")) is not None


def pack_dense_weight(weight, bn=None, target="llvm"):
    """A dense weight (out_dim, in_dim) packed into column panels (ceil(out_dim / bn), in_dim,
    bn), TVM's "NC{bn}n" layout: ``packed[n // bn, k, n % bn] = weight[n, k]``, the columns past
    out_dim zero. dense_pack reads it.

    Pack a NumPy weight once when the model is loaded. Given a te.Tensor, the packing is a
    stage (a te.compute); build it as a function of its own and run it once per weight: in the
    function of the product it would run on every call, and default_schedule inlines it there
    when it has no padding (the product then reads the unpacked weight).

    Args:
        weight (numpy.ndarray or te.Tensor): (out_dim, in_dim), constant dimensions.
        bn (int, optional): the panel width; default the column count NR of the register tile
            of kiln.target.gemm_blocking for target and the accumulation dtype (float32 for
            float and 16-bit float weights, int32 for integer weights), one that divides out_dim
            where the target has one.
        target (str or kiln.target.Target): the CPU target the product is built for; default
            "llvm", this CPU.

    Returns:
        numpy.ndarray or te.Tensor (as weight): (ceil(out_dim / bn), in_dim, bn).

    Raises:
        KilnTypeError: weight is neither an array nor a tensor, or bn is not an int.
        KilnValueError: weight is not 2-D or has a symbolic dimension, or bn is below 1.

    Example:
        w_packed = topi.nn.pack_dense_weight(w_np, target="llvm")   # e.g. (256, 4096, 16)
        W = te.placeholder(w_packed.shape, "float32", name="W")
        y = topi.nn.dense_pack(x, W, units=w_np.shape[0])
    """
    api = "topi.nn.pack_dense_weight"
    out_dim, in_dim, dtype = _weight_shape(weight, api)
    if bn is None:
        bn = panel_width(target, _accumulation(dtype), out_dim, api)
    check_int(bn, api, "bn", minimum=1)
    blocks = -(-out_dim // bn)
    if isinstance(weight, np.ndarray):
        padded = np.zeros((blocks * bn, in_dim), weight.dtype)
        padded[:out_dim] = weight
        return np.ascontiguousarray(padded.reshape(blocks, bn, in_dim).transpose(0, 2, 1))

    def fcompute(b, k, c):
        n = b * bn + c
        if blocks * bn == out_dim:
            return weight[n, k]
        return te.if_then_else(n < out_dim, weight[te.min(n, out_dim - 1), k],
                               te.const(0, weight.dtype))

    return te.compute((blocks, in_dim, bn), fcompute, name="T_pack_dense_weight")


def pack_dense_weight_int8(weight, target="llvm", vnni=None):
    """An int8 dense weight (out_dim, in_dim) packed for dense_int8: for the VNNI dot product
    (ceil(out_dim / lanes), ceil(in_dim / 4), lanes, 4), TVM's "NC16n4c" layout (lanes 16;
    "NC8n4c" with lanes 8 for AVX-VNNI), ``packed[n // lanes, k // 4, n % lanes, k % 4] =
    weight[n, k]`` with zeros past out_dim and in_dim; otherwise column panels as
    pack_dense_weight makes them, bn from the target's int32 register tile.

    Args:
        weight (numpy.ndarray or te.Tensor): (out_dim, in_dim), int8, constant dimensions.
        target (str or kiln.target.Target): the CPU target dense_int8 is built for; default
            "llvm", this CPU.
        vnni (bool, optional): True for NC{lanes}n4c, False for panels; default:
            NC{lanes}n4c exactly when the target has VNNI (has_vnni(target)). The lanes are
            the target's (vnni_lanes(target)), 16 for a target without VNNI. The layouts give
            the same results on every target; NC{lanes}n4c is the fast one where VNNI is,
            panels elsewhere.

    Returns:
        numpy.ndarray or te.Tensor (as weight): 4-D NC16n4c or NC8n4c, or 3-D panels.

    Raises:
        KilnTypeError: weight is neither an array nor a tensor, or is not int8.
        KilnValueError: weight is not 2-D or has a symbolic dimension.

    Example:
        w_packed = topi.nn.pack_dense_weight_int8(w_np, target="llvm -mcpu=icelake-server")
        # (out_dim / 16, in_dim / 4, 16, 4) int8: topi.nn.dense_int8 tensorizes with vpdpbusd
        # (zmm); for "llvm -mcpu=alderlake" (out_dim / 8, in_dim / 4, 8, 4), vpdpbusd on ymm
    """
    api = "topi.nn.pack_dense_weight_int8"
    out_dim, in_dim, dtype = _weight_shape(weight, api)
    if dtype != "int8":
        raise KilnTypeError(f"{api}: weight must be int8 (the signed operand of the dot "
                            f"product), found {dtype}")
    lanes = vnni_lanes(_target(target, api))
    if vnni is None:
        vnni = lanes is not None
    if not vnni:
        return pack_dense_weight(weight, target=target)
    lanes = lanes or DEFAULT_VNNI_LANES
    blocks, groups = -(-out_dim // lanes), -(-in_dim // VNNI_DEPTH)
    if isinstance(weight, np.ndarray):
        padded = np.zeros((blocks * lanes, groups * VNNI_DEPTH), np.int8)
        padded[:out_dim, :in_dim] = weight
        tiles = padded.reshape(blocks, lanes, groups, VNNI_DEPTH)
        return np.ascontiguousarray(tiles.transpose(0, 2, 1, 3))

    def fcompute(b, g, c, d):
        n, k = b * lanes + c, g * VNNI_DEPTH + d
        conditions = []
        if blocks * lanes != out_dim:
            conditions.append(n < out_dim)
            n = te.min(n, out_dim - 1)
        if groups * VNNI_DEPTH != in_dim:
            conditions.append(k < in_dim)
            k = te.min(k, in_dim - 1)
        if not conditions:
            return weight[n, k]
        return te.if_then_else(te.all(*conditions), weight[n, k], te.const(0, "int8"))

    return te.compute((blocks, groups, lanes, VNNI_DEPTH), fcompute,
                      name="T_pack_dense_weight_int8")


def dense_pack(data, weight, bias=None, out_dtype=None, units=None):
    """data @ W.T (+ bias) with W packed into column panels: TVM's topi.nn.dense_pack (Relay's
    nn.contrib_dense_pack), for weights packed by pack_dense_weight.

    Args:
        data (te.Tensor): (batch, in_dim); batch may be symbolic.
        weight (te.Tensor): (out_dim / bn, in_dim, bn), constant dimensions: W[n, k] is
            ``weight[n // bn, k, n % bn]``.
        bias (te.Tensor, optional): (units,).
        out_dtype (str, optional): the accumulation and result dtype; default data's.
        units (int, optional): out_dim, the output's columns; default all the packed columns.
            Fewer drop the zero columns of the last panel: the product then covers whole
            panels and a copy keeps the first units columns.

    Returns:
        te.Tensor: (batch, units) of out_dtype.

    Raises:
        KilnTypeError: an operand is not a tensor, the dtypes differ, or units is not an int.
        KilnValueError: data is not 2-D, weight is not 3-D with constant dimensions, the
            in_dim of data and weight differ, units is not within the last panel, or the
            bias length differs.

    Example:
        x = te.placeholder((n, 4096), "float32", name="x")
        W = te.placeholder((256, 4096, 16), "float32", name="W")
        y = topi.nn.dense_pack(x, W)    # (n, 4096)
    """
    api = "topi.nn.dense_pack"
    check_tensor(data, api, "data")
    check_tensor(weight, api, "weight")
    check_ndim(data, 2, api, "data")
    check_ndim(weight, 3, api, "weight")
    check_same_dtype(data, weight, api)
    blocks, depth, bn = _constant_shape(weight, api, "weight", "(out_dim / bn, in_dim, bn)")
    _check_depth(data, weight, depth, depth, f"{depth}", api)
    units = _check_units(units, blocks, bn, api)
    out_dtype = out_dtype or data.dtype
    k = te.reduce_axis((0, depth), name="k")
    product = te.compute(
        (shape_of(data)[0], blocks * bn),
        lambda i, j: te.sum(data[i, k].astype(out_dtype) *
                            weight[j // bn, k, j % bn].astype(out_dtype), axis=k),
        name="T_dense_pack")
    return _finish(product, units, bias, api, "T_dense_pack")


def dense_int8(data, weight, bias=None, out_dtype="int32", units=None):
    """data @ W.T (+ bias) for uint8 data and an int8 weight, accumulated in int32: TVM's x86
    dense_int8 (dense_vnni), for weights packed by pack_dense_weight_int8. With an NC16n4c
    (NC8n4c) weight, topi.default_schedule tensorizes the product with the VNNI dot product
    (vpdpbusd on zmm with AVX-512 VNNI, on ymm with AVX-VNNI) on targets that have it and gives
    it an int32 register tile elsewhere; a panel weight always gets the register tile.

    Args:
        data (te.Tensor): (batch, in_dim) uint8; batch may be symbolic.
        weight (te.Tensor): int8, constant dimensions, either NC{lanes}n4c with lanes 16 or
            8 (out_dim / lanes, ceil(in_dim / 4), lanes, 4), W[n, k] = ``weight[n // lanes,
            k // 4, n % lanes, k % 4]``, or panels (out_dim / bn, in_dim, bn) as for
            dense_pack. When in_dim is not a multiple of 4, an NC{lanes}n4c product reads data
            padded with zeros to whole groups of 4 (a pad stage), so that the dot product
            still applies.
        bias (te.Tensor, optional): (units,) int32.
        out_dtype (str): "int32", the accumulation and result dtype.
        units (int, optional): out_dim, the output's columns; default all the packed columns
            (see dense_pack).

    Returns:
        te.Tensor: (batch, units) int32.

    Raises:
        KilnTypeError: an operand is not a tensor, data is not uint8, weight is not int8, bias
            is not int32, or units is not an int.
        KilnValueError: out_dtype is not "int32", data is not 2-D, weight is neither 3-D nor
            4-D with 16 x 4 or 8 x 4 tiles or has a symbolic dimension, in_dim of data and weight
            differ, units is not within the last panel, or the bias length differs.

    Example:
        x = te.placeholder((n, 4096), "uint8", name="x")
        W = te.placeholder((256, 1024, 16, 4), "int8", name="W")
        y = topi.nn.dense_int8(x, W)    # (n, 4096) int32
    """
    api = "topi.nn.dense_int8"
    check_tensor(data, api, "data")
    check_tensor(weight, api, "weight")
    check_ndim(data, 2, api, "data")
    check_ndim(weight, (3, 4), api, "weight")
    if data.dtype != "uint8":
        raise KilnTypeError(f"{api}: data {data.name} must be uint8 (the unsigned operand of "
                            f"the dot product), found {data.dtype}; shift int8 data by 128 "
                            f"(topi.nn.quantize with zero_point + 128 and out_dtype=\"uint8\")")
    if weight.dtype != "int8":
        raise KilnTypeError(f"{api}: weight {weight.name} must be int8 (the signed operand of "
                            f"the dot product), found {weight.dtype}")
    if out_dtype != "int32":
        raise KilnValueError(f"{api}: out_dtype must be \"int32\", found {out_dtype!r}")
    if bias is not None and isinstance(bias, te.Tensor) and bias.dtype != "int32":
        raise KilnTypeError(f"{api}: bias {bias.name} must be int32, found {bias.dtype}")
    if weight.ndim == 3:
        blocks, depth, bn = _constant_shape(weight, api, "weight", "(out_dim / bn, in_dim, bn)")
        _check_depth(data, weight, depth, depth, f"{depth}", api)
        lanes, source = bn, data

        def element(j, k):
            return weight[j // bn, k, j % bn]
    else:
        expected = "(out_dim / lanes, ceil(in_dim / 4), lanes, 4) with lanes 16 or 8"
        blocks, groups, lanes, group = _constant_shape(weight, api, "weight", expected)
        if lanes not in [n for _, n in VNNI_INTRINSICS] or group != VNNI_DEPTH:
            raise KilnValueError(f"{api}: a 4-D weight must have the NC16n4c or NC8n4c layout "
                                 f"{expected}, found {weight.name} of shape "
                                 f"{shape_str(shape_of(weight))}")
        depth = groups * VNNI_DEPTH
        _check_depth(data, weight, depth - VNNI_DEPTH + 1, depth,
                     f"{depth - VNNI_DEPTH + 1} to {depth} ({groups} groups of 4)", api)
        in_dim = const_int(shape_of(data)[1])
        source = data if in_dim == depth else pad(data, [0, 0], [0, depth - in_dim],
                                                  name="T_dense_int8_pad")

        def element(j, k):
            return weight[j // lanes, k // VNNI_DEPTH, j % lanes, k % VNNI_DEPTH]
    units = _check_units(units, blocks, lanes, api)
    k = te.reduce_axis((0, depth), name="k")
    product = te.compute(
        (shape_of(data)[0], blocks * lanes),
        lambda i, j: te.sum(source[i, k].astype("int32") * element(j, k).astype("int32"),
                            axis=k),
        name="T_dense_int8")
    return _finish(product, units, bias, api, "T_dense_int8")


def panel_width(target, dtype, out_dim, api):
    """The register tile's column count for dtype on target: one that divides out_dim where
    the target has one, else the best tile's (the last panel is then padded)."""
    target = _target(target, api)
    try:
        return gemm_blocking(target, dtype, n=out_dim)[1]
    except KilnValueError:
        return gemm_blocking(target, dtype)[1]


# --- Helpers -----------------------------------------------------------------------------------

def _target(target, api):
    if isinstance(target, Target):
        return target
    if not isinstance(target, str):
        raise KilnTypeError(f"{api}: target must be a target string such as \"llvm\" or a "
                            f"kiln.target.Target, found an object of type "
                            f"{type(target).__name__}")
    return Target(target)


def _accumulation(dtype):
    if dtype.startswith(("int", "uint")):
        return "int32"
    return "float32" if dtype in FLOAT16_TYPES else dtype


def _weight_shape(weight, api):
    """(out_dim, in_dim, dtype) of a 2-D weight, a NumPy array or a te.Tensor."""
    if isinstance(weight, np.ndarray):
        if weight.ndim != 2:
            raise KilnValueError(f"{api}: weight must be 2-D (out_dim, in_dim), found shape "
                                 f"{weight.shape}")
        return weight.shape[0], weight.shape[1], str(weight.dtype)
    if not isinstance(weight, te.Tensor):
        raise KilnTypeError(f"{api}: weight must be a numpy.ndarray or a te.Tensor, found an "
                            f"object of type {type(weight).__name__}")
    check_ndim(weight, 2, api, "weight")
    out_dim, in_dim = _constant_shape(weight, api, "weight", "(out_dim, in_dim)")
    return out_dim, in_dim, weight.dtype


def _constant_shape(tensor, api, what, expected):
    dims = [const_int(d) for d in shape_of(tensor)]
    if None in dims:
        raise KilnValueError(f"{api}: {what} {tensor.name} must have constant dimensions "
                             f"{expected}, found shape {shape_str(shape_of(tensor))}")
    return dims


def _check_depth(data, weight, low, high, holds, api):
    """data's in_dim is within [low, high], the in_dims the weight holds."""
    in_dim = const_int(shape_of(data)[1])
    if in_dim is None or not low <= in_dim <= high:
        raise KilnValueError(f"{api}: the in_dim of data {data.name} (shape "
                             f"{shape_str(shape_of(data))}) is {dim_str(shape_of(data)[1])}, "
                             f"but weight {weight.name} (shape {shape_str(shape_of(weight))}) "
                             f"is packed for in_dim {holds}")


def _check_units(units, blocks, lanes, api):
    columns = blocks * lanes
    if units is None:
        return columns
    check_int(units, api, "units", minimum=1)
    if not columns - lanes < units <= columns:
        raise KilnValueError(f"{api}: units must be within the last panel of the weight, "
                             f"{columns - lanes + 1} to {columns} ({blocks} panels of "
                             f"{lanes}), found {units}")
    return units


def _finish(product, units, bias, api, name):
    """product's first units columns (+ bias)."""
    if units == shape_of(product)[1]:
        return product if bias is None else _add_bias(product, bias, api, name + "_bias")
    rows = shape_of(product)[0]
    out = te.compute((rows, units), lambda i, j: product[i, j], name=name + "_units")
    return out if bias is None else _add_bias(out, bias, api, name + "_bias")
