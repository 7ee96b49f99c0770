"""Reduction primitives: rfactor and decompose_reduction. Each has a golden before/after IR, a
numeric check against the unscheduled function on the interpreter, a trace round trip, and an
error case per precondition that leaves the schedule unchanged."""
import pytest

import kiln
from kiln import te, tir, topi

from schedule_helpers import (assert_same_results, assert_trace_roundtrip, elementwise_chain,
                              matmul, matmul_relu, softmax, symbolic_row_sum)

MATMUL_HEADER = '''# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 12), "float32"), C: T.Buffer((16, 12), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
'''

ROW_SUM_HEADER = '''# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((n, 16), "float32"), B: T.Buffer((n,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    n = T.int32()
    # with T.block("root"):
'''

ARGMAX_HEADER = '''# from kiln.script import tir as T
@T.prim_func
def main(x: T.Buffer((4, 8), "int32"), T_argmax_v0: T.Buffer((4,), "int32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
'''


def schedule_of(func, block_name):
    sch = tir.Schedule(func)
    block = sch.get_block(block_name)
    return sch, block, sch.get_loops(block)


def check(sch, func, expected):
    assert sch.mod["main"].script() == expected
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def assert_fails_unchanged(sch, error, match, action):
    """`action` raises `error` with a message matching `match` and leaves `sch` as it was."""
    mod, length = sch.mod, len(sch.trace)
    with pytest.raises(error, match=match):
        action()
    kiln.ir.assert_structural_equal(sch.mod, mod)
    assert len(sch.trace) == length


# ---------------------------------------------------------------------------------------------
# rfactor

def test_rfactor_matmul_after_split():
    func = matmul(16, 12, 8)
    sch, _, (_, _, k) = schedule_of(func, "C")
    _, k1 = sch.split(k, factors=[None, 4])
    rf = sch.rfactor(k1, factor_axis=0)
    assert sch.get(rf).name_hint == "C_rf"
    check(sch, func, MATMUL_HEADER + '''    C_rf = T.alloc_buffer((4, 16, 12), "float32")
    for i, j, k_0, k_1 in T.grid(16, 12, 2, 4):
        with T.block("C_rf"):
            v_k_1, v_i, v_j, v_k_0 = T.axis.remap("SSSR", [k_1, i, j, k_0])
            T.reads(A[v_i, v_k_0 * 4 + v_k_1], B[v_k_0 * 4 + v_k_1, v_j])
            T.writes(C_rf[v_k_1, v_i, v_j])
            with T.init():
                C_rf[v_k_1, v_i, v_j] = T.float32(0)
            C_rf[v_k_1, v_i, v_j] = C_rf[v_k_1, v_i, v_j] + A[v_i, v_k_0 * 4 + v_k_1] * B[v_k_0 * 4 + v_k_1, v_j]
    for i_1, j_1, k_1_1 in T.grid(16, 12, 4):
        with T.block("C"):
            v_k_1_1, v_i_1, v_j_1 = T.axis.remap("RSS", [k_1_1, i_1, j_1])
            T.reads(C_rf[v_k_1_1, v_i_1, v_j_1])
            T.writes(C[v_i_1, v_j_1])
            with T.init():
                C[v_i_1, v_j_1] = T.float32(0)
            C[v_i_1, v_j_1] = C[v_i_1, v_j_1] + C_rf[v_k_1_1, v_i_1, v_j_1]''')


def test_rfactor_symbolic_row_sum_on_the_outer_split_loop():
    func = symbolic_row_sum()
    sch, _, (_, k) = schedule_of(func, "B")
    k0, _ = sch.split(k, factors=[None, 4])
    sch.rfactor(k0, factor_axis=1)
    check(sch, func, ROW_SUM_HEADER + '''    B_rf = T.alloc_buffer((n, 4), "float32")
    for i, k_0, k_1 in T.grid(n, 4, 4):
        with T.block("B_rf"):
            v_k_0, v_i, v_k_1 = T.axis.remap("SSR", [k_0, i, k_1])
            T.reads(A[v_i, v_k_0 * 4 + v_k_1])
            T.writes(B_rf[v_i, v_k_0])
            with T.init():
                B_rf[v_i, v_k_0] = T.float32(0)
            B_rf[v_i, v_k_0] = B_rf[v_i, v_k_0] + A[v_i, v_k_0 * 4 + v_k_1]
    for i_1, k_0_1 in T.grid(n, 4):
        with T.block("B"):
            v_k_0_1, v_i_1 = T.axis.remap("RS", [k_0_1, i_1])
            T.reads(B_rf[v_i_1, v_k_0_1])
            T.writes(B[v_i_1])
            with T.init():
                B[v_i_1] = T.float32(0)
            B[v_i_1] = B[v_i_1] + B_rf[v_i_1, v_k_0_1]''')


