"""The loop passes of lowering from Python: loop_partition, vectorize_loops and unroll_loops,
run through kiln.tir.lower on scheduled te operators and one at a time through
kiln.tir.transform, including triangular checks (a causal mask) whose hidden part is left out.
Each checks the IR and the numbers on the reference interpreter against NumPy."""
import re

import numpy as np

import kiln
from kiln import te, tir
from kiln.tir import transform


def elementwise(n=100):
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    return te.create_prim_func([A, B])


def split_and_vectorize(func, factor=8):
    sch = tir.Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    _, inner = sch.split(i, factors=[None, factor])
    sch.vectorize(inner)
    return sch.mod["main"]


def run_elementwise(func, n=100, seed=0):
    a = np.random.default_rng(seed).standard_normal(n).astype("float32")
    b = np.zeros(n, "float32")
    tir.interpret(func, a, b)
    return a, b


def test_split_tail_is_partitioned_and_the_steady_loop_vectorized():
    lowered = tir.lower(split_and_vectorize(elementwise()))
    text = lowered.script()
    # Steady state: 12 vector iterations without a check; the tail keeps it, as a store (and a
    # load) of the lanes where it holds.
    assert "for i_0 in range(12):" in text
    assert "    for i_0 in range(12):\n        B[T.Ramp(i_0 * 8, 1, 8)] = A[T.Ramp(i_0 * 8, 1, 8)]" in text
    assert ("    if T.Ramp(96, 1, 8) < T.Broadcast(100, 8):\n"
            "        B[T.Ramp(96, 1, 8)] = T.if_then_else(T.Ramp(96, 1, 8) < T.Broadcast(100, 8), "
            "A[T.Ramp(96, 1, 8)], T.Broadcast(T.float32(0), 8)) * T.Broadcast(T.float32(2), 8)"
            " + T.Broadcast(T.float32(1), 8)") in text, text
    assert "kiln.vectorize_fallback" not in text
    a, b = run_elementwise(lowered)
    np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))


def test_passes_one_at_a_time():
    flat = transform.simplify(transform.flatten_buffers(transform.lower_opaque_block(
        transform.lower_init_block(split_and_vectorize(elementwise(96))))))
    partitioned = transform.loop_partition(flat)
    # 96 is a multiple of 8: the check is provably true everywhere and disappears.
    assert "if" not in partitioned.script()
    vectorized = transform.vectorize_loops(partitioned)
    assert "T.Ramp" in vectorized.script()
    assert "T.vectorized" not in vectorized.script()
    a, b = run_elementwise(vectorized, 96)
    np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))
    # Nothing left to do: the passes return the very same function.
    assert transform.loop_partition(vectorized).same_as(vectorized)
    assert transform.vectorize_loops(vectorized).same_as(vectorized)
    assert transform.unroll_loops(vectorized).same_as(vectorized)
    assert transform.lower_intrinsics(vectorized).same_as(vectorized)


def test_symbolic_extent_split_point():
    n = te.var("n")
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[None, 4])
    lowered = tir.lower(sch.mod["main"])
    text = lowered.script()
    assert "n // 4" in text
    for size in (0, 3, 4, 13):
        a = np.arange(size, dtype="float32")
        b = np.zeros(size, "float32")
        tir.interpret(lowered, a, b)
        np.testing.assert_array_equal(b, a + 1)


def test_unrolled_loop_is_copied():
    sch = tir.Schedule(elementwise(4))
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.unroll(i)
    lowered = tir.lower(sch.mod["main"])
    text = lowered.script()
    assert "for" not in text
    for k in range(4):
        assert "B[%d] = A[%d] * T.float32(2) + T.float32(1)" % (k, k) in text
    a, b = run_elementwise(lowered, 4)
    np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))


def test_auto_unroll_annotation():
    sch = tir.Schedule(elementwise(16))
    (i,) = sch.get_loops(sch.get_block("B"))
    outer, _ = sch.split(i, factors=[None, 4])
    sch.annotate(outer, "pragma_auto_unroll_max_step", 16)
    lowered = tir.lower(sch.mod["main"])
    assert "for" not in lowered.script()
    a, b = run_elementwise(lowered, 16)
    np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))


