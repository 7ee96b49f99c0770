"""GPU schedules written by hand, built for "cuda" and timed on a CUDA device against PyTorch
(cuBLAS for the GEMM): a GEMM whose threads each compute a register tile, and softmax, RMSNorm
and LayerNorm with one thread block per row whose row reductions are cross-thread reductions.
Each result is checked against NumPy before it is timed.

Workloads: GEMM 2048^3 float32 (128x128 tiles of C per block, 16x16 threads, each computing an
8x8 register tile, the A and B tiles of each k step staged in shared memory), softmax, RMSNorm
and LayerNorm of 4096x4096 float32 (256 threads per row). The table gives median times, GFLOP/s
(GEMM) or GB/s (the bytes each operator must read and write once) and the ratio to PyTorch.

Run: python3 benchmarks/bench_gpu.py [--only gemm,softmax] [--repeat 20] [--quick] [--opencl]
Without a CUDA device it says why and stops; with --opencl it then runs the same schedules
through OpenCL (kiln.opencl(0), PoCL on the CPU here) and checks them against NumPy: that shows
the schedules run, and its times are no performance figure. --quick uses small sizes.
PyTorch is optional (`pip install torch`, for the benchmarks only); its column reads n/a
without it or without a CUDA build of it.
"""
import argparse
import os
import sys
import time

import numpy as np

import kiln
from kiln import te, tir

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (chosen_workloads, gpu_target_and_device, load_average,  # noqa: E402
                    print_table, torch_cuda_seconds)

try:
    import torch
except ImportError:  # the column reads n/a
    torch = None


# --- The operators: a PrimFunc and its GPU schedule, NumPy arguments, the NumPy and PyTorch
# versions, and the work (flops or bytes) that the rate column is computed from.

def gemm(n=2048, block_tile=128, threads=16, k_tile=8, lanes=4):
    """C = A @ B. Each thread block computes a block_tile x block_tile tile of C with
    threads x threads threads; each thread keeps an 8 x 8 register tile of C (scope "local") as
    2 x 2 virtual threads of lanes x lanes, interleaved so that a warp's threads read
    neighbouring columns of the shared B tile. For each step of k_tile along k, the block's
    threads copy the A and B tiles into shared memory together, `lanes` floats at a time
    (float4 loads of global memory), and every thread then reads its rows of A and `lanes`
    consecutive columns of B at a time from there (ld.shared.v4: shared arrays are 16-byte
    aligned)."""
    a = te.placeholder((n, n), "float32", name="A")
    b = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    func = te.create_prim_func([a, b, c])

    sch = tir.Schedule(func)
    block = sch.get_block("C")
    i, j, r = sch.get_loops(block)
    virtual = block_tile // (threads * lanes)
    bi, vi, ty, ii = sch.split(i, factors=[None, virtual, threads, lanes])
    bj, vj, tx, ji = sch.split(j, factors=[None, virtual, threads, lanes])
    ko, ki = sch.split(r, factors=[None, k_tile])
    sch.reorder(bi, bj, vi, vj, ty, tx, ko, ki, ii, ji)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(vi, "vthread.y")
    sch.bind(vj, "vthread.x")
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")
    # The register tile: C accumulates in a local copy, written back after the k loop.
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, tx)
    # The shared tiles of one k step, copied by all the block's threads, `lanes` at a time.
    for index in (0, 1):
        shared = sch.cache_read(block, index, "shared")
        sch.compute_at(shared, ko)
        fused = sch.fuse(*sch.get_loops(shared)[-2:])
        _, copy_y, copy_x, vector = sch.split(fused, factors=[None, threads, threads, lanes])
        sch.bind(copy_y, "threadIdx.y")
        sch.bind(copy_x, "threadIdx.x")
        sch.vectorize(vector)
    init = sch.decompose_reduction(block, ko)
    # Unrolled, the register tile is indexed by constants and stays in registers.
    for loop in [ki, ii, ji] + sch.get_loops(init)[-2:] + sch.get_loops(local)[-2:]:
        sch.unroll(loop)

    rng = np.random.default_rng(0)
    args = [rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32),
            np.zeros((n, n), np.float32)]
    return dict(func=func, mod=sch.mod, args=args, out=2, numpy=lambda x, y: x @ y,
                torch=lambda x, y: torch.matmul(x, y), work=2 * n ** 3, unit="GFLOP/s")


