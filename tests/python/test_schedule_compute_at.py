"""compute_at, reverse_compute_at and sample_compute_location: golden before/after IR, a numeric
check against the unscheduled function, a trace round trip, and each precondition's error (with
the schedule left unchanged)."""
import pytest

import kiln
from kiln import te, tir

from schedule_helpers import (WORKLOADS, assert_same_results, assert_trace_roundtrip, conv2d,
                              elementwise_chain, layer_norm, matmul_relu, softmax)

MATMUL_RELU_HEADER = '''# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 12), "float32"), D: T.Buffer((16, 12), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    C = T.alloc_buffer((16, 12), "float32")
'''

CONV_HEADER = '''# from kiln.script import tir as T
@T.prim_func
def main(X: T.Buffer((1, 3, 8, 8), "float32"), W: T.Buffer((4, 3, 3, 3), "float32"), conv: T.Buffer((1, 4, 8, 8), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    pad = T.alloc_buffer((1, 3, 10, 10), "float32")
'''

SOFTMAX_HEADER = '''# from kiln.script import tir as T
@T.prim_func
def main(X: T.Buffer((4, 10), "float32"), Y: T.Buffer((4, 10), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    row_max = T.alloc_buffer((4,), "float32")
    exp = T.alloc_buffer((4, 10), "float32")
    row_sum = T.alloc_buffer((4,), "float32")
'''


def indent(text, spaces):
    return "".join(" " * spaces + line + "\n" for line in text.strip("\n").split("\n"))


def matmul_update(spaces):
    return indent('''
T.reads(A[v_i, v_k], B[v_k, v_j])
T.writes(C[v_i, v_j])
with T.init():
    C[v_i, v_j] = T.float32(0)
C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]''', spaces)


def relu_update(spaces):
    return indent('''
T.reads(C[v_i_1, v_j_1])
T.writes(D[v_i_1, v_j_1])
D[v_i_1, v_j_1] = T.max(C[v_i_1, v_j_1], T.float32(0))''', spaces)


def pad_update(spaces):
    return indent('''
T.reads(X[v_b, v_ch, v_y - 1, v_x - 1])
T.writes(pad[v_b, v_ch, v_y, v_x])
pad[v_b, v_ch, v_y, v_x] = T.if_then_else(v_y >= 1 and v_y < 9 and v_x >= 1 and v_x < 9, X[v_b, v_ch, v_y - 1, v_x - 1], T.float32(0))''',
                  spaces)


def conv_update(spaces):
    return indent('''
T.reads(pad[v_b_1, v_rc, v_y_1 + v_ry, v_x_1 + v_rx], W[v_o, v_rc, v_ry, v_rx])
T.writes(conv[v_b_1, v_o, v_y_1, v_x_1])
with T.init():
    conv[v_b_1, v_o, v_y_1, v_x_1] = T.float32(0)
conv[v_b_1, v_o, v_y_1, v_x_1] = conv[v_b_1, v_o, v_y_1, v_x_1] + pad[v_b_1, v_rc, v_y_1 + v_ry, v_x_1 + v_rx] * W[v_o, v_rc, v_ry, v_rx]''',
                  spaces)


def check(sch, func, expected):
    assert sch.mod["main"].script() == expected.rstrip("\n")
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def assert_fails(sch, apply, error_class, message):
    """apply() must raise error_class with message, and leave the schedule as it was."""
    before = sch.mod
    length = len(sch.trace)
    with pytest.raises(tir.ScheduleError) as info:
        apply()
    assert type(info.value).__name__ == error_class
    assert isinstance(info.value, getattr(tir.schedule, error_class))
    assert message in str(info.value), str(info.value)
    kiln.ir.assert_structural_equal(sch.mod, before)
    assert len(sch.trace) == length


# ---------------------------------------------------------------------------------------------
# compute_at