@pytest.mark.parametrize("factor_axis, shape", [(0, (4, 16, 12)), (1, (16, 4, 12)),
                                                (2, (16, 12, 4)), (-1, (16, 12, 4)),
                                                (-3, (4, 16, 12))])
def test_rfactor_factor_axis_places_the_new_dimension(factor_axis, shape):
    func = matmul(16, 12, 8)
    sch, _, (_, _, k) = schedule_of(func, "C")
    _, k1 = sch.split(k, factors=[None, 4])
    sch.rfactor(k1, factor_axis=factor_axis)
    root = sch.mod["main"].body.block
    assert [tuple(int(e) for e in b.shape) for b in root.alloc_buffers] == [shape]
    assert_same_results(func, sch.mod)


def test_rfactor_max_reduction_with_a_non_divisible_split():
    func = softmax(4, 10)
    sch, _, (_, k) = schedule_of(func, "row_max")
    _, k1 = sch.split(k, factors=[None, 4])
    sch.rfactor(k1, factor_axis=0)
    text = sch.mod["main"].script()
    assert "T.where(k1_0 * 4 + k1_1 < 10)" in text
    assert "row_max_rf[v_k1_1, v_i] = T.min_value" not in text
    assert "row_max[v_i_1] = T.max(row_max[v_i_1], row_max_rf[v_k1_1_1, v_i_1])" in text, text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_rfactor_write_back_skips_factor_values_the_predicate_never_reaches():
    # k (16) split by 3 gives 6 outer steps, split again by 8: factor values 6 and 7 of the
    # rfactor loop are never computed, so the write-back must not read them.
    func = symbolic_row_sum()
    sch, _, (_, k) = schedule_of(func, "B")
    k0, _ = sch.split(k, factors=[None, 3])
    _, k01 = sch.split(k0, factors=[None, 8])
    sch.rfactor(k01, factor_axis=0)
    text = sch.mod["main"].script()
    assert '''    for i_1, k_0_1_1 in T.grid(n, 8):
        with T.block("B"):
            v_k_0_1_1, v_i_1 = T.axis.remap("RS", [k_0_1_1, i_1])
            T.where(k_0_1_1 < 6)''' in text, text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_rfactor_then_decompose_and_parallelize_the_factor_loop():
    func = matmul(16, 12, 8)
    sch, _, (_, _, k) = schedule_of(func, "C")
    k0, k1 = sch.split(k, factors=[None, 4])
    rf = sch.rfactor(k1, factor_axis=0)
    sch.decompose_reduction(rf, k0)
    sch.parallel(k1)
    assert sch.get(k1).kind == "parallel"
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_rfactor_trace_prints_the_factor_axis():
    func = matmul(16, 12, 8)
    sch, _, (_, _, k) = schedule_of(func, "C")
    _, k1 = sch.split(k, factors=[None, 4])
    sch.rfactor(k1, factor_axis=-1)
    assert sch.trace.as_python().splitlines()[-1] == "b6 = sch.rfactor(loop=l5, factor_axis=-1)"


