"""topi.nn.dense (weight [N, K]) against topi.nn.dense_pack (weight packed [N / bn, K, bn] by
pack_dense_weight, bn from the target's register tile), both under topi.default_schedule, at an
LLM projection (M tokens x K = N = 4096 by default), float32, dense_pack also built for a
symbolic M; with --int8, dense_int8 over its two weight layouts (NC16n4c for VNNI, and panels)
on this CPU as well. The variants run in interleaved rounds in one process; the table gives the
median of the rounds' medians, so that a disturbance of the machine hits every variant alike.
The load average is printed with it.

Run: python3 benchmarks/bench_dense_pack.py [--m 32] [--k 4096] [--n 4096] [--threads 1]
     [--rounds 5] [--repeat 5] [--int8]
(prints a table; never fails on time)
"""
import argparse
import os
import statistics
import sys

import numpy as np

import kiln
from kiln import te, topi

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import kiln_seconds, load_average, print_table  # noqa: E402


def float_variants(m, k, n, rng):
    x = rng.standard_normal((m, k), dtype=np.float32)
    w = rng.standard_normal((n, k), dtype=np.float32) * 0.02
    packed = topi.nn.pack_dense_weight(w)
    X = te.placeholder((m, k), "float32", name="x")
    W = te.placeholder((n, k), "float32", name="w")
    P = te.placeholder(packed.shape, "float32", name="w_packed")
    S = te.placeholder((te.var("m"), k), "float32", name="x")  # a symbolic sequence length
    expected = x @ w.T
    bn = packed.shape[2]
    return [("dense float32", [X, W, topi.nn.dense(X, W)], [x, w], expected),
            (f"dense_pack float32 (bn={bn})",
             [X, P, topi.nn.dense_pack(X, P, units=n)], [x, packed], expected),
            (f"dense_pack float32 (bn={bn}), M symbolic",
             [S, P, topi.nn.dense_pack(S, P, units=n)], [x, packed], expected)]


def int8_variants(m, k, n, rng):
    x = rng.integers(0, 256, size=(m, k)).astype("uint8")
    w = rng.integers(-128, 128, size=(n, k)).astype("int8")
    expected = x.astype("int32") @ w.T.astype("int32")
    X = te.placeholder((m, k), "uint8", name="x")
    variants = []
    for vnni in (True, False):
        packed = topi.nn.pack_dense_weight_int8(w, vnni=vnni)
        W = te.placeholder(packed.shape, "int8", name="w_packed")
        layout = "NC16n4c" if vnni else f"panels bn={packed.shape[2]}"
        variants.append((f"dense_int8 {layout}", [X, W, topi.nn.dense_int8(X, W, units=n)],
                         [x, packed], expected))
    return variants


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=32)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--int8", action="store_true", help="dense_int8's two layouts too")
    args = parser.parse_args()
    kiln.runtime.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    variants = float_variants(args.m, args.k, args.n, rng)
    if args.int8:
        variants += int8_variants(args.m, args.k, args.n, rng)
    built = []
    for name, tensors, inputs, expected in variants:
        rt = kiln.build(topi.default_schedule(tensors).mod, target="llvm")
        out = np.zeros(expected.shape, expected.dtype)
        rt(*inputs, out)
        np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-3)
        built.append((name, rt, inputs + [out]))
    load_before = load_average()
    times = {name: [] for name, _, _ in built}
    for _ in range(args.rounds):
        for name, rt, call_args in built:
            times[name].append(kiln_seconds(rt, call_args, repeat=args.repeat, number=1))
    flops = 2 * args.m * args.k * args.n
    first = statistics.median(times[built[0][0]])
    rows = []
    for name, _, _ in built:
        seconds = statistics.median(times[name])
        spread = f"{min(times[name]) * 1e3:.2f}-{max(times[name]) * 1e3:.2f}"
        rows.append([name, f"{seconds * 1e3:.2f}", spread, f"{flops / seconds / 1e9:.1f}",
                     f"{first / seconds:.2f}x"])
    print(f"Target {kiln.target.Target('llvm')}, {args.threads} thread(s), M={args.m} "
          f"K={args.k} N={args.n}; load average before {load_before}, after {load_average()}")
    print_table(f"default schedules, median of {args.rounds} interleaved rounds of "
                f"{args.repeat} runs", ["variant", "ms", "round medians ms", "G(FL)OP/s",
                                        "vs dense"], rows)


if __name__ == "__main__":
    main()
