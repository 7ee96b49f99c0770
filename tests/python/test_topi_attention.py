"""kiln.topi.nn.rope and scaled_dot_product_attention against PyTorch's formulas written in
NumPy: rotate-half (Hugging Face's apply_rotary_pos_emb) and interleaved RoPE with a symbolic
position offset, attention with scale, causal masks (top-left and bottom-right for a KV cache
of symbolic length), boolean and additive masks, grouped-query heads (repeat_interleave), a fully
masked row (zeros), float16 inputs, and the (batch, seq, heads, dim) layout of attention; the
default CPU schedule row block by row block, and with a causal mask the work it leaves out
(counted on the lowered program)."""
import operator
import re

import numpy as np
import pytest

import kiln
from kiln import te, tir, topi
from topi_helpers import check, rand


@pytest.fixture
def rng():
    return np.random.default_rng(5)


def rope_tables(positions, dim, theta=10000.0):
    inv_freq = 1.0 / theta ** (np.arange(0, dim, 2) / dim)
    freqs = np.outer(positions, inv_freq)               # (seq, dim / 2)
    return np.cos(freqs), np.sin(freqs)


def rope_rotate_half_ref(x, positions, rotary_dim):
    """Hugging Face: emb = cat(freqs, freqs); x * cos + rotate_half(x) * sin."""
    rot, rest = x[..., :rotary_dim], x[..., rotary_dim:]
    cos, sin = rope_tables(positions, rotary_dim)
    cos, sin = np.concatenate([cos, cos], -1), np.concatenate([sin, sin], -1)
    half = rotary_dim // 2
    rotated = np.concatenate([-rot[..., half:], rot[..., :half]], -1)
    return np.concatenate([rot * cos + rotated * sin, rest], -1)


def rope_interleaved_ref(x, positions):
    """Meta's LLaMA: view pairs as complex numbers and multiply by exp(i * freqs)."""
    cos, sin = rope_tables(positions, x.shape[-1])
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * (cos + 1j * sin)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def test_rope_rotate_half_with_a_symbolic_offset(rng):
    n, offset = te.var("n"), te.var("offset")
    X = te.placeholder((2, 3, n, 8), name="X")
    x = rand(rng, 2, 3, 5, 8)
    positions = 7 + np.arange(5)
    check([X], topi.nn.rope(X, offset=offset), [x],
          rope_rotate_half_ref(x.astype("float64"), positions, 8), atol=2e-6,
          scalars={offset: np.int32(7)})


def test_rope_partial_rotary_dim_and_seq_axis(rng):
    X = te.placeholder((4, 2, 10), name="X")  # (seq, heads, dim)
    x = rand(rng, 4, 2, 10)
    ref = rope_rotate_half_ref(x.transpose(1, 0, 2).astype("float64"), np.arange(4), 6)
    check([X], topi.nn.rope(X, seq_axis=0, rotary_dim=6), [x], ref.transpose(1, 0, 2),
          atol=2e-6)


def test_rope_interleaved(rng):
    X = te.placeholder((1, 2, 6, 8), name="X")
    x = rand(rng, 1, 2, 6, 8)
    check([X], topi.nn.rope(X, offset=3, interleaved=True), [x],
          rope_interleaved_ref(x.astype("float64"), 3 + np.arange(6)), atol=2e-6)


def test_rope_interleaved_partial_rotary_dim_with_an_odd_feature_count(rng):
    # Features from rotary_dim on pass through; the last one has no partner in the tensor.
    X = te.placeholder((1, 2, 5, 9), name="X")
    x = rand(rng, 1, 2, 5, 9)
    ref = x.astype("float64").copy()
    ref[..., :6] = rope_interleaved_ref(ref[..., :6], np.arange(5))
    check([X], topi.nn.rope(X, interleaved=True, rotary_dim=6), [x], ref, atol=2e-6)


