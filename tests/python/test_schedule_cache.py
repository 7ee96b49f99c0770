"""Schedule primitives of the data-movement family: cache_read, cache_write (cache stages) and
set_scope, storage_align (buffer storage). Per primitive: golden before/after IR, a numeric check
against the unscheduled function on the reference interpreter, a trace round trip, and one error
case per precondition that also checks the schedule is left as it was."""
import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.tir import schedule as tir_schedule

from schedule_helpers import (WORKLOADS, assert_same_results, assert_trace_roundtrip,
                              conv2d, elementwise_chain, layer_norm, matmul, matmul_relu,
                              random_args)


def script(sch):
    return sch.mod["main"].script()


def assert_fails(sch, error_class, call, *fragments):
    """Runs `call`, which must raise `error_class` with every fragment in its message, and checks
    that the schedule's module and trace are unchanged."""
    mod_before = sch.mod
    trace_length = len(sch.trace)
    with pytest.raises(getattr(tir_schedule, error_class)) as info:
        call()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message
    assert f"[{error_class}]" in message
    kiln.ir.assert_structural_equal(sch.mod, mod_before)
    assert len(sch.trace) == trace_length


MATMUL_4x4x2 = '''\
# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((4, 2), "float32"), B: T.Buffer((2, 4), "float32"), C: T.Buffer((4, 4), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    for i, j, k in T.grid(4, 4, 2):
        with T.block("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            T.reads(A[v_i, v_k], B[v_k, v_j])
            T.writes(C[v_i, v_j])
            with T.init():
                C[v_i, v_j] = T.float32(0)
            C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]'''

CACHE_READ_PARAM = '''\
# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((4, 2), "float32"), B: T.Buffer((2, 4), "float32"), C: T.Buffer((4, 4), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    B_shared = T.alloc_buffer((2, 4), "float32", scope="shared")
    for ax0, ax1 in T.grid(2, 4):
        with T.block("B_shared"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(B[v0, v1])
            T.writes(B_shared[v0, v1])
            B_shared[v0, v1] = B[v0, v1]
    for i, j, k in T.grid(4, 4, 2):
        with T.block("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            T.reads(A[v_i, v_k], B_shared[v_k, v_j])
            T.writes(C[v_i, v_j])
            with T.init():
                C[v_i, v_j] = T.float32(0)
            C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B_shared[v_k, v_j]'''

CACHE_READ_INTERMEDIATE = '''\
# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((4, 2), "float32"), D: T.Buffer((4, 2), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    B = T.alloc_buffer((4, 2), "float32")
    C = T.alloc_buffer((4, 2), "float32")
    B_shared = T.alloc_buffer((4, 2), "float32", scope="shared")
    for i, j in T.grid(4, 2):
        with T.block("B"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(A[v_i, v_j])
            T.writes(B[v_i, v_j])
            B[v_i, v_j] = A[v_i, v_j] * T.float32(2)
    for ax0, ax1 in T.grid(4, 2):
        with T.block("B_shared"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(B[v0, v1])
            T.writes(B_shared[v0, v1])
            B_shared[v0, v1] = B[v0, v1]
    for i_1, j_1 in T.grid(4, 2):
        with T.block("C"):
            v_i_1, v_j_1 = T.axis.remap("SS", [i_1, j_1])
            T.reads(B_shared[v_i_1, v_j_1])
            T.writes(C[v_i_1, v_j_1])
            C[v_i_1, v_j_1] = B_shared[v_i_1, v_j_1] + T.float32(1)
    for i_2, j_2 in T.grid(4, 2):
        with T.block("D"):
            v_i_2, v_j_2 = T.axis.remap("SS", [i_2, j_2])
            T.reads(C[v_i_2, v_j_2])
            T.writes(D[v_i_2, v_j_2])
            D[v_i_2, v_j_2] = T.sin(C[v_i_2, v_j_2]) + T.cos(C[v_i_2, v_j_2])'''

