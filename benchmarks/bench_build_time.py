"""What a tuning candidate costs before it is measured: for random candidates of the design space
(the same seeds every run), the time to sample one (search side) and to build it with
kiln.build, split by phase (lowering, LLVM IR generation, LLVM optimization, machine code, JIT
linking), as medians per workload. The build is also given in CPU time of the building thread,
which other work on the machine changes less than wall time.

With --against TARGET, each candidate is also built for a second target string (e.g. "llvm
-opt-level=2") and both builds are timed on the same arguments in alternating rounds, so that
a cheaper build can be weighed against the speed of the code it makes.

Run: python3 benchmarks/bench_build_time.py [--candidates 24] [--only gemm64,softmax]
     [--target llvm] [--against "llvm -opt-level=2"]   (prints tables; never fails on time)
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

import kiln
from kiln import autotune as ms
from kiln import te

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_tune import batch_matmul, conv2d, gemm, rms_norm, softmax  # noqa: E402
from common import kiln_seconds, load_average, print_table  # noqa: E402

WORKLOADS = {
    "gemm64": lambda: gemm(64),
    "gemm1024": lambda: gemm(1024),
    "batch_matmul": batch_matmul,
    "conv2d": conv2d,
    "softmax": lambda: softmax(512, 1024),
    "rms_norm": lambda: rms_norm(512, 1024),
}

PHASES = ["lower_ms", "codegen_ms", "optimize_ms", "emit_ms", "link_ms"]


def sample_candidates(func, target, count):
    """(candidates, median ms to sample one): random candidates of every sketch in turn."""
    space = ms.SpaceGenerator(func, target)
    sketches = len(space.sketches)
    candidates, sample_ms = [], []
    seed = 0
    while len(candidates) < count and seed < 50 * count:
        start = time.perf_counter()
        candidate = space.sample(seed % sketches, seed=seed)
        sample_ms.append((time.perf_counter() - start) * 1e3)
        seed += 1
        if candidate is not None:
            candidates.append(candidate)
    return candidates, statistics.median(sample_ms)


def timed_build(mod, target):
    """(module, wall ms, CPU ms of this thread, phase timings)."""
    start, cpu_start = time.perf_counter(), time.thread_time()
    rt = kiln.build(mod, target=target)
    cpu_ms = (time.thread_time() - cpu_start) * 1e3
    wall_ms = (time.perf_counter() - start) * 1e3
    return rt, wall_ms, cpu_ms, rt.build_timings


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=24)
    parser.add_argument("--only", default="")
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--against", default="",
                        help="a second target string; its builds and run times are compared")
    parser.add_argument("--rounds", type=int, default=3, help="alternating timing rounds")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(WORKLOADS)
    print(f"load average before: {load_average()}; target {args.target!r}"
          + (f" against {args.against!r}" if args.against else ""))
    kiln.build(gemm(64)["func"], target=args.target)  # the first build loads more of LLVM

    rows, compare_rows = [], []
    for name in names:
        spec = WORKLOADS[name]()
        candidates, sample_ms = sample_candidates(spec["func"], args.target, args.candidates)
        builds = []
        for candidate in candidates:
            first = timed_build(candidate.mod, args.target)
            second = timed_build(candidate.mod, args.against) if args.against else None
            builds.append((first, second))
        phases = [statistics.median(b[0][3][p] for b in builds) for p in PHASES]
        rows.append([name, len(candidates), f"{sample_ms:.1f}"]
                    + [f"{p:.1f}" for p in phases]
                    + [f"{statistics.median(b[0][1] for b in builds):.1f}",
                       f"{statistics.median(b[0][2] for b in builds):.1f}",
                       f"{max(b[0][2] for b in builds):.0f}"])
        if not args.against:
            continue
        ratios, fastest = [], (float("inf"), 0.0)
        for (rt_a, *_), (rt_b, *_) in builds:
            times_a, times_b = [], []
            for _ in range(args.rounds):
                times_a.append(kiln_seconds(rt_a, [np.copy(a) for a in spec["args"]], repeat=3))
                times_b.append(kiln_seconds(rt_b, [np.copy(a) for a in spec["args"]], repeat=3))
            ratios.append(statistics.median(times_b) / statistics.median(times_a))
            fastest = min(fastest, (statistics.median(times_a), ratios[-1]))
        compare_rows.append([
            name, len(builds),
            f"{statistics.median(b[0][2] for b in builds):.1f}",
            f"{statistics.median(b[1][2] for b in builds):.1f}",
            f"{statistics.median(ratios):.3f}", f"{min(ratios):.3f}", f"{max(ratios):.3f}",
            f"{fastest[0] * 1e3:.3f}", f"{fastest[1]:.3f}"])

    print_table("Per candidate (medians; ms)",
                ["workload", "candidates", "sample"] + [p[:-3] for p in PHASES]
                + ["build wall", "build CPU", "max CPU"], rows)
    if compare_rows:
        print_table(f"{args.against!r} against {args.target!r}: build CPU ms and run time ratio "
                    "(second / first, per candidate)",
                    ["workload", "candidates", "CPU first", "CPU second", "median ratio",
                     "min ratio", "max ratio", "fastest ms", "its ratio"], compare_rows)
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    main()