def test_rope_default_schedule_reads_contiguous_vectors():
    # The cosines and sines are tables computed once per (position, pair), and the rotate-half
    # partner index (d + half) % dim keeps a vector of features contiguous: every load of x
    # and of the tables in the lowered rotation is a ramp (no lane-by-lane gather).
    from kiln import tir
    X = te.placeholder((2, 4, 16, 64), name="X")
    func = te.create_prim_func([X, topi.nn.rope(X)])
    target = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell"  # 8 float32 lanes
    lowered = str(tir.lower(topi.default_schedule(func, target=target).mod))
    rotation = [line for line in lowered.splitlines() if "T_rope_1[" in line]
    assert len(rotation) == 1, lowered
    loads = re.findall(r"(X_1|T_rope_cos|T_rope_sin)\[([^\[\]]*(?:\[[^\]]*\])?[^\[\]]*)\]",
                       rotation[0])
    assert len(loads) == 4, rotation[0]
    assert all(index.startswith("T.Ramp(") for _, index in loads), loads


def visible_keys(rows, columns, causal):
    """The (rows, columns) bool array of the keys a causal mask shows to each query."""
    shift = columns - rows if causal == "bottom_right" else 0
    return np.tril(np.ones((rows, columns), bool), k=shift)


def sdpa_ref(q, k, v, mask=None, causal=None, scale=None):
    """PyTorch's math: repeat_interleave the KV heads, softmax(q k^T * scale + mask) v; a
    fully masked row is 0 here (kiln's definition)."""
    q, k, v = (t.astype("float64") for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.transpose(0, 1, 3, 2) * scale
    L, S = s.shape[-2:]
    keep = np.ones(s.shape, bool)
    if causal is not None:
        keep &= visible_keys(L, S, causal)
    if mask is not None and mask.dtype == np.bool_:
        keep &= mask
    elif mask is not None:
        s = s + mask
    s = np.where(keep, s, -np.inf)
    row_max = np.where(keep.any(-1, keepdims=True), s.max(-1, keepdims=True), 0)
    e = np.where(keep, np.exp(s - row_max), 0)
    total = e.sum(-1, keepdims=True)
    return np.where(total > 0, (e / np.where(total > 0, total, 1)) @ v, 0)


@pytest.mark.parametrize("causal", [None, "top_left", "bottom_right"])
def test_sdpa_with_grouped_query_heads(rng, causal):
    q, k, v = rand(rng, 2, 4, 3, 8), rand(rng, 2, 2, 5, 8), rand(rng, 2, 2, 5, 6)
    Q, K, V = (te.placeholder(t.shape, name=name) for t, name in ((q, "Q"), (k, "K"), (v, "V")))
    out = topi.nn.scaled_dot_product_attention(
        Q, K, V, is_causal=causal is not None, causal_alignment=causal or "bottom_right")
    check([Q, K, V], out, [q, k, v], sdpa_ref(q, k, v, causal=causal), atol=1e-6)


def test_sdpa_kv_cache_of_symbolic_length(rng):
    s = te.var("s")
    q, k, v = rand(rng, 1, 2, 2, 4), rand(rng, 1, 1, 6, 4), rand(rng, 1, 1, 6, 4)
    Q = te.placeholder(q.shape, name="Q")
    K = te.placeholder((1, 1, s, 4), name="K")
    V = te.placeholder((1, 1, s, 4), name="V")
    out = topi.nn.scaled_dot_product_attention(Q, K, V, is_causal=True, scale=0.3)
    check([Q, K, V], out, [q, k, v], sdpa_ref(q, k, v, causal="bottom_right", scale=0.3),
          atol=1e-6)


def test_sdpa_masks_and_a_fully_masked_row(rng):
    q, k, v = rand(rng, 1, 2, 3, 4), rand(rng, 1, 2, 4, 4), rand(rng, 1, 2, 4, 4)
    Q, K, V = (te.placeholder(t.shape, name=name) for t, name in ((q, "Q"), (k, "K"), (v, "V")))
    keep = np.array([[True, False, True, True], [False] * 4, [True, True, False, False]])
    M = te.placeholder((3, 4), "bool", name="M")
    out = topi.nn.scaled_dot_product_attention(Q, K, V, attn_mask=M)
    result = check([Q, K, V, M], out, [q, k, v, keep], sdpa_ref(q, k, v, mask=keep), atol=1e-6)
    assert np.all(result[:, :, 1] == 0)
    bias = rand(rng, 1, 1, 3, 4, scale=2.0)
    Bias = te.placeholder(bias.shape, name="Bias")
    out = topi.nn.scaled_dot_product_attention(Q, K, V, attn_mask=Bias)
    check([Q, K, V, Bias], out, [q, k, v, bias], sdpa_ref(q, k, v, mask=bias), atol=1e-6)


def test_sdpa_large_scores_and_float16(rng):
    q, k, v = rand(rng, 1, 1, 4, 8, scale=30), rand(rng, 1, 1, 4, 8, scale=30), rand(
        rng, 1, 1, 4, 8)
    Q, K, V = (te.placeholder(t.shape, "float16", name=name)
               for t, name in ((q, "Q"), (k, "K"), (v, "V")))
    q16, k16, v16 = (t.astype("float16") for t in (q, k, v))
    out = topi.nn.scaled_dot_product_attention(Q, K, V)
    assert out.dtype == "float16"
    check([Q, K, V], out, [q16, k16, v16], sdpa_ref(q16, k16, v16), rtol=5e-3, atol=5e-3)


def test_attention_in_bshd_layout(rng):
    q, k, v = rand(rng, 1, 3, 4, 8), rand(rng, 1, 5, 2, 8), rand(rng, 1, 5, 2, 8)
    Q, K, V = (te.placeholder(t.shape, name=name) for t, name in ((q, "Q"), (k, "K"), (v, "V")))
    out = topi.nn.attention(Q, K, V, causal_mask="BottomRight")
    ref = sdpa_ref(*(t.transpose(0, 2, 1, 3) for t in (q, k, v)), causal="bottom_right")
    check([Q, K, V], out, [q, k, v], ref.transpose(0, 2, 1, 3), atol=1e-6, interpret=True)


HASWELL = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell"  # 8 float32 lanes, 16 registers


def scheduled_attention(shapes, dtype="float32", mask=None, **options):
    """topi.default_schedule of scaled_dot_product_attention for a Haswell-like target (the
    schedule's structure is the target's; the vector code runs on any host)."""
    Q, K, V = (te.placeholder(s, dtype, name=n) for s, n in zip(shapes, ("Q", "K", "V")))
    inputs = [Q, K, V]
    if mask is not None:
        M = te.placeholder(mask.shape, str(mask.dtype), name="M")
        inputs.append(M)
        options["attn_mask"] = M
    out = topi.nn.scaled_dot_product_attention(Q, K, V, **options)
    func = te.create_prim_func(inputs + [out])
    return topi.default_schedule(func, target=HASWELL)


def score_rows_allocated(sch):
    """The number of score values the lowered function allocates at once."""
    from kiln import tir
    lowered = str(tir.lower(sch.mod))
    sizes = re.findall(r"T\.allocate\(\((\d+),\), \"float32\"\) as T_attention_score:", lowered)
    assert len(sizes) == 1, lowered
    return int(sizes[0])


@pytest.mark.parametrize("case", [
    # (q shape, k/v shape, options, mask kind)
    ((1, 8, 64, 32), (1, 2, 64, 32), dict(is_causal=True), None),
    ((2, 4, 24, 16), (2, 4, 48, 16), dict(is_causal=True), None),  # a KV cache longer than q
    ((1, 4, 1, 64), (1, 1, 96, 64), dict(is_causal=True), None),  # one new token
    ((1, 2, 16, 8), (1, 2, 32, 8), {}, "bool"),  # with a fully masked row
    ((1, 2, 16, 8), (1, 2, 32, 8), dict(is_causal=True, scale=0.2), "bias"),
])
def test_default_cpu_schedule_computes_attention_row_block_by_row_block(rng, case):
    # The scores, softmax and weighted sum of a block of query rows are computed together
    # under one parallel loop: the score buffer holds a block of rows, not all of them, and
    # the key and value are packed into panels of contiguous columns once.
    q_shape, kv_shape, options, mask_kind = case
    q, k, v = rand(rng, *q_shape), rand(rng, *kv_shape), rand(rng, *kv_shape)
    rows, columns = q_shape[2], kv_shape[2]
    mask = None
    if mask_kind == "bool":
        mask = rng.uniform(size=(rows, columns)) > 0.3
        mask[3] = False
    elif mask_kind == "bias":
        mask = rand(rng, 1, 1, rows, columns, scale=2.0)
    sch = scheduled_attention((q_shape, kv_shape, kv_shape), mask=mask, **options)
    script = sch.mod.script()
    assert script.count("T.parallel") <= 3, script  # the row blocks and the two packings
    for packed in ("K_global", "V_global"):
        # Panels of whole vectors: [.., column // NR, reduction index, column % NR].
        writes = re.search(rf"T\.writes\({packed}\[([^\]]*)\]\)", script)
        assert writes, script
        parts = writes.group(1).split(", ")
        # (a panel as wide as the dimension has index 0 and no remainder)
        assert len(parts) == 5 and ("//" in parts[-3] or parts[-3] == "0"), parts
        assert "//" not in parts[-2] and "%" not in parts[-2], parts
    heads_rows = q_shape[0] * q_shape[1] * rows
    assert score_rows_allocated(sch) < max(heads_rows * columns, 2 * columns), script
    out = np.zeros(q_shape, "float32")
    kiln.build(sch.mod, target="llvm")(*([q, k, v] + ([mask] if mask is not None else [])),
                                       out)
    causal = "bottom_right" if options.get("is_causal") else None
    ref = sdpa_ref(q, k, v, mask=mask, causal=causal, scale=options.get("scale"))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=2e-6)
    if mask_kind == "bool":
        assert np.all(out[:, :, 3] == 0)


