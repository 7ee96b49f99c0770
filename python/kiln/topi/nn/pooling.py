"""2-D pooling with TVM's signatures: pool2d (max or average over windows, with padding,
dilation, ceil_mode and count_include_pad as PyTorch defines them), adaptive_pool and
global_pool. The layout is NCHW, NHWC or another permutation of those letters."""
from ... import te
from ...error import KilnValueError
from .._util import (accumulation_dtype, check_choice, check_ndim, check_tensor,
                     const_int, dim_str, simplify)
from .conv2d import check_layout, output_extent, pad_tuple, pair


def _ceil_mode_extent(extent, before, after, kernel, stride, dilation, api, what):
    """PyTorch's output extent with ceil_mode: the last window may hang over the end, but must
    start inside the input or the padding before it."""
    if not isinstance(extent, int):
        raise KilnValueError(f"{api}: ceil_mode needs a constant {what}, found {dim_str(extent)}")
    span = dilation * (kernel - 1) + 1
    out = -(-(extent + before + after - span) // stride) + 1
    if (out - 1) * stride >= extent + before:
        out -= 1
    return out


def pool2d(data, kernel, stride, dilation, padding, pool_type, ceil_mode=False, layout="NCHW",
           count_include_pad=True):
    """Max or average pooling over kernel-sized windows.

    A padded position never wins a max; an average divides by the number of window taps inside
    the padded input when count_include_pad (PyTorch's default) and inside the input otherwise.
    A window with no input element gives the dtype's lowest value (max) or 0 (average).

    Args:
        data (te.Tensor): 4-D in layout; batch, channel and (without ceil_mode) spatial
            dimensions may be symbolic.
        kernel (int or (int, int)): the window size.
        stride (int or (int, int)): the window step.
        dilation (int or (int, int)): the spacing of the window taps.
        padding (int, tuple or str): an int, (h, w), (top, left, bottom, right), "VALID" or
            "SAME".
        pool_type (str): "max" or "avg".
        ceil_mode (bool): round the output extent up (PyTorch's rule), constant spatial
            dimensions only.
        layout (str): "NCHW", "NHWC" or another permutation of those letters.
        count_include_pad (bool): for "avg", whether padded taps count in the divisor.

    Returns:
        te.Tensor: in layout, of data's dtype.

    Raises:
        KilnTypeError: data is not a tensor or an entry is of the wrong type.
        KilnValueError: an unknown pool_type, layout or padding, a window larger than the
            padded input, or ceil_mode with a symbolic spatial dimension.
    """
    api = "topi.nn.pool2d"
    check_tensor(data, api, "data")
    check_layout(layout, "NCHW", api, "layout")
    check_ndim(data, 4, api, "data")
    check_choice(pool_type, ("max", "avg"), api, "pool_type")
    kh, kw = pair(kernel, api, "kernel")
    sh, sw = pair(stride, api, "stride")
    dh, dw = pair(dilation, api, "dilation")
    top, left, bottom, right = pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), api)
    shape = dict(zip(layout, [simplify(d) for d in data.shape]))
    extent = output_extent if not ceil_mode else _ceil_mode_extent
    out_h = extent(shape["H"], top, bottom, kh, sh, dh, api, "height")
    out_w = extent(shape["W"], left, right, kw, sw, dw, api, "width")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    out_shape = [{"N": shape["N"], "C": shape["C"], "H": out_h, "W": out_w}[c] for c in layout]

    def taps(indices):
        at = dict(zip(layout, indices))
        h = at["H"] * sh + ry * dh - top
        w = at["W"] * sw + rx * dw - left
        inside = te.all(h >= 0, h < shape["H"], w >= 0, w < shape["W"])
        padded = te.all(h < shape["H"] + bottom, w < shape["W"] + right)
        source = {"N": at["N"], "C": at["C"], "H": h, "W": w}
        return data[tuple(source[c] for c in layout)], inside, padded

    if pool_type == "max":
        def fmax(*indices):
            value, inside, _ = taps(indices)
            return te.max(value, axis=[ry, rx], where=inside)
        return te.compute(out_shape, fmax, name="pool_max")
    acc = accumulation_dtype(data.dtype)

    def fsum(*indices):
        value, inside, _ = taps(indices)
        return te.sum(value.astype(acc), axis=[ry, rx], where=inside)

    total = te.compute(out_shape, fsum, name="pool_sum")
    plain = not ceil_mode and (count_include_pad or not (top or left or bottom or right))
    if plain:
        return te.compute(out_shape, lambda *i: (total[i] / float(kh * kw)).astype(data.dtype),
                          name="pool_avg")

    def fcount(*indices):
        _, inside, padded = taps(indices)
        return te.sum(te.const(1, "int32"), axis=[ry, rx],
                      where=padded if count_include_pad else inside)

    count = te.compute(out_shape, fcount, name="pool_count")
    return te.compute(
        out_shape,
        lambda *i: (total[i] / te.max(count[i], 1).astype(acc)).astype(data.dtype),
        name="pool_avg")


