"""GEMM on this CPU: the hand-written schedule of tutorials/02_optimize_gemm.ipynb against NumPy
(OpenBLAS) and against the machine's float32 FMA peak, measured in the same run, on one thread
and on all threads.

Run: python3 benchmarks/bench_gemm.py   (prints a table; never fails on time)
"""
import os
import pathlib
import subprocess
import tempfile

import numpy as np
from threadpoolctl import threadpool_limits

import kiln
from kiln import te, tir

from common import kiln_seconds, median_seconds, print_table

N = 1024
FLOPS = 2 * N ** 3
MR, NR = 4, 64


def gemm_schedule():
    A = te.placeholder((N, N), "float32", name="A")
    B = te.placeholder((N, N), "float32", name="B")
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    block = sch.get_block("C")
    i, j, kk = sch.get_loops(block)
    io, ii = sch.split(i, factors=[None, MR])
    jo, ji = sch.split(j, factors=[None, NR])
    sch.reorder(jo, io, kk, ii, ji)
    sch.vectorize(ji)
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, io)
    sch.vectorize(sch.get_loops(local)[-1])
    packed = sch.cache_read(block, 1, "global")
    sch.transform_layout(packed, ("write", 0), lambda kx, nx: [nx // NR, kx, nx % NR])
    sch.unroll(ii)
    sch.decompose_reduction(block, kk)
    sch.parallel(jo)
    return sch


def fma_peak(threads):
    """GFLOP/s of benchmarks/fma_peak.c, compiled here for this CPU."""
    source = pathlib.Path(__file__).with_name("fma_peak.c")
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "fma_peak")
        subprocess.run(["cc", "-O3", "-march=native", "-pthread", str(source), "-o", binary],
                       check=True)
        runs = [float(subprocess.run([binary, str(threads)], check=True, capture_output=True,
                                     text=True).stdout.split()[0]) for _ in range(3)]
    return max(runs)


def main():
    rng = np.random.default_rng(0)
    a = rng.random((N, N), dtype=np.float32)
    b = rng.random((N, N), dtype=np.float32)
    c = np.zeros((N, N), dtype=np.float32)
    sch = gemm_schedule()
    rows = []
    for threads in (1, os.cpu_count()):
        kiln.runtime.set_num_threads(threads)
        rt = kiln.build(sch.mod, target="llvm")
        rt(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-3)
        t_kiln = kiln_seconds(rt, (a, b, c), repeat=7, number=1)
        with threadpool_limits(limits=threads, user_api="blas"):
            t_numpy = median_seconds(lambda: a @ b, repeat=7)
        peak = fma_peak(threads)
        g_kiln, g_numpy = FLOPS / t_kiln / 1e9, FLOPS / t_numpy / 1e9
        rows.append([str(threads), f"{g_kiln:.1f}", f"{g_numpy:.1f}", f"{g_kiln / g_numpy:.2f}x",
                     f"{peak:.1f}", f"{g_kiln / peak:.0%}", f"{g_numpy / peak:.0%}"])
    print(f"GEMM {N}x{N}x{N} float32, target {rt.target}")
    print_table("Hand-scheduled GEMM", ["threads", "kiln GFLOP/s", "NumPy GFLOP/s",
                                       "kiln/NumPy", "FMA peak GFLOP/s", "kiln % peak",
                                       "NumPy % peak"], rows)


if __name__ == "__main__":
    main()