def test_default_cpu_schedule_of_attention_whose_columns_fit_no_vector_tile(rng):
    # 36 keys: no tile of whole vectors divides them, so the products are tiled one by one
    # (the step that fuses rows does not apply) and the result is the same.
    q, k, v = rand(rng, 1, 2, 12, 16), rand(rng, 1, 1, 36, 16), rand(rng, 1, 1, 36, 16)
    sch = scheduled_attention((q.shape, k.shape, v.shape), is_causal=True)
    assert score_rows_allocated(sch) == 2 * 12 * 36
    out = np.zeros(q.shape, "float32")
    kiln.build(sch.mod, target="llvm")(q, k, v, out)
    np.testing.assert_allclose(out, sdpa_ref(q, k, v, causal="bottom_right"), rtol=1e-5,
                               atol=2e-6)


def test_default_cpu_schedule_of_float16_attention_row_blocks(rng):
    q, k, v = rand(rng, 1, 2, 32, 16), rand(rng, 1, 2, 64, 16), rand(rng, 1, 2, 64, 16)
    q16, k16, v16 = (t.astype("float16") for t in (q, k, v))
    sch = scheduled_attention((q.shape, k.shape, v.shape), "float16", is_causal=True)
    assert score_rows_allocated(sch) < 2 * 32 * 64
    out = np.zeros(q.shape, "float16")
    kiln.build(sch.mod, target="llvm")(q16, k16, v16, out)
    np.testing.assert_allclose(out.astype("float64"),
                               sdpa_ref(q16, k16, v16, causal="bottom_right"),
                               rtol=5e-3, atol=5e-3)