CACHE_READ_IN_LOOP = '''\
# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((4, 2), "float32"), D: T.Buffer((4, 2), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    B = T.alloc_buffer((4, 2), "float32")
    C = T.alloc_buffer((4, 2), "float32")
    B_local = T.alloc_buffer((4, 2), "float32", scope="local")
    for i in range(4):
        for ax0 in range(2):
            with T.block("B"):
                v_i, v_j = T.axis.remap("SS", [i, ax0])
                T.reads(A[v_i, v_j])
                T.writes(B[v_i, v_j])
                B[v_i, v_j] = A[v_i, v_j] * T.float32(2)
        for ax0_1, ax1 in T.grid(1, 2):
            with T.block("B_local"):
                v0 = T.axis.spatial(4, i + ax0_1)
                v1 = T.axis.remap("S", [ax1])
                T.reads(B[v0, v1])
                T.writes(B_local[v0, v1])
                B_local[v0, v1] = B[v0, v1]
        for j in range(2):
            with T.block("C"):
                v_i_1, v_j_1 = T.axis.remap("SS", [i, j])
                T.reads(B_local[v_i_1, v_j_1])
                T.writes(C[v_i_1, v_j_1])
                C[v_i_1, v_j_1] = B_local[v_i_1, v_j_1] + T.float32(1)
    for i_1, j_1 in T.grid(4, 2):
        with T.block("D"):
            v_i_2, v_j_2 = T.axis.remap("SS", [i_1, j_1])
            T.reads(C[v_i_2, v_j_2])
            T.writes(D[v_i_2, v_j_2])
            D[v_i_2, v_j_2] = T.sin(C[v_i_2, v_j_2]) + T.cos(C[v_i_2, v_j_2])'''

CACHE_WRITE_WITH_READER = '''\
# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((4, 2), "float32"), B: T.Buffer((2, 4), "float32"), D: T.Buffer((4, 4), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    C = T.alloc_buffer((4, 4), "float32")
    C_local = T.alloc_buffer((4, 4), "float32", scope="local")
    for i, j, k in T.grid(4, 4, 2):
        with T.block("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            T.reads(A[v_i, v_k], B[v_k, v_j])
            T.writes(C_local[v_i, v_j])
            with T.init():
                C_local[v_i, v_j] = T.float32(0)
            C_local[v_i, v_j] = C_local[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]
    for ax0, ax1 in T.grid(4, 4):
        with T.block("C_local"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(C_local[v0, v1])
            T.writes(C[v0, v1])
            C[v0, v1] = C_local[v0, v1]
    for i_1, j_1 in T.grid(4, 4):
        with T.block("D"):
            v_i_1, v_j_1 = T.axis.remap("SS", [i_1, j_1])
            T.reads(C[v_i_1, v_j_1])
            T.writes(D[v_i_1, v_j_1])
            D[v_i_1, v_j_1] = T.max(C[v_i_1, v_j_1], T.float32(0))'''

CACHE_WRITE_OUTPUT = '''\
# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((4, 2), "float32"), B: T.Buffer((2, 4), "float32"), C: T.Buffer((4, 4), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    C_local = T.alloc_buffer((4, 4), "float32", scope="local")
    for i_0, j, i_1, k in T.grid(2, 4, 3, 2):
        with T.block("C"):
            v_i = T.axis.spatial(4, i_0 * 3 + i_1)
            v_j, v_k = T.axis.remap("SR", [j, k])
            T.where(i_0 * 3 + i_1 < 4)
            T.reads(A[v_i, v_k], B[v_k, v_j])
            T.writes(C_local[v_i, v_j])
            with T.init():
                C_local[v_i, v_j] = T.float32(0)
            C_local[v_i, v_j] = C_local[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]
    for ax0, ax1 in T.grid(4, 4):
        with T.block("C_local"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(C_local[v0, v1])
            T.writes(C[v0, v1])
            C[v0, v1] = C_local[v0, v1]'''

SET_SCOPE = '''\
    B = T.alloc_buffer((4, 2), "float32", scope="shared")
    C = T.alloc_buffer((4, 2), "float32")'''

STORAGE_ALIGN = '''\
        with T.block("B"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(A[v_i, v_j])
            T.writes(B[v_i, v_j])
            T.block_attr({"kiln.storage_align": "0:0:4:1"})'''


# ---------------------------------------------------------------------------------------------
# cache_read

