"""What the benchmarks share: medians of repeated runs, the machine's load, table printing, the
GEMM and conv2d workloads written for any te module (kiln's and TVM's) with NumPy's
convolution, and for the GPU benchmarks whether a CUDA device can run kiln's code and
PyTorch's times on it."""
import os
import statistics
import time

import numpy as np


# Calls before timing: at least this long, so that a sub-millisecond kernel is not timed while
# the cores come back from idle (after a pause the first 15 calls of a 0.25 ms batch matmul
# took 0.3 to 0.6 ms on a 2-vCPU host).
WARMUP_SECONDS = 0.02


def warm_up(fn, seconds=WARMUP_SECONDS):
    """Calls fn until `seconds` have passed (at least once)."""
    end = time.perf_counter() + seconds
    fn()
    while time.perf_counter() < end:
        fn()


def median_seconds(fn, repeat=7, number=1):
    """Median wall time of `number` calls of fn, over `repeat` repetitions, after warm_up."""
    warm_up(fn)
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - start) / number)
    return statistics.median(runs)


def kiln_seconds(rt, args, repeat=7, number=3):
    """Median seconds per call of a kiln module's main function (GIL released, in C++), on
    kiln.nd copies of NumPy arguments (64-byte aligned, as the runtime allocates), after
    warm_up."""
    import kiln
    import numpy as np
    args = [kiln.nd.array(a) if isinstance(a, np.ndarray) else a for a in args]
    evaluator = rt.time_evaluator(rt.entry_name, kiln.cpu(0), number=number, repeat=repeat)
    warm_up(lambda: rt(*args))
    return evaluator(*args).median


# Workloads written once for any te module with TVM's names (kiln.te, tvm.te): the same
# computation for kiln's benchmarks and for a comparison with TVM.

def gemm_func(te, n):
    """C = A @ B, float32, n x n x n."""
    a = te.placeholder((n, n), "float32", name="A")
    b = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c])


def conv2d_func(te, n, c, h, w, f, kh, kw, pad):
    """A 2-D convolution, NCHW, float32, stride 1, zero padding `pad` as a stage of its own."""
    data = te.placeholder((n, c, h, w), "float32", name="data")
    weight = te.placeholder((f, c, kh, kw), "float32", name="weight")
    padded = te.compute(
        (n, c, h + 2 * pad, w + 2 * pad),
        lambda b, ch, y, x: te.if_then_else(
            te.all(y >= pad, y < h + pad, x >= pad, x < w + pad),
            data[b, ch, y - pad, x - pad], te.const(0, "float32")), name="pad")
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    out = te.compute(
        (n, f, h, w),
        lambda b, o, y, x: te.sum(padded[b, rc, y + ry, x + rx] * weight[o, rc, ry, rx],
                                  axis=[rc, ry, rx]), name="conv")
    return te.create_prim_func([data, weight, out])


def load_average():
    """The 1-minute load average as text ("0.42"), or "n/a" where the system has none. A load
    near or above the number of CPUs means other work shares the cores being measured."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "n/a"


def print_table(title, header, rows):
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    line = "  ".join("{:>%d}" % w for w in widths)
    print(f"\n{title}")
    print(line.format(*header))
    print(line.format(*["-" * w for w in widths]))
    for row in rows:
        print(line.format(*row))


def numpy_conv2d_nchw(x, w, pad):
    """NumPy's convolution of NCHW inputs x with OIHW filters w, stride 1, `pad` zeros on each
    side: im2col through a strided view, then one BLAS matmul."""
    n, c, h, width = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    out_h, out_w = cols.shape[2], cols.shape[3]
    cols = cols.transpose(0, 2, 3, 1, 4, 5).reshape(n * out_h * out_w, c * kh * kw)
    return (cols @ w.reshape(f, -1).T).reshape(n, out_h, out_w, f).transpose(0, 3, 1, 2)


def spearman(x, y):
    """Rank correlation of two equal-length sequences (ties ranked in order); nan below 3."""
    if len(x) < 3:
        return float("nan")
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


def chosen_workloads(parser, only, workloads):
    """The workload names of --only (comma-separated; empty: all of workloads, in order); an
    unknown name is an argparse error listing the known ones."""
    names = [n for n in only.split(",") if n] or list(workloads)
    unknown = [n for n in names if n not in workloads]
    if unknown:
        parser.error(f"unknown workloads {unknown}; known: {', '.join(workloads)}")
    return names


def gpu_candidates_parser(description, candidates, candidates_help, rounds):
    """The command line of the benchmarks that time random GPU candidates: --only, --candidates,
    --rounds (alternating timing rounds), --repeat, --quick and --opencl; add more before
    parse_args."""
    import argparse
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--candidates", type=int, default=candidates, help=candidates_help)
    parser.add_argument("--rounds", type=int, default=rounds, help="alternating timing rounds")
    parser.add_argument("--repeat", type=int, default=5, help="timer repeats per round")
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--opencl", action="store_true",
                        help="without a CUDA device, check the candidates on OpenCL")
    return parser


def cuda_missing(kiln):
    """Why kiln's "cuda" target cannot run here, or "" when it can."""
    available, why = kiln.target.nvrtc_available()
    if not available:
        return f"NVRTC cannot be loaded: {why}"
    if not kiln.cuda(0).exist:
        return "no CUDA device is present (kiln.cuda(0).exist is False)"
    return ""


def gpu_target_and_device(kiln, opencl, what, opencl_target="opencl"):
    """The target and device a GPU benchmark runs on: the CUDA device when kiln can use one;
    else, when `opencl` (its --opencl flag) is set and an OpenCL device is present, that device
    under `opencl_target`, as a check of `what` (its results, not its times); else None, after
    saying why."""
    why_not = cuda_missing(kiln)
    if not why_not:
        return kiln.target.Target("cuda"), kiln.cuda(0)
    if opencl and kiln.opencl(0).exist:
        print(f"No CUDA run: {why_not}. Checking {what} through OpenCL on kiln.opencl(0) "
              f"instead (not a performance figure).")
        return kiln.target.Target(opencl_target), kiln.opencl(0)
    if opencl:
        print(f"No CUDA run: {why_not}. No OpenCL device is present either.")
    else:
        print(f"No CUDA run: {why_not}. Pass --opencl to check {what} on OpenCL.")
    return None


def torch_cuda_seconds(torch, fn, inputs, repeat):
    """Median seconds per call of fn on PyTorch tensors on the CUDA device made from the NumPy
    inputs, timed with CUDA events over 3 calls per repeat after one warm-up; None when torch
    (the module, or None) has no CUDA device or fn is None."""
    if fn is None or torch is None or not torch.cuda.is_available():
        return None
    args = [torch.from_numpy(a).cuda() for a in inputs]
    with torch.no_grad():
        fn(*args)
        torch.cuda.synchronize()
        times = []
        for _ in range(repeat):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(3):
                fn(*args)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 3 / 1e3)
    return statistics.median(times)
