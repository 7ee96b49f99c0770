"""The operators of a LLaMA-style transformer block from kiln.topi at LLM sizes (hidden 4096, 32
query heads, 8 key/value heads, head dimension 128, sequences of 1 to 2048 tokens), each built
with topi.default_schedule and, with --trials N, tuned by kiln.autotune; checked against NumPy
and timed against NumPy and PyTorch CPU. Median times; GFLOP/s for the matrix products and
attention, GB/s (bytes read and written once) for the memory-bound operators.

Run: python3 benchmarks/bench_llm_ops.py [--quick] [--trials N] [--seq 1,128,2048]
     [--only rms_norm,rope,attention,ffn] [--work-dir bench_llm_work] [--repeat 7]
--quick runs small sizes (hidden 512, 8 heads, 2 KV heads, head dim 64, seq 1 and 64) as a
smoke test. PyTorch is optional; its column reads n/a without it.
"""
import argparse
import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

import kiln
from kiln import autotune as ms
from kiln import te, topi

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (chosen_workloads, kiln_seconds, load_average,  # noqa: E402
                    median_seconds, print_table)

try:
    import torch
except ImportError:  # the column reads n/a
    torch = None

FULL = dict(hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=11008, seqs=[1, 128, 2048])
QUICK = dict(hidden=512, heads=8, kv_heads=2, head_dim=64, ffn=512, seqs=[1, 64])


def placeholder(shape, name):
    return te.placeholder(shape, "float32", name=name)


def softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# --- The workloads: te arguments, NumPy inputs, NumPy and PyTorch versions, work. ------------

