"""Rotary position embedding (RoPE) in its two common forms: rotate-half (GPT-NeoX, Hugging
Face LLaMA) and interleaved pairs (GPT-J, Meta's LLaMA), with the angles computed in float32."""
import math

from ... import te
from ...error import KilnTypeError, KilnValueError
from ...ir import PrimExpr
from .._util import (FLOAT16_TYPES, check_float, check_int, check_tensor, const_int, dim_str,
                     normalize_axis, shape_of)


def rope(x, theta=10000.0, offset=0, seq_axis=-2, interleaved=False, rotary_dim=None):
    """x with each pair of features rotated by an angle that grows with the position.

    Position p = offset + the index along seq_axis; pair j (0 <= j < rotary_dim / 2) turns by
    p * theta ** (-2 j / rotary_dim). Rotate-half (interleaved=False) pairs feature j with
    j + rotary_dim / 2: out = x * cos + rotate_half(x) * sin with
    rotate_half(x) = concat(-x[half:], x[:half]), as in Hugging Face's apply_rotary_pos_emb.
    Interleaved pairs features 2j and 2j + 1: out[2j] = x[2j] cos - x[2j+1] sin,
    out[2j+1] = x[2j+1] cos + x[2j] sin. Features from rotary_dim on pass through.

    Args:
        x (te.Tensor): a float tensor whose last axis holds the features of one head, e.g.
            (batch, heads, seq, head_dim); any dimension but the last may be symbolic.
        theta (float): the base of the frequencies.
        offset (int or PrimExpr): the position of the first row (the length of a KV cache
            before the new tokens); a te.var is a scalar parameter of the function.
        seq_axis (int): the axis of the positions; default -2.
        interleaved (bool): the interleaved form instead of rotate-half.
        rotary_dim (int, optional): how many leading features rotate; default all.

    Returns:
        te.Tensor: of x's shape and dtype (16-bit floats are rotated in float32).

    Raises:
        KilnTypeError: x is not a float tensor, or offset is not an int or an integer
            expression.
        KilnIndexError: seq_axis is out of range or is the feature axis.
        KilnValueError: the feature dimension is symbolic, or rotary_dim is odd or larger than
            it.
    """
    api = "topi.nn.rope"
    check_tensor(x, api, "x")
    check_float(x, api, "x")
    shape = shape_of(x)
    seq_axis = normalize_axis(seq_axis, x.ndim, api, "seq_axis")
    if seq_axis == x.ndim - 1:
        raise KilnValueError(f"{api}: seq_axis must not be the feature axis (the last)")
    head_dim = const_int(shape[-1])
    if head_dim is None:
        raise KilnValueError(f"{api}: the feature dimension of {x.name} must be constant, found "
                             f"{dim_str(shape[-1])}")
    rotary_dim = head_dim if rotary_dim is None else check_int(rotary_dim, api, "rotary_dim", 2)
    if rotary_dim % 2 or rotary_dim > head_dim:
        raise KilnValueError(f"{api}: rotary_dim must be even and at most the feature dimension "
                             f"{head_dim}, found {rotary_dim}")
    if not (isinstance(offset, PrimExpr) and offset.dtype.startswith("int")) and (
            isinstance(offset, bool) or not isinstance(offset, int)):
        raise KilnTypeError(f"{api}: offset must be an int or an integer expression, found "
                            f"{offset!r}")
    acc = "float32" if x.dtype in FLOAT16_TYPES else x.dtype
    half = rotary_dim // 2
    log_theta = math.log(theta)

    # The cosine and sine of each position's angles, once per (position, pair): the tables are
    # stages of their own (default schedules keep a transcendental stage whose consumer reads
    # it more often than it has elements), so that the rotation itself is loads and
    # multiply-adds, not three math functions per element of every head.
    def angle(p, j):
        frequency = te.exp(j.astype(acc) * (-2.0 * log_theta / rotary_dim))
        return (p + offset).astype(acc) * frequency

    table = (shape[seq_axis], half)
    cos = te.compute(table, lambda p, j: te.cos(angle(p, j)), name="T_rope_cos")
    sin = te.compute(table, lambda p, j: te.sin(angle(p, j)), name="T_rope_sin")

    def fcompute(*i):
        d = i[-1]
        # The partner of feature d and the sign of its term, in index arithmetic without
        # conditions where the form allows (a vector of features then reads contiguous
        # partners). Features past rotary_dim read in-bounds entries; their result is the value.
        if interleaved:
            is_first = te.floormod(d, 2) == 0
            pair_index = te.floordiv(d, 2)
            partner = d + 1 - 2 * te.floormod(d, 2)
            if rotary_dim < head_dim:
                pair_index = te.min(pair_index, half - 1)
                partner = te.min(partner, head_dim - 1)
        else:
            is_first = d < half
            pair_index = te.floormod(d, half)
            partner = te.floormod(d + half, rotary_dim)
        sign = te.if_then_else(is_first, te.const(-1.0, acc), te.const(1.0, acc))
        value = x[i].astype(acc)
        other = x[tuple(i[:-1]) + (partner,)].astype(acc)
        position = i[seq_axis]
        rotated = (value * cos[position, pair_index]
                   + sign * other * sin[position, pair_index])
        if rotary_dim < head_dim:
            rotated = te.if_then_else(d < rotary_dim, rotated, value)
        return rotated.astype(x.dtype)

    return te.compute(shape, fcompute, name="T_rope")
