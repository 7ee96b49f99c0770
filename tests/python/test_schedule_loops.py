"""Loop primitives: split, fuse, reorder, add_unit_loop, parallel, vectorize, unroll, bind, annotate. Each has a
golden before/after IR, a numeric check against the unscheduled function, a trace round trip
and its error cases."""
import pytest

from kiln import te, tir

from schedule_helpers import (assert_same_results, assert_trace_roundtrip, matmul,
                              symbolic_row_sum)

HEADER = '''# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 12), "float32"), C: T.Buffer((16, 12), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
'''


def update(indent):
    """The reads, writes, init and update lines of the matmul block at `indent` spaces."""
    lines = [
        "T.reads(A[v_i, v_k], B[v_k, v_j])",
        "T.writes(C[v_i, v_j])",
        "with T.init():",
        "    C[v_i, v_j] = T.float32(0)",
        "C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]",
    ]
    return "\n".join(" " * indent + line for line in lines)


def schedule_matmul():
    func = matmul(16, 12, 8)
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    return func, sch, block, sch.get_loops(block)


def check(sch, func, expected):
    assert sch.mod["main"].script() == expected
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_split_non_divisible_adds_a_predicate():
    func, sch, _, (i, _, _) = schedule_matmul()
    outer, inner = sch.split(i, factors=[None, 5])
    assert (sch.get(outer).extent.value, sch.get(inner).extent.value) == (4, 5)
    check(sch, func, HEADER + '''    for i_0, i_1, j, k in T.grid(4, 5, 12, 8):
        with T.block("C"):
            v_i = T.axis.spatial(16, i_0 * 5 + i_1)
            v_j, v_k = T.axis.remap("SR", [j, k])
            T.where(i_0 * 5 + i_1 < 16)
''' + update(12))


def test_split_divisible_has_no_predicate():
    func, sch, _, (_, j, _) = schedule_matmul()
    sch.split(j, factors=[2, 3, 2])
    text = sch.mod["main"].script()
    assert "T.where" not in text
    assert "v_j = T.axis.spatial(12, j_0 * 6 + j_1 * 2 + j_2)" in text, text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_split_symbolic_extent():
    func = symbolic_row_sum()
    sch = tir.Schedule(func)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[None, 4])
    text = sch.mod["main"].script()
    assert "T.where(i_0 * 4 + i_1 < n)" in text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


@pytest.mark.parametrize("factors, message", [
    ([None, None], "have more than one None"),
    ([0, None], "must be positive, found 0"),
    ([2, 3], "multiply to 6, less than the extent 16 of loop 'i'"),
])
def test_split_errors(factors, message):
    _, sch, _, (i, _, _) = schedule_matmul()
    with pytest.raises(tir.ScheduleError) as info:
        sch.split(i, factors=factors)
    assert type(info.value).__name__ == "InvalidSplitFactorsError"
    assert message in str(info.value)


def test_fuse():
    func, sch, _, (i, j, _) = schedule_matmul()
    sch.fuse(i, j)
    check(sch, func, HEADER + '''    for i_j_fused, k in T.grid(192, 8):
        with T.block("C"):
            v_i = T.axis.spatial(16, i_j_fused // 12)
            v_j = T.axis.spatial(12, i_j_fused % 12)
            v_k = T.axis.remap("R", [k])
''' + update(12))


def test_fuse_requires_directly_nested_loops():
    _, sch, _, (i, _, k) = schedule_matmul()
    with pytest.raises(tir.ScheduleError) as info:
        sch.fuse(i, k)
    assert type(info.value).__name__ == "LoopsNotNestedError"
    assert "loop 'k' is not the only statement in the body of loop 'i'" in str(info.value)
    assert "^^^" in str(info.value)  # the IR is printed with the loop marked


def test_reorder():
    func, sch, _, (i, j, k) = schedule_matmul()
    sch.reorder(k, i)
    check(sch, func, HEADER + '''    for k, j, i in T.grid(8, 12, 16):
        with T.block("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
''' + update(12))


def test_reorder_errors():
    _, sch, _, (i, j, _) = schedule_matmul()
    with pytest.raises(tir.ScheduleError) as info:
        sch.reorder(i, i)
    assert "loop 'i' is given more than once" in str(info.value)
    func = matmul(16, 12, 8)
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    # Splitting k does not break the chain; a second nest elsewhere would.
    sch.split(k, factors=[2, 4])
    sch.reorder(sch.get_loops(block)[3], i)
    assert_same_results(func, sch.mod)


def test_parallel_vectorize_unroll():
    func, sch, _, (i, j, k) = schedule_matmul()
    sch.parallel(i)
    sch.vectorize(j)
    sch.unroll(k)
    check(sch, func, HEADER + '''    for i in T.parallel(16):
        for j in T.vectorized(12):
            for k in T.unroll(8):
                with T.block("C"):
                    v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
''' + update(20))