# --- Causal attention: the default schedule leaves out the key blocks the mask hides. --------

def causal_attention_inputs(rng, heads, kv_heads, rows, columns, depth, dtype="float32"):
    q = rand(rng, 1, heads, rows, depth)
    k, v = rand(rng, 1, kv_heads, columns, depth), rand(rng, 1, kv_heads, columns, depth)
    return [t.astype(dtype) for t in (q, k, v)]


@pytest.mark.parametrize("case", [
    # (heads, kv heads, query rows, keys, head dim, alignment)
    (8, 2, 64, 64, 32, "bottom_right"),  # grouped-query heads, as many queries as keys
    (4, 4, 40, 40, 16, "bottom_right"),  # rows that are no multiple of a register tile's
    (2, 1, 24, 88, 16, "bottom_right"),  # a KV cache longer than the queries
    (4, 1, 1, 96, 64, "bottom_right"),   # one new token, which sees every key
    (4, 2, 37, 37, 16, "bottom_right"),  # no vector tile divides the keys
    (2, 1, 48, 48, 16, "top_left"),
    (2, 1, 48, 32, 16, "top_left"),      # more queries than keys: the last see every key
    (2, 1, 40, 24, 16, "bottom_right"),  # more queries than keys: the first see none (zeros)
])
def test_default_cpu_schedule_of_causal_attention(rng, case):
    heads, kv_heads, rows, columns, depth, causal = case
    q, k, v = causal_attention_inputs(rng, heads, kv_heads, rows, columns, depth)
    sch = scheduled_attention((q.shape, k.shape, v.shape), is_causal=True,
                              causal_alignment=causal)
    out = np.full(q.shape, np.nan, "float32")
    kiln.build(sch.mod, target="llvm")(q, k, v, out)
    np.testing.assert_allclose(out, sdpa_ref(q, k, v, causal=causal), rtol=1e-5, atol=2e-6)
    hidden_rows = ~visible_keys(rows, columns, causal).any(1)
    assert np.all(out[:, :, hidden_rows] == 0)