def test_rfactor_argmax_keeps_each_value_of_the_pair():
    """A reduction of two values (argmax's index and value) gets an intermediate buffer per value;
    both blocks update the pair together, as the block did. Integer inputs tie often: the first
    index stays first."""
    x = te.placeholder((4, 8), "int32", name="x")
    func = te.create_prim_func([x, topi.argmax(x, axis=1)])
    sch, _, (_, k) = schedule_of(func, "T_argmax")
    _, k1 = sch.split(k, factors=[None, 4])
    rf = sch.rfactor(k1, factor_axis=1)
    assert sch.get(rf).name_hint == "T_argmax_rf"
    check(sch, func, ARGMAX_HEADER + '''    T_argmax_v1 = T.alloc_buffer((4,), "int32")
    T_argmax_v0_rf = T.alloc_buffer((4, 4), "int32")
    T_argmax_v1_rf = T.alloc_buffer((4, 4), "int32")
    for i, k1_0, k1_1 in T.grid(4, 2, 4):
        with T.block("T_argmax_rf"):
            v_k1_1, v_i, v_k1_0 = T.axis.remap("SSR", [k1_1, i, k1_0])
            T.reads(x[v_i, v_k1_0 * 4 + v_k1_1])
            T.writes(T_argmax_v0_rf[v_i, v_k1_1], T_argmax_v1_rf[v_i, v_k1_1])
            with T.init():
                T_argmax_v0_rf[v_i, v_k1_1] = 2147483647
                T_argmax_v1_rf[v_i, v_k1_1] = -2147483648
            with T.LetStmt(T.Select(x[v_i, v_k1_0 * 4 + v_k1_1] > T_argmax_v1_rf[v_i, v_k1_1] or x[v_i, v_k1_0 * 4 + v_k1_1] == T_argmax_v1_rf[v_i, v_k1_1] and v_k1_0 * 4 + v_k1_1 < T_argmax_v0_rf[v_i, v_k1_1], v_k1_0 * 4 + v_k1_1, T_argmax_v0_rf[v_i, v_k1_1])) as T_argmax_v0_rf_temp:
                with T.LetStmt(T.Select(x[v_i, v_k1_0 * 4 + v_k1_1] > T_argmax_v1_rf[v_i, v_k1_1] or x[v_i, v_k1_0 * 4 + v_k1_1] == T_argmax_v1_rf[v_i, v_k1_1] and v_k1_0 * 4 + v_k1_1 < T_argmax_v0_rf[v_i, v_k1_1], x[v_i, v_k1_0 * 4 + v_k1_1], T_argmax_v1_rf[v_i, v_k1_1])) as T_argmax_v1_rf_temp:
                    T_argmax_v0_rf[v_i, v_k1_1] = T_argmax_v0_rf_temp
                    T_argmax_v1_rf[v_i, v_k1_1] = T_argmax_v1_rf_temp
    for i_1, k1_1_1 in T.grid(4, 4):
        with T.block("T_argmax"):
            v_k1_1_1, v_i_1 = T.axis.remap("RS", [k1_1_1, i_1])
            T.reads(T_argmax_v0_rf[v_i_1, v_k1_1_1], T_argmax_v1_rf[v_i_1, v_k1_1_1])
            T.writes(T_argmax_v0[v_i_1], T_argmax_v1[v_i_1])
            with T.init():
                T_argmax_v0[v_i_1] = 2147483647
                T_argmax_v1[v_i_1] = -2147483648
            with T.LetStmt(T.Select(T_argmax_v1_rf[v_i_1, v_k1_1_1] > T_argmax_v1[v_i_1] or T_argmax_v1_rf[v_i_1, v_k1_1_1] == T_argmax_v1[v_i_1] and T_argmax_v0_rf[v_i_1, v_k1_1_1] < T_argmax_v0[v_i_1], T_argmax_v0_rf[v_i_1, v_k1_1_1], T_argmax_v0[v_i_1])) as T_argmax_v0_temp:
                with T.LetStmt(T.Select(T_argmax_v1_rf[v_i_1, v_k1_1_1] > T_argmax_v1[v_i_1] or T_argmax_v1_rf[v_i_1, v_k1_1_1] == T_argmax_v1[v_i_1] and T_argmax_v0_rf[v_i_1, v_k1_1_1] < T_argmax_v0[v_i_1], T_argmax_v1_rf[v_i_1, v_k1_1_1], T_argmax_v1[v_i_1])) as T_argmax_v1_temp:
                    T_argmax_v0[v_i_1] = T_argmax_v0_temp
                    T_argmax_v1[v_i_1] = T_argmax_v1_temp''')