def bind_rows(sch, out_block, reductions, threads):
    """One thread block per row: the row loop of out_block goes to blockIdx.x, its columns are
    shared by `threads` threads; each reduction block is computed per row, in shared memory,
    with its reduce loop split over the same threads (a cross-thread reduction)."""
    i, j = sch.get_loops(out_block)
    sch.bind(i, "blockIdx.x")
    _, tx = sch.split(j, factors=[None, threads])
    sch.bind(tx, "threadIdx.x")
    for name in reductions:
        block = sch.get_block(name)
        sch.compute_at(block, i)
        sch.set_scope(block, 0, "shared")
        _, r = sch.get_loops(block)
        _, rx = sch.split(r, factors=[None, threads])
        sch.bind(rx, "threadIdx.x")


def softmax(rows=4096, cols=4096, threads=256):
    x = te.placeholder((rows, cols), "float32", name="x")
    j = te.reduce_axis((0, cols), name="j")
    top = te.compute((rows,), lambda i: te.max(x[i, j], axis=j), name="row_max")
    e = te.compute((rows, cols), lambda i, c: te.exp(x[i, c] - top[i]), name="exp")
    j2 = te.reduce_axis((0, cols), name="j2")
    total = te.compute((rows,), lambda i: te.sum(e[i, j2], axis=j2), name="row_sum")
    out = te.compute((rows, cols), lambda i, c: e[i, c] / total[i], name="softmax")
    func = te.create_prim_func([x, out])

    sch = tir.Schedule(func)
    sch.compute_inline(sch.get_block("exp"))
    # The consumer first: compute_at needs the row loop that bind_rows binds.
    bind_rows(sch, sch.get_block("softmax"), ["row_sum", "row_max"], threads)

    args = [np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32),
            np.zeros((rows, cols), np.float32)]

    def softmax_numpy(v):
        ex = np.exp(v - v.max(axis=1, keepdims=True))
        return ex / ex.sum(axis=1, keepdims=True)

    return dict(func=func, mod=sch.mod, args=args, out=1, numpy=softmax_numpy,
                torch=lambda v: torch.softmax(v, dim=1), work=2 * rows * cols * 4, unit="GB/s")


def rms_norm(rows=4096, cols=4096, threads=256, eps=1e-6):
    x = te.placeholder((rows, cols), "float32", name="x")
    weight = te.placeholder((cols,), "float32", name="weight")
    j = te.reduce_axis((0, cols), name="j")
    squares = te.compute((rows,), lambda i: te.sum(x[i, j] * x[i, j], axis=j), name="sum_sq")
    out = te.compute(
        (rows, cols),
        lambda i, c: x[i, c] * te.rsqrt(squares[i] / cols + te.const(eps, "float32"))
        * weight[c], name="rms_norm")
    func = te.create_prim_func([x, weight, out])

    sch = tir.Schedule(func)
    bind_rows(sch, sch.get_block("rms_norm"), ["sum_sq"], threads)

    rng = np.random.default_rng(0)
    args = [rng.standard_normal((rows, cols), dtype=np.float32),
            rng.standard_normal((cols,), dtype=np.float32), np.zeros((rows, cols), np.float32)]

    def rms_numpy(v, g):
        return v / np.sqrt((v * v).mean(axis=1, keepdims=True) + eps) * g

    def rms_torch(v, g):
        if hasattr(torch.nn.functional, "rms_norm"):
            return torch.nn.functional.rms_norm(v, (cols,), g, eps)
        return v * torch.rsqrt((v * v).mean(dim=1, keepdim=True) + eps) * g

    return dict(func=func, mod=sch.mod, args=args, out=2, numpy=rms_numpy, torch=rms_torch,
                work=(2 * rows * cols + cols) * 4, unit="GB/s")


def layer_norm(rows=4096, cols=4096, threads=256, eps=1e-5):
    x = te.placeholder((rows, cols), "float32", name="x")
    gamma = te.placeholder((cols,), "float32", name="gamma")
    beta = te.placeholder((cols,), "float32", name="beta")
    j = te.reduce_axis((0, cols), name="j")
    total = te.compute((rows,), lambda i: te.sum(x[i, j], axis=j), name="row_sum")
    j2 = te.reduce_axis((0, cols), name="j2")
    centered = te.compute(
        (rows,), lambda i: te.sum((x[i, j2] - total[i] / cols) * (x[i, j2] - total[i] / cols),
                                  axis=j2), name="centered_sq")
    out = te.compute(
        (rows, cols),
        lambda i, c: (x[i, c] - total[i] / cols)
        * te.rsqrt(centered[i] / cols + te.const(eps, "float32")) * gamma[c] + beta[c],
        name="layer_norm")
    func = te.create_prim_func([x, gamma, beta, out])

    sch = tir.Schedule(func)
    bind_rows(sch, sch.get_block("layer_norm"), ["centered_sq", "row_sum"], threads)

    rng = np.random.default_rng(0)
    args = [rng.standard_normal((rows, cols), dtype=np.float32),
            rng.standard_normal((cols,), dtype=np.float32),
            rng.standard_normal((cols,), dtype=np.float32), np.zeros((rows, cols), np.float32)]

    def ln_numpy(v, g, b):
        mu = v.mean(axis=1, keepdims=True)
        return (v - mu) / np.sqrt(v.var(axis=1, keepdims=True) + eps) * g + b

    return dict(func=func, mod=sch.mod, args=args, out=3, numpy=ln_numpy,
                torch=lambda v, g, b: torch.nn.functional.layer_norm(v, (cols,), g, b, eps),
                work=(2 * rows * cols + 2 * cols) * 4, unit="GB/s")