def test_default_cpu_schedule_of_causal_attention_with_a_bool_mask_too(rng):
    # Both masks hide keys: the causal one decides the loops, the bool one selects per key.
    q, k, v = causal_attention_inputs(rng, 4, 2, 32, 48, 16)
    mask = rng.uniform(size=(32, 48)) > 0.3
    mask[5, :] = False
    sch = scheduled_attention((q.shape, k.shape, v.shape), mask=mask, is_causal=True)
    out = np.full(q.shape, np.nan, "float32")
    kiln.build(sch.mod, target="llvm")(q, k, v, mask, out)
    ref = sdpa_ref(q, k, v, mask=mask, causal="bottom_right")
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=2e-6)
    assert np.all(out[:, :, 5] == 0)


def test_default_cpu_schedule_of_a_causal_kv_cache_of_symbolic_length(rng):
    s = te.var("s")
    Q = te.placeholder((1, 4, 8, 16), name="Q")
    K, V = te.placeholder((1, 2, s, 16), name="K"), te.placeholder((1, 2, s, 16), name="V")
    out = topi.nn.scaled_dot_product_attention(Q, K, V, is_causal=True)
    sch = topi.default_schedule(te.create_prim_func([Q, K, V, out]), target=HASWELL)
    rt = kiln.build(sch.mod, target="llvm")
    for length in (8, 13, 40):
        q, k, v = causal_attention_inputs(rng, 4, 2, 8, length, 16)
        result = np.zeros(q.shape, "float32")
        rt(q, k, v, result)
        np.testing.assert_allclose(result, sdpa_ref(q, k, v, causal="bottom_right"), rtol=1e-5,
                                   atol=2e-6)


def test_default_cpu_schedule_of_float16_causal_attention_with_a_kv_cache(rng):
    q, k, v = causal_attention_inputs(rng, 4, 2, 24, 56, 16, "float16")
    sch = scheduled_attention((q.shape, k.shape, v.shape), "float16", is_causal=True)
    out = np.zeros(q.shape, "float16")
    kiln.build(sch.mod, target="llvm")(q, k, v, out)
    np.testing.assert_allclose(out.astype("float64"), sdpa_ref(q, k, v, causal="bottom_right"),
                               rtol=5e-3, atol=5e-3)


_BINARY = {tir.Add: operator.add, tir.Sub: operator.sub, tir.Mul: operator.mul,
           tir.FloorDiv: operator.floordiv, tir.FloorMod: operator.mod, tir.Min: min,
           tir.Max: max, tir.LT: operator.lt, tir.LE: operator.le, tir.GT: operator.gt,
           tir.GE: operator.ge, tir.EQ: operator.eq, tir.NE: operator.ne,
           tir.And: lambda a, b: a and b, tir.Or: lambda a, b: a or b}


def _evaluate(expr, values):
    """An integer or bool expression of a lowered program; values: hash(var) -> value."""
    if isinstance(expr, tir.IntImm):
        return expr.value
    if isinstance(expr, tir.Var):
        return values[hash(expr)]
    if isinstance(expr, tir.Cast):
        return _evaluate(expr.value, values)
    if isinstance(expr, tir.Not):
        return not _evaluate(expr.a, values)
    if isinstance(expr, tir.Call) and expr.op == "likely":
        return _evaluate(expr.args[0], values)
    return _BINARY[type(expr)](_evaluate(expr.a, values), _evaluate(expr.b, values))


def _work_kind(store):
    """What a store of the lowered attention computes: "scores" (a step of the dot products
    of the scores), "exps" (weights), "weighted" (a step of the weighted sum) or None."""
    names, stack = set(), [store.value]
    while stack:
        e = stack.pop()
        names.add(e.op if isinstance(e, tir.Call) else type(e).__name__)
        stack.extend(c for c in (getattr(e, n, None) for n in ("a", "b", "value", "condition",
                                                                "true_value", "false_value"))
                     if isinstance(c, tir.PrimExpr))
        stack.extend(a for a in (getattr(e, "args", None) or []) if isinstance(a, tir.PrimExpr))
    name = store.buffer.name
    if name.startswith("T_attention_score") and "Mul" in names:
        return "scores"
    if name == "T_attention_weight" and "exp" in names:
        return "exps"
    if name.startswith("T_attention_weighted") and "Mul" in names:
        return "weighted"
    return None