def test_rfactor_error_tuple_combiner_that_is_not_a_select():
    A = te.placeholder((8, 8), "float32", name="A")
    r = te.reduce_axis((0, 8), name="k")
    pair = te.comm_reducer(lambda x, y: (x[0] - y[0], x[1] + y[1]),
                           lambda t0, t1: (te.const(0, t0), te.const(0, t1)), name="pair")
    B0, B1 = te.compute((8,), lambda i: pair((A[i, r], A[i, r]), axis=r), name="B")
    sch, _, (_, k) = schedule_of(te.create_prim_func([A, B0, B1]), "B")
    assert_fails_unchanged(
        sch, tir.schedule.NoMatchedReducerError,
        r"the value B_v0\[v_i\] - A\[v_i, v_k\] of B_v0\[v_i\] in block 'B' is not a select, "
        r"sum, product, max or min with the stored element as exactly one operand",
        lambda: sch.rfactor(k, 0))


def test_rfactor_error_loop_with_two_blocks():
    func = matmul(16, 12, 8)
    sch, _, (_, j, k) = schedule_of(func, "C")
    sch.blockize(k)
    assert_fails_unchanged(sch, tir.schedule.NotSingleChildBlockError,
                           "loop 'j' holds 2 blocks; rfactor needs exactly one reduction block",
                           lambda: sch.rfactor(j, 0))


def test_rfactor_error_block_without_init():
    func = elementwise_chain()
    sch, _, (_, j) = schedule_of(func, "B")
    assert_fails_unchanged(sch, tir.schedule.NotReductionBlockError,
                           "block 'B' has no init, so it is not a reduction",
                           lambda: sch.rfactor(j, 0))


def test_rfactor_error_decomposed_block_is_no_longer_a_reduction():
    func = matmul(16, 12, 8)
    sch, block, (i, _, k) = schedule_of(func, "C")
    sch.decompose_reduction(block, i)
    assert_fails_unchanged(sch, tir.schedule.NotReductionBlockError, "block 'C' has no init",
                           lambda: sch.rfactor(k, 0))


def test_rfactor_error_init_is_not_the_identity():
    A = te.placeholder((8, 8), "float32", name="A")
    r = te.reduce_axis((0, 8), name="k")
    B = te.compute((8,), lambda i: te.sum(A[i, r], axis=r, init=1.0), name="B")
    sch, _, (_, k) = schedule_of(te.create_prim_func([A, B]), "B")
    assert_fails_unchanged(
        sch, tir.schedule.NoMatchedReducerError,
        r"block 'B' combines with sum but its init value T.float32\(1\) is not the identity "
        r"T.float32\(0\) of sum", lambda: sch.rfactor(k, 0))


def test_rfactor_error_unknown_combiner():
    A = te.placeholder((8, 8), "float32", name="A")
    r = te.reduce_axis((0, 8), name="k")
    difference = te.comm_reducer(lambda x, y: x - y, lambda t: te.const(0, dtype=t), name="diff")
    B = te.compute((8,), lambda i: difference(A[i, r], axis=r), name="B")
    sch, _, (_, k) = schedule_of(te.create_prim_func([A, B]), "B")
    assert_fails_unchanged(
        sch, tir.schedule.NoMatchedReducerError,
        r"the update `B\[v_i\] = B\[v_i\] - A\[v_i, v_k\]` of block 'B' is not a sum, product, "
        r"max or min of the stored element", lambda: sch.rfactor(k, 0))


def test_rfactor_error_spatial_loop():
    sch, _, (i, _, _) = schedule_of(matmul(16, 12, 8), "C")
    assert_fails_unchanged(sch, tir.schedule.LoopPropertyError,
                           "loop 'i' binds no reduce iterator of block 'C'; it binds a spatial one",
                           lambda: sch.rfactor(i, 0))


def test_rfactor_error_loop_binding_both_kinds():
    sch, _, (_, j, k) = schedule_of(matmul(16, 12, 8), "C")
    fused = sch.fuse(j, k)
    assert_fails_unchanged(
        sch, tir.schedule.LoopPropertyError,
        "loop 'j_k_fused' binds both the spatial iterator 'v_j' and the reduce iterator 'v_k'",
        lambda: sch.rfactor(fused, 0))


@pytest.mark.parametrize("factor_axis", [3, -4])
def test_rfactor_error_factor_axis_out_of_range(factor_axis):
    sch, _, (_, _, k) = schedule_of(matmul(16, 12, 8), "C")
    assert_fails_unchanged(
        sch, tir.schedule.FactorAxisOutOfRangeError,
        f"factor_axis {factor_axis} is out of range for the 2-d buffer C: expected "
        "-3 <= factor_axis <= 2", lambda: sch.rfactor(k, factor_axis))


