"""topi operators on a CUDA device with no hand-written schedule: topi.default_schedule, and
optionally a short tuning run (kiln.autotune.tune_tir on the device), each result checked
against NumPy and timed against PyTorch (cuBLAS and cuDNN for the products).

Workloads: GEMM 1024^3 float32, a ResNet-50 3x3 conv2d (56x56, 64 -> 64, NCHW), batch matmul of
attention shapes (16 x 128 x 128 x 64), softmax, RMSNorm and LayerNorm of 4096 x 4096 float32,
GELU, an element-wise add and a row sum of 4096 x 4096. The table gives median times of the
default schedule and, with --trials N (N > 0), of the tuned one, with the tuning's wall time, and
the ratio PyTorch ms / kiln ms (above 1: kiln is faster).

Run: python3 benchmarks/bench_gpu_topi.py [--only gemm,softmax] [--trials 64] [--repeat 15]
     [--work-dir bench_gpu_topi_work] [--quick] [--opencl]
Without a CUDA device it says why and stops; with --opencl it then builds the default schedules
for OpenCL (kiln.opencl(0), PoCL on the CPU here) and checks them against NumPy: that shows the
schedules run, and its times are no performance figure. --quick uses small sizes.
PyTorch is optional (`pip install torch`, for the benchmarks only); its columns read n/a
without a CUDA build of it.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

import kiln
from kiln import autotune as ms
from kiln import te, topi

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (chosen_workloads, gpu_target_and_device, load_average,  # noqa: E402
                    numpy_conv2d_nchw, print_table, torch_cuda_seconds)

try:
    import torch
except ImportError:  # the PyTorch columns read n/a
    torch = None

RNG = np.random.default_rng(0)


def uniform(*shape):
    return RNG.uniform(-1, 1, size=shape).astype("float32")


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x.astype("float64") / math.sqrt(2.0)))


def tf(name):
    """A PyTorch function by dotted name under torch.nn.functional, or None without torch."""
    return None if torch is None else getattr(torch.nn.functional, name)


# --- The workloads: name -> function(quick) returning (te tensors, NumPy inputs, NumPy reference
# on the inputs (or on their first rows: check_rows), PyTorch function or None, check_rows).

def gemm(quick):
    n = 128 if quick else 1024
    a = te.placeholder((n, n), "float32", name="A")
    b = te.placeholder((n, n), "float32", name="B")
    return ([a, b, topi.nn.matmul(a, b)], [uniform(n, n), uniform(n, n)],
            lambda x, y: x.astype("float64") @ y, lambda x, y: x @ y, None)


def conv2d(quick):
    c, size = (16, 14) if quick else (64, 56)
    x = te.placeholder((1, c, size, size), "float32", name="I")
    w = te.placeholder((c, c, 3, 3), "float32", name="W")
    return ([x, w, topi.nn.conv2d_nchw(x, w, 1, 1, 1)],
            [uniform(1, c, size, size), uniform(c, c, 3, 3)],
            lambda p, q: numpy_conv2d_nchw(p.astype("float64"), q.astype("float64"), 1),
            None if torch is None else (lambda p, q: tf("conv2d")(p, q, padding=1)), None)


def batch_matmul(quick):
    b, m, k = (4, 32, 16) if quick else (16, 128, 64)
    q = te.placeholder((b, m, k), "float32", name="Q")
    kk = te.placeholder((b, m, k), "float32", name="K")
    return ([q, kk, topi.nn.batch_matmul(q, kk)], [uniform(b, m, k), uniform(b, m, k)],
            lambda x, y: x.astype("float64") @ y.transpose(0, 2, 1),
            lambda x, y: x @ y.transpose(1, 2), None)


def rows_and_columns(quick):
    return (64, 256) if quick else (4096, 4096)


def softmax(quick):
    r, c = rows_and_columns(quick)
    x = te.placeholder((r, c), "float32", name="X")
    return ([x, topi.nn.softmax(x)], [uniform(r, c)], np_softmax,
            None if torch is None else (lambda v: torch.softmax(v, -1)), None)


def rms_norm(quick):
    r, c = rows_and_columns(quick)
    x = te.placeholder((r, c), "float32", name="X")
    g = te.placeholder((c,), "float32", name="G")
    return ([x, g, topi.nn.rms_norm(x, g, axis=[1], epsilon=1e-5)], [uniform(r, c), uniform(c)],
            lambda v, w: v / np.sqrt((v.astype("float64") ** 2).mean(-1, keepdims=True) + 1e-5)
            * w, None if torch is None else (lambda v, w: tf("rms_norm")(v, (c,), w, 1e-5)), None)


def layer_norm(quick):
    r, c = rows_and_columns(quick)
    x = te.placeholder((r, c), "float32", name="X")
    g = te.placeholder((c,), "float32", name="G")
    b = te.placeholder((c,), "float32", name="Bt")

    def reference(v, w, o):
        v = v.astype("float64")
        return (v - v.mean(-1, keepdims=True)) / np.sqrt(v.var(-1, keepdims=True) + 1e-5) * w + o

    return ([x, g, b, topi.nn.layer_norm(x, g, b, axis=[1], epsilon=1e-5)],
            [uniform(r, c), uniform(c), uniform(c)], reference,
            None if torch is None else (lambda v, w, o: tf("layer_norm")(v, (c,), w, o, 1e-5)),
            None)


def gelu(quick):
    r, c = rows_and_columns(quick)
    x = te.placeholder((r, c), "float32", name="X")
    return [x, topi.nn.gelu(x)], [uniform(r, c)], np_gelu, tf("gelu"), 64


def add(quick):
    r, c = rows_and_columns(quick)
    x = te.placeholder((r, c), "float32", name="X")
    y = te.placeholder((r, c), "float32", name="Y")
    return ([x, y, topi.add(x, y)], [uniform(r, c), uniform(r, c)], lambda u, v: u + v,
            lambda u, v: u + v, None)


def row_sum(quick):
    r, c = rows_and_columns(quick)
    x = te.placeholder((r, c), "float32", name="X")
    return ([x, topi.sum(x, axis=1)], [uniform(r, c)], lambda v: v.astype("float64").sum(1),
            lambda v: v.sum(1), None)


WORKLOADS = {
    "gemm": (gemm, "GEMM 1024^3 fp32"),
    "conv2d": (conv2d, "conv2d 3x3 56x56 64->64"),
    "batch_matmul": (batch_matmul, "batch matmul 16x128x128x64"),
    "softmax": (softmax, "softmax 4096x4096"),
    "rms_norm": (rms_norm, "RMSNorm 4096x4096"),
    "layer_norm": (layer_norm, "LayerNorm 4096x4096"),
    "gelu": (gelu, "GELU 4096x4096"),
    "add": (add, "add 4096x4096"),
    "row_sum": (row_sum, "sum over rows 4096x4096"),
}


def run_checked(rt, tensors, inputs, reference, check_rows, device, repeat):
    """Runs rt on device against the NumPy reference (on the first check_rows rows when set)
    and returns the median seconds per call."""
    outputs = [np.zeros([int(d) for d in t.shape], t.dtype) for t in tensors[len(inputs):]]
    arrays = [kiln.nd.array(a, device=device) for a in inputs + outputs]
    rt["main"](*arrays)
    got = arrays[-1].numpy()
    if check_rows:
        got, expected = got[:check_rows], reference(*[a[:check_rows] for a in inputs])
    else:
        expected = reference(*inputs)
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-3 * np.abs(expected).max())
    timer = rt.time_evaluator("main", device, number=3, repeat=repeat)
    return timer(*arrays).median


def ms_text(seconds):
    return f"{seconds * 1e3:.4f}" if seconds else "n/a"


def ratio(reference, seconds):
    return f"{reference / seconds:.2f}x" if reference and seconds else "n/a"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--trials", type=int, default=0,
                        help="tuning trials per workload (0: the default schedules only)")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--work-dir", default="bench_gpu_topi_work")
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--opencl", action="store_true",
                        help="without a CUDA device, check the default schedules on OpenCL")
    args = parser.parse_args()
    names = chosen_workloads(parser, args.only, WORKLOADS)

    chosen = gpu_target_and_device(kiln, args.opencl, "the default schedules")
    if chosen is None:
        return
    target, device = chosen
    cuda = target.kind == "cuda"

    rows = []
    for name in names:
        make, title = WORKLOADS[name]
        tensors, inputs, reference, torch_fn, check_rows = make(args.quick)
        func = te.create_prim_func(tensors)
        rt = kiln.build(topi.default_schedule(func, target=target).mod, target=target)
        default = run_checked(rt, tensors, inputs, reference, check_rows, device, args.repeat)
        tuned, tune_text = None, "-"
        if args.trials > 0:
            start = time.perf_counter()
            db = ms.tune_tir(func, target=str(target), work_dir=os.path.join(args.work_dir, name),
                             max_trials_global=args.trials, progress=False)
            tune_text = f"{time.perf_counter() - start:.0f}"
            rt = kiln.build(func, target=target, database=db)
            tuned = run_checked(rt, tensors, inputs, reference, check_rows, device, args.repeat)
        reference_seconds = (torch_cuda_seconds(torch, torch_fn, inputs, args.repeat) if cuda
                             else None)
        rows.append([title if not args.quick else f"{name} (--quick)", ms_text(default),
                     ms_text(tuned), tune_text, ms_text(reference_seconds),
                     ratio(reference_seconds, default), ratio(reference_seconds, tuned)])
        print("  ".join(rows[-1]), flush=True)  # each row as it is measured
    torch_text = f"PyTorch {torch.__version__}" if torch is not None else "no PyTorch"
    print(f"\nTarget {target}, device {device}; {torch_text}; load average {load_average()}")
    title = ("topi on the GPU: default schedules" +
             (f" and {args.trials} tuning trials each" if args.trials > 0 else "") + ", medians")
    if not cuda:
        title += " (OpenCL check: NOT a performance figure)"
    print_table(title, ["workload", "default ms", "tuned ms", "tune s", "PyTorch ms",
                        "PyTorch / default", "PyTorch / tuned"], rows)


if __name__ == "__main__":
    main()
