"""2-D convolutions with TVM's signatures: conv2d in any layout (NCHW with OIHW kernels, NHWC
with HWIO kernels, or another permutation of the letters), group_conv2d_nchw and
depthwise_conv2d_nchw. Padding is zero; out_dtype sets the accumulation and result dtype."""
from ... import te
from ...error import KilnTypeError, KilnValueError
from .._util import (check_int, check_ndim, check_same_dtype, check_tensor, const_int, dim_str,
                     dims_equal, floor_div, shape_of, shape_str, simplify)
from ..transform import pad as pad_tensor
from ..transform import reshape

DEFAULT_KERNEL_LAYOUT = {"NCHW": "OIHW", "NHWC": "HWIO"}


def check_layout(layout, letters, api, what):
    """layout after checking that it is a permutation of letters."""
    if not isinstance(layout, str):
        raise KilnTypeError(f"{api}: {what} must be a string such as \"{letters}\", found an "
                            f"object of type {type(layout).__name__}")
    if sorted(layout) != sorted(letters):
        raise KilnValueError(f"{api}: unknown {what} \"{layout}\"; expected a permutation of "
                             f"{', '.join(letters)} such as \"{letters}\"")
    return layout


def pair(value, api, what):
    """(h, w) from an int or a pair of ints, each at least 1."""
    values = list(value) if isinstance(value, (list, tuple)) else [value, value]
    if len(values) != 2:
        raise KilnValueError(f"{api}: {what} must be an int or a pair (h, w), found {value!r}")
    return tuple(check_int(v, api, f"{what} entry", minimum=1) for v in values)


def pad_tuple(padding, kernel_hw, api):
    """(top, left, bottom, right) from TVM's padding forms: an int, (h, w), (top, left, bottom,
    right), "VALID" or "SAME" (given the dilated kernel size)."""
    if isinstance(padding, str):
        if padding == "VALID":
            return 0, 0, 0, 0
        if padding == "SAME":
            pad_h, pad_w = kernel_hw[0] - 1, kernel_hw[1] - 1
            top, left = (pad_h + 1) // 2, (pad_w + 1) // 2
            return top, left, pad_h - top, pad_w - left
        raise KilnValueError(f"{api}: unknown padding \"{padding}\"; expected an int, a tuple, "
                             f"\"SAME\" or \"VALID\"")
    values = list(padding) if isinstance(padding, (list, tuple)) else [padding]
    for v in values:
        check_int(v, api, "a padding entry", minimum=0)
    if len(values) == 1:
        return values[0], values[0], values[0], values[0]
    if len(values) == 2:
        return values[0], values[1], values[0], values[1]
    if len(values) == 4:
        return tuple(values)
    raise KilnValueError(f"{api}: padding must have 1, 2 or 4 entries, found {len(values)}")


def output_extent(extent, pad_before, pad_after, kernel, stride, dilation, api, what):
    """The number of window positions along one spatial axis."""
    span = dilation * (kernel - 1) + 1
    padded = simplify(extent + pad_before + pad_after)
    if isinstance(padded, int) and padded < span:
        raise KilnValueError(f"{api}: the {what} window ({span} with dilation) is larger than the "
                             f"padded input ({padded})")
    return simplify(floor_div(padded - span, stride) + 1)


