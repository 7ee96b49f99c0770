"""Index widths: offsets of buffers that may span more than 2^31 elements are computed in int64,
fused loops whose iteration count may not fit int32 get an int64 variable, and nothing wraps."""
import os
import re

import numpy as np
import pytest

import kiln
from kiln import te, tir


def flat_index_dtypes(func):
    """The dtypes of the flat indices of every load and store of a lowered function."""
    dtypes = set()

    def walk(node):
        if isinstance(node, (tir.BufferLoad, tir.BufferStore)):
            dtypes.add(node.indices[0].dtype.split("x")[0])
        for name in ("body", "value", "then_case", "else_case", "seq", "condition", "a", "b",
                     "true_value", "false_value", "args", "base", "indices"):
            child = getattr(node, name, None)
            if child is None:
                continue
            for c in child if isinstance(child, (list, tuple)) else [child]:
                if isinstance(c, (tir.Stmt, tir.PrimExpr)):
                    walk(c)

    walk(func.body)
    return dtypes


def add_one(shape, dtype="int8"):
    A = te.placeholder(shape, dtype, name="A")
    B = te.compute(shape, lambda *i: A[i] + te.const(1, dtype), name="B")
    return te.create_prim_func([A, B])


def test_symbolic_two_dimensional_buffer_is_indexed_in_int64():
    n = te.var("n")
    assert flat_index_dtypes(tir.lower(add_one((n, 4096)))) == {"int64"}
    # One int32 dimension alone cannot exceed int32.
    assert flat_index_dtypes(tir.lower(add_one((n,)))) == {"int32"}
    # Small constant shapes stay int32; large ones are int64.
    assert flat_index_dtypes(tir.lower(add_one((64, 4096)))) == {"int32"}
    assert flat_index_dtypes(tir.lower(add_one((65536, 65536)))) == {"int64"}


def test_index_arithmetic_is_widened_before_it_can_wrap():
    # A[i * 100000 + j] of an int32 loop variable into a buffer of an int64 length: the product
    # is formed in int64.
    n, m = te.var("n"), te.var("m", "int64")
    A = te.placeholder((m,), "float32", name="A")
    B = te.compute((n, 4), lambda i, j: A[i * 100000 + j], name="B")
    text = str(tir.lower(te.create_prim_func([A, B])))
    assert 'T.Cast("int64", i) * T.int64(100000)' in text, text


def test_fuse_of_two_65536_loops_has_an_int64_extent():
    func = add_one((65536, 65536))
    sch = tir.Schedule(func)
    i, j = sch.get_loops(sch.get_block("B"))
    fused = sch.fuse(i, j)
    loop = sch.get(fused)
    assert loop.extent.value == 4294967296
    assert loop.loop_var.dtype == "int64"


def test_fuse_of_symbolic_extents_is_int64_and_computes_right():
    n, m = te.var("n"), te.var("m")
    func = add_one((n, m), "float32")
    sch = tir.Schedule(func)
    fused = sch.fuse(*sch.get_loops(sch.get_block("B")))
    assert sch.get(fused).loop_var.dtype == "int64"
    outer, inner = sch.split(fused, factors=[None, 8])
    sch.parallel(outer)
    rt = kiln.build(sch.mod)
    a = np.random.default_rng(0).standard_normal((5, 7)).astype("float32")
    b = np.zeros_like(a)
    rt(a, b)
    np.testing.assert_array_equal(b, a + 1)
    b[:] = 0
    tir.interpret(sch.mod["main"], a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_fuse_of_small_loops_stays_int32():
    sch = tir.Schedule(add_one((64, 32)))
    fused = sch.fuse(*sch.get_loops(sch.get_block("B")))
    assert sch.get(fused).loop_var.dtype == "int32"


def test_split_factors_that_do_not_fit_the_loop_type_are_refused():
    sch = tir.Schedule(add_one((64, 32)))
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(tir.schedule.InvalidSplitFactorsError,
                       match=r"multiply to more than its type int32 can hold"):
        sch.split(i, factors=[None, 2 ** 20, 2 ** 20])


def available_memory_bytes():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@pytest.mark.skipif(available_memory_bytes() < 8 * 2 ** 30,
                    reason="needs 8 GiB of free memory for two 2.5 GB tensors")
def test_tensor_past_2_31_elements_runs():
    # A: (n, 4096) int8 with n = 600,000: 2.46e9 elements. It used to crash (int32 offsets).
    n = te.var("n")
    func = add_one((n, 4096))
    sch = tir.Schedule(func)
    i, j = sch.get_loops(sch.get_block("B"))
    _, ji = sch.split(j, factors=[None, 64])
    sch.vectorize(ji)
    sch.parallel(i)
    rt = kiln.build(sch.mod)
    rows = 600_000
    a = np.empty((rows, 4096), np.int8)
    a[:] = 3
    a[-1] = 7
    b = np.empty_like(a)
    rt(a, b)
    # Rows before, at and past element 2^31, and the last one.
    for row in (0, 524_287, 524_288, 524_289, rows - 2):
        assert (b[row] == 4).all(), row
    assert (b[-1] == 8).all()
    del a, b


def test_scalar_indices_are_computed_at_the_pointer_width():
    # An int32 index is computed in int64 on a 64-bit target (its sums and products nsw, its
    # variables sign-extended): the address is not the sign extension of an int32 sum, which
    # LLVM's loop strength reduction cannot always see through.
    n = 64
    A = te.placeholder((n, n), "float32", name="A")
    B = te.compute((n, n), lambda i, j: A[j, i] * 2.0, name="B")
    rt = kiln.build(te.create_prim_func([A, B]), target="llvm -opt-level=0")
    geps = [line for line in rt.get_source("ll").splitlines()
            if "getelementptr inbounds float" in line]
    assert len(geps) == 2
    assert all(re.search(r", i64 %\S+$", line) for line in geps), geps
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    b = np.zeros_like(a)
    rt(a, b)
    np.testing.assert_array_equal(b, a.T * 2)


def test_compiled_data_arithmetic_wraps_while_index_arithmetic_is_nsw():
    # Index arithmetic over loop variables is emitted `nsw` (lowering keeps it inside its type);
    # arithmetic on loaded values wraps as in NumPy, also where it forms an index.
    n = 64
    X = te.placeholder((n,), "int32", name="X")
    T = te.placeholder((64,), "float32", name="T")
    Y = te.compute((n,), lambda i: X[i] * 65536 + 2147483647, name="Y")
    G = te.compute((n,), lambda i: T[te.floormod(X[i] * 65536 + i, 64)], name="G")
    xs = (np.arange(-32, 32, dtype=np.int32) * np.int32(99991)).astype(np.int32)
    table = np.arange(64, dtype="float32")
    ys = np.zeros(n, np.int32)
    gs = np.zeros(n, np.float32)
    kiln.build(te.create_prim_func([X, Y]))(xs, ys)
    kiln.build(te.create_prim_func([X, T, G]))(xs, table, gs)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(ys, xs * np.int32(65536) + np.int32(2147483647))
        wrapped = xs * np.int32(65536) + np.arange(n, dtype=np.int32)
    np.testing.assert_array_equal(gs, table[wrapped % 64])