def adaptive_pool(data, output_size, pool_type, layout="NCHW"):
    """Pooling to a given output size: output row i covers input rows
    [floor(i * H / OH), ceil((i + 1) * H / OH)) (PyTorch's AdaptiveMaxPool2d and
    AdaptiveAvgPool2d), and likewise for columns.

    Args:
        data (te.Tensor): 4-D in layout, with constant spatial dimensions.
        output_size (int or (int, int)): (OH, OW).
        pool_type (str): "max" or "avg".
        layout (str): "NCHW", "NHWC" or another permutation of those letters.

    Returns:
        te.Tensor: in layout, of data's dtype.

    Raises:
        KilnTypeError: data is not a tensor or an entry is of the wrong type.
        KilnValueError: an unknown pool_type or layout, or a symbolic spatial dimension.
    """
    api = "topi.nn.adaptive_pool"
    check_tensor(data, api, "data")
    check_layout(layout, "NCHW", api, "layout")
    check_ndim(data, 4, api, "data")
    check_choice(pool_type, ("max", "avg"), api, "pool_type")
    out_h, out_w = pair(output_size, api, "output_size")
    shape = dict(zip(layout, [simplify(d) for d in data.shape]))
    for axis in "HW":
        if const_int(shape[axis]) is None:
            raise KilnValueError(f"{api}: the spatial dimension {axis} of {data.name} must be "
                                 f"constant, found {dim_str(shape[axis])}; use "
                                 f"topi.nn.global_pool for a symbolic one")
    height, width = shape["H"], shape["W"]

    def largest_window(extent, out):
        return max(-(-(i + 1) * extent // out) - (i * extent // out) for i in range(out))

    ry = te.reduce_axis((0, largest_window(height, out_h)), name="ry")
    rx = te.reduce_axis((0, largest_window(width, out_w)), name="rx")
    out_shape = [{"N": shape["N"], "C": shape["C"], "H": out_h, "W": out_w}[c] for c in layout]

    def bounds(index, extent, out):
        return te.floordiv(index * extent, out), te.floordiv((index + 1) * extent + out - 1, out)

    def taps(indices):
        at = dict(zip(layout, indices))
        h0, h1 = bounds(at["H"], height, out_h)
        w0, w1 = bounds(at["W"], width, out_w)
        source = {"N": at["N"], "C": at["C"], "H": h0 + ry, "W": w0 + rx}
        inside = te.all(h0 + ry < h1, w0 + rx < w1)
        return data[tuple(source[c] for c in layout)], inside, (h1 - h0) * (w1 - w0)

    if pool_type == "max":
        def fmax(*indices):
            value, inside, _ = taps(indices)
            return te.max(value, axis=[ry, rx], where=inside)
        return te.compute(out_shape, fmax, name="adaptive_pool_max")
    acc = accumulation_dtype(data.dtype)

    def fsum(*indices):
        value, inside, _ = taps(indices)
        return te.sum(value.astype(acc), axis=[ry, rx], where=inside)

    total = te.compute(out_shape, fsum, name="adaptive_pool_sum")

    def favg(*indices):
        _, _, count = taps(indices)
        return (total[indices] / count.astype(acc)).astype(data.dtype)

    return te.compute(out_shape, favg, name="adaptive_pool_avg")


def global_pool(data, pool_type, layout="NCHW"):
    """The max or the mean of each channel over all spatial positions.

    Args:
        data (te.Tensor): 4-D in layout; every dimension may be symbolic.
        pool_type (str): "max" or "avg".
        layout (str): "NCHW", "NHWC" or another permutation of those letters.

    Returns:
        te.Tensor: in layout with H = W = 1, of data's dtype.

    Raises:
        KilnTypeError: data is not a tensor.
        KilnValueError: an unknown pool_type or layout.
    """
    api = "topi.nn.global_pool"
    check_tensor(data, api, "data")
    check_layout(layout, "NCHW", api, "layout")
    check_ndim(data, 4, api, "data")
    check_choice(pool_type, ("max", "avg"), api, "pool_type")
    shape = dict(zip(layout, [simplify(d) for d in data.shape]))
    ry = te.reduce_axis((0, shape["H"]), name="ry")
    rx = te.reduce_axis((0, shape["W"]), name="rx")
    out_shape = [{"N": shape["N"], "C": shape["C"], "H": 1, "W": 1}[c] for c in layout]
    acc = accumulation_dtype(data.dtype)

    def read(indices):
        at = dict(zip(layout, indices))
        source = {"N": at["N"], "C": at["C"], "H": ry, "W": rx}
        return data[tuple(source[c] for c in layout)]

    if pool_type == "max":
        return te.compute(out_shape, lambda *i: te.max(read(i), axis=[ry, rx]),
                          name="global_pool_max")
    total = te.compute(out_shape, lambda *i: te.sum(read(i).astype(acc), axis=[ry, rx]),
                       name="global_pool_sum")
    count = shape["H"] * shape["W"]
    count = te.const(float(count), acc) if isinstance(count, int) else count.astype(acc)
    return te.compute(out_shape, lambda *i: (total[i] / count).astype(data.dtype),
                      name="global_pool_avg")
