"""Scheduled functions built for "llvm" and checked against NumPy: split, reorder, parallel,
vectorize, unroll, compute_at, cache_read/cache_write and rfactor; and the assembly of a
vectorized loop holds vector instructions."""
import re

import numpy as np

import kiln
from kiln import te, tir

from runtime_helpers import matmul


def matmul_data(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (m, k)).astype("float32")
    b = rng.uniform(-1, 1, (k, n)).astype("float32")
    return a, b, np.zeros((m, n), "float32")


def check_matmul(rt, m, n, k):
    a, b, c = matmul_data(m, n, k)
    rt(a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)


def elementwise(n=1024):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    return te.create_prim_func([A, B])


def test_tiled_parallel_vectorized_matmul():
    M, N, K = 64, 64, 32
    sch = tir.Schedule(matmul(M, N, K))
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 8])
    jo, ji = sch.split(j, factors=[None, 16])
    sch.reorder(io, jo, k, ii, ji)
    sch.parallel(io)
    sch.unroll(ii)
    sch.vectorize(ji)
    rt = kiln.build(sch.mod, target="llvm")
    check_matmul(rt, M, N, K)


def test_non_divisible_split():
    M, N, K = 30, 20, 7
    sch = tir.Schedule(matmul(M, N, K))
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 8])
    jo, ji = sch.split(j, factors=[None, 6])
    sch.reorder(io, jo, ii, ji, k)
    sch.parallel(io)
    rt = kiln.build(sch)  # a Schedule builds its module
    check_matmul(rt, M, N, K)


def test_fused_parallel_loop():
    M, N, K = 16, 12, 8
    sch = tir.Schedule(matmul(M, N, K))
    i, j, _ = sch.get_loops(sch.get_block("C"))
    fused = sch.fuse(i, j)
    sch.parallel(fused)
    check_matmul(kiln.build(sch.mod), M, N, K)


def test_vectorized_loop_uses_vector_instructions():
    sch = tir.Schedule(elementwise(1024))
    (i,) = sch.get_loops(sch.get_block("B"))
    _, ii = sch.split(i, factors=[None, 8])
    sch.vectorize(ii)
    rt = kiln.build(sch.mod)
    a = np.arange(1024, dtype="float32")
    b = np.zeros_like(a)
    rt(a, b)
    np.testing.assert_array_equal(b, a * 2 + 1)
    asm = rt.get_source("asm")
    # Packed single-precision multiplies/adds (or FMAs) on xmm/ymm/zmm registers.
    assert re.search(r"\bv?(mul|add|fmadd\w*)ps\b.*%[xyz]mm", asm), asm[:2000]
    assert re.search(r"<(8|16) x float>", rt.get_source("ll"))


def test_parallel_matmul_with_several_thread_counts():
    M, N, K = 48, 32, 16
    sch = tir.Schedule(matmul(M, N, K))
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.parallel(i)
    rt = kiln.build(sch.mod)
    old = kiln.runtime.get_num_threads()
    try:
        for threads in (1, 2, 4):
            kiln.runtime.set_num_threads(threads)
            check_matmul(rt, M, N, K)
    finally:
        kiln.runtime.set_num_threads(0)
    assert kiln.runtime.get_num_threads() == old


def test_compute_at_producer_into_consumer_loop():
    n = 64
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((n, n), lambda i, j: B[i, j] + 1.0, name="C")
    sch = tir.Schedule(te.create_prim_func([A, C]))
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), i)
    rt = kiln.build(sch.mod)
    a = np.random.default_rng(0).uniform(-1, 1, (n, n)).astype("float32")
    c = np.zeros_like(a)
    rt(a, c)
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)


def test_cache_write_local_accumulator():
    M, N, K = 32, 32, 16
    sch = tir.Schedule(matmul(M, N, K))
    block = sch.get_block("C")
    cache = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    io, ii = sch.split(i, factors=[None, 4])
    sch.reorder(io, j, k, ii)
    sch.reverse_compute_at(cache, io)
    check_matmul(kiln.build(sch.mod), M, N, K)


def test_cache_read_of_an_input():
    M, N, K = 16, 16, 16
    sch = tir.Schedule(matmul(M, N, K))
    sch.cache_read(sch.get_block("C"), 1, "global")
    check_matmul(kiln.build(sch.mod), M, N, K)


def test_rfactor_of_a_row_sum():
    n = 256
    A = te.placeholder((8, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    _, kk = sch.get_loops(sch.get_block("B"))
    _, ki = sch.split(kk, factors=[None, 16])
    sch.rfactor(ki, 0)
    rt = kiln.build(sch.mod)
    a = np.random.default_rng(0).uniform(-1, 1, (8, n)).astype("float32")
    b = np.zeros(8, "float32")
    rt(a, b)
    np.testing.assert_allclose(b, a.astype("float64").sum(axis=1), rtol=1e-5, atol=1e-5)


def test_alignment_facts_cost_llvm_no_pass_over_every_use():
    # An argument with only its element's alignment needs no llvm.assume (LLVM's
    # AlignmentFromAssumptions walks every use of the pointer for each one); a workspace's
    # 64-byte alignment is an attribute of the allocating call.
    n = 1 << 16
    a = te.placeholder((n,), "float32", name="A")
    b = te.compute((n,), lambda i: a[i] * 2, name="B")
    c = te.compute((n,), lambda i: b[i] + 1, name="C")
    func = te.create_prim_func([a, c])
    ll = kiln.build(func, target="llvm -opt-level=0").get_source("ll")
    assert re.search(r"call align 64 ptr @KilnBackendAllocWorkspace", ll), ll[:3000]
    assert '"align"' not in ll
    x = np.random.rand(n).astype("float32")
    y = np.zeros_like(x)
    kiln.build(func)(x, y)
    np.testing.assert_allclose(y, x * 2 + 1)