def test_llvm_unroll_zero_keeps_llvm_from_unrolling_the_loops_left():
    # pragma_llvm_unroll = 0 (what the tuner puts on every nest it schedules): the loop that
    # stays a loop carries llvm.loop.unroll.disable into LLVM, and the result is unchanged.
    sch = tir.Schedule(elementwise(1024))
    (i,) = sch.get_loops(sch.get_block("B"))
    outer, _ = sch.split(i, factors=[None, 4])
    sch.annotate(outer, "pragma_auto_unroll_max_step", 4)
    sch.annotate(outer, "pragma_llvm_unroll", 0)
    assert "kiln.llvm_loop_fixed" in tir.lower(sch.mod["main"]).script()
    rt = kiln.build(sch.mod)
    assert "llvm.loop.unroll.disable" in rt.get_source("ll")
    a = np.arange(1024, dtype="float32")
    b = np.zeros(1024, "float32")
    rt(a, b)
    np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))


def test_llvm_unroll_zero_keeps_llvm_from_vectorizing_the_loops_left():
    # The same pragma keeps LLVM's loop vectorizer off the loops that stay loops: a serial
    # scalar loop that it would vectorize stays scalar, and the result is unchanged.
    sch = tir.Schedule(elementwise(1024))
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.annotate(i, "pragma_llvm_unroll", 0)
    rt = kiln.build(sch.mod)
    ll = rt.get_source("ll")
    assert "llvm.loop.vectorize.enable" in ll
    assert not re.search(r"<\d+ x float>", ll)
    a = np.arange(1024, dtype="float32")
    b = np.zeros(1024, "float32")
    rt(a, b)
    np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))


# --- Triangular checks (a causal mask): loop_partition drops what the check rules out. -------

def test_reduction_with_a_triangular_where_runs_over_the_visible_part_only():
    # C[i] = sum of A[i, j] for j <= i: the j loop stops at i; no check is left.
    n = 16
    A = te.placeholder((n, n), "float32", name="A")
    j = te.reduce_axis((0, n), name="j")
    C = te.compute((n,), lambda i: te.sum(A[i, j], axis=j, where=j <= i), name="C")
    lowered = tir.lower(te.create_prim_func([A, C]))
    text = lowered.script()
    assert "for j in range(i + 1):" in text, text
    assert "<=" not in text, text
    a = np.random.default_rng(1).standard_normal((n, n)).astype("float32")
    c = np.zeros(n, "float32")
    tir.interpret(lowered, a, c)
    np.testing.assert_allclose(c, np.tril(a).sum(1), rtol=1e-6, atol=1e-6)


