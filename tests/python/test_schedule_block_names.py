"""Schedule primitives take a block's name wherever they take a block, as TVM allows: the name
is looked up with get_block (recorded in the trace) in the schedule's only function or in
"main". Per family: the result equals the one given a BlockRV, computes the same numbers on
the reference interpreter, and replays from its trace; an unknown name raises get_block's
BlockNotFoundError; a primitive that fails after the look-up leaves the schedule as it was."""
import pytest

import kiln
from kiln import te, tir
from kiln.tir import schedule as tir_schedule

from schedule_helpers import (assert_same_results, assert_trace_roundtrip, elementwise_chain,
                              matmul, matmul_relu)


def check_same_as_with_handles(func, by_name, by_handle):
    """Applies `by_name(sch)` and `by_handle(sch)` to two fresh schedules of func: the modules
    agree, compute what func computes, and the named schedule's trace replays."""
    named, handled = tir.Schedule(func), tir.Schedule(func)
    by_name(named)
    by_handle(handled)
    kiln.ir.assert_structural_equal(named.mod, handled.mod)
    assert_same_results(func, named.mod)
    assert_trace_roundtrip(named, func)
    return named


def assert_unchanged_after(sch, error, match, call):
    mod, length = sch.mod, len(sch.trace)
    with pytest.raises(error, match=match):
        call()
    kiln.ir.assert_structural_equal(sch.mod, mod)
    assert len(sch.trace) == length


# --- Getters ---------------------------------------------------------------------------------

def test_getters_take_a_name():
    sch = tir.Schedule(elementwise_chain())
    block = sch.get_block("C")
    assert [sch.get(l).loop_var.name for l in sch.get_loops("C")] == \
        [sch.get(l).loop_var.name for l in sch.get_loops(block)]
    assert [sch.get(b).name_hint for b in sch.get_producers("C")] == ["B"]
    assert [sch.get(b).name_hint for b in sch.get_consumers("C")] == ["D"]
    assert [sch.get(b).name_hint for b in sch.get_child_blocks("root")] == ["B", "C", "D"]
    assert "sch.get_loops(block=b" in sch.trace.as_python()
    assert 'sch.get_block(func_name="main", name="C")' in sch.trace.as_python()


def test_unknown_name_raises_get_blocks_error():
    sch = tir.Schedule(elementwise_chain())
    with pytest.raises(tir_schedule.BlockNotFoundError) as by_get_block:
        sch.get_block("X")
    for call in (lambda: sch.get_loops("X"), lambda: sch.compute_inline("X"),
                 lambda: sch.cache_write("X", 0, "local"), lambda: sch.annotate("X", "k", 1)):
        assert_unchanged_after(sch, tir_schedule.BlockNotFoundError, "no block named 'X'", call)
    with pytest.raises(tir_schedule.BlockNotFoundError) as by_primitive:
        sch.get_loops("X")
    assert str(by_primitive.value) == str(by_get_block.value)


def test_name_in_the_only_function_of_a_module():
    func = elementwise_chain()
    sch = tir.Schedule(kiln.IRModule({"chain": func}))
    sch.compute_inline("B")
    assert 'sch.get_block(func_name="chain", name="B")' in sch.trace.as_python()
    assert_same_results(func, sch.mod["chain"])
    assert len(sch.get_loops(sch.get_block("C"))) == 2


def test_module_without_main_needs_a_function_name():
    func = elementwise_chain()
    sch = tir.Schedule(kiln.IRModule({"f": func, "g": func}))
    with pytest.raises(kiln.KilnValueError, match="the module has no function named 'main'"):
        sch.get_loops("B")
    assert len(sch.get_loops(sch.get_block("B", func_name="g"))) == 2


# --- Loops: annotations ----------------------------------------------------------------------

def test_annotate_and_unannotate_a_block_by_name():
    sch = check_same_as_with_handles(
        elementwise_chain(),
        lambda s: s.annotate("C", "note", 3),
        lambda s: s.annotate(s.get_block("C"), "note", 3))
    assert sch.get(sch.get_block("C")).annotations == {"note": 3}
    sch.unannotate("C", "note")
    assert sch.get(sch.get_block("C")).annotations == {}


# --- Buffers: cache stages, scope, alignment, layout --------------------------------------