def test_compute_at_matmul_under_relu_tiles():
    func = matmul_relu()
    sch = tir.Schedule(func)
    i, _ = sch.get_loops(sch.get_block("D"))
    i_0, _ = sch.split(i, factors=[None, 4])
    sch.compute_at(sch.get_block("C"), i_0)
    check(sch, func, MATMUL_RELU_HEADER + '''    for i_0 in range(4):
        for ax0, ax1, ax2 in T.grid(4, 12, 8):
            with T.block("C"):
                v_i = T.axis.spatial(16, i_0 * 4 + ax0)
                v_j, v_k = T.axis.remap("SR", [ax1, ax2])
''' + matmul_update(16) + '''        for i_1, j in T.grid(4, 12):
            with T.block("D"):
                v_i_1 = T.axis.spatial(16, i_0 * 4 + i_1)
                v_j_1 = T.axis.remap("S", [j])
''' + relu_update(16))


def test_compute_at_non_divisible_tile_adds_a_predicate():
    func = matmul_relu()
    sch = tir.Schedule(func)
    i, _ = sch.get_loops(sch.get_block("D"))
    i_0, _ = sch.split(i, factors=[None, 5])
    sch.compute_at(sch.get_block("C"), i_0)
    check(sch, func, MATMUL_RELU_HEADER + '''    for i_0 in range(4):
        for ax0, ax1, ax2 in T.grid(5, 12, 8):
            with T.block("C"):
                v_i = T.axis.spatial(16, i_0 * 5 + ax0)
                v_j, v_k = T.axis.remap("SR", [ax1, ax2])
                T.where(i_0 * 5 + ax0 < 16)
''' + matmul_update(16) + '''        for i_1, j in T.grid(5, 12):
            with T.block("D"):
                v_i_1 = T.axis.spatial(16, i_0 * 5 + i_1)
                v_j_1 = T.axis.remap("S", [j])
                T.where(i_0 * 5 + i_1 < 16)
''' + relu_update(16))


def test_compute_at_conv_padding_under_output_tiles():
    func = conv2d()
    sch = tir.Schedule(func)
    _, _, y, x, _, _, _ = sch.get_loops(sch.get_block("conv"))
    y_0, y_1 = sch.split(y, factors=[None, 4])
    x_0, x_1 = sch.split(x, factors=[None, 4])
    sch.reorder(y_0, x_0, y_1, x_1)
    sch.compute_at(sch.get_block("pad"), x_0)
    # One 4x4 output tile reads a 6x6 window of the padded input.
    check(sch, func, CONV_HEADER + '''    for b, o, y_0, x_0 in T.grid(1, 4, 2, 2):
        for ax0, ax1, ax2 in T.grid(3, 6, 6):
            with T.block("pad"):
                v_b = T.axis.spatial(1, 0)
                v_ch = T.axis.remap("S", [ax0])
                v_y = T.axis.spatial(10, y_0 * 4 + ax1)
                v_x = T.axis.spatial(10, x_0 * 4 + ax2)
''' + pad_update(16) + '''        for y_1, x_1, rc, ry, rx in T.grid(4, 4, 3, 3, 3):
            with T.block("conv"):
                v_b_1, v_o, v_rc, v_ry, v_rx = T.axis.remap("SSRRR", [b, o, rc, ry, rx])
                v_y_1 = T.axis.spatial(8, y_0 * 4 + y_1)
                v_x_1 = T.axis.spatial(8, x_0 * 4 + x_1)
''' + conv_update(16))


def test_compute_at_preserve_unit_loops():
    func = conv2d()
    sch = tir.Schedule(func)
    _, _, y, _, _, _, _ = sch.get_loops(sch.get_block("conv"))
    sch.compute_at(sch.get_block("pad"), y, preserve_unit_loops=True)
    check(sch, func, CONV_HEADER + '''    for b, o, y in T.grid(1, 4, 8):
        for ax0, ax1, ax2, ax3 in T.grid(1, 3, 3, 10):
            with T.block("pad"):
                v_b, v_ch, v_x = T.axis.remap("SSS", [ax0, ax1, ax3])
                v_y = T.axis.spatial(10, y + ax2)
''' + pad_update(16) + '''        for x, rc, ry, rx in T.grid(8, 3, 3, 3):
            with T.block("conv"):
                v_b_1, v_o, v_y_1, v_x_1, v_rc, v_ry, v_rx = T.axis.remap("SSSSRRR", [b, o, y, x, rc, ry, rx])
''' + conv_update(16))


