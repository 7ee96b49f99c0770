"""compute_inline and reverse_compute_inline: golden before/after IR, a numeric check against the
unscheduled function, a trace round trip, and the preconditions' errors (with the schedule left
unchanged). The errors that te-built functions cannot reach (a scope that is not a stage
pipeline, opaque accesses, a consumer predicate that restricts the domain) are tested on
hand-built functions in tests/cpp/schedule/compute_location_errors_test.cc."""
import pytest

import kiln
from kiln import te, tir

from schedule_helpers import (assert_same_results, assert_trace_roundtrip, conv2d,
                              elementwise_chain, matmul_relu, softmax)

CHAIN_HEADER = '''# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((24, 10), "float32"), D: T.Buffer((24, 10), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
'''


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
    assert message in str(info.value), str(info.value)
    kiln.ir.assert_structural_equal(sch.mod, before)
    assert len(sch.trace) == length


def stencil():
    """C[i] = B[i] + B[i + 1] + B[i + 2] with B = A * 2."""
    A = te.placeholder((18,), "float32", name="A")
    B = te.compute((18,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((16,), lambda i: B[i] + B[i + 1] + B[i + 2], name="C")
    return te.create_prim_func([A, C])


def shifted():
    """C[i] = B[i + 1] + 1 with B = A * 2, then D = C * 3."""
    A = te.placeholder((24,), "float32", name="A")
    B = te.compute((24,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((23,), lambda i: B[i + 1] + 1.0, name="C")
    D = te.compute((23,), lambda i: C[i] * 3.0, name="D")
    return te.create_prim_func([A, D])


# ---------------------------------------------------------------------------------------------
# compute_inline


def test_compute_inline_elementwise():
    func = elementwise_chain()
    sch = tir.Schedule(func)
    sch.compute_inline(sch.get_block("B"))
    check(sch, func, CHAIN_HEADER + '''    C = T.alloc_buffer((24, 10), "float32")
    for i, j in T.grid(24, 10):
        with T.block("C"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(A[v_i, v_j])
            T.writes(C[v_i, v_j])
            C[v_i, v_j] = A[v_i, v_j] * T.float32(2) + T.float32(1)
    for i_1, j_1 in T.grid(24, 10):
        with T.block("D"):
            v_i_1, v_j_1 = T.axis.remap("SS", [i_1, j_1])
            T.reads(C[v_i_1, v_j_1])
            T.writes(D[v_i_1, v_j_1])
            D[v_i_1, v_j_1] = T.sin(C[v_i_1, v_j_1]) + T.cos(C[v_i_1, v_j_1])
''')


def test_compute_inline_twice_substitutes_every_load():
    func = elementwise_chain()
    sch = tir.Schedule(func)
    sch.compute_inline(sch.get_block("B"))
    sch.compute_inline(sch.get_block("C"))
    check(sch, func, CHAIN_HEADER + '''    for i, j in T.grid(24, 10):
        with T.block("D"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(A[v_i, v_j])
            T.writes(D[v_i, v_j])
            D[v_i, v_j] = T.sin(A[v_i, v_j] * T.float32(2) + T.float32(1)) + T.cos(A[v_i, v_j] * T.float32(2) + T.float32(1))
''')


def test_compute_inline_conv_padding():
    func = conv2d()
    sch = tir.Schedule(func)
    sch.compute_inline(sch.get_block("pad"))
    check(sch, func, '''# from kiln.script import tir as T
@T.prim_func
def main(X: T.Buffer((1, 3, 8, 8), "float32"), W: T.Buffer((4, 3, 3, 3), "float32"), conv: T.Buffer((1, 4, 8, 8), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    for b, o, y, x, rc, ry, rx in T.grid(1, 4, 8, 8, 3, 3, 3):
        with T.block("conv"):
            v_b, v_o, v_y, v_x, v_rc, v_ry, v_rx = T.axis.remap("SSSSRRR", [b, o, y, x, rc, ry, rx])
            T.reads(X[v_b, v_rc, v_y + v_ry - 1, v_x + v_rx - 1], W[v_o, v_rc, v_ry, v_rx])
            T.writes(conv[v_b, v_o, v_y, v_x])
            with T.init():
                conv[v_b, v_o, v_y, v_x] = T.float32(0)
            conv[v_b, v_o, v_y, v_x] = conv[v_b, v_o, v_y, v_x] + T.if_then_else(v_y + v_ry >= 1 and v_y + v_ry < 9 and v_x + v_rx >= 1 and v_x + v_rx < 9, X[v_b, v_rc, v_y + v_ry - 1, v_x + v_rx - 1], T.float32(0)) * W[v_o, v_rc, v_ry, v_rx]
''')


def test_compute_inline_stencil_reads_the_covering_region():
    func = stencil()
    sch = tir.Schedule(func)
    sch.compute_inline(sch.get_block("B"))
    text = sch.mod["main"].script()
    assert "T.reads(A[v_i:v_i + 3])" in text, text
    assert "C[v_i] = A[v_i] * T.float32(2) + A[v_i + 1] * T.float32(2) + A[v_i + 2] * T.float32(2)" \
        in text, text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_compute_inline_after_compute_at():
    func = conv2d()
    sch = tir.Schedule(func)
    _, _, y, _, _, _, _ = sch.get_loops(sch.get_block("conv"))
    pad = sch.get_block("pad")
    pad_loops = sch.get_loops(pad)
    sch.compute_at(pad, y)
    moved = sch.get_loops(pad)
    sch.compute_inline(pad)
    for loop in pad_loops + moved[3:]:
        with pytest.raises(tir.schedule.StaleHandleError):
            sch.get(loop)
    with pytest.raises(tir.schedule.StaleHandleError) as info:
        sch.get(pad)
    assert "removed by compute_inline" in str(info.value)
    assert "pad" not in sch.mod["main"].script()
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_compute_inline_errors():
    sch = tir.Schedule(matmul_relu())
    mm, relu = sch.get_block("C"), sch.get_block("D")
    assert_fails(sch, lambda: sch.compute_inline(relu), "OutputBlockError",
                 "compute_inline: block 'D' writes buffer 'D', which its scope does not allocate "
                 "(an output); an output cannot be inlined")
    assert_fails(sch, lambda: sch.compute_inline(mm), "NotCompleteBlockError",
                 "block 'C' is not a complete block: its iterator 'v_k' is a reduce iterator, "
                 "not a spatial one")
    # After reverse_compute_inline the producer stores C[v_i - 1]: not indexed by its iterators.
    sch = tir.Schedule(shifted())
    sch.reverse_compute_inline(sch.get_block("C"))
    producer = sch.get_block("B")
    assert_fails(sch, lambda: sch.compute_inline(producer), "BodyAnalysisError",
                 "the body of block 'B' must be a single store `B[v0, v1, ...] = f(...)` indexed "
                 "by its iterators (each once, all of them), with no init")


# ---------------------------------------------------------------------------------------------
# reverse_compute_inline


def test_reverse_compute_inline_elementwise():
    func = elementwise_chain()
    sch = tir.Schedule(func)
    sch.reverse_compute_inline(sch.get_block("D"))
    check(sch, func, CHAIN_HEADER + '''    B = T.alloc_buffer((24, 10), "float32")
    for i, j in T.grid(24, 10):
        with T.block("B"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(A[v_i, v_j])
            T.writes(B[v_i, v_j])
            B[v_i, v_j] = A[v_i, v_j] * T.float32(2)
    for i_1, j_1 in T.grid(24, 10):
        with T.block("C"):
            v_i_1, v_j_1 = T.axis.remap("SS", [i_1, j_1])
            T.reads(B[v_i_1, v_j_1])
            T.writes(D[v_i_1, v_j_1])
            D[v_i_1, v_j_1] = T.sin(B[v_i_1, v_j_1] + T.float32(1)) + T.cos(B[v_i_1, v_j_1] + T.float32(1))
''')


def test_reverse_compute_inline_transposed_consumer():
    A = te.placeholder((6, 4), "float32", name="A")
    B = te.compute((6, 4), lambda i, j: A[i, j] + 1.0, name="B")
    T_ = te.compute((4, 6), lambda i, j: B[j, i] * 2.0, name="T")
    func = te.create_prim_func([A, T_])
    sch = tir.Schedule(func)
    sch.reverse_compute_inline(sch.get_block("T"))
    check(sch, func, '''# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((6, 4), "float32"), T_1: T.Buffer((4, 6), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    for i, j in T.grid(6, 4):
        with T.block("B"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(A[v_i, v_j])
            T.writes(T_1[v_j, v_i])
            T_1[v_j, v_i] = (A[v_i, v_j] + T.float32(1)) * T.float32(2)
''')


def test_reverse_compute_inline_offset_adds_a_predicate():
    func = shifted()
    sch = tir.Schedule(func)
    sch.reverse_compute_inline(sch.get_block("C"))
    text = sch.mod["main"].script()
    assert '''    for i in range(24):
        with T.block("B"):
            v_i = T.axis.remap("S", [i])
            T.where(1 <= i)
            T.reads(A[v_i])
            T.writes(C[v_i - 1])
            C[v_i - 1] = A[v_i] * T.float32(2) + T.float32(1)''' in text, text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_reverse_compute_inline_errors():
    sch = tir.Schedule(softmax())
    row_sum, out = sch.get_block("row_sum"), sch.get_block("Y")
    assert_fails(sch, lambda: sch.reverse_compute_inline(row_sum), "NotCompleteBlockError",
                 "block 'row_sum' is not a complete block: its iterator 'v_k2' is a reduce "
                 "iterator")
    assert_fails(sch, lambda: sch.reverse_compute_inline(out), "NonSingleProducerError",
                 "block 'Y' must have exactly one producer in its scope, found 2 ('exp', "
                 "'row_sum')")
    sch = tir.Schedule(matmul_relu())
    relu = sch.get_block("D")
    assert_fails(sch, lambda: sch.reverse_compute_inline(relu), "NonSingleProducerError",
                 "the producer 'C' of block 'D' is not a complete block")
    sch = tir.Schedule(stencil())
    c = sch.get_block("C")
    assert_fails(sch, lambda: sch.reverse_compute_inline(c), "BodyAnalysisError",
                 "block 'C' must read one element of buffer 'B' (every load at the same indices)")


def test_reverse_compute_inline_producer_with_two_consumers():
    A = te.placeholder((8,), "float32", name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((8,), lambda i: B[i] + 1.0, name="C")
    D = te.compute((8,), lambda i: B[i] * 3.0, name="D")
    sch = tir.Schedule(te.create_prim_func([A, C, D]))
    c = sch.get_block("C")
    assert_fails(sch, lambda: sch.reverse_compute_inline(c), "NonSingleProducerError",
                 "the producer 'B' of block 'C' has 2 consumers; block 'C' must be its only "
                 "consumer")


def test_reverse_compute_inline_output_producer():
    A = te.placeholder((8,), "float32", name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((8,), lambda i: B[i] + 1.0, name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    c = sch.get_block("C")
    assert_fails(sch, lambda: sch.reverse_compute_inline(c), "OutputBlockError",
                 "the producer 'B' writes buffer 'B', which its scope does not allocate (an "
                 "output); it cannot be removed")


def test_reverse_compute_inline_broadcast_is_not_bijective():
    A = te.placeholder((4,), "float32", name="A")
    R = te.compute((4,), lambda i: A[i] + 1.0, name="R")
    E = te.compute((4, 5), lambda i, j: R[i] * 2.0, name="E")
    sch = tir.Schedule(te.create_prim_func([A, E]))
    e = sch.get_block("E")
    assert_fails(sch, lambda: sch.reverse_compute_inline(e), "NotBijectiveAffineIndexError",
                 "the indices of the load of 'R' in block 'E' are not a bijective affine map of "
                 "its iterators")


def test_reverse_compute_inline_consumer_with_unit_iterator():
    # The batch iterator of the padding's cache copy has extent 1: the inverse of the copy's
    # indices leaves it out, and it takes its domain's minimum.
    func = conv2d()
    sch = tir.Schedule(func)
    sch.cache_write(sch.get_block("pad"), 0, "global")
    sch.reverse_compute_inline(sch.get_block("pad_global"))
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_reverse_compute_inline_consumer_of_one_column_of_a_wider_producer():
    # The consumer keeps column 0 of B's 4 (topi.nn.dense_pack with units=1 keeps the first
    # column of a product padded to whole panels): its column iterator has extent 1, which the
    # inverse fixes to 0, so the producer's iterations of the other columns must skip the store
    # (they would overwrite C[i, 0] with B's later columns).
    A = te.placeholder((3, 4), "float32", name="A")
    B = te.compute((3, 4), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((3, 1), lambda i, j: B[i, j] + 1.0, name="C")
    func = te.create_prim_func([A, C])
    sch = tir.Schedule(func)
    sch.reverse_compute_inline(sch.get_block("C"))
    text = sch.mod["main"].script()
    assert "T.where(j == 0)" in text, text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_reverse_compute_inline_error_consumer_reads_past_the_producer():
    # The padding reads X at y - 1 for y in [0, 10) (guarded): inlined into the cache copy of X,
    # which runs over [0, 8) only, the border of the padding would never be written.
    sch = tir.Schedule(conv2d())
    sch.cache_read(sch.get_block("pad"), 0, "global")
    pad = sch.get_block("pad")
    assert_fails(sch, lambda: sch.reverse_compute_inline(pad),
                 "RegionNotCoverableError",
                 "reverse_compute_inline: block 'pad' reads -1 to 9 (exclusive) of dimension 2 of "
                 "buffer 'X_global', but its producer 'X_global' computes only 0 to 8 of it")