def test_cache_read_of_a_parameter_golden():
    func = matmul(4, 4, 2)
    sch = tir.Schedule(func)
    assert script(sch) == MATMUL_4x4x2
    cached = sch.cache_read(sch.get_block("C"), 1, "shared")
    assert script(sch) == CACHE_READ_PARAM
    assert sch.get(cached).name_hint == "B_shared"
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_cache_read_of_an_intermediate_goes_before_the_first_reader():
    func = elementwise_chain(4, 2)
    sch = tir.Schedule(func)
    sch.cache_read(sch.get_block("C"), 0, "shared")
    assert script(sch) == CACHE_READ_INTERMEDIATE
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_cache_read_goes_inside_the_loop_shared_by_writer_and_reader():
    func = elementwise_chain(4, 2)
    sch = tir.Schedule(func)
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), i)
    sch.cache_read(sch.get_block("C"), 0, "local")
    assert script(sch) == CACHE_READ_IN_LOOP
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_cache_read_rewrites_every_reader():
    func = layer_norm()
    sch = tir.Schedule(func)
    cached = sch.cache_read(sch.get_block("Y"), 0, "shared")
    text = script(sch)
    assert sch.get(cached).name_hint == "X_shared"
    # The copy goes before "mean", the first reader; mean, var and Y all read the copy.
    assert text.index('T.block("X_shared")') < text.index('T.block("mean")')
    assert text.count("X[") == 2  # only the copy reads X: T.reads(X[v0, v1]) and its load
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_cache_read_names_are_unique():
    func = matmul()
    sch = tir.Schedule(func)
    first = sch.cache_read(sch.get_block("C"), 0, "shared")
    second = sch.cache_read(sch.get_block("C"), 0, "shared")
    assert sch.get(first).name_hint == "A_shared"
    assert sch.get(second).name_hint == "A_shared_shared"
    third = sch.cache_read(sch.get_block("A_shared_shared"), 0, "local")
    assert sch.get(third).name_hint == "A_shared_local"
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_cache_read_under_split_and_reordered_loops():
    func = matmul()
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    i, j, _ = sch.get_loops(block)
    _, i_inner = sch.split(i, [None, 5])
    sch.reorder(j, i_inner)
    sch.cache_read(block, 0, "shared")
    sch.cache_read(block, 1, "local")
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_cache_read_moved_under_a_tile_packs_the_tile():
    # The GEMM pattern: tile, cache both inputs and the output, move the copies under the tile.
    func = matmul()
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i_outer, i_inner = sch.split(i, [None, 4])
    j_outer, j_inner = sch.split(j, [None, 4])
    sch.reorder(i_outer, j_outer, k, i_inner, j_inner)
    a_shared = sch.cache_read(block, 0, "shared")
    b_shared = sch.cache_read(block, 1, "shared")
    sch.compute_at(a_shared, k)
    sch.compute_at(b_shared, k)
    c_local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(c_local, j_outer)
    text = script(sch)
    assert "A_shared[v0, v1] = A[v0, v1]" in text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
@pytest.mark.parametrize("scope", ["shared", "local", "global"])
def test_cache_read_of_every_read_buffer(name, scope):
    func = WORKLOADS[name]()
    probe = tir.Schedule(func)
    for block_name in block_names(probe):
        for index in range(len(probe.get(probe.get_block(block_name)).reads)):
            sch = tir.Schedule(func)
            sch.cache_read(sch.get_block(block_name), index, scope)
            assert_same_results(func, sch.mod)
            assert_trace_roundtrip(sch, func)


def test_cache_read_errors():
    sch = tir.Schedule(elementwise_chain(4, 2))
    block = sch.get_block("C")
    assert_fails(sch, "BufferIndexOutOfRangeError", lambda: sch.cache_read(block, 1, "shared"),
                 "cache_read: read buffer index 1 is out of range: block 'C' reads 1 buffer(s) (B)")
    assert_fails(sch, "InvalidStorageScopeError", lambda: sch.cache_read(block, 0, "texture"),
                 "cache_read: storage scope 'texture' is not one of 'global', 'shared', 'shared.dyn', "
                 "'local', 'warp'")


def test_cache_read_error_when_two_blocks_write_the_buffer():
    sch = tir.Schedule(matmul_relu())
    sch.decompose_reduction(sch.get_block("C"), sch.get_loops(sch.get_block("C"))[2])
    reader = sch.get_block("D")
    assert_fails(sch, "NotSingleWriteBlockError", lambda: sch.cache_read(reader, 0, "local"),
                 "buffer C is written by 2 blocks of the scope ('C_init', 'C')")