def test_cache_read_and_write_by_name():
    check_same_as_with_handles(
        matmul(),
        lambda s: s.cache_write("C", 0, "local"),
        lambda s: s.cache_write(s.get_block("C"), 0, "local"))
    check_same_as_with_handles(
        matmul(),
        lambda s: s.cache_read("C", 1, "local"),
        lambda s: s.cache_read(s.get_block("C"), 1, "local"))


def test_cache_read_consumer_blocks_by_name():
    check_same_as_with_handles(
        elementwise_chain(),
        lambda s: s.cache_read("D", 0, "local", consumer_blocks=["D"]),
        lambda s: s.cache_read(s.get_block("D"), 0, "local",
                               consumer_blocks=[s.get_block("D")]))


def test_set_scope_storage_align_transform_layout_by_name():
    check_same_as_with_handles(
        elementwise_chain(),
        lambda s: (s.set_scope("B", 0, "local"), s.storage_align("C", 0, 0, 16, 1)),
        lambda s: (s.set_scope(s.get_block("B"), 0, "local"),
                   s.storage_align(s.get_block("C"), 0, 0, 16, 1)))
    check_same_as_with_handles(
        elementwise_chain(),
        lambda s: s.transform_layout("B", ("write", 0), lambda i, j: [j, i]),
        lambda s: s.transform_layout(s.get_block("B"), ("write", 0), lambda i, j: [j, i]))


# --- Compute location --------------------------------------------------------------------------

def test_compute_at_and_reverse_compute_at_by_name():
    def by_name(s):
        i, _ = s.get_loops("C")
        s.compute_at("B", i)
        s.reverse_compute_at("D", i)

    def by_handle(s):
        i, _ = s.get_loops(s.get_block("C"))
        s.compute_at(s.get_block("B"), i)
        s.reverse_compute_at(s.get_block("D"), i)

    check_same_as_with_handles(elementwise_chain(), by_name, by_handle)


def test_inlining_by_name():
    check_same_as_with_handles(
        elementwise_chain(),
        lambda s: (s.compute_inline("B"), s.reverse_compute_inline("D")),
        lambda s: (s.compute_inline(s.get_block("B")), s.reverse_compute_inline(s.get_block("D"))))


def test_sample_compute_location_by_name():
    check_same_as_with_handles(
        elementwise_chain(),
        lambda s: s.compute_at("B", s.sample_compute_location("B", decision=2)),
        lambda s: s.compute_at(s.get_block("B"),
                               s.sample_compute_location(s.get_block("B"), decision=2)))


def test_failed_primitive_after_a_name_leaves_the_trace_unchanged():
    sch = tir.Schedule(matmul_relu())
    # Each call looks "C" up (a get_block in the trace) before the primitive fails.
    assert_unchanged_after(sch, tir_schedule.NotCompleteBlockError, "compute_inline",
                           lambda: sch.compute_inline("C"))
    assert_unchanged_after(sch, tir_schedule.BufferIndexOutOfRangeError, "cache_write",
                           lambda: sch.cache_write("C", 5, "local"))
    assert_unchanged_after(sch, kiln.KilnTypeError, "storage_scope",
                           lambda: sch.cache_write("C", 0, 5))
    assert len(sch.trace) == 0


# --- Reductions and tensorize ------------------------------------------------------------------

def test_decompose_reduction_by_name():
    check_same_as_with_handles(
        matmul(),
        lambda s: s.decompose_reduction("C", s.get_loops("C")[2]),
        lambda s: s.decompose_reduction(s.get_block("C"), s.get_loops(s.get_block("C"))[2]))


def dot_4x4_desc():
    """C[i] += sum_k A[k] * B[k, i] over float32, 4 lanes and depth 4 (matmul's j and k)."""
    A = te.placeholder((4,), "float32", name="A")
    B = te.placeholder((4, 4), "float32", name="B")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((4,), lambda i: te.sum(A[k] * B[k, i], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def test_tensorize_a_block_by_name():
    intrin = "test.block_names.dot_4x4"
    tir.TensorIntrin.register(intrin, dot_4x4_desc(), dot_4x4_desc(), override=True)

    def tile_and_blockize(s):
        _, j, k = s.get_loops("C")
        j0, j1 = s.split(j, factors=[None, 4])
        k0, k1 = s.split(k, factors=[None, 4])
        s.reorder(j0, k0, j1, k1)
        s.blockize(j1)

    check_same_as_with_handles(
        matmul(16, 12, 8),
        lambda s: (tile_and_blockize(s), s.tensorize("C_o", intrin)),
        lambda s: (tile_and_blockize(s), s.tensorize(s.get_block("C_o"), intrin)))
