"""kiln.tir.lower on scheduled functions: what the schedule primitives produce (tiles from
compute_at, cache stages, rfactor, decompose_reduction, storage_align, blockize, GPU thread
binding, parallel/vectorize/unroll) lowers to a program that computes the same results on the
reference interpreter, with intermediate buffers shrunk to what one tile uses."""
import re

from kiln import te, tir

from lower_helpers import OPERATORS, assert_same_results


def allocations(func):
    """(scope, extent) of every Allocate of a lowered function, in printing order."""
    found = re.findall(r'T\.allocate\(\((\d+),\), "float32"(?:, scope="(\w+)")?\)', func.script())
    return [(scope or "global", int(extent)) for extent, scope in found]


def lower_and_check(func, shapes):
    lowered = tir.lower(func, verify=True)
    assert_same_results(func, lowered, shapes)
    return lowered


def tiled_matmul(tile=4):
    func, shapes = OPERATORS["matmul"](m=16, n=16, k=8)
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, factors=[None, tile])
    j0, j1 = sch.split(j, factors=[None, tile])
    sch.reorder(i0, j0, k, i1, j1)
    return sch, block, (i0, j0, k), shapes


def test_compute_at_tile_of_an_elementwise_producer():
    A = te.placeholder((64, 64), "float32", name="A")
    T = te.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="T")
    B = te.compute((64, 64), lambda i, j: T[i, j] + 1.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, j = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, factors=[None, 8])
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i0, j0, i1, j1)
    sch.compute_at(sch.get_block("T"), j0)
    lowered = lower_and_check(sch.mod["main"], [(64, 64), (64, 64)])
    # One 8x8 tile instead of 64x64, allocated once outside the tile loops.
    assert allocations(lowered) == [("global", 64)]


def test_cache_write_local_accumulator_is_one_tile():
    sch, block, (_, j0, _), shapes = tiled_matmul()
    sch.reverse_compute_at(sch.cache_write(block, 0, "local"), j0)
    lowered = lower_and_check(sch.mod["main"], shapes)
    assert allocations(lowered) == [("local", 16)]


def test_cache_read_into_the_reduction_loop_is_one_column():
    sch, block, (_, _, k), shapes = tiled_matmul()
    sch.compute_at(sch.cache_read(block, 0, "shared"), k)
    lowered = lower_and_check(sch.mod["main"], shapes)
    # The copy only feeds the reduction, which accumulates into C: A_shared lives per k.
    assert allocations(lowered) == [("shared", 4)]


def test_storage_align_keeps_its_strides():
    func, shapes = OPERATORS["matmul"](m=16, n=16, k=8)
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.reorder(i0, j, k, i1)
    copy = sch.cache_read(block, 0, "shared")
    sch.compute_at(copy, i0)
    sch.storage_align(copy, 0, 0, 8, 1)
    lowered = lower_and_check(sch.mod["main"], shapes)
    # Four rows of 8 at the aligned stride 9: 3 * 9 + 8 elements.
    assert allocations(lowered) == [("shared", 35)]
    assert re.search(r"A_shared\[\w+ \* 9 \+ \w+\]", lowered.script())


def test_padded_convolution_with_the_padding_computed_per_row_tile():
    func, shapes = OPERATORS["conv2d_padded"](h=6, w=6)
    sch = tir.Schedule(func)
    loops = sch.get_loops(sch.get_block("conv"))
    y0, y1 = sch.split(loops[2], factors=[None, 2])
    sch.reorder(loops[0], loops[1], y0, y1)
    sch.compute_at(sch.get_block("pad"), y0)
    lowered = lower_and_check(sch.mod["main"], shapes)
    # Two output rows need four padded rows (a halo of one on each side) of 2 channels x 8.
    assert allocations(lowered) == [("global", 64)]


def test_rfactor_and_decompose_reduction():
    func, shapes = OPERATORS["softmax"](rows=4, cols=8)
    sch = tir.Schedule(func)
    i, k = sch.get_loops(sch.get_block("row_sum"))
    _, k1 = sch.split(k, factors=[None, 4])
    sch.rfactor(k1, 0)
    max_block = sch.get_block("row_max")
    sch.decompose_reduction(max_block, sch.get_loops(max_block)[1])
    lower_and_check(sch.mod["main"], shapes)


def test_blockize_nests_blocks():
    func, shapes = OPERATORS["matmul"](m=8, n=8, k=4)
    sch = tir.Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.reorder(i0, j, k, i1)
    sch.blockize(i1)
    lower_and_check(sch.mod["main"], shapes)


def test_gpu_binding_keeps_shared_memory_per_thread_block():
    func, shapes = OPERATORS["softmax"](rows=4, cols=8)
    sch = tir.Schedule(func)
    i, j = sch.get_loops(sch.get_block("softmax"))
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    for name in ("row_sum", "exp", "row_max"):
        sch.compute_at(sch.get_block(name), i)
    sch.set_scope(sch.get_block("exp"), 0, "shared")
    lowered = lower_and_check(sch.mod["main"], shapes)
    text = lowered.script()
    # The shared row is allocated inside the blockIdx loop, outside the threadIdx loop.
    block_loop = text.index('thread="blockIdx.x"')
    shared = text.index('scope="shared"')
    thread_loop = text.index('thread="threadIdx.x"')
    assert block_loop < shared < thread_loop
    assert ("shared", 8) in allocations(lowered)


def test_parallel_vectorized_unrolled_layer_norm():
    func, shapes = OPERATORS["layer_norm"](rows=8, cols=16)
    sch = tir.Schedule(func)
    i, j = sch.get_loops(sch.get_block("norm"))
    sch.parallel(i)
    j0, j1 = sch.split(j, factors=[None, 4])
    sch.vectorize(j1)
    sch.unroll(j0)
    sch.compute_at(sch.get_block("var"), i)
    sch.compute_at(sch.get_block("mean"), i)
    lowered = lower_and_check(sch.mod["main"], shapes)
    # Each parallel iteration keeps its own scalar mean and variance.
    text = lowered.script()
    assert text.index("T.parallel(8)") < text.index("T.allocate((1,)")
    assert allocations(lowered) == [("global", 1), ("global", 1)]
