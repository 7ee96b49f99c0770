"""How well the tuner's GPU prior ranks candidates, on a CUDA device: random candidates of the
tuner's GPU space for GEMM 1024^3 (float32; float16 accumulated in float32 and int8 in int32,
whose spaces also hold the tensor-core sketch), the ResNet-50 3x3 conv2d and an attention batch
matmul, each
checked against NumPy and timed in alternating rounds, and ranked before any measurement by
the GPU prior (kiln.autotune.estimate_prior with the GPU target) and, for comparison, by the
CPU model applied to the same lowered programs (what ranked GPU candidates before the GPU
prior existed).

Per workload the table gives the candidates, the median time of the fastest (and of the
fastest of each sketch), the rank
correlation (Spearman) of each model's predicted throughput with the measured speed, and the
top-k recall (k a quarter of the candidates: how many of the k predicted fastest are among the
k measured fastest). The second table puts the prior's cycles of topi.default_schedule's kernel
of each workload, at the SM clock (nvidia-smi's highest, or --clock-mhz), beside its measured
time.

Run: python3 benchmarks/bench_gpu_prior.py [--only gemm] [--candidates 24] [--rounds 3]
     [--quick] [--opencl] [--clock-mhz 1980]
Without a CUDA device it says why and stops; with --opencl it then checks the candidates on
OpenCL (kiln.opencl(0), PoCL on the CPU here): that shows the benchmark works, and its times
and correlations are no performance figure. --quick uses small sizes.
"""
import os
import statistics
import subprocess
import sys

import numpy as np

import kiln
from kiln import autotune as ms
from kiln import te, tir, topi

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpu_topi import batch_matmul, conv2d, gemm, run_checked, uniform  # noqa: E402
from common import (chosen_workloads, gpu_candidates_parser,  # noqa: E402
                    gpu_target_and_device, load_average, print_table, spearman)


def gemm_tensor_core(quick, dtype, acc_dtype):
    """A (n x n) @ B^T (B as [n, n]) of dtype accumulated in acc_dtype: the tensor cores' kind
    of product (float16 into float32: m16n8k16; int8 into int32: m16n8k32, checked exactly)."""
    n = 128 if quick else 1024
    a = te.placeholder((n, n), dtype, name="A")
    b = te.placeholder((n, n), dtype, name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(
        a[i, k].astype(acc_dtype) * b[j, k].astype(acc_dtype), axis=k), name="C")
    if dtype == "int8":
        rng = np.random.default_rng(0)
        inputs = [rng.integers(-128, 127, (n, n), endpoint=True, dtype="int8") for _ in range(2)]
        exact = np.int64
    else:
        inputs = [uniform(n, n).astype(dtype), uniform(n, n).astype(dtype)]
        exact = np.float64
    return ([a, b, c], inputs,
            lambda x, y: (x.astype(exact) @ y.astype(exact).T).astype(acc_dtype), None, None)


WORKLOADS = {"gemm": (gemm, "GEMM 1024^3 fp32"),
             "gemm_fp16": (lambda quick: gemm_tensor_core(quick, "float16", "float32"),
                           "GEMM 1024^3 fp16, fp32 accumulation"),
             "gemm_int8": (lambda quick: gemm_tensor_core(quick, "int8", "int32"),
                           "GEMM 1024^3 int8, int32 accumulation"),
             "conv2d": (conv2d, "conv2d 3x3 56x56 64->64"),
             "batch_matmul": (batch_matmul, "batch matmul 16x128x128x64")}


def candidates(func, target, count):
    """Up to count distinct random candidates of the GPU space."""
    space = ms.SpaceGenerator(func, target)
    out, seen = [], set()
    for seed in range(20 * count):
        candidate = space.sample(seed % len(space.sketches), seed=seed)
        if candidate is None or str(candidate.trace) in seen:
            continue
        seen.add(str(candidate.trace))
        out.append(candidate)
        if len(out) == count:
            break
    return out


