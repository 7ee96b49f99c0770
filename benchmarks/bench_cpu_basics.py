"""CPU basics: fused sin+cos against NumPy, an element-wise add against a memory copy of the
same bytes, an unscheduled matmul against NumPy, and the compile latency of kiln.build.

Run: python3 benchmarks/bench_cpu_basics.py   (prints tables; never fails on time)
"""
import os
import statistics
import time

import numpy as np

import kiln
from kiln import te, tir

from common import kiln_seconds, median_seconds, print_table

N = 16 * 1024 * 1024
ALL_THREADS = os.cpu_count()


# Two vector registers of float32 per loop iteration on this machine's CPU (8 lanes each with
# AVX2, 16 with AVX-512, 4 with SSE or NEON).
LANES = 2 * kiln.target.Target("llvm").vector_lanes("float32")


def vectorized(func, block, lanes=LANES, parallel=False):
    sch = tir.Schedule(func)
    loops = sch.get_loops(sch.get_block(block))
    fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    outer, inner = sch.split(fused, factors=[None, lanes])
    sch.vectorize(inner)
    if parallel:
        sch.parallel(outer)
    return sch.mod


def sin_cos():
    X = te.placeholder((N,), "float32", name="X")
    Y = te.compute((N,), lambda i: te.sin(X[i]) + te.cos(X[i]), name="Y")
    return te.create_prim_func([X, Y])


def add(parallel):
    A = te.placeholder((N,), "float32", name="A")
    B = te.placeholder((N,), "float32", name="B")
    C = te.compute((N,), lambda i: A[i] + B[i], name="C")
    return vectorized(te.create_prim_func([A, B, C]), "C", parallel=parallel)


def matmul(n):
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def bench_sin_cos(rows):
    kiln.runtime.set_num_threads(1)
    rt = kiln.build(vectorized(sin_cos(), "Y"), target="llvm")
    x = np.random.default_rng(0).uniform(-10, 10, N).astype("float32")
    y = np.empty_like(x)
    t_kiln = kiln_seconds(rt, (x, y))
    t_numpy = median_seconds(lambda: np.sin(x) + np.cos(x), repeat=5)
    rows.append(["fused sin+cos, 16M f32, 1 thread", f"{t_kiln * 1e3:.2f}", f"{t_numpy * 1e3:.2f}",
                 f"{t_numpy / t_kiln:.2f}x"])


def bench_add_vs_copy(rows):
    a = np.random.default_rng(1).random(N, dtype=np.float32)
    b = np.random.default_rng(2).random(N, dtype=np.float32)
    c = np.empty_like(a)
    # The add moves 3 arrays (read A, B, write C); a copy of 1.5 arrays moves the same bytes.
    traffic = 3 * a.nbytes
    src = np.random.default_rng(3).random(N * 3 // 2, dtype=np.float32)
    dst = np.empty_like(src)
    t_copy = median_seconds(lambda: np.copyto(dst, src), repeat=7)
    for threads, parallel in ((1, False), (ALL_THREADS, True)):
        kiln.runtime.set_num_threads(threads)
        rt = kiln.build(add(parallel), target="llvm")
        t_add = kiln_seconds(rt, (a, b, c))
        rows.append([f"add, 16M f32, {threads} thread(s)", f"{t_add * 1e3:.2f}",
                     f"{traffic / t_add / 1e9:.1f}", f"{traffic / t_copy / 1e9:.1f}",
                     f"{t_copy / t_add:.2f}"])


def bench_matmul(rows, n=512):
    kiln.runtime.set_num_threads(1)
    rt = kiln.build(matmul(n), target="llvm")
    a = np.random.default_rng(4).random((n, n), dtype=np.float32)
    b = np.random.default_rng(5).random((n, n), dtype=np.float32)
    c = np.empty((n, n), np.float32)
    t_kiln = kiln_seconds(rt, (a, b, c), repeat=3, number=1)
    t_numpy = median_seconds(lambda: a @ b, repeat=7)
    flops = 2 * n ** 3
    rows.append([f"matmul {n}^3 f32, default schedule", f"{flops / t_kiln / 1e9:.2f}",
                 f"{flops / t_numpy / 1e9:.2f}", f"{t_numpy / t_kiln:.3f}x"])


def bench_compile_latency(rows, count=20):
    A = te.placeholder((1024,), "float32", name="A")
    B = te.compute((1024,), lambda i: A[i] * 2.0 + 1.0, name="B")
    func = te.create_prim_func([A, B])
    kiln.build(func, target="llvm")  # initializes LLVM once
    times = []
    for _ in range(count):
        start = time.perf_counter()
        kiln.build(func, target="llvm")
        times.append(time.perf_counter() - start)
    rows.append(["kiln.build, 1024-element a*2+1", f"{statistics.median(times) * 1e3:.1f}",
                 f"{min(times) * 1e3:.1f}", str(count)])


def main():
    print(f"machine: {os.cpu_count()} cores; kiln target: {kiln.build(sin_cos(), 'llvm').target}")
    rows = []
    bench_sin_cos(rows)
    print_table("Fused element-wise", ["kernel", "kiln ms", "NumPy ms", "speedup"], rows)
    rows = []
    bench_add_vs_copy(rows)
    print_table("Memory bandwidth", ["kernel", "kiln ms", "kiln GB/s", "copy GB/s",
                                     "fraction of copy"], rows)
    rows = []
    bench_matmul(rows)
    print_table("Matmul without a schedule", ["kernel", "kiln GFLOP/s", "NumPy GFLOP/s",
                                              "ratio"], rows)
    rows = []
    bench_compile_latency(rows)
    print_table("Compile latency", ["build", "median ms", "min ms", "builds"], rows)


if __name__ == "__main__":
    main()
