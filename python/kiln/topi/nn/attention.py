"""Scaled dot-product attention with PyTorch's meaning (query (B, H, L, D), key and value
(B, Hkv, S, D)), grouped-query attention, causal masks aligned for a KV cache, and an optional
boolean or additive mask; plus ``attention`` in TVM's (batch, seq, heads, dim) layout. Scores,
softmax and the weighted sum run in float32 for 16-bit inputs."""
import math

from ... import te, tir
from ...error import KilnValueError
from .._util import (accumulation_dtype, check_choice, check_float, check_ndim, check_same_dtype,
                     check_tensor, const_int, dim_str, dims_equal, shape_of, shape_str)
from ..broadcast import broadcast_index, broadcast_shape
from ..transform import transpose


def _attention(query, key, value, attn_mask, causal, scale, api):
    for what, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(t, api, what)
        check_ndim(t, 4, api, what)
        check_float(t, api, what)
    check_same_dtype(query, key, api)
    check_same_dtype(query, value, api)
    check_choice(causal, (None, "top_left", "bottom_right"), api, "the causal alignment")
    batch, heads, q_len, depth = shape_of(query)
    kv_batch, kv_heads, kv_len, key_depth = shape_of(key)
    v_shape = shape_of(value)
    if not (dims_equal(batch, kv_batch) and dims_equal(depth, key_depth)
            and dims_equal(v_shape[0], batch) and dims_equal(v_shape[1], kv_heads)
            and dims_equal(v_shape[2], kv_len)):
        raise KilnValueError(
            f"{api}: query {shape_str(shape_of(query))}, key {shape_str(shape_of(key))} and "
            f"value {shape_str(v_shape)} do not fit: expected query (B, H, L, D), key "
            f"(B, Hkv, S, D) and value (B, Hkv, S, Dv)")
    h, hkv = const_int(heads), const_int(kv_heads)
    if h is None or hkv is None or h % hkv:
        raise KilnValueError(f"{api}: the query heads ({dim_str(heads)}) must be a constant "
                             f"multiple of the key/value heads ({dim_str(kv_heads)})")
    group = h // hkv
    acc = accumulation_dtype(query.dtype)
    if scale is None:
        if const_int(depth) is None:
            raise KilnValueError(f"{api}: a symbolic head dimension needs an explicit scale")
        scale = 1.0 / math.sqrt(const_int(depth))
    score_shape = [batch, heads, q_len, kv_len]
    if attn_mask is not None:
        check_tensor(attn_mask, api, "attn_mask")
        mask_shape = shape_of(attn_mask)
        full = broadcast_shape(mask_shape, score_shape, api, (attn_mask.name, "the scores"))
        if len(mask_shape) > 4 or not all(dims_equal(f, s) for f, s in zip(full, score_shape)):
            raise KilnValueError(f"{api}: attn_mask {attn_mask.name} of shape "
                                 f"{shape_str(mask_shape)} does not broadcast to the scores "
                                 f"(B, H, L, S) = {shape_str(score_shape)}")

    def kv_head(hh):
        return hh if group == 1 else te.floordiv(hh, group)

    def causal_visible(i, j):
        """Whether the causal mask shows key j to query i; None without a causal mask."""
        if causal == "top_left":
            return j <= i
        if causal == "bottom_right":
            return j <= i + (kv_len - q_len)
        return None

    # With a causal mask the two products reduce over the visible keys only (their where
    # condition; a hidden score is 0 and never read). Lowering's loop_partition then leaves out
    # the key blocks that no row of a loop nest sees, and the selects below, marked likely,
    # become their values where the mask is decided: about half of the work at long sequences.
    k = te.reduce_axis((0, depth), name="k")
    scores = te.compute(
        score_shape,
        lambda b, hh, i, j: te.sum(query[b, hh, i, k].astype(acc)
                                   * key[b, kv_head(hh), j, k].astype(acc), axis=k,
                                   where=causal_visible(i, j)),
        name="T_attention_score")

    def keep_and_bias(b, hh, i, j):
        """(whether key j is visible to query i, the additive mask or None)."""
        conditions, bias = [], None
        if causal is not None:
            conditions.append(causal_visible(i, j))
        if attn_mask is not None:
            m = attn_mask[tuple(broadcast_index(attn_mask, (b, hh, i, j)))]
            if attn_mask.dtype == "bool":
                conditions.append(m)
            else:
                bias = m.astype(acc)
        keep = te.all(*conditions) if conditions else None
        if causal is not None:
            keep = tir.likely(keep)
        return keep, bias

    def masked_score(b, hh, i, j):
        keep, bias = keep_and_bias(b, hh, i, j)
        # The scale multiplies the dot product once, outside the reduction.
        s = scores[b, hh, i, j] * scale
        if bias is not None:
            s = s + bias
        return s, keep

    j1 = te.reduce_axis((0, kv_len), name="j")

    def visible_max(b, hh, i):
        # The lowest value for a hidden key, rather than a predicate of the reduction: a
        # reduction whose body is a plain max is split into vector lanes (rfactor). A row with
        # no visible key keeps the lowest value and has no weight.
        s, keep = masked_score(b, hh, i, j1)
        if keep is not None:
            s = te.if_then_else(keep, s, te.min_value(acc))
        return te.max(s, axis=j1)

    row_max = te.compute([batch, heads, q_len], visible_max, name="T_attention_max")

    def weight(b, hh, i, j):
        s, keep = masked_score(b, hh, i, j)
        w = te.exp(s - row_max[b, hh, i])
        return w if keep is None else te.if_then_else(keep, w, te.const(0.0, acc))

    weights = te.compute(score_shape, weight, name="T_attention_weight")
    j2 = te.reduce_axis((0, kv_len), name="j")
    row_sum = te.compute([batch, heads, q_len],
                         lambda b, hh, i: te.sum(weights[b, hh, i, j2], axis=j2),
                         name="T_attention_sum")
    j3 = te.reduce_axis((0, kv_len), name="j")
    out_shape = [batch, heads, q_len, v_shape[3]]
    weighted = te.compute(
        out_shape,
        lambda b, hh, i, d: te.sum(weights[b, hh, i, j3] * value[b, kv_head(hh), j3, d]
                                   .astype(acc), axis=j3, where=causal_visible(i, j3)),
        name="T_attention_weighted")
    return te.compute(
        out_shape,
        lambda b, hh, i, d: te.if_then_else(row_sum[b, hh, i] > 0.0,
                                            weighted[b, hh, i, d] / row_sum[b, hh, i],
                                            te.const(0.0, acc)).astype(query.dtype),
        name="T_attention")


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False,
                                 scale=None, causal_alignment="bottom_right"):
    """softmax(query @ key.T * scale + mask) @ value, per batch and head (PyTorch's
    scaled_dot_product_attention without dropout).

    Grouped-query attention: with H query heads and Hkv key/value heads (H a multiple of Hkv),
    query head h reads key/value head h // (H / Hkv), as PyTorch's enable_gqa (and
    repeat_interleave of the key/value heads) does.

    Masks: is_causal hides the keys after each query. With a KV cache (S >= L) the queries are
    the last L positions, so query i sees keys j <= i + S - L (causal_alignment
    "bottom_right", the default); "top_left" gives j <= i, PyTorch's is_causal, which is the
    same when L == S. attn_mask, broadcast to (B, H, L, S), is a bool tensor (True: the key is
    visible) or an additive float tensor. A row whose keys are all hidden (by the causal mask or
    a bool mask) yields zeros, where PyTorch yields NaN; an additive mask of -inf over a whole
    row yields NaN, as in PyTorch.

    Args:
        query (te.Tensor): (B, H, L, D) floats; B, L may be symbolic.
        key (te.Tensor): (B, Hkv, S, D); S may be symbolic (a KV cache).
        value (te.Tensor): (B, Hkv, S, Dv).
        attn_mask (te.Tensor, optional): bool or float, broadcastable to (B, H, L, S).
        is_causal (bool): apply the causal mask.
        scale (float or PrimExpr, optional): default 1 / sqrt(D).
        causal_alignment (str): "bottom_right" or "top_left".

    Returns:
        te.Tensor: (B, H, L, Dv) of query's dtype.

    Raises:
        KilnTypeError: an operand is not a float tensor or the dtypes differ.
        KilnValueError: the shapes do not fit, the heads are not a constant multiple, the mask
            does not broadcast, or causal_alignment is unknown.
    """
    api = "topi.nn.scaled_dot_product_attention"
    check_choice(causal_alignment, ("bottom_right", "top_left"), api, "causal_alignment")
    causal = causal_alignment if is_causal else None
    return _attention(query, key, value, attn_mask, causal, scale, api)