def clock_hz(clock_mhz):
    """The SM clock in Hz: clock_mhz (--clock-mhz) when given, else the first GPU's highest SM
    clock as nvidia-smi reports it; None when neither is known."""
    if clock_mhz:
        return clock_mhz * 1e6
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=30, check=True).stdout.split()
        return float(out[0]) * 1e6
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def main():
    parser = gpu_candidates_parser(__doc__.splitlines()[0], 24, "candidates per workload", 3)
    parser.add_argument("--clock-mhz", type=float, default=0,
                        help="the SM clock the prior's cycles are converted at (default: "
                             "nvidia-smi's highest SM clock)")
    args = parser.parse_args()
    names = chosen_workloads(parser, args.only, WORKLOADS)
    chosen = gpu_target_and_device(kiln, args.opencl, "the prior's benchmark")
    if chosen is None:
        return
    target, device = chosen
    cpu = kiln.target.Target("llvm")

    rows, kernels = [], []
    for name in names:
        make, title = WORKLOADS[name]
        tensors, inputs, reference, _, check_rows = make(args.quick)
        func = te.create_prim_func(tensors)
        found = candidates(func, str(target), args.candidates)
        lowered = [tir.lower(c.mod["main"]) for c in found]
        gpu_prior = [ms.estimate_prior(f, target).throughput for f in lowered]
        cpu_prior = [ms.estimate_prior(f, cpu).throughput for f in lowered]
        built = [kiln.build(c.mod, target=target) for c in found]
        times = [[] for _ in found]
        for _ in range(args.rounds):
            for i, rt in enumerate(built):
                times[i].append(run_checked(rt, tensors, inputs, reference, check_rows, device,
                                            args.repeat))
        seconds = [statistics.median(t) for t in times]
        speed = [1 / s for s in seconds]
        k = max(1, len(found) // 4)
        label = title if not args.quick else f"{name} (--quick)"
        per_sketch = {}
        for candidate, s in zip(found, seconds):
            per_sketch[candidate.sketch] = min(s, per_sketch.get(candidate.sketch, s))
        by_sketch = " / ".join(f"{per_sketch[i] * 1e3:.4f}" for i in sorted(per_sketch))
        rows.append([label, str(len(found)), f"{min(seconds) * 1e3:.4f}", by_sketch,
                     f"{spearman(gpu_prior, speed):.2f}", f"{spearman(cpu_prior, speed):.2f}",
                     f"{ms.top_k_recall(gpu_prior, seconds, k):.2f}",
                     f"{ms.top_k_recall(cpu_prior, seconds, k):.2f}"])
        print("  ".join(rows[-1]), flush=True)
        default = topi.default_schedule(func, target)
        rt = kiln.build(default.mod, target=target)
        measured = statistics.median(
            run_checked(rt, tensors, inputs, reference, check_rows, device, args.repeat)
            for _ in range(args.rounds))
        cycles = ms.estimate_prior(tir.lower(default.mod["main"]), target).cycles
        hz = clock_hz(args.clock_mhz)
        kernels.append([label, f"{measured * 1e3:.4f}",
                        f"{cycles / hz * 1e3:.4f}" if hz else "n/a",
                        f"{cycles / hz / measured:.2f}" if hz else "n/a"])

    print(f"\nTarget {target}, device {device}; {args.rounds} rounds of {args.repeat} repeats; "
          f"load average {load_average()}")
    note = "" if target.kind == "cuda" else " (OpenCL check: NOT a performance figure)"
    print_table("Random candidates of the GPU space ranked by the GPU prior and by the CPU "
                "model" + note,
                ["workload", "candidates", "fastest ms", "fastest per sketch ms",
                 "Spearman GPU prior",
                 "Spearman CPU model", "top-k recall GPU prior", "top-k recall CPU model"], rows)
    print_table("topi.default_schedule's kernels: the prior's time at the SM clock" + note,
                ["workload", "measured ms", "prior ms", "prior / measured"], kernels)


if __name__ == "__main__":
    main()