def rms_norm(c, seq, rng):
    x, g = placeholder((seq, c["hidden"]), "x"), placeholder((c["hidden"],), "g")
    inputs = [rng.standard_normal((seq, c["hidden"]), dtype=np.float32),
              rng.standard_normal(c["hidden"], dtype=np.float32)]

    def numpy_fn(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g

    def torch_fn(x, g):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * g

    return dict(args=[x, g, topi.nn.rms_norm(x, g, axis=-1, epsilon=1e-6)], inputs=inputs,
                numpy=numpy_fn, torch=torch_fn, bytes=4 * (2 * seq * c["hidden"] + c["hidden"]))


def rope(c, seq, rng):
    shape = (1, c["heads"], seq, c["head_dim"])
    x = placeholder(shape, "x")
    half = c["head_dim"] // 2
    angle = np.arange(seq)[:, None] * 10000.0 ** (-np.arange(half) * 2.0 / c["head_dim"])
    cos = np.cos(np.tile(angle, 2)).astype(np.float32)
    sin = np.sin(np.tile(angle, 2)).astype(np.float32)

    def numpy_fn(x):
        return x * cos + np.concatenate([-x[..., half:], x[..., :half]], -1) * sin

    def torch_fn(x):
        return x * t_cos + torch.cat([-x[..., half:], x[..., :half]], -1) * t_sin

    t_cos = torch.from_numpy(cos) if torch else None
    t_sin = torch.from_numpy(sin) if torch else None
    return dict(args=[x, topi.nn.rope(x)], inputs=[rng.standard_normal(shape, dtype=np.float32)],
                numpy=numpy_fn, torch=torch_fn, bytes=4 * 2 * int(np.prod(shape)))


def attention(c, seq, rng):
    """Causal GQA attention of `seq` new tokens over a cache of max(seq, 128) positions."""
    kv_len = max(seq, 128)
    heads, kv_heads, d = c["heads"], c["kv_heads"], c["head_dim"]
    q = placeholder((1, heads, seq, d), "q")
    k = placeholder((1, kv_heads, kv_len, d), "k")
    v = placeholder((1, kv_heads, kv_len, d), "v")
    inputs = [rng.standard_normal((1, heads, seq, d), dtype=np.float32),
              rng.standard_normal((1, kv_heads, kv_len, d), dtype=np.float32),
              rng.standard_normal((1, kv_heads, kv_len, d), dtype=np.float32)]
    group = heads // kv_heads
    visible = np.arange(kv_len)[None, :] <= np.arange(seq)[:, None] + kv_len - seq

    def numpy_fn(q, k, v):
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
        s = np.where(visible, q @ k.transpose(0, 1, 3, 2) / np.sqrt(d), -np.inf)
        return softmax(s) @ v

    def torch_fn(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(
            q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1),
            attn_mask=t_mask)

    t_mask = torch.from_numpy(visible) if torch else None
    out = topi.nn.scaled_dot_product_attention(q, k, v, is_causal=True)
    return dict(args=[q, k, v, out], inputs=inputs, numpy=numpy_fn, torch=torch_fn,
                flops=4 * heads * seq * kv_len * d)


def ffn(c, seq, rng):
    """SwiGLU feed-forward input half: silu(x @ Wg.T) * (x @ Wu.T), Wg and Wu stacked. kiln
    reads the weight packed once into column panels (topi.nn.pack_dense_weight, dense_pack),
    NumPy and PyTorch the (2 * inner, hidden) matrix."""
    hidden, inner = c["hidden"], c["ffn"]
    inputs = [rng.standard_normal((seq, hidden), dtype=np.float32),
              rng.standard_normal((2 * inner, hidden), dtype=np.float32) * 0.02]
    packed = topi.nn.pack_dense_weight(inputs[1])
    x, w = placeholder((seq, hidden), "x"), placeholder(packed.shape, "w_packed")

    def numpy_fn(x, w):
        y = x @ w.T
        return y[:, :inner] / (1 + np.exp(-y[:, :inner])) * y[:, inner:]

    def torch_fn(x, w):
        y = x @ w.T
        return torch.nn.functional.silu(y[:, :inner]) * y[:, inner:]

    return dict(args=[x, w, topi.nn.swiglu(topi.nn.dense_pack(x, w, units=2 * inner))],
                inputs=inputs, kiln_inputs=[inputs[0], packed], numpy=numpy_fn,
                torch=torch_fn, flops=2 * seq * hidden * 2 * inner)


WORKLOADS = {"rms_norm": (rms_norm, "RMSNorm"), "rope": (rope, "RoPE (q)"),
             "attention": (attention, "GQA causal attention"), "ffn": (ffn, "dense_pack + SwiGLU")}


def measure(rt, spec, repeat):
    expected = spec["numpy"](*spec["inputs"])
    out = np.zeros(expected.shape, np.float32)
    inputs = spec.get("kiln_inputs", spec["inputs"])  # a packed weight for kiln
    rt(*inputs, out)
    np.testing.assert_allclose(out, expected, rtol=2e-3, atol=2e-3)
    return kiln_seconds(rt, inputs + [out], repeat=repeat, number=1)


def rate(spec, seconds):
    if "flops" in spec:
        return f"{spec['flops'] / seconds / 1e9:.1f} GFLOP/s"
    return f"{spec['bytes'] / seconds / 1e9:.1f} GB/s"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke test")
    parser.add_argument("--trials", type=int, default=0, help="tuning trials per operator "
                        "and sequence length (0: default schedules only)")
    parser.add_argument("--seq", default="", help="comma-separated sequence lengths")
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--work-dir", default="bench_llm_work")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    config = dict(QUICK if args.quick else FULL)
    if args.seq:
        config["seqs"] = [int(s) for s in args.seq.split(",")]
    names = chosen_workloads(parser, args.only, WORKLOADS)
    threads = kiln.runtime.get_num_threads()
    if torch is not None:
        torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    load_before = load_average()
    rows = []
    for name in names:
        make, title = WORKLOADS[name]
        for seq in config["seqs"]:
            spec = make(config, seq, rng)
            func = te.create_prim_func(spec["args"])
            start = time.perf_counter()
            rt = kiln.build(topi.default_schedule(func).mod, target="llvm")
            build_s = time.perf_counter() - start
            t_default = measure(rt, spec, args.repeat)
            t_tuned = None
            if args.trials:
                # A candidate of the 2048-token feed-forward layer runs for seconds, repeats
                # included; its reference results come from the default schedule (the
                # tuner's "auto" reference: its plain loops would take most of an hour).
                runner = ms.LocalRunner(timeout_s=120.0)
                db = ms.tune_tir(func, target="llvm", max_trials_global=args.trials,
                                 work_dir=os.path.join(args.work_dir, f"{name}_{seq}"),
                                 num_trials_per_iter=min(32, args.trials), progress=False,
                                 runner=runner)
                t_tuned = measure(kiln.build(func, target="llvm", database=db), spec,
                                  args.repeat)
            with threadpool_limits(limits=threads):
                t_numpy = median_seconds(lambda: spec["numpy"](*spec["inputs"]),
                                         repeat=args.repeat)
            t_torch = None
            if torch is not None:
                t_inputs = [torch.from_numpy(a) for a in spec["inputs"]]
                with torch.no_grad():
                    t_torch = median_seconds(lambda: spec["torch"](*t_inputs),
                                             repeat=args.repeat)
            best = min(t for t in (t_default, t_tuned) if t is not None)
            rows.append([title, str(seq), f"{build_s * 1e3:.0f}", f"{t_default * 1e3:.3f}",
                         f"{t_tuned * 1e3:.3f}" if t_tuned else "-", rate(spec, best),
                         f"{t_numpy * 1e3:.3f}", f"{t_torch * 1e3:.3f}" if t_torch else "n/a",
                         f"{t_numpy / best:.2f}x",
                         f"{t_torch / best:.2f}x" if t_torch else "n/a"])
            print_table("so far", HEADER, rows)
    print(f"\nTarget {kiln.target.Target('llvm')}, {threads} threads; sizes "
          f"{'--quick' if args.quick else 'LLM'} {config}; PyTorch "
          f"{torch.__version__ if torch else 'not installed'}; load average before "
          f"{load_before}, after {load_average()}")
    print_table("kiln.topi operators: default schedule and tuned, medians of one run", HEADER,
                rows)


HEADER = ["operator", "seq", "schedule+build ms", "default ms", "tuned ms", "kiln best",
          "NumPy ms", "PyTorch ms", "vs NumPy", "vs PyTorch"]

if __name__ == "__main__":
    main()