def attention(query, key, value, bias=None, scale=None, causal_mask=None):
    """Attention in the (batch, seq, heads, dim) layout of TVM's relax attention:
    scaled_dot_product_attention on the transposed operands, transposed back.

    Args:
        query (te.Tensor): (B, L, H, D).
        key (te.Tensor): (B, S, Hkv, D).
        value (te.Tensor): (B, S, Hkv, Dv).
        bias (te.Tensor, optional): an additive or bool mask broadcastable to (B, H, L, S).
        scale (float, optional): default 1 / sqrt(D).
        causal_mask (str, optional): None, "TopLeft" or "BottomRight".

    Returns:
        te.Tensor: (B, L, H, Dv).

    Raises:
        KilnTypeError, KilnValueError: as scaled_dot_product_attention, and an unknown
            causal_mask.
    """
    api = "topi.nn.attention"
    check_choice(causal_mask, (None, "TopLeft", "BottomRight"), api, "causal_mask")
    for what, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(t, api, what)
        check_ndim(t, 4, api, what)
    causal = {None: None, "TopLeft": "top_left", "BottomRight": "bottom_right"}[causal_mask]
    q, k, v = (transpose(t, (0, 2, 1, 3)) for t in (query, key, value))
    out = _attention(q, k, v, bias, causal, scale, api)
    return transpose(out, (0, 2, 1, 3))