def test_cache_read_error_when_writer_and_a_reader_share_a_loop():
    sch = tir.Schedule(layer_norm())
    sch.reverse_compute_at(sch.get_block("var"), sch.get_loops(sch.get_block("mean"))[0])
    reader = sch.get_block("Y")
    assert_fails(sch, "CacheLocationError", lambda: sch.cache_read(reader, 1, "local"),
                 "block 'mean', which writes buffer mean, and block 'var', which reads it, are "
                 "in the same statement in the body of block 'root'")


# ---------------------------------------------------------------------------------------------
# cache_write

def test_cache_write_goes_before_the_reader_golden():
    func = matmul_relu(4, 4, 2)
    sch = tir.Schedule(func)
    cached = sch.cache_write(sch.get_block("C"), 0, "local")
    assert script(sch) == CACHE_WRITE_WITH_READER
    assert sch.get(cached).name_hint == "C_local"
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_cache_write_of_an_output_under_a_non_divisible_split():
    func = matmul(4, 4, 2)
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    i, j, _ = sch.get_loops(block)
    _, i_inner = sch.split(i, [None, 3])
    sch.reorder(j, i_inner)
    sch.cache_write(block, 0, "local")
    # The copy covers the buffer, not the split's padded range.
    assert script(sch) == CACHE_WRITE_OUTPUT
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_cache_write_inside_the_loop_shared_with_the_reader():
    func = elementwise_chain()
    sch = tir.Schedule(func)
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), i)
    sch.cache_write(sch.get_block("B"), 0, "shared")
    text = script(sch)
    # Inside loop i: B writes B_shared, the copy writes one row of B, then C reads it.
    assert "B_shared[v_i, v_j] = A[v_i, v_j]" in text
    assert "v0 = T.axis.spatial(24, i + ax0_1)" in text
    assert text.index('T.block("B_shared")') < text.index('T.block("C")')
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
@pytest.mark.parametrize("scope", ["shared", "local"])
def test_cache_write_of_every_block(name, scope):
    func = WORKLOADS[name]()
    for block_name in block_names(tir.Schedule(func)):
        sch = tir.Schedule(func)
        sch.cache_write(sch.get_block(block_name), 0, scope)
        assert_same_results(func, sch.mod)
        assert_trace_roundtrip(sch, func)


def test_cache_write_errors():
    sch = tir.Schedule(elementwise_chain(4, 2))
    block = sch.get_block("C")
    assert_fails(sch, "BufferIndexOutOfRangeError", lambda: sch.cache_write(block, 3, "shared"),
                 "cache_write: write buffer index 3 is out of range: block 'C' writes 1 buffer(s)")
    assert_fails(sch, "InvalidStorageScopeError", lambda: sch.cache_write(block, 0, "register"),
                 "cache_write: storage scope 'register' is not one of")


def test_cache_write_error_when_two_blocks_write_the_buffer():
    sch = tir.Schedule(matmul_relu())
    sch.decompose_reduction(sch.get_block("C"), sch.get_loops(sch.get_block("C"))[2])
    writer = sch.get_block("C")
    assert_fails(sch, "NotSingleWriteBlockError", lambda: sch.cache_write(writer, 0, "local"),
                 "cache_write: buffer C is written by 2 blocks")


def test_cache_write_error_when_writer_and_a_reader_share_a_loop():
    sch = tir.Schedule(layer_norm())
    sch.reverse_compute_at(sch.get_block("var"), sch.get_loops(sch.get_block("mean"))[0])
    writer = sch.get_block("mean")
    assert_fails(sch, "CacheLocationError", lambda: sch.cache_write(writer, 0, "local"),
                 "there is no place for the copy between the writer and the readers")


# ---------------------------------------------------------------------------------------------
# set_scope

def test_set_scope_golden():
    func = elementwise_chain(4, 2)
    sch = tir.Schedule(func)
    assert 'B = T.alloc_buffer((4, 2), "float32")\n' in script(sch)
    sch.set_scope(sch.get_block("B"), 0, "shared")
    assert SET_SCOPE in script(sch)
    # Every use names the new declaration: the readers and writers still match up.
    for block in ("B", "C"):
        regions = sch.get(sch.get_block(block)).reads + sch.get(sch.get_block(block)).writes
        assert any(r.buffer.scope() == "shared" for r in regions)
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)
    assert 'sch.set_scope(block=b0, buffer_index=0, storage_scope="shared")' in \
        sch.trace.as_python()