# ---------------------------------------------------------------------------------------------
# decompose_reduction

def test_decompose_reduction_under_a_tiled_loop():
    func = matmul(16, 12, 8)
    sch, block, (i, j, _) = schedule_of(func, "C")
    i0, i1 = sch.split(i, factors=[None, 4])
    j0, j1 = sch.split(j, factors=[None, 4])
    k = sch.get_loops(block)[-1]
    sch.reorder(i0, j0, i1, j1, k)
    init = sch.decompose_reduction(block, i1)
    assert sch.get(init).name_hint == "C_init"
    check(sch, func, MATMUL_HEADER + '''    for i_0, j_0 in T.grid(4, 3):
        for i_1_init, j_1_init in T.grid(4, 4):
            with T.block("C_init"):
                v_i_init = T.axis.spatial(16, i_0 * 4 + i_1_init)
                v_j_init = T.axis.spatial(12, j_0 * 4 + j_1_init)
                T.reads()
                T.writes(C[v_i_init, v_j_init])
                C[v_i_init, v_j_init] = T.float32(0)
        for i_1, j_1, k in T.grid(4, 4, 8):
            with T.block("C"):
                v_i = T.axis.spatial(16, i_0 * 4 + i_1)
                v_j = T.axis.spatial(12, j_0 * 4 + j_1)
                v_k = T.axis.remap("R", [k])
                T.reads(A[v_i, v_k], B[v_k, v_j])
                T.writes(C[v_i, v_j])
                C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]''')


def test_decompose_reduction_symbolic_row_sum_at_the_reduce_loop():
    func = symbolic_row_sum()
    sch, block, (_, k) = schedule_of(func, "B")
    sch.decompose_reduction(block, k)
    check(sch, func, ROW_SUM_HEADER + '''    for i in range(n):
        with T.block("B_init"):
            v_i_init = T.axis.remap("S", [i])
            T.reads()
            T.writes(B[v_i_init])
            B[v_i_init] = T.float32(0)
        for k in range(16):
            with T.block("B"):
                v_i, v_k = T.axis.remap("SR", [i, k])
                T.reads(A[v_i, v_k])
                T.writes(B[v_i])
                B[v_i] = B[v_i] + A[v_i, v_k]''')


def test_decompose_reduction_drops_conditions_on_reduce_loops():
    func = softmax(4, 10)
    sch, block, (_, k) = schedule_of(func, "row_sum")
    k0, _ = sch.split(k, factors=[None, 4])
    sch.decompose_reduction(block, k0)
    text = sch.mod["main"].script()
    init = text[text.index('T.block("row_sum_init")'):text.index('T.block("row_sum")')]
    assert "T.where" not in init
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_decompose_reduction_trace():
    sch, block, (_, _, k) = schedule_of(matmul(16, 12, 8), "C")
    sch.decompose_reduction(block, k)
    assert sch.trace.as_python().splitlines()[-1] == (
        "b4 = sch.decompose_reduction(block=b0, loop=l3)")


def test_decompose_reduction_error_no_init():
    sch, block, (_, j) = schedule_of(elementwise_chain(), "B")
    assert_fails_unchanged(sch, tir.schedule.NotReductionBlockError,
                           "block 'B' has no init to decompose",
                           lambda: sch.decompose_reduction(block, j))


def test_decompose_reduction_error_loop_of_another_block():
    sch = tir.Schedule(matmul_relu(16, 12, 8))
    block = sch.get_block("C")
    other = sch.get_loops(sch.get_block("D"))[0]
    assert_fails_unchanged(sch, tir.schedule.LoopPositionError,
                           "loop 'i' is not an ancestor of block 'C'",
                           lambda: sch.decompose_reduction(block, other))


def test_decompose_reduction_error_reduce_loop_above():
    sch, block, (i, _, k) = schedule_of(matmul(16, 12, 8), "C")
    sch.reorder(k, i)
    assert_fails_unchanged(
        sch, tir.schedule.LoopHeightError,
        "loop 'k', above loop 'i', binds the reduce iterator 'v_k' of block 'C'; the init can "
        "only be placed above every loop of the reduction",
        lambda: sch.decompose_reduction(block, i))