def test_parallel_of_a_reduction_loop_is_refused():
    _, sch, _, (_, _, k) = schedule_matmul()
    with pytest.raises(tir.ScheduleError) as info:
        sch.parallel(k)
    assert type(info.value).__name__ == "WrongBlockIterTypeError"
    assert ("loop 'k' binds iterator 'v_k' of block 'C', which is a reduce iterator"
            in str(info.value))


def test_bind():
    func, sch, _, (i, j, k) = schedule_matmul()
    sch.bind(i, "blockIdx.x")
    sch.bind(k, "threadIdx.x")  # a cross-thread reduction is allowed
    text = sch.mod["main"].script()
    assert 'for i in T.thread_binding(16, thread="blockIdx.x"):' in text
    assert 'for k in T.thread_binding(8, thread="threadIdx.x"):' in text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_bind_errors():
    _, sch, _, (i, _, k) = schedule_matmul()
    with pytest.raises(tir.ScheduleError) as info:
        sch.bind(i, "warpIdx.x")
    assert "'warpIdx.x' is not a thread axis" in str(info.value)
    with pytest.raises(tir.ScheduleError) as info:
        sch.bind(k, "blockIdx.y")
    assert "only threadIdx axes may bind a reduction" in str(info.value)


def test_annotate_and_unannotate():
    func, sch, block, (i, _, _) = schedule_matmul()
    sch.annotate(i, "pragma_auto_unroll_max_step", 16)
    sch.annotate(block, "meta", "x")
    assert sch.get(i).annotations == {"pragma_auto_unroll_max_step": 16}
    assert sch.get(block).annotations == {"meta": "x"}
    sch.unannotate(block, "meta")
    assert sch.get(block).annotations == {}
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)
    with pytest.raises(tir.ScheduleError) as info:
        sch.unannotate(block, "meta")
    assert "there is no annotation 'meta' to remove" in str(info.value)


def test_reorder_refuses_a_loop_binding_spatial_and_reduce_iterators():
    # After fusing i with k, the fused loop's parts bind both v_i and v_k; moving them could
    # run an update of a row before that row's init.
    _, sch, _, (i, j, k) = schedule_matmul()
    sch.reorder(i, k, j)
    fused = sch.fuse(i, k)
    outer, inner = sch.split(fused, factors=[4, None])
    before = sch.mod
    with pytest.raises(tir.ScheduleError) as info:
        sch.reorder(inner, outer)
    assert type(info.value).__name__ == "LoopIterTypeError"
    assert ("binds both the spatial iterator 'v_i' and the reduce iterator 'v_k' (block 'C')"
            in str(info.value))
    assert sch.mod.same_as(before)


def full_sum(n=10):
    A = te.placeholder((n,), "float32", name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((), lambda: te.sum(A[k], axis=k), name="B")
    return te.create_prim_func([A, B])


def test_add_unit_loop_above_a_loop():
    func = full_sum()
    sch = tir.Schedule(func)
    (k,) = sch.get_loops("B")
    u = sch.add_unit_loop(k)
    assert sch.get(u).extent.value == 1
    assert [sch.get(loop).loop_var.name for loop in sch.get_loops("B")] == ["u", "k"]
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_add_unit_loop_above_a_block():
    func, sch, block, (i, j, k) = schedule_matmul()
    sch.add_unit_loop(block)
    check(sch, func, HEADER + '''    for i, j, k, u in T.grid(16, 12, 8, 1):
        with T.block("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
''' + update(12))


def test_add_unit_loop_gives_a_full_sum_a_gpu_block():
    # A reduction to one value has no loop that may be bound to blockIdx (its loop is a
    # reduction's); the unit loop is one, and the reduction can run across threadIdx.x.
    func = full_sum(100)
    sch = tir.Schedule(func)
    (k,) = sch.get_loops("B")
    _, inner = sch.split(k, factors=[None, 32])
    u = sch.add_unit_loop(sch.get_loops("B")[0])
    sch.bind(u, "blockIdx.x")
    sch.bind(inner, "threadIdx.x")
    assert "B_red" in str(tir.lower(sch.mod, target="opencl"))  # the threads' partial results
    assert_same_results(func, sch.mod)


def test_add_unit_loop_refuses_the_root_block():
    sch = tir.Schedule(full_sum())
    before = sch.mod
    with pytest.raises(tir.ScheduleError) as info:
        sch.add_unit_loop(sch.get_block("root"))
    assert type(info.value).__name__ == "RootBlockError"
    assert "block 'root' is the root block" in str(info.value)
    assert sch.mod.same_as(before)
