"""The auto-tuner from the bare tensor expression (no hand schedule): each workload is tuned by
kiln.autotune.tune_tasks into one database, built with kiln.build(database=...), checked
against NumPy and timed against NumPy (OpenBLAS) and PyTorch CPU in alternating rounds of one
run, and against the machine's float32 FMA peak (benchmarks/fma_peak.c, measured before and
after the run, the higher counts). The table gives the tuning wall time, the trials, and the
wall time until the search had 90% of its final speed.

Workloads: GEMM 1024^3 float32 (on one thread and on all threads: each thread count is tuned on
its own, its records kept apart by their thread count), GEMM 1001^3 (no vector divides its
columns; on all threads, with the smaller budget), a ResNet-50 3x3 convolution (56x56,
64 -> 64 channels, NCHW, batch 1), a batched matmul of attention shapes, softmax, RMSNorm and
LayerNorm over the last dimension, softmax over rows of 197 (the attention scores of a ViT-B,
12 heads x 197 tokens; no vector divides them; with the smaller budget), a GELU (tanh form; an element-wise chain), and an int8
(u8 x s8 -> s32) matmul.

Run: python3 benchmarks/bench_tune.py [--trials 512] [--small-trials 256] [--only gemm,conv2d]
     [--work-dir bench_tune_work] [--rounds 3] [--repeat 7] [--number 1] [--compare-only]
PyTorch is optional (`pip install torch`, from PyPI, for the benchmarks only); its
column reads n/a without it. A work dir that exists resumes the tuning it holds: its
tuning.db has every workload and thread count; NAME_tTHREADS/ has the cost model and log of each.
"""
import argparse
import math
import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

import kiln
from kiln import autotune as ms
from kiln import te

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gemm import fma_peak  # noqa: E402
from common import (chosen_workloads, conv2d_func, gemm_func, kiln_seconds,  # noqa: E402
                    load_average, median_seconds, numpy_conv2d_nchw, print_table)

try:
    import torch
except ImportError:  # the column reads n/a
    torch = None


# --- The workloads: a PrimFunc, NumPy arguments, the NumPy and PyTorch versions, and flops.

def gemm(n=1024):
    rng = np.random.default_rng(0)
    args = [rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32),
            np.zeros((n, n), np.float32)]
    return dict(func=gemm_func(te, n), args=args, out=2,
                numpy=lambda x, y: x @ y, torch=lambda x, y: torch.matmul(x, y),
                flops=2 * n ** 3)


def conv2d(n=1, c=64, h=56, w=56, f=64, kh=3, kw=3, pad=1):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((n, c, h, w), dtype=np.float32),
            rng.standard_normal((f, c, kh, kw), dtype=np.float32),
            np.zeros((n, f, h, w), np.float32)]
    return dict(func=conv2d_func(te, n, c, h, w, f, kh, kw, pad), args=args, out=2,
                numpy=lambda x, k: numpy_conv2d_nchw(x, k, pad),
                torch=lambda x, k: torch.nn.functional.conv2d(x, k, padding=pad),
                flops=2 * n * f * h * w * c * kh * kw)


def batch_matmul(batch=16, m=128, n=128, k=64):
    # Attention scores: Q [batch, seq, head_dim] x K^T [batch, head_dim, seq].
    a = te.placeholder((batch, m, k), "float32", name="Q")
    b = te.placeholder((batch, k, n), "float32", name="KT")
    r = te.reduce_axis((0, k), name="r")
    c = te.compute((batch, m, n), lambda z, i, j: te.sum(a[z, i, r] * b[z, r, j], axis=r),
                   name="S")
    rng = np.random.default_rng(0)
    args = [rng.random((batch, m, k), dtype=np.float32),
            rng.random((batch, k, n), dtype=np.float32), np.zeros((batch, m, n), np.float32)]
    return dict(func=te.create_prim_func([a, b, c]), args=args, out=2,
                numpy=np.matmul, torch=torch.bmm if torch else None,
                flops=2 * batch * m * n * k)