def test_likely_if_then_else_takes_each_value_where_the_condition_is_decided():
    # B[i, j] = A[i, j] * 2 where j <= i, else 0, in vectors of 4 columns: the vectors below the
    # diagonal multiply without a select, the one across it selects per lane, the ones above
    # it store zeros.
    n = 16
    A = te.placeholder((n, n), "float32", name="A")
    B = te.compute((n, n), lambda i, j: te.if_then_else(tir.likely(j <= i), A[i, j] * 2.0, 0.0),
                   name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    _, j = sch.get_loops("B")
    _, lanes = sch.split(j, factors=[None, 4])
    sch.vectorize(lanes)
    lowered = tir.lower(sch.mod)
    text = lowered.script()
    assert ("for j_0 in range((i + 1) // 4):\n"
            "                B_1[T.Ramp(i * 16 + j_0 * 4, 1, 4)] = A_1[T.Ramp(i * 16 + j_0 * 4, "
            "1, 4)] * T.Broadcast(T.float32(2), 4)") in text, text
    assert text.count("T.Select") == 1, text
    assert "= T.Broadcast(T.float32(0), 4)" in text, text
    a = np.random.default_rng(2).standard_normal((n, n)).astype("float32")
    b = np.full((n, n), 7.0, "float32")
    tir.interpret(lowered, a, b)
    np.testing.assert_array_equal(b, np.tril(a * np.float32(2)))


def register_tile(func, name, rows, columns):
    """The product `name` accumulated in a "local" tile of rows x columns per block of its
    output, the reduction outside the tile's loops: (schedule, the tile's row loop, its column
    loop, the write-back's column loop, the reduction loop)."""
    sch = tir.Schedule(func)
    local = sch.cache_write(name, 0, "local")
    row_loop, column_loop = sch.get_loops(local)
    row_block, row = sch.split(row_loop, factors=[None, rows])
    column_block, column = sch.split(column_loop, factors=[None, columns])
    sch.reorder(row_block, column_block, row, column)
    sch.compute_at(name, column_block)
    tile_row, tile_column, reduction = sch.get_loops(name)[-3:]
    sch.reorder(reduction, tile_row, tile_column)
    return sch, tile_row, tile_column, column, reduction


def test_masked_register_tile_blends_its_boundary_vectors():
    # S[i, j] = sum_k Q[i, k] * K[j, k] for j <= i (a causal score product), accumulated in a
    # "local" tile of 4 rows x 4 vector columns per block of rows: tiles above the diagonal
    # skip the products, tiles below it have no check, and the tile across it blends each
    # vector update with the old value (vectorize_loops), never falling back to scalars.
    n, d = 16, 8
    Q = te.placeholder((n, d), "float32", name="Q")
    K = te.placeholder((n, d), "float32", name="K")
    k = te.reduce_axis((0, d), name="k")
    S = te.compute((n, n), lambda i, j: te.sum(Q[i, k] * K[j, k], axis=k, where=j <= i),
                   name="S")
    sch, _, tile_column, column, _ = register_tile(te.create_prim_func([Q, K, S]), "S", 4, 4)
    sch.vectorize(tile_column)
    sch.vectorize(column)
    lowered = tir.lower(sch.mod)
    text = lowered.script()
    assert "kiln.vectorize_fallback" not in text, text
    updates = [line for line in text.splitlines() if "K_1[" in line]
    # Below the diagonal (column blocks before the row block) and across it (blended).
    assert len(updates) == 2, text
    assert "T.Select(" not in updates[0] and "T.Select(" in updates[1], text
    assert "for ax1_0 in range(ax0_0):" in text, text
    rng = np.random.default_rng(3)
    q, key = (rng.standard_normal((n, d)).astype("float32") for _ in range(2))
    s = np.full((n, n), 7.0, "float32")
    tir.interpret(lowered, q, key, s)
    np.testing.assert_allclose(s, np.tril(q @ key.T), rtol=1e-5, atol=1e-5)


def test_register_tile_written_back_by_a_loop_is_promoted_around_its_reduction():
    # C[i, j] = sum_k A[i, k] * B[k, j] in a "local" tile of 4 unrolled rows x 8 vector columns
    # whose write-back loops over the rows: the reduction loop works on C_local_reg (copied in
    # after the zeros, out before the write-back), the write-back reads C_local.
    n = 16
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch, tile_row, tile_column, _, reduction = register_tile(
        te.create_prim_func([A, B, C]), "C", 4, 8)
    sch.unroll(tile_row)
    sch.vectorize(tile_column)
    sch.decompose_reduction("C", reduction)
    lowered = tir.lower(sch.mod)
    text = lowered.script()
    assert "as C_local_reg:" in text, text
    update = [line for line in text.splitlines() if "T.Broadcast(A" in line]
    assert len(update) == 4 and all("C_local_reg[" in line and "C_local[" not in line
                          for line in update), text
    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal((n, n)).astype("float32") for _ in range(2))
    expected = a @ b
    c = np.zeros((n, n), "float32")
    tir.interpret(lowered, a, b, c)
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)
    c = np.zeros((n, n), "float32")
    kiln.build(sch.mod)(a, b, c)
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)