# name -> (make, full-size title, --quick keyword arguments)
WORKLOADS = {
    "gemm": (gemm, "GEMM 2048^3 fp32", dict(n=256)),
    "softmax": (softmax, "softmax 4096x4096", dict(rows=64, cols=1000)),
    "rms_norm": (rms_norm, "RMSNorm 4096x4096", dict(rows=64, cols=1000)),
    "layer_norm": (layer_norm, "LayerNorm 4096x4096", dict(rows=64, cols=1000)),
}


def run_checked(spec, target, device, repeat):
    """Builds spec's schedule for target, runs it on device against NumPy, and returns the
    median seconds per call (time_evaluator: the device is synchronized before the clock
    stops) and the build seconds."""
    start = time.perf_counter()
    rt = kiln.build(spec["mod"], target=target)
    build_seconds = time.perf_counter() - start
    arrays = [kiln.nd.array(a, device=device) for a in spec["args"]]
    rt["main"](*arrays)
    expected = spec["numpy"](*spec["args"][:spec["out"]])
    tolerance = 1e-3 if spec["unit"] == "GFLOP/s" else 1e-4
    np.testing.assert_allclose(arrays[spec["out"]].numpy(), expected, rtol=tolerance,
                               atol=tolerance)
    timer = rt.time_evaluator("main", device, number=3, repeat=repeat)
    return timer(*arrays).median, build_seconds


def rate(spec, seconds):
    scale = 1e9
    return f"{spec['work'] / seconds / scale:.1f} {spec['unit']}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--opencl", action="store_true",
                        help="without a CUDA device, check the schedules on OpenCL instead")
    args = parser.parse_args()
    names = chosen_workloads(parser, args.only, WORKLOADS)

    chosen = gpu_target_and_device(kiln, args.opencl, "the schedules")
    if chosen is None:
        return
    target, device = chosen

    rows = []
    for name in names:
        make, title, quick = WORKLOADS[name]
        spec = make(**quick) if args.quick else make()
        if args.quick:
            title = f"{name} (--quick: {', '.join(f'{k}={v}' for k, v in quick.items())})"
        seconds, build_seconds = run_checked(spec, str(target), device, args.repeat)
        if target.kind == "cuda":
            t_torch = torch_cuda_seconds(torch, spec["torch"], spec["args"][:spec["out"]],
                                         args.repeat)
            rows.append([title, f"{build_seconds:.2f}", f"{seconds * 1e3:.3f}",
                         rate(spec, seconds),
                         f"{t_torch * 1e3:.3f}" if t_torch else "n/a",
                         rate(spec, t_torch) if t_torch else "n/a",
                         f"{t_torch / seconds:.2f}x" if t_torch else "n/a"])
        else:
            rows.append([title, f"{build_seconds:.2f}", "matches NumPy",
                         f"{seconds * 1e3:.3f}"])
    if target.kind == "cuda":
        torch_text = (f"PyTorch {torch.__version__}" if torch is not None
                      else "PyTorch not installed")
        print(f"\nTarget {target}, device {device}; {torch_text}; load average "
              f"{load_average()}")
        print_table("Hand-written GPU schedules against PyTorch (cuBLAS for the GEMM), medians",
                    ["workload", "build s", "kiln ms", "kiln rate", "PyTorch ms", "PyTorch rate",
                     "PyTorch ms / kiln ms"], rows)
    else:
        print_table("OpenCL check on kiln.opencl(0): NOT a performance figure (PoCL runs "
                    "OpenCL on the CPU)", ["workload", "build s", "result", "ms (CPU, not GPU)"],
                    rows)


if __name__ == "__main__":
    main()