def test_compute_at_softmax_row_max_under_the_normalize_loop():
    func = softmax()
    sch = tir.Schedule(func)
    i, _ = sch.get_loops(sch.get_block("exp"))
    sch.compute_at(sch.get_block("row_max"), i)
    check(sch, func, SOFTMAX_HEADER + '''    for i in range(4):
        for ax0 in range(10):
            with T.block("row_max"):
                v_i, v_k1 = T.axis.remap("SR", [i, ax0])
                T.reads(X[v_i, v_k1])
                T.writes(row_max[v_i])
                with T.init():
                    row_max[v_i] = T.float32(-3.4028235e+38)
                row_max[v_i] = T.max(row_max[v_i], X[v_i, v_k1])
        for j in range(10):
            with T.block("exp"):
                v_i_1, v_j = T.axis.remap("SS", [i, j])
                T.reads(X[v_i_1, v_j], row_max[v_i_1])
                T.writes(exp[v_i_1, v_j])
                exp[v_i_1, v_j] = T.exp(X[v_i_1, v_j] - row_max[v_i_1])
    for i_1, k2 in T.grid(4, 10):
        with T.block("row_sum"):
            v_i_2, v_k2 = T.axis.remap("SR", [i_1, k2])
            T.reads(exp[v_i_2, v_k2])
            T.writes(row_sum[v_i_2])
            with T.init():
                row_sum[v_i_2] = T.float32(0)
            row_sum[v_i_2] = row_sum[v_i_2] + exp[v_i_2, v_k2]
    for i_2, j_1 in T.grid(4, 10):
        with T.block("Y"):
            v_i_3, v_j_1 = T.axis.remap("SS", [i_2, j_1])
            T.reads(exp[v_i_3, v_j_1], row_sum[v_i_3])
            T.writes(Y[v_i_3, v_j_1])
            Y[v_i_3, v_j_1] = exp[v_i_3, v_j_1] / row_sum[v_i_3]
''')


@pytest.mark.parametrize("workload, last", [(softmax, "Y"), (layer_norm, "Y")])
def test_compute_at_whole_chain_under_one_row_loop(workload, last):
    func = workload()
    sch = tir.Schedule(func)
    i, _ = sch.get_loops(sch.get_block(last))
    names = [sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_block("root"))]
    for name in reversed(names[:-1]):
        sch.compute_at(sch.get_block(name), i)
    for name in names:
        assert sch.get(sch.get_loops(sch.get_block(name))[0]).loop_var.name == "i"
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_compute_at_makes_the_removed_loops_stale():
    func = matmul_relu()
    sch = tir.Schedule(func)
    c_i, _, _ = sch.get_loops(sch.get_block("C"))
    d_i, _ = sch.get_loops(sch.get_block("D"))
    sch.compute_at(sch.get_block("C"), d_i)
    with pytest.raises(tir.schedule.StaleHandleError) as info:
        sch.get(c_i)
    assert "removed by compute_at" in str(info.value)


def test_compute_at_errors():
    func = matmul_relu()
    sch = tir.Schedule(func)
    mm, relu = sch.get_block("C"), sch.get_block("D")
    c_i, _, _ = sch.get_loops(mm)
    assert_fails(sch, lambda: sch.compute_at(mm, c_i), "NotInSameScopeError",
                 "compute_at: loop 'i' is an ancestor of block 'C'")
    assert_fails(sch, lambda: sch.compute_at(relu, c_i), "OutputBlockError",
                 "block 'D' writes buffer 'D', which its scope does not allocate (an output)")
    func = softmax()
    sch = tir.Schedule(func)
    exp = sch.get_block("exp")
    y_i, _ = sch.get_loops(sch.get_block("Y"))
    assert_fails(sch, lambda: sch.compute_at(exp, y_i),
                 "NotAllRequiredBlocksAreVisitedError",
                 "every consumer of block 'exp' must be under loop 'i', but 1 of them is not: "
                 "'row_sum'")