def computed_work(func):
    """Runs the loops of a lowered attention (its loop bounds and conditions only) and counts
    the lanes of the stores of each _work_kind: the work the program does."""
    counts = {"scores": 0, "exps": 0, "weighted": 0}
    has_work = {}

    def counts_here(stmt):
        key = hash(stmt)
        if key not in has_work:
            if isinstance(stmt, tir.BufferStore):
                has_work[key] = _work_kind(stmt) is not None
            elif isinstance(stmt, tir.SeqStmt):
                has_work[key] = any(counts_here(s) for s in stmt.seq)
            elif isinstance(stmt, tir.IfThenElse):
                has_work[key] = counts_here(stmt.then_case) or (
                    stmt.else_case is not None and counts_here(stmt.else_case))
            elif isinstance(stmt, (tir.For, tir.Allocate, tir.LetStmt)):
                has_work[key] = counts_here(stmt.body)
            else:
                has_work[key] = False
        return has_work[key]

    def run(stmt, values):
        if not counts_here(stmt):
            return
        if isinstance(stmt, tir.For):
            start = _evaluate(stmt.min, values)
            for value in range(start, start + _evaluate(stmt.extent, values)):
                values[hash(stmt.loop_var)] = value
                run(stmt.body, values)
        elif isinstance(stmt, tir.SeqStmt):
            for s in stmt.seq:
                run(s, values)
        elif isinstance(stmt, tir.IfThenElse):
            if _evaluate(stmt.condition, values):
                run(stmt.then_case, values)
            elif stmt.else_case is not None:
                run(stmt.else_case, values)
        elif isinstance(stmt, tir.LetStmt):
            values[hash(stmt.var)] = _evaluate(stmt.value, values)
            run(stmt.body, values)
        elif isinstance(stmt, tir.Allocate):
            run(stmt.body, values)
        else:
            dtype = str(stmt.value.dtype)
            counts[_work_kind(stmt)] += int(dtype.split("x")[1]) if "x" in dtype else 1

    run(func.body, {})
    return counts


@pytest.mark.parametrize("rows, columns, causal", [
    (64, 64, "bottom_right"), (64, 64, "top_left"), (32, 96, "bottom_right"),
    (48, 32, "top_left")])
def test_default_cpu_schedule_leaves_out_the_work_a_causal_mask_hides(rows, columns, causal):
    # Counted on the lowered program: the weighted sum runs over exactly the visible keys, the
    # exponentials over them and the one vector (8 lanes) of each row that crosses the
    # diagonal, the scores over them and the register tiles that cross it (the key strips of
    # 16 that a block of 16 rows partly sees): at 64 x 64, 10 of the 16 tiles of a head.
    heads, depth = 2, 8
    shape = (1, heads, rows, depth)
    kv_shape = (1, 1, columns, depth)
    sch = scheduled_attention((shape, kv_shape, kv_shape), is_causal=True,
                              causal_alignment=causal)
    work = computed_work(tir.lower(sch.mod)["main"])
    pairs = heads * rows * columns
    visible = heads * int(visible_keys(rows, columns, causal).sum())
    assert work["weighted"] == visible * depth, work
    assert visible * depth <= work["scores"] < pairs * depth, work
    assert visible <= work["exps"] <= visible + heads * rows * 8, work
    if rows == columns:
        assert work["scores"] == 10 / 16 * pairs * depth, work


@pytest.mark.parametrize("mask_kind", ["bool", "bias"])
def test_default_cpu_schedule_computes_every_score_of_a_mask_that_is_not_causal(rng,
                                                                                 mask_kind):
    heads, rows, columns, depth = 2, 64, 64, 8
    mask = rng.uniform(size=(rows, columns)) > 0.5
    if mask_kind == "bias":
        mask = rand(rng, 1, 1, rows, columns)
    shape, kv_shape = (1, heads, rows, depth), (1, 1, columns, depth)
    sch = scheduled_attention((shape, kv_shape, kv_shape), mask=mask)
    work = computed_work(tir.lower(sch.mod)["main"])
    pairs = heads * rows * columns
    assert work == {"scores": pairs * depth, "exps": pairs, "weighted": pairs * depth}