def softmax(rows=4096, cols=4096):
    x = te.placeholder((rows, cols), "float32", name="x")
    j = te.reduce_axis((0, cols), name="j")
    top = te.compute((rows,), lambda i: te.max(x[i, j], axis=j), name="row_max")
    e = te.compute((rows, cols), lambda i, c: te.exp(x[i, c] - top[i]), name="exp")
    j2 = te.reduce_axis((0, cols), name="j2")
    total = te.compute((rows,), lambda i: te.sum(e[i, j2], axis=j2), name="row_sum")
    out = te.compute((rows, cols), lambda i, c: e[i, c] / total[i], name="softmax")
    args = [np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32),
            np.zeros((rows, cols), np.float32)]

    def softmax_numpy(v):
        ex = np.exp(v - v.max(axis=1, keepdims=True))
        return ex / ex.sum(axis=1, keepdims=True)

    return dict(func=te.create_prim_func([x, out]), args=args, out=1, numpy=softmax_numpy,
                torch=lambda v: torch.softmax(v, dim=1), flops=5 * rows * cols)


def rms_norm(rows=4096, cols=4096, eps=1e-6):
    x = te.placeholder((rows, cols), "float32", name="x")
    weight = te.placeholder((cols,), "float32", name="weight")
    j = te.reduce_axis((0, cols), name="j")
    squares = te.compute((rows,), lambda i: te.sum(x[i, j] * x[i, j], axis=j), name="sum_sq")
    out = te.compute(
        (rows, cols),
        lambda i, c: x[i, c] * te.rsqrt(squares[i] / cols + te.const(eps, "float32"))
        * weight[c], name="rms_norm")
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((rows, cols), dtype=np.float32),
            rng.standard_normal((cols,), dtype=np.float32), np.zeros((rows, cols), np.float32)]

    def rms_numpy(v, g):
        return v / np.sqrt((v * v).mean(axis=1, keepdims=True) + eps) * g

    def rms_torch(v, g):
        if hasattr(torch.nn.functional, "rms_norm"):
            return torch.nn.functional.rms_norm(v, (cols,), g, eps)
        return v * torch.rsqrt((v * v).mean(dim=1, keepdim=True) + eps) * g

    return dict(func=te.create_prim_func([x, weight, out]), args=args, out=2, numpy=rms_numpy,
                torch=rms_torch, flops=4 * rows * cols)


def layer_norm(rows=4096, cols=4096, eps=1e-5):
    x = te.placeholder((rows, cols), "float32", name="x")
    gamma = te.placeholder((cols,), "float32", name="gamma")
    beta = te.placeholder((cols,), "float32", name="beta")
    j = te.reduce_axis((0, cols), name="j")
    # A reduction is a whole compute: the sums are, and their consumers divide.
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
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((rows, cols), dtype=np.float32),
            rng.standard_normal((cols,), dtype=np.float32),
            rng.standard_normal((cols,), dtype=np.float32), np.zeros((rows, cols), np.float32)]

    def ln_numpy(v, g, b):
        mu = v.mean(axis=1, keepdims=True)
        return (v - mu) / np.sqrt(v.var(axis=1, keepdims=True) + eps) * g + b

    return dict(func=te.create_prim_func([x, gamma, beta, out]), args=args, out=3,
                numpy=ln_numpy,
                torch=lambda v, g, b: torch.nn.functional.layer_norm(v, (cols,), g, b, eps),
                flops=7 * rows * cols)


def gelu(rows=4096, cols=4096):
    """GELU (tanh form) over a 4096 x 4096 activation: a fused element-wise chain."""
    x = te.placeholder((rows, cols), "float32", name="x")
    c = math.sqrt(2.0 / math.pi)
    out = te.compute(
        (rows, cols),
        lambda i, j: x[i, j] * 0.5 * (1.0 + te.tanh(c * (x[i, j] + 0.044715 * x[i, j] * x[i, j]
                                                         * x[i, j]))), name="gelu")
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((rows, cols), dtype=np.float32), np.zeros((rows, cols), np.float32)]

    def gelu_numpy(v):
        return v * 0.5 * (1.0 + np.tanh(c * (v + 0.044715 * v ** 3)))

    return dict(func=te.create_prim_func([x, out]), args=args, out=1, numpy=gelu_numpy,
                torch=lambda v: torch.nn.functional.gelu(v, approximate="tanh"),
                flops=8 * rows * cols)


