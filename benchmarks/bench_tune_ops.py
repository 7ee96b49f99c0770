"""The auto-tuner over a survey of operators beyond bench_tune.py's: layout changes, a
matrix-vector product, poolings, a depthwise and a strided convolution, a dense layer, attention
and reductions along other axes than the last. Each is tuned from its bare tensor expression
with a small budget (64 trials by default) into one database, built with
kiln.build(database=...), checked against PyTorch CPU and timed against it and against
topi.default_schedule (what kiln builds without tuning) in alternating rounds of one run.
GB/s is the bytes of the arguments over the time: what a memory-bound operator moves at least.

Run: python3 benchmarks/bench_tune_ops.py [--trials 64] [--only transpose,gemv]
     [--work-dir bench_tune_ops_work] [--rounds 3] [--repeat 7]
PyTorch is required (`pip install torch`, from PyPI, for the benchmarks only). A work dir that
exists resumes the tuning it holds.
"""
import argparse
import os
import sys
import time

import numpy as np

import kiln
from kiln import autotune as ms
from kiln import te, topi

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (chosen_workloads, kiln_seconds, load_average,  # noqa: E402
                    median_seconds, print_table)


def transpose(n=2048):
    x = te.placeholder((n, n), "float32", name="X")
    t = te.compute((n, n), lambda i, j: x[j, i], name="T")
    return [x, t], lambda torch, a: a.t().contiguous()


def nchw_to_nhwc(c=64, h=112, w=112):
    x = te.placeholder((1, c, h, w), "float32", name="X")
    t = te.compute((1, h, w, c), lambda b, y, z, f: x[b, f, y, z], name="T")
    return [x, t], lambda torch, a: a.permute(0, 2, 3, 1).contiguous()


def gemv(n=4096):
    a = te.placeholder((n, n), "float32", name="A")
    v = te.placeholder((n,), "float32", name="v")
    r = te.reduce_axis((0, n), name="r")
    y = te.compute((n,), lambda i: te.sum(a[i, r] * v[r], axis=r), name="y")
    return [a, v, y], lambda torch, m, x: torch.mv(m, x)


def dense_one_token(n=4096):
    # A decode step's projection: one token times a weight laid out [out, in].
    x = te.placeholder((1, n), "float32", name="X")
    w = te.placeholder((n, n), "float32", name="W")
    k = te.reduce_axis((0, n), name="k")
    y = te.compute((1, n), lambda i, j: te.sum(x[i, k] * w[j, k], axis=k), name="Y")
    return [x, w, y], lambda torch, a, b: a @ b.t()


def dense(m=128, n=1024):
    x = te.placeholder((m, n), "float32", name="X")
    w = te.placeholder((n, n), "float32", name="W")
    k = te.reduce_axis((0, n), name="k")
    y = te.compute((m, n), lambda i, j: te.sum(x[i, k] * w[j, k], axis=k), name="Y")
    return [x, w, y], lambda torch, a, b: a @ b.t()