def test_set_scope_errors():
    sch = tir.Schedule(elementwise_chain(4, 2))
    block, output = sch.get_block("B"), sch.get_block("D")
    assert_fails(sch, "BufferIndexOutOfRangeError", lambda: sch.set_scope(block, 1, "shared"),
                 "set_scope: write buffer index 1 is out of range")
    assert_fails(sch, "InvalidStorageScopeError", lambda: sch.set_scope(block, 0, "gpu"),
                 "set_scope: storage scope 'gpu' is not one of")
    assert_fails(sch, "FunctionParamBufferError", lambda: sch.set_scope(output, 0, "shared"),
                 "set_scope: buffer D (written by block 'D') is a parameter of the function")


# ---------------------------------------------------------------------------------------------
# storage_align

def test_storage_align_golden():
    func = elementwise_chain(4, 2)
    sch = tir.Schedule(func)
    sch.storage_align(sch.get_block("B"), 0, axis=0, factor=4, offset=1)
    # Recorded on the block; lowering pads the row stride 2 to 5 (5 % 4 == 1).
    assert STORAGE_ALIGN in script(sch), script(sch)
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)
    assert "sch.storage_align(block=b0, axis=0, buffer_index=0, factor=4, offset=1)" in \
        sch.trace.as_python()


def test_storage_align_is_honoured_by_lowering():
    func = elementwise_chain(4, 2)
    sch = tir.Schedule(func)
    sch.storage_align(sch.get_block("B"), 0, axis=-2, factor=4, offset=1)
    lowered = tir.lower(sch.mod)["main"]
    text = lowered.script()
    assert 'T.allocate((17,), "float32") as B' in text
    assert "B[i * 5 + j]" in text
    expected = random_args(func)
    actual = [a.copy() for a in expected]
    tir.interpret(func, *expected)
    tir.interpret(lowered, *actual)
    np.testing.assert_allclose(actual[1], expected[1], rtol=1e-6)


def test_storage_align_of_inner_then_outer_dimensions():
    func = conv2d()
    sch = tir.Schedule(func)
    pad = sch.get_block("pad")
    sch.storage_align(pad, 0, axis=2, factor=8, offset=2)
    sch.storage_align(pad, 0, axis=1, factor=8, offset=3)
    sch.storage_align(pad, 0, axis=1, factor=16, offset=0)
    # The second alignment of axis 1 replaces the first.
    assert 'T.block_attr({"kiln.storage_align": "0:2:8:2;0:1:16:0"})' in script(sch)
    # Row stride 10 -> 10 (10 % 8 == 2); plane 100 -> 112 (112 % 16 == 0): 3 planes span
    # 2 * 112 + 9 * 10 + 10 elements.
    lowered = tir.lower(sch.mod)["main"].script()
    assert 'T.allocate((324,), "float32") as pad' in lowered, lowered
    assert "pad[ch * 112 + y * 10 + x]" in lowered
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_storage_align_applies_to_the_compacted_tile():
    # A 64x64 shared copy of A aligned on its rows, compacted to the 8x8 tile each iteration
    # uses: the tile's own rows are padded (pitch 9), not the pitch of the 64-wide buffer (65).
    func = matmul(64, 64, 64)
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    io, ii = sch.split(i, factors=[None, 8])
    ko, ki = sch.split(k, factors=[None, 8])
    sch.reorder(io, ko, ii, j, ki)
    cached = sch.cache_read(block, 0, "shared")
    sch.compute_at(cached, ko)
    sch.storage_align(cached, 0, axis=0, factor=8, offset=1)
    lowered = tir.lower(sch.mod)["main"].script()
    assert 'T.allocate((71,), "float32", scope="shared") as A_shared' in lowered, lowered
    assert "A_shared[ax0 * 9 + ax1]" in lowered
    assert_same_results(func, sch.mod)