def int8_matmul(n=1024):
    a = te.placeholder((n, n), "uint8", name="A")
    b = te.placeholder((n, n), "int8", name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k].astype("int32") * b[k, j].astype("int32"),
                                               axis=k), name="C")
    rng = np.random.default_rng(0)
    args = [rng.integers(0, 16, (n, n), dtype=np.uint8),
            rng.integers(-8, 9, (n, n), dtype=np.int8), np.zeros((n, n), np.int32)]
    return dict(func=te.create_prim_func([a, b, c]), args=args, out=2,
                numpy=lambda x, y: x.astype(np.int32) @ y.astype(np.int32), torch=None,
                flops=2 * n ** 3, integer=True)


WORKLOADS = {
    "gemm": (gemm, "GEMM 1024^3 fp32"),
    "gemm_odd": (lambda: gemm(1001), "GEMM 1001^3 fp32"),
    "conv2d": (conv2d, "conv2d 3x3 56x56 64->64"),
    "batch_matmul": (batch_matmul, "batch matmul 16x128x128x64"),
    "softmax": (softmax, "softmax 4096x4096"),
    "softmax_odd": (lambda: softmax(12 * 197, 197), "softmax 2364x197"),
    "rms_norm": (rms_norm, "RMSNorm 4096x4096"),
    "layer_norm": (layer_norm, "LayerNorm 4096x4096"),
    "gelu": (gelu, "GELU 4096x4096"),
    "int8_matmul": (int8_matmul, "int8 matmul 1024^3 u8*s8"),
}


def database_path(work_dir):
    """The one database of the benchmark: records of every workload and thread count."""
    return os.path.join(work_dir, "tuning.db")


def tune(name, spec, threads, trials, work_dir):
    """Tunes one workload on `threads` threads (the trials of that thread count already in the
    database count); returns (TaskResult, wall seconds)."""
    start = time.perf_counter()
    (result,) = ms.tune_tasks([(name, spec["func"])], target="llvm",
                              work_dir=os.path.join(work_dir, f"{name}_t{threads}"),
                              database=database_path(work_dir), max_trials_global=trials,
                              num_threads=threads, progress=True)
    return result, time.perf_counter() - start


def settle():
    """Waits for the worker threads of the library timed before to go to sleep: OpenBLAS's and
    OpenMP's threads spin for a while after a call, and on a 2-core machine they take the cores
    the next library's threads need (kiln's conv2d ran at half speed right after NumPy)."""
    time.sleep(0.5)