def max_pool(c=64, h=112):
    x = te.placeholder((1, c, h, h), "float32", name="X")
    y = topi.nn.pool2d(x, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max")
    return [x, y], lambda torch, a: torch.nn.functional.max_pool2d(a, 3, 2, 1)


def global_avg_pool(c=512, h=28):
    x = te.placeholder((1, c, h, h), "float32", name="X")
    return [x, topi.nn.global_pool(x, "avg")], \
        lambda torch, a: torch.nn.functional.adaptive_avg_pool2d(a, 1)


def depthwise_conv2d(c=128, h=56):
    x = te.placeholder((1, c, h, h), "float32", name="X")
    k = te.placeholder((c, 1, 3, 3), "float32", name="K")
    return [x, k, topi.nn.depthwise_conv2d_nchw(x, k, 1, 1, 1)], \
        lambda torch, a, b: torch.nn.functional.conv2d(a, b, padding=1, groups=c)


def conv2d_stride2(c=64, f=128, h=56):
    x = te.placeholder((1, c, h, h), "float32", name="X")
    k = te.placeholder((f, c, 3, 3), "float32", name="K")
    return [x, k, topi.nn.conv2d_nchw(x, k, 2, 1, 1)], \
        lambda torch, a, b: torch.nn.functional.conv2d(a, b, stride=2, padding=1)


def attention(heads=8, seq=128, dim=64):
    q, k, v = (te.placeholder((1, heads, seq, dim), "float32", name=n) for n in "QKV")
    return [q, k, v, topi.nn.scaled_dot_product_attention(q, k, v)], \
        lambda torch, a, b, c: torch.nn.functional.scaled_dot_product_attention(a, b, c)


def column_sum(n=4096):
    x = te.placeholder((n, n), "float32", name="X")
    return [x, topi.sum(x, axis=0)], lambda torch, a: torch.sum(a, 0)


WORKLOADS = {
    "transpose": (transpose, "transpose 2048x2048"),
    "nchw_to_nhwc": (nchw_to_nhwc, "NCHW->NHWC 64x112x112"),
    "gemv": (gemv, "matrix-vector 4096x4096"),
    "dense_one_token": (dense_one_token, "dense 1x4096x4096 (W [out, in])"),
    "dense": (dense, "dense 128x1024x1024 (W [out, in])"),
    "max_pool": (max_pool, "max pool 3x3/2 64x112x112"),
    "global_avg_pool": (global_avg_pool, "global avg pool 512x28x28"),
    "depthwise_conv2d": (depthwise_conv2d, "depthwise conv 3x3 128x56x56"),
    "conv2d_stride2": (conv2d_stride2, "conv2d 3x3/2 64->128 56x56"),
    "attention": (attention, "attention 8 heads 128x64"),
    "column_sum": (column_sum, "sum over rows 4096x4096"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--work-dir", default="bench_tune_ops_work")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    import torch
    names = chosen_workloads(parser, args.only, WORKLOADS)
    threads = kiln.runtime.get_num_threads()
    torch.set_num_threads(threads)
    os.makedirs(args.work_dir, exist_ok=True)
    db = ms.Database(os.path.join(args.work_dir, "tuning.db"))
    load_before = load_average()
    rng = np.random.default_rng(0)
    rows = []
    for name in names:
        make, title = WORKLOADS[name]
        tensors, reference = make()
        func = te.create_prim_func(tensors)
        start = time.perf_counter()
        (result,) = ms.tune_tasks([(name, func)], work_dir=os.path.join(args.work_dir, name),
                                  database=db, max_trials_global=args.trials, progress=False)
        wall = time.perf_counter() - start
        args_np = [rng.standard_normal([int(d) for d in t.shape]).astype(t.dtype)
                   for t in tensors[:-1]]
        args_np.append(np.zeros([int(d) for d in tensors[-1].shape], tensors[-1].dtype))
        tuned = kiln.build(func, database=db)
        untuned = kiln.build(topi.default_schedule(func, "llvm").mod)
        inputs = [torch.from_numpy(a) for a in args_np[:-1]]
        with torch.no_grad():
            expected = reference(torch, *inputs).numpy().reshape(args_np[-1].shape)
        out = [a.copy() for a in args_np]
        tuned(*out)
        np.testing.assert_allclose(out[-1], expected, rtol=1e-3, atol=1e-3)
        times = {"tuned": [], "default": [], "torch": []}
        for _ in range(args.rounds):
            times["tuned"].append(kiln_seconds(tuned, out, repeat=args.repeat))
            times["default"].append(kiln_seconds(untuned, out, repeat=args.repeat))
            with torch.no_grad():
                times["torch"].append(median_seconds(lambda: reference(torch, *inputs),
                                                     repeat=args.repeat))
        best = {k: min(v) for k, v in times.items()}
        nbytes = sum(a.nbytes for a in args_np)
        rows.append([title, str(result.trials_this_run), f"{wall:.0f}",
                     f"{best['tuned'] * 1e3:.3f}", f"{nbytes / best['tuned'] / 1e9:.1f}",
                     f"{best['default'] / best['tuned']:.2f}x",
                     f"{best['torch'] / best['tuned']:.2f}x"])
        print_table("so far", HEADER, rows)
    print(f"\nCPU {ms.cpu_model_name()}, {threads} threads; PyTorch {torch.__version__}; load "
          f"average before {load_before}, after {load_average()}")
    print_table(f"Tuned from the bare TE ({args.trials} trials each), one run: the fastest "
                "round's median", HEADER, rows)


HEADER = ["workload", "trials", "tune s", "kiln ms", "GB/s", "vs default", "vs PyTorch"]

if __name__ == "__main__":
    main()