def test_storage_align_of_a_cache_stage():
    func = matmul()
    sch = tir.Schedule(func)
    cached = sch.cache_read(sch.get_block("C"), 0, "shared")
    sch.storage_align(cached, 0, axis=0, factor=16, offset=4)
    # The row stride 8 becomes 20 when lowered: 16 rows span 15 * 20 + 8 elements.
    assert 'T.allocate((308,), "float32", scope="shared")' in tir.lower(sch.mod)["main"].script()
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_storage_align_errors():
    sch = tir.Schedule(elementwise_chain(4, 2))
    block, output = sch.get_block("B"), sch.get_block("D")
    assert_fails(sch, "BufferIndexOutOfRangeError",
                 lambda: sch.storage_align(block, 2, 0, 4, 1),
                 "storage_align: write buffer index 2 is out of range")
    assert_fails(sch, "FunctionParamBufferError",
                 lambda: sch.storage_align(output, 0, 0, 4, 1),
                 "buffer D (written by block 'D') is a parameter of the function")
    assert_fails(sch, "InvalidStorageAlignError", lambda: sch.storage_align(block, 0, 2, 4, 1),
                 "axis 2 is out of range for buffer B of 2 dimension(s)")
    assert_fails(sch, "InvalidStorageAlignError", lambda: sch.storage_align(block, 0, 0, 0, 0),
                 "expected factor > 0 and 0 <= offset < factor for buffer B, found "
                 "(axis=0, factor=0, offset=0)")
    assert_fails(sch, "InvalidStorageAlignError", lambda: sch.storage_align(block, 0, 0, 4, 4),
                 "found (axis=0, factor=4, offset=4)")


# ---------------------------------------------------------------------------------------------

def block_names(sch):
    """The names of the function's blocks other than the root, in program order."""
    names = []
    text = script(sch)
    for part in text.split('T.block("')[1:]:
        name = part.split('"')[0]
        if name != "root":
            names.append(name)
    return names


def test_cache_write_error_when_the_block_reads_values_written_outside():
    # After blockize, the update block reads C, which the outer block's init writes: a cache of
    # C would start uninitialized.
    sch = tir.Schedule(matmul())
    sch.blockize(sch.get_loops(sch.get_block("C"))[2])
    update = sch.get_block("C")
    assert_fails(sch, "ReadWriteBufferError", lambda: sch.cache_write(update, 0, "global"),
                 "cache_write: block 'C' reads buffer C, which it writes, and has no init")


def test_cache_read_for_chosen_consumers_only():
    # X is read by row_max and exp; only exp reads the copy, placed right before it.
    func = WORKLOADS["softmax"]()
    sch = tir.Schedule(func)
    exp = sch.get_block("exp")
    sch.cache_read(exp, 0, "local", consumer_blocks=[exp])
    text = sch.mod["main"].script()
    assert "T.max(row_max[v_i], X[v_i, v_k1])" in text, text
    assert "T.exp(X_local[v_i_1, v_j] - row_max[v_i_1])" in text, text
    assert text.index('T.block("row_max")') < text.index('T.block("X_local")') < \
        text.index('T.block("exp")')
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)
    assert "consumer_blocks=[b0]" in sch.trace.as_python()


def test_cache_read_error_consumer_that_does_not_read_the_buffer():
    sch = tir.Schedule(WORKLOADS["softmax"]())
    row_max, out = sch.get_block("row_max"), sch.get_block("Y")
    assert_fails(sch, "NotAConsumerError",
                 lambda: sch.cache_read(row_max, 0, "shared", consumer_blocks=[out]),
                 "block 'Y' does not read buffer X in the scope of block 'row_max'")


def test_cache_read_of_a_cache_with_a_symbolic_region_covers_it():
    # The second copy's region is bounded only through `%` by a symbolic extent; it must fall
    # back to the whole buffer, not to ends that overflow.
    func = WORKLOADS["batch_matmul"]()
    sch = tir.Schedule(func)
    sch.blockize(sch.get_loops(sch.get_block("C"))[2])
    sch.cache_read(sch.get_block("C"), 0, "local")
    local = sch.get_block("A_local")
    a, b, _ = sch.get_loops(local)
    sch.fuse(a, b)
    sch.blockize(sch.get_loops(sch.get_block("C_o"))[1])
    x, y = sch.get_loops(local)
    sch.reorder(y, x)
    sch.cache_read(local, 0, "local", consumer_blocks=[local])
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)