def compare(spec, work_dir, name, threads, rounds, repeat, number):
    """(kiln, NumPy, PyTorch) seconds, alternating rounds; kiln's result checked. Each of the
    `repeat` timings per round is `number` calls back to back; a library's time is the lowest
    of its rounds' medians: on a shared host a burst of other work can slow a whole round of a
    sub-millisecond kernel twofold (a tuned batch matmul: 0.23, 0.51 and 0.25 ms in three
    rounds), and the fastest round is the one it disturbed least."""
    # kiln.build applies the record measured with the thread count in effect.
    kiln.runtime.set_num_threads(threads)
    db = ms.Database(database_path(work_dir))
    rt = kiln.build(spec["func"], target="llvm", database=db)
    args = [a.copy() for a in spec["args"]]
    rt(*args)
    expected = spec["numpy"](*spec["args"][:spec["out"]])
    if spec.get("integer"):
        np.testing.assert_array_equal(args[spec["out"]], expected)
    else:
        np.testing.assert_allclose(args[spec["out"]], expected, rtol=2e-3, atol=2e-3)
    inputs = spec["args"][:spec["out"]]
    torch_inputs = [torch.from_numpy(a) for a in inputs] if torch and spec["torch"] else None
    runs = {"kiln": [], "numpy": [], "torch": []}
    for _ in range(rounds):
        settle()
        runs["kiln"].append(kiln_seconds(rt, args, repeat=repeat, number=number))
        settle()
        with threadpool_limits(limits=threads):
            runs["numpy"].append(median_seconds(lambda: spec["numpy"](*inputs), repeat=repeat,
                                                number=number))
        if torch_inputs is not None:
            settle()
            torch.set_num_threads(threads)
            with torch.no_grad():
                runs["torch"].append(median_seconds(lambda: spec["torch"](*torch_inputs),
                                                    repeat=repeat, number=number))
    return tuple(min(v) if v else None for v in runs.values())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=512, help="trials of GEMM and conv2d")
    parser.add_argument("--small-trials", type=int, default=256,
                        help="trials of the other workloads")
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--work-dir", default="bench_tune_work")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=1,
                        help="calls per timing (1: each call alone, as one call in a model; "
                        "more: back to back, what a loop of calls costs per call)")
    parser.add_argument("--compare-only", action="store_true",
                        help="no tuning: time what the work dir's databases hold")
    args = parser.parse_args()
    names = chosen_workloads(parser, args.only, WORKLOADS)
    all_threads = kiln.runtime.get_num_threads()
    target = kiln.target.Target("llvm")
    # The peak is measured before and after the run, the higher counts: a shared host that
    # takes a core during one measurement would make the other threads' figures above 100%.
    peaks = {t: fma_peak(t) for t in sorted({1, all_threads})}
    load_before = load_average()
    rows = []
    shares = []  # (row, GFLOP/s, threads, whether a float row) for the final % FMA peak
    for name in names:
        make, title = WORKLOADS[name]
        spec = make()
        for threads in ([1, all_threads] if name == "gemm" and all_threads > 1
                        else [all_threads]):
            trials = args.trials if name in ("gemm", "conv2d") else args.small_trials
            if args.compare_only:
                result, wall = None, None
            else:
                result, wall = tune(name, spec, threads, trials, args.work_dir)
            t_kiln, t_numpy, t_torch = compare(spec, args.work_dir, name, threads, args.rounds,
                                               args.repeat, args.number)
            gflops = spec["flops"] / t_kiln / 1e9
            peak = peaks.get(threads) if not spec.get("integer") else None
            rows.append([title, str(threads),
                         str(result.trials_this_run) if result else "-",
                         f"{wall:.0f}" if result else "-",
                         f"{result.seconds_to_90_percent:.0f}" if result else "-",
                         f"{t_kiln * 1e3:.3f}",
                         f"{gflops:.1f}", f"{t_numpy / t_kiln:.2f}x",
                         f"{t_torch / t_kiln:.2f}x" if t_torch else "n/a",
                         f"{gflops / peak:.0%}" if peak else "n/a",
                         str(result.drift_flags) if result else "-"])
            shares.append((len(rows) - 1, gflops, threads, not spec.get("integer")))
            print_table("so far", HEADER, rows)
    peaks_after = {t: fma_peak(t) for t in peaks}
    for t, after in peaks_after.items():
        if after and (not peaks[t] or after > peaks[t]):
            peaks[t] = after
    if peaks.get(1) and peaks.get(all_threads) and all_threads > 1 and \
            peaks[all_threads] < 0.75 * all_threads * peaks[1]:
        print(f"\nwarning: the FMA peak on {all_threads} threads ({peaks[all_threads]:.1f} "
              f"GFLOP/s) is less than 75% of {all_threads}x the peak on one thread "
              f"({peaks[1]:.1f}): other work took a core during both measurements, and the "
              "% FMA peak of the multi-threaded rows is too high")
    for row, gflops, threads, floating in shares:
        if floating and peaks.get(threads):
            rows[row][9] = f"{gflops / peaks[threads]:.0%}"
    print(f"\nTarget {target}, CPU {ms.cpu_model_name()}, {all_threads} threads; FMA peak "
          + ", ".join(f"{v:.1f} GFLOP/s on {t} thread(s)" for t, v in peaks.items() if v)
          + f"; PyTorch {torch.__version__ if torch else 'not installed'}; load average before "
          f"{load_before}, after {load_average()}")
    print_table("Tuned from the bare TE (kiln.autotune), one run: the fastest round's median "
                "per library", HEADER, rows)


HEADER = ["workload", "threads", "trials", "tune s", "s to 90%", "kiln ms", "GFLOP/s",
          "vs NumPy", "vs PyTorch", "% FMA peak", "drift"]

if __name__ == "__main__":
    main()