def test_compute_at_error_marks_the_loop():
    sch = tir.Schedule(matmul_relu())
    i, _, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(tir.ScheduleError) as info:
        sch.compute_at(sch.get_block("C"), i)
    assert "    for i, j, k in T.grid(16, 12, 8):\n    ^^^" in str(info.value)


# ---------------------------------------------------------------------------------------------
# reverse_compute_at


def test_reverse_compute_at_relu_under_matmul_tiles():
    func = matmul_relu()
    sch = tir.Schedule(func)
    i, j, _ = sch.get_loops(sch.get_block("C"))
    i_0, i_1 = sch.split(i, factors=[None, 4])
    j_0, j_1 = sch.split(j, factors=[None, 4])
    sch.reorder(i_0, j_0, i_1, j_1)
    sch.reverse_compute_at(sch.get_block("D"), j_0)
    check(sch, func, MATMUL_RELU_HEADER + '''    for i_0, j_0 in T.grid(4, 3):
        for i_1, j_1, k in T.grid(4, 4, 8):
            with T.block("C"):
                v_i = T.axis.spatial(16, i_0 * 4 + i_1)
                v_j = T.axis.spatial(12, j_0 * 4 + j_1)
                v_k = T.axis.remap("R", [k])
''' + matmul_update(16) + '''        for ax0, ax1 in T.grid(4, 4):
            with T.block("D"):
                v_i_1 = T.axis.spatial(16, i_0 * 4 + ax0)
                v_j_1 = T.axis.spatial(12, j_0 * 4 + ax1)
''' + relu_update(16))


