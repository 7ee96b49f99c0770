"""The first lowering passes one at a time through kiln.tir.transform: lower_init_block,
plan_buffer_allocation, compact_buffer_allocation, lower_opaque_block, flatten_buffers, simplify
and storage_rewrite. For each: golden IR text, results kept on the reference interpreter for
te operators, and the very same function returned when the pass has nothing to do."""
import pytest

from kiln import KilnValueError, te, tir
from kiln.tir import transform

from lower_helpers import OPERATORS, assert_same_results, walk


def prepare(func, passes):
    for name in passes:
        func = getattr(transform, name)(func)
    return func


# The passes before each pass in the pipeline order.
BEFORE = {
    "lower_init_block": [],
    "plan_buffer_allocation": ["lower_init_block"],
    "compact_buffer_allocation": ["lower_init_block", "plan_buffer_allocation"],
    "lower_opaque_block": ["lower_init_block", "plan_buffer_allocation",
                           "compact_buffer_allocation"],
    "flatten_buffers": ["lower_init_block", "plan_buffer_allocation", "compact_buffer_allocation",
                        "lower_opaque_block"],
    "simplify": ["lower_init_block", "plan_buffer_allocation", "compact_buffer_allocation",
                 "lower_opaque_block", "flatten_buffers"],
    "storage_rewrite": ["lower_init_block", "plan_buffer_allocation", "compact_buffer_allocation",
                        "lower_opaque_block", "flatten_buffers", "simplify"],
}


@pytest.mark.parametrize("pass_name", list(BEFORE))
@pytest.mark.parametrize("operator", list(OPERATORS))
def test_pass_keeps_results(pass_name, operator):
    func, shapes = OPERATORS[operator]()
    before = prepare(func, BEFORE[pass_name])
    after = getattr(transform, pass_name)(before)
    assert_same_results(before, after, shapes)
    assert_same_results(func, after, shapes)


@pytest.mark.parametrize("pass_name", list(BEFORE))
def test_pass_is_idempotent(pass_name):
    """Run twice, a pass has nothing left to do the second time: the same function comes back."""
    func, _ = OPERATORS["softmax"]()
    once = getattr(transform, pass_name)(prepare(func, BEFORE[pass_name]))
    assert getattr(transform, pass_name)(once).same_as(once)


def elementwise_chain():
    A = te.placeholder((4, 8), "float32", name="A")
    T = te.compute((4, 8), lambda i, j: A[i, j] * 2.0, name="T")
    B = te.compute((4, 8), lambda i, j: T[i, j] + 1.0, name="B")
    return te.create_prim_func([A, B])


def test_lower_init_block_golden():
    func, _ = OPERATORS["matmul"](m=2, n=3, k=4)
    assert transform.lower_init_block(func).script() == '''\
# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((2, 4), "float32"), B: T.Buffer((4, 3), "float32"), C: T.Buffer((2, 3), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    for i, j, k in T.grid(2, 3, 4):
        with T.block("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            T.reads(A[v_i, v_k], B[v_k, v_j])
            T.writes(C[v_i, v_j])
            if v_k == 0:
                C[v_i, v_j] = T.float32(0)
            C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]'''


def test_lower_opaque_block_and_flatten_golden():
    blockless = transform.lower_opaque_block(elementwise_chain())
    assert blockless.script() == '''\
# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    with T.allocate((4, 8), "float32") as T_1:
        for i, j in T.grid(4, 8):
            T_1[i, j] = A[i, j] * T.float32(2)
        for i_1, j_1 in T.grid(4, 8):
            B[i_1, j_1] = T_1[i_1, j_1] + T.float32(1)'''
    flat = transform.flatten_buffers(blockless)
    assert flat.script() == '''\
# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    with T.allocate((32,), "float32") as T_1:
        for i, j in T.grid(4, 8):
            T_1[i * 8 + j] = A_1[i * 8 + j] * T.float32(2)
        for i_1, j_1 in T.grid(4, 8):
            B_1[i_1 * 8 + j_1] = T_1[i_1 * 8 + j_1] + T.float32(1)'''
    # The parameters keep their two-dimensional buffers; the body uses flat ones.
    for node in walk(flat.body):
        if isinstance(node, (tir.BufferLoad, tir.BufferStore)):
            assert len(node.indices) == 1 and node.buffer.ndim == 1


def test_passes_with_nothing_to_do_return_the_same_function():
    func, _ = OPERATORS["matmul"]()
    # No intermediate buffer: nothing to plan, compact or rewrite.
    assert transform.plan_buffer_allocation(func).same_as(func)
    assert transform.compact_buffer_allocation(func).same_as(func)
    chain = elementwise_chain()
    # No reduction: nothing to initialize.
    assert transform.lower_init_block(chain).same_as(chain)
    flat = transform.flatten_buffers(transform.lower_opaque_block(chain))
    assert transform.lower_opaque_block(flat).same_as(flat)
    assert transform.flatten_buffers(flat).same_as(flat)


def test_compact_keeps_a_symbolic_buffer():
    func, _ = OPERATORS["symbolic_elementwise"]()
    assert transform.compact_buffer_allocation(func).same_as(func)


def test_pass_order_errors_name_the_missing_pass():
    func, _ = OPERATORS["matmul"]()
    with pytest.raises(KilnValueError, match="run lower_init_block first"):
        transform.lower_opaque_block(func)
    with pytest.raises(KilnValueError, match="run lower_opaque_block first"):
        transform.flatten_buffers(func)


def test_verify_ir_accepts_every_stage():
    func, _ = OPERATORS["conv2d_padded"]()
    for name in BEFORE:
        func = getattr(transform, name)(func)
        transform.verify_ir(func, after_pass=name)


@pytest.mark.parametrize("pass_name", list(BEFORE))
def test_pass_keeps_results_of_a_tiled_matmul(pass_name):
    func, shapes = OPERATORS["matmul"](m=8, n=6, k=4)
    sch = tir.Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 3])  # 8 is not a multiple of 3: a predicate
    j0, j1 = sch.split(j, factors=[2, 3])
    sch.reorder(i0, j0, k, i1, j1)
    before = prepare(sch.mod["main"], BEFORE[pass_name])
    after = getattr(transform, pass_name)(before)
    assert_same_results(func, after, shapes)


def test_compute_at_intermediate_is_compacted_to_one_tile():
    sch = tir.Schedule(elementwise_chain())
    i, j = sch.get_loops(sch.get_block("B"))
    i0, _ = sch.split(i, factors=[None, 2])
    sch.compute_at(sch.get_block("T"), i0)
    scheduled = sch.mod["main"]
    compacted = prepare(scheduled, BEFORE["lower_opaque_block"])
    assert "T.alloc_buffer((2, 8)" in compacted.script()
    assert_same_results(scheduled, compacted, [(4, 8), (4, 8)])
