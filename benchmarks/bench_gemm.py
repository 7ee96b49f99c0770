"""GEMM on this CPU: the hand-written schedule of tutorials/02_optimize_gemm.ipynb, its register
tile and cache blocking derived from the target (kiln.target.gemm_blocking), against NumPy
(OpenBLAS) and against the machine's float32 FMA peak, measured in the same run, on one thread
and on all threads. The machine's load average is printed with the table: other work on the
cores shows up as lower numbers.

Run: python3 benchmarks/bench_gemm.py [--target "llvm -mcpu=haswell"] [--repeat 7] [--rounds 3]
(prints a table; never fails on time)
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import tempfile

import numpy as np
from threadpoolctl import threadpool_limits

import kiln
from kiln import te, tir
from kiln.target import Target, gemm_blocking

from common import kiln_seconds, load_average, median_seconds, print_table

N = 1024
FLOPS = 2 * N ** 3


def gemm_schedule(target, n=N):
    """The schedule of the tutorial for C = A @ B (n x n float32) on ``target``, blocked by
    gemm_blocking: MR x NR register tiles accumulated in a local buffer, groups of `panels`
    NR-column strips of B per pass over A, B packed into [n / NR, n, NR] panels (a vector copy,
    in parallel), the MR rows unrolled, groups of strips in parallel."""
    mr, nr, panels = gemm_blocking(target, "float32", n=n, k=n)
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    block = sch.get_block("C")
    i, j, kk = sch.get_loops(block)
    io, ii = sch.split(i, factors=[None, mr])
    jo, jp, ji = sch.split(j, factors=[None, panels, nr])
    sch.reorder(jo, io, jp, kk, ii, ji)
    sch.vectorize(ji)
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, jp)
    sch.vectorize(sch.get_loops(local)[-1])
    packed = sch.cache_read(block, 1, "global")
    sch.transform_layout(packed, ("write", 0), lambda kx, nx: [nx // nr, kx, nx % nr])
    pack_k, pack_n = sch.get_loops(packed)
    _, pack_lanes = sch.split(pack_n, factors=[None, target.vector_lanes("float32")])
    sch.vectorize(pack_lanes)
    sch.parallel(pack_k)
    sch.unroll(ii)
    sch.decompose_reduction(block, kk)
    sch.parallel(jo)
    return sch, (mr, nr, panels)


def fma_peak(threads):
    """GFLOP/s of benchmarks/fma_peak.c (x86 with AVX2 or AVX-512), compiled here for this
    CPU; None where it does not compile."""
    source = pathlib.Path(__file__).with_name("fma_peak.c")
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "fma_peak")
        compiled = subprocess.run(["cc", "-O3", "-march=native", "-pthread", str(source), "-o",
                                   binary], capture_output=True)
        if compiled.returncode != 0:
            return None
        runs = [float(subprocess.run([binary, str(threads)], check=True, capture_output=True,
                                     text=True).stdout.split()[0]) for _ in range(3)]
    return max(runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="llvm", help="a target that runs on this CPU")
    parser.add_argument("--repeat", type=int, default=7, help="timed calls per round")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of kiln then NumPy; the median of the rounds counts")
    args = parser.parse_args()
    target = Target(args.target)
    rng = np.random.default_rng(0)
    a = rng.random((N, N), dtype=np.float32)
    b = rng.random((N, N), dtype=np.float32)
    c = np.zeros((N, N), dtype=np.float32)
    sch, (mr, nr, panels) = gemm_schedule(target)
    load_before = load_average()
    rows = []
    for threads in (1, os.cpu_count()):
        kiln.runtime.set_num_threads(threads)
        rt = kiln.build(sch.mod, target=target)
        rt(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-3)
        # Rounds alternate kiln and NumPy, so that a burst of other work on the machine slows
        # both rather than one; the median over all rounds counts.
        kiln_runs, numpy_runs = [], []
        for _ in range(args.rounds):
            kiln_runs.append(kiln_seconds(rt, (a, b, c), repeat=args.repeat, number=1))
            with threadpool_limits(limits=threads, user_api="blas"):
                numpy_runs.append(median_seconds(lambda: a @ b, repeat=args.repeat))
        t_kiln, t_numpy = statistics.median(kiln_runs), statistics.median(numpy_runs)
        peak = fma_peak(threads)
        g_kiln, g_numpy = FLOPS / t_kiln / 1e9, FLOPS / t_numpy / 1e9
        rows.append([str(threads), f"{g_kiln:.1f}", f"{g_numpy:.1f}", f"{g_kiln / g_numpy:.2f}x",
                     f"{peak:.1f}" if peak else "n/a", f"{g_kiln / peak:.0%}" if peak else "n/a",
                     f"{g_numpy / peak:.0%}" if peak else "n/a"])
    print(f"GEMM {N}x{N}x{N} float32, target {rt.target}")
    print(f"register tile {mr} x {nr} ({target.num_vector_registers} vector registers of "
          f"{target.vector_lanes('float32')} float32 lanes), {panels} strips of B per pass over "
          f"A (L2: {target.l2_cache_bytes} bytes); load average before {load_before}, after "
          f"{load_average()} on {os.cpu_count()} CPUs")
    print_table("Hand-scheduled GEMM", ["threads", "kiln GFLOP/s", "NumPy GFLOP/s",
                                       "kiln/NumPy", "FMA peak GFLOP/s", "kiln % peak",
                                       "NumPy % peak"], rows)


if __name__ == "__main__":
    main()