def test_reverse_compute_at_reduction_consumer():
    func = softmax()
    sch = tir.Schedule(func)
    i, _ = sch.get_loops(sch.get_block("exp"))
    sch.reverse_compute_at(sch.get_block("row_sum"), i)
    text = sch.mod["main"].script()
    assert '''    for i_1 in range(4):
        for j in range(10):
            with T.block("exp"):''' in text
    assert '''        for ax0 in range(10):
            with T.block("row_sum"):
                v_i_2, v_k2 = T.axis.remap("SR", [i_1, ax0])''' in text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_reverse_compute_at_errors():
    func = softmax()
    sch = tir.Schedule(func)
    exp, row_sum, out = sch.get_block("exp"), sch.get_block("row_sum"), sch.get_block("Y")
    i, j = sch.get_loops(exp)
    assert_fails(sch, lambda: sch.reverse_compute_at(out, i),
                 "NotAllRequiredBlocksAreVisitedError",
                 "every producer of block 'Y' must be under loop 'i', but 1 of them is not: "
                 "'row_sum'")
    assert_fails(sch, lambda: sch.reverse_compute_at(row_sum, j),
                 "PartialReductionError",
                 "reduction iterator 'v_k2' of block 'row_sum' would cover [j, j + 1) of its "
                 "domain [0, 10) in one iteration of loop 'j'")
    assert_fails(sch, lambda: sch.reverse_compute_at(exp, i),
                 "NotInSameScopeError", "loop 'i' is an ancestor of block 'exp'")
    row_max = sch.get_block("row_max")
    sum_i, _ = sch.get_loops(row_sum)
    assert_fails(sch, lambda: sch.reverse_compute_at(row_max, sum_i), "ConsumerBeforeLoopError",
                 "block 'exp', a consumer of block 'row_max', comes before loop 'i', so the block "
                 "would be computed after it is read")
    # One output point of a three-point stencil reads three points of its input.
    A = te.placeholder((18,), "float32", name="A")
    B = te.compute((18,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((16,), lambda i: B[i] + B[i + 1] + B[i + 2], name="C")
    sch = tir.Schedule(te.create_prim_func([A, C]))
    stencil = sch.get_block("C")
    i, = sch.get_loops(sch.get_block("B"))
    assert_fails(sch, lambda: sch.reverse_compute_at(stencil, i), "RegionNotCoverableError",
                 "in one iteration of loop 'i', block 'C' would read [0, 17] of dimension 0 of "
                 "buffer 'B', but its producers write only [i, i] of it there")


# ---------------------------------------------------------------------------------------------
# sample_compute_location


def test_sample_compute_location_candidates():
    func = elementwise_chain()
    seen = set()
    for seed in range(24):
        sch = tir.Schedule(func, seed=seed)
        block = sch.get_block("B")
        loop = sch.sample_compute_location(block)
        sch.compute_at(block, loop)
        seen.add(sch.trace.as_json()["instructions"][1]["decision"])
        assert_same_results(func, sch.mod)
        assert_trace_roundtrip(sch, func)
    # Loops in pre-order: B's i, j (0, 1), C's i_1, j_1 (2, 3), D's (4, 5). B can be inlined,
    # stay at the root, or go under C's loops.
    assert seen == {-2, -1, 2, 3}


def test_sample_compute_location_draws_each_candidate_as_often():
    # The draw checks locations in a random order until one is a candidate: uniform over the
    # candidates, as a draw from their list would be (400 seeds, 100 expected each).
    func = elementwise_chain()
    counts = {}
    for seed in range(400):
        sch = tir.Schedule(func, seed=seed)
        sch.sample_compute_location(sch.get_block("B"))
        decision = sch.trace.as_json()["instructions"][1]["decision"]
        counts[decision] = counts.get(decision, 0) + 1
    assert set(counts) == {-2, -1, 2, 3}
    assert all(70 <= n <= 130 for n in counts.values()), counts


def test_sample_compute_location_decisions():
    func = elementwise_chain()
    sch = tir.Schedule(func)
    block = sch.get_block("B")
    _, c_j = sch.get_loops(sch.get_block("C"))
    loop = sch.sample_compute_location(block, decision=3)
    assert sch.get(loop).same_as(sch.get(c_j))
    sch.compute_at(block, loop)
    assert sch.trace.as_python() == (
        'b0 = sch.get_block(func_name="main", name="B")\n'
        'b1 = sch.get_block(func_name="main", name="C")\n'
        'l2, l3 = sch.get_loops(block=b1)\n'
        'l4 = sch.sample_compute_location(block=b0, decision=3)\n'
        'sch.compute_at(block=b0, loop=l4, preserve_unit_loops=False)\n')
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_sample_compute_location_root_is_a_no_op():
    func = elementwise_chain()
    sch = tir.Schedule(func)
    block = sch.get_block("B")
    root = sch.sample_compute_location(block, decision=-1)
    sch.compute_at(block, root)
    kiln.ir.assert_structural_equal(sch.mod["main"], func)
    assert len(sch.trace) == 3
    assert_trace_roundtrip(sch, func)
    with pytest.raises(tir.schedule.StaleHandleError) as info:
        sch.split(root, factors=[2, None])
    assert "names loop 'root'" in str(info.value)


def test_sample_compute_location_inline():
    func = elementwise_chain()
    sch = tir.Schedule(func)
    block = sch.get_block("B")
    sch.compute_at(block, sch.sample_compute_location(block, decision=-2))
    assert "B = T.alloc_buffer" not in sch.mod["main"].script()
    assert "C[v_i, v_j] = A[v_i, v_j] * T.float32(2) + T.float32(1)" in sch.mod["main"].script()
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_sample_compute_location_invalid_decision():
    sch = tir.Schedule(matmul_relu())
    mm = sch.get_block("C")
    assert_fails(sch, lambda: sch.sample_compute_location(mm, decision=0),
                 "InvalidDecisionError",
                 "decision 0 is not a compute location of block 'C'; the candidates are [-1, 3, 4]")
    assert_fails(sch, lambda: sch.sample_compute_location(mm, decision=-2),
                 "InvalidDecisionError", "decision -2 is not a compute location of block 'C'")


def test_sample_compute_location_replays_with_another_decision():
    func = elementwise_chain()
    sch = tir.Schedule(func, seed=1)
    block = sch.get_block("B")
    sch.compute_at(block, sch.sample_compute_location(block, decision=2))
    trace = sch.trace.with_decision(1, 3)
    replayed = tir.Schedule(func)
    trace.apply_to_schedule(replayed)
    b_loops = replayed.get_loops(replayed.get_block("B"))
    c_loops = replayed.get_loops(replayed.get_block("C"))
    assert [replayed.get(l) for l in b_loops] == [replayed.get(l) for l in c_loops]
    assert_same_results(func, replayed.mod)


def test_te_compute_at_user_workload():
    """compute_at on a two-stage pipeline built here: a shifted copy read at two offsets."""
    A = te.placeholder((16,), "float32", name="A")
    B = te.compute((17,), lambda i: A[te.min(i, 15)] * 2.0, name="B")
    C = te.compute((16,), lambda i: B[i] + B[i + 1], name="C")
    func = te.create_prim_func([A, C])
    sch = tir.Schedule(func)
    i, = sch.get_loops(sch.get_block("C"))
    i_0, _ = sch.split(i, factors=[None, 4])
    sch.compute_at(sch.get_block("B"), i_0)
    text = sch.mod["main"].script()
    assert "for ax0 in range(5):" in text, text
    assert "v_i = T.axis.spatial(17, i_0 * 4 + ax0)" in text, text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_compute_at_under_a_fused_loop():
    func = matmul_relu()
    sch = tir.Schedule(func)
    i, j = sch.get_loops(sch.get_block("D"))
    fused = sch.fuse(i, j)
    sch.compute_at(sch.get_block("C"), fused)
    text = sch.mod["main"].script()
    assert """    for i_j_fused in range(192):
        for ax0 in range(8):
            with T.block("C"):
                v_i = T.axis.spatial(16, i_j_fused // 12)
                v_j = T.axis.spatial(12, i_j_fused % 12)
                v_k = T.axis.remap("R", [ax0])""" in text, text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


# ---------------------------------------------------------------------------------------------
# Every location of every workload


def block_names(sch):
    return [sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_block("root"))]


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_compute_location_is_exact(name):
    """compute_at at every location sample_compute_location accepts, and reverse_compute_at at
    every loop where it succeeds, computes what the unscheduled function computes."""
    func = WORKLOADS[name]()
    names = block_names(tir.Schedule(func))
    probe = tir.Schedule(func)
    loop_counts = {n: len(probe.get_loops(probe.get_block(n))) for n in names}
    for block in names:
        for decision in range(-2, sum(loop_counts.values())):
            sch = tir.Schedule(func)
            rv = sch.get_block(block)
            try:
                loop = sch.sample_compute_location(rv, decision=decision)
            except tir.schedule.InvalidDecisionError:
                continue
            sch.compute_at(rv, loop)
            assert_same_results(func, sch.mod)
        for other in names:
            for k in range(loop_counts[other]):
                sch = tir.Schedule(func)
                rv = sch.get_block(block)
                loop = sch.get_loops(sch.get_block(other))[k]
                try:
                    sch.reverse_compute_at(rv, loop)
                except tir.ScheduleError:
                    continue
                assert_same_results(func, sch.mod)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_random_compute_locations_after_tiling(name):
    """The tuner's use: tile the last block, then draw a location for each other block, last
    first. Every schedule computes the same results and replays from its trace."""
    func = WORKLOADS[name]()
    for seed in range(8):
        sch = tir.Schedule(func, seed=seed)
        blocks = sch.get_child_blocks(sch.get_block("root"))
        for loop in sch.get_loops(blocks[-1])[:2]:
            extent = sch.get(loop).extent
            if isinstance(extent, tir.IntImm) and extent.value > 2 and extent.value % 2 == 0:
                sch.split(loop, factors=[None, 2 + seed % 3])
        for block in reversed(blocks[:-1]):
            sch.compute_at(block, sch.sample_compute_location(block))
        assert_same_results(func, sch.mod)
        assert_trace_roundtrip(sch, func)


def test_reverse_compute_at_whole_symbolic_domain_keeps_its_extent():
    # The cache copy of A has no producer under loop i, so it copies all of A there: its loop
    # runs over n rows, not over the int32 bound of n.
    from schedule_helpers import symbolic_row_sum
    func = symbolic_row_sum()
    sch = tir.Schedule(func)
    sch.cache_read(sch.get_block("B"), 0, "local")
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.reverse_compute_at(sch.get_block("A_local"), i)
    assert "for ax0, ax1 in T.grid(n, 16):" in sch.mod["main"].script()
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_reverse_compute_at_error_padding_consumer_would_miss_its_border():
    # pad reads X_shared[y - 1, x - 1]: under the cache's loop it would only be computed where
    # the cache is written, leaving the border of the padded buffer unwritten.
    func = conv2d()
    sch = tir.Schedule(func)
    pad = sch.get_block("pad")
    sch.cache_read(pad, 0, "shared")
    _, ch, _, _ = sch.get_loops(sch.get_block("X_shared"))
    assert_fails(sch, lambda: sch.reverse_compute_at(pad, ch), "RegionNotCoverableError",
                 "spatial iterator 'v_y' of block 'pad' would take [1, 9) under loop 'ax1', "
                 "which never reaches all of its domain [0, 10)")


def test_compute_at_error_block_or_loop_in_an_init():
    # blockize leaves the init of C as a loop nest in the init of C_o; it cannot move.
    func = WORKLOADS["batch_matmul"]()
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    sch.blockize(sch.get_loops(block)[2])
    sch.cache_read(block, 1, "shared")
    shared = sch.get_block("B_shared")
    (ax0, _, _) = sch.get_loops(shared)
    init = sch.get_block("C_init")
    (j_init,) = sch.get_loops(init)
    assert_fails(sch, lambda: sch.compute_at(init, ax0), "NotInSameScopeError",
                 "block 'C_init' is in the init of block 'C_o'")
    assert_fails(sch, lambda: sch.reverse_compute_at(shared, j_init),
                 "NotInSameScopeError", "loop 'j_init' is in the init of block 'C_o'")


def test_compute_at_error_predicate_beyond_the_domains():
    # ry (3) split by [None, 4, 3] leaves a predicate over three iterators; once the rfactor
    # block's loops are rebuilt from the iterators' domains it would no longer hold.
    func = WORKLOADS["depthwise_conv2d"]()
    sch = tir.Schedule(func)
    block = sch.get_block("dwconv")
    ry = sch.get_loops(block)[3]
    _, _, ry_2 = sch.split(ry, factors=[None, 4, 3])
    rf = sch.rfactor(ry_2, factor_axis=0)
    _, y, _, _ = sch.get_loops(sch.get_block("dwconv"))
    assert_fails(sch, lambda: sch.compute_at(rf, y), "BlockPredicateError",
                 "block 'dwconv_rf' has the predicate")


def test_compute_at_symbolic_tile_keeps_its_extent():
    # The tile of i_0 holds (n + 1) // 2 rows; its constant bound (from int32's range) is no
    # tile size and must not become the loop's extent.
    from schedule_helpers import symbolic_row_sum
    func = symbolic_row_sum()
    sch = tir.Schedule(func)
    block = sch.get_block("B")
    shared = sch.cache_read(block, 0, "shared")
    i, _ = sch.get_loops(block)
    i_0, _ = sch.split(i, factors=[2, None])
    sch.compute_at(shared, i_0)
    assert "for ax0, ax1 in T.grid((n + 1) // 2, 16):" in sch.mod["main"].script()
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_reverse_compute_at_error_strided_producer():
    # Under k, C writes rows i_0 * 2 + i_1 (every other row): relu would read the rows between
    # before they are computed.
    func = matmul_relu()
    sch = tir.Schedule(func)
    c, d = sch.get_block("C"), sch.get_block("D")
    i, j, k = sch.get_loops(c)
    i_0, i_1 = sch.split(i, factors=[8, 2])
    sch.reorder(i_1, k, j, i_0)
    assert_fails(sch, lambda: sch.reverse_compute_at(d, k), "RegionNotCoverableError",
                 "block 'C' writes dimension 0 of buffer 'C' at i_0 * 2 + i_1, which does not "
                 "cover a contiguous range")


def test_reverse_compute_at_over_rows_of_two_loops():
    # Under i_0, C writes rows i_0 * 4 + i_1 * 2 + i_2: i_1 and i_2 fuse into the 4 rows of
    # the tile, a contiguous range.
    func = matmul_relu()
    sch = tir.Schedule(func)
    c, d = sch.get_block("C"), sch.get_block("D")
    i, _, _ = sch.get_loops(c)
    i_0, _, _ = sch.split(i, factors=[None, 2, 2])
    sch.reverse_compute_at(d, i_0)
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_reverse_compute_at_under_the_tail_of_a_non_divisible_split():
    # C's rows i_0 * 5 + i_1 stop at 16: under i_1 the consumer follows the row C writes, and
    # its own bound check skips the rows past the end.
    func = matmul_relu()
    sch = tir.Schedule(func)
    c, d = sch.get_block("C"), sch.get_block("D")
    i, _, _ = sch.get_loops(c)
    _, i_1 = sch.split(i, factors=[None, 5])
    sch.reverse_compute_at(d, i_1)
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_reverse_compute_at_error_producer_that_may_not_run():
    # pad_o runs only where b_0 * 4 + b_1 * 4 + b_2 < 1, but what it writes does not depend on
    # those loops: conv would read pad in iterations that write nothing.
    func = conv2d()
    sch = tir.Schedule(func)
    pad_o = sch.blockize(sch.get_loops(sch.get_block("pad"))[2])
    b = sch.get_loops(pad_o)[0]
    _, _, b_2 = sch.split(b, factors=[3, None, 4])
    conv = sch.get_block("conv")
    assert_fails(sch, lambda: sch.reverse_compute_at(conv, b_2), "RegionNotCoverableError",
                 "block 'pad_o' is guarded by b_0 * 4 + b_1 * 4 + b_2 < 1, which may be false "
                 "for a whole iteration of loop 'b_2'")


def test_compute_at_a_packed_copy_under_its_panel_loop_copies_one_panel():
    # C[i, j] = sum_k A[i, k] * B[j, k], B packed as [j // 8, k, j % 8]: under the loop over the
    # panels j_0 the copy writes the one panel j_0 reads (the split dimension j // 8 bounds j to
    # [8 j_0, 8 j_0 + 8)), not all of B in every iteration.
    A = te.placeholder((4, 16), "float32", name="A")
    B = te.placeholder((32, 16), "float32", name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((4, 32), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    func = te.create_prim_func([A, B, C])
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    packed = sch.cache_read(block, 1, "global")
    sch.transform_layout(packed, ("write", 0), lambda j, k: [j // 8, k, j % 8])
    i, j, _ = sch.get_loops(block)
    j_0, _ = sch.split(j, factors=[None, 8])
    sch.reorder(j_0, i)
    sch.compute_at(packed, j_0)
    script = sch.mod["main"].script()
    assert "for ax0, ax1 in T.grid(8, 16):" in script, script
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)
    lowered = str(tir.lower(sch.mod))
    assert 'T.allocate((128,), "float32"' in lowered, lowered