def conv2d_layout(data, kernel, strides, padding, dilation, groups, data_layout, kernel_layout,
                  out_dtype, api):
    """The grouped 2-D convolution behind every public conv2d function."""
    check_tensor(data, api, "input")
    check_tensor(kernel, api, "filter")
    check_layout(data_layout, "NCHW", api, "data_layout")
    kernel_layout = kernel_layout or DEFAULT_KERNEL_LAYOUT.get(data_layout, "OIHW")
    check_layout(kernel_layout, "OIHW", api, "kernel_layout")
    check_ndim(data, 4, api, "input")
    check_ndim(kernel, 4, api, "filter")
    check_same_dtype(data, kernel, api)
    out_dtype = out_dtype or data.dtype
    stride_h, stride_w = pair(strides, api, "strides")
    dilation_h, dilation_w = pair(dilation, api, "dilation")
    dshape = dict(zip(data_layout, shape_of(data)))
    kshape = dict(zip(kernel_layout, shape_of(kernel)))
    for letter, what in (("H", "kernel height"), ("W", "kernel width"), ("O", "output channels"),
                         ("I", "input channels")):
        if const_int(kshape[letter]) is None:
            raise KilnValueError(f"{api}: the {what} of filter {kernel.name} must be constant, "
                                 f"found {dim_str(kshape[letter])}")
    channels, kh, kw, out_channels = dshape["C"], kshape["H"], kshape["W"], kshape["O"]
    if out_channels % groups or not dims_equal(channels, kshape["I"] * groups):
        raise KilnValueError(
            f"{api}: filter {kernel.name} of shape {shape_str(shape_of(kernel))} "
            f"({kernel_layout}) does not fit input {data.name} of shape "
            f"{shape_str(shape_of(data))} ({data_layout}) with groups={groups}: expected "
            f"{dim_str(channels)} input channels = I * groups and output channels divisible by "
            f"groups, found I={kshape['I']} and O={out_channels}")
    top, left, bottom, right = pad_tuple(
        padding, ((kh - 1) * dilation_h + 1, (kw - 1) * dilation_w + 1), api)
    out_h = output_extent(dshape["H"], top, bottom, kh, stride_h, dilation_h, api, "height")
    out_w = output_extent(dshape["W"], left, right, kw, stride_w, dilation_w, api, "width")
    if top or left or bottom or right:
        before = [{"H": top, "W": left}.get(letter, 0) for letter in data_layout]
        after = [{"H": bottom, "W": right}.get(letter, 0) for letter in data_layout]
        data = pad_tensor(data, before, after, 0, name="pad_temp")
    in_per_group = kshape["I"]
    out_per_group = out_channels // groups
    rc = te.reduce_axis((0, in_per_group), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    out_shape = [{"N": dshape["N"], "C": out_channels, "H": out_h, "W": out_w}[letter]
                 for letter in data_layout]

    def fcompute(*indices):
        at = dict(zip(data_layout, indices))
        channel = rc if groups == 1 else (at["C"] // out_per_group) * in_per_group + rc
        source = {"N": at["N"], "C": channel, "H": at["H"] * stride_h + ry * dilation_h,
                  "W": at["W"] * stride_w + rx * dilation_w}
        weight = {"O": at["C"], "I": rc, "H": ry, "W": rx}
        x = data[tuple(source[letter] for letter in data_layout)]
        w = kernel[tuple(weight[letter] for letter in kernel_layout)]
        return te.sum(x.astype(out_dtype) * w.astype(out_dtype), axis=[rc, ry, rx])

    return te.compute(out_shape, fcompute, name="conv2d_" + data_layout.lower())


def conv2d(input, filter, strides, padding, dilation, data_layout="NCHW",  # noqa: A002
           kernel_layout="", out_dtype=None):
    """A 2-D convolution (cross-correlation, as in PyTorch and TVM) with zero padding.

    Args:
        input (te.Tensor): 4-D data in data_layout; the batch and spatial dimensions may be
            symbolic.
        filter (te.Tensor): 4-D weights in kernel_layout, constant shape.
        strides (int or (int, int)): the window steps.
        padding (int, tuple or str): an int, (h, w), (top, left, bottom, right), "VALID" or
            "SAME".
        dilation (int or (int, int)): the spacing of the kernel taps.
        data_layout (str): "NCHW", "NHWC" or another permutation of those letters.
        kernel_layout (str): a permutation of "OIHW"; default "OIHW" for NCHW, "HWIO" for
            NHWC.
        out_dtype (str, optional): the accumulation and result dtype; default input's.

    Returns:
        te.Tensor: in data_layout.

    Raises:
        KilnTypeError: an operand is not a tensor, the dtypes differ, or a layout or an entry
            is of the wrong type.
        KilnValueError: an unknown layout or padding, shapes that do not fit, or a window
            larger than the padded input.
    """
    return conv2d_layout(input, filter, strides, padding, dilation, 1, data_layout,
                         kernel_layout, out_dtype, "topi.nn.conv2d")


def conv2d_nchw(Input, Filter, stride, padding, dilation, out_dtype=None):  # noqa: N803
    """conv2d in NCHW with an OIHW filter (TVM's conv2d_nchw).

    Args:
        Input (te.Tensor): 4-D data in NCHW.
        Filter (te.Tensor): 4-D weights in OIHW.
        stride, padding, dilation: as topi.nn.conv2d.
        out_dtype (str, optional): the accumulation and result dtype; default Input's.

    Returns:
        te.Tensor: in NCHW.

    Raises:
        KilnTypeError, KilnValueError: as topi.nn.conv2d.
    """
    return conv2d_layout(Input, Filter, stride, padding, dilation, 1, "NCHW", "OIHW", out_dtype,
                         "topi.nn.conv2d_nchw")


def conv2d_nhwc(Input, Filter, stride, padding, dilation, out_dtype=None):  # noqa: N803
    """conv2d in NHWC with an HWIO filter (TVM's conv2d_nhwc).

    Args:
        Input (te.Tensor): 4-D data in NHWC.
        Filter (te.Tensor): 4-D weights in HWIO.
        stride, padding, dilation: as topi.nn.conv2d.
        out_dtype (str, optional): the accumulation and result dtype; default Input's.

    Returns:
        te.Tensor: in NHWC.

    Raises:
        KilnTypeError, KilnValueError: as topi.nn.conv2d.
    """
    return conv2d_layout(Input, Filter, stride, padding, dilation, 1, "NHWC", "HWIO", out_dtype,
                         "topi.nn.conv2d_nhwc")


def group_conv2d_nchw(Input, Filter, stride, padding, dilation, groups,  # noqa: N803
                      out_dtype=None):
    """A grouped convolution in NCHW: the channels split into groups, each convolved with its
    own slice of the filter (PyTorch's Conv2d(groups=...)).

    Args:
        Input (te.Tensor): (N, C, H, W).
        Filter (te.Tensor): (O, C // groups, KH, KW), O divisible by groups.
        stride, padding, dilation: as topi.nn.conv2d.
        groups (int): the number of groups.
        out_dtype (str, optional): the accumulation and result dtype.

    Returns:
        te.Tensor: (N, O, OH, OW).

    Raises:
        KilnTypeError, KilnValueError: as topi.nn.conv2d, and groups below 1.
    """
    api = "topi.nn.group_conv2d_nchw"
    check_int(groups, api, "groups", minimum=1)
    return conv2d_layout(Input, Filter, stride, padding, dilation, groups, "NCHW", "OIHW",
                         out_dtype, api)


def depthwise_conv2d_nchw(Input, Filter, stride, padding, dilation, out_dtype=None):  # noqa: N803
    """A depthwise convolution in NCHW: each input channel convolved with its own
    channel_multiplier kernels (TVM's filter layout).

    Args:
        Input (te.Tensor): (N, C, H, W).
        Filter (te.Tensor): (C, channel_multiplier, KH, KW).
        stride, padding, dilation: as topi.nn.conv2d.
        out_dtype (str, optional): the accumulation and result dtype.

    Returns:
        te.Tensor: (N, C * channel_multiplier, OH, OW); output channel c reads input channel
        c // channel_multiplier.

    Raises:
        KilnTypeError, KilnValueError: as topi.nn.conv2d.
    """
    api = "topi.nn.depthwise_conv2d_nchw"
    check_tensor(Input, api, "Input")
    check_tensor(Filter, api, "Filter")
    check_ndim(Input, 4, api, "Input")
    check_ndim(Filter, 4, api, "Filter")
    channels, multiplier, kh, kw = shape_of(Filter)
    if not dims_equal(channels, shape_of(Input)[1]):
        raise KilnValueError(f"{api}: Filter {Filter.name} of shape "
                             f"{shape_str(shape_of(Filter))} must have the "
                             f"{dim_str(shape_of(Input)[1])} channels of Input {Input.name} "
                             f"first, found {dim_str(channels)}")
    kernel = reshape(Filter, (channels * multiplier, 1, kh, kw))
    return conv2d_layout(Input, kernel, stride, padding, dilation, channels, "NCHW", "OIHW",
                         out_dtype, api)
