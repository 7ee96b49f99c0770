"""The GPU design space's padding of shared tiles against bank conflicts (the postprocessor
pad_shared_tiles), on a CUDA device: tiled candidates of GEMM 1024^3 and of the ResNet-50 3x3
conv2d drawn from the tuner's GPU space, each built three times, its shared copies compact,
padded by the bank model for vector reads (rows 16-byte aligned) and padded for scalar reads,
all checked against NumPy and timed in alternating rounds.

Per workload and padding the table gives the candidates whose tiles it padded, the median over
them of compact time / padded time (above 1: padding pays), how many it made faster by more than
3%, and the rank correlation (Spearman) of the speed-up the features predict (the compact over
the padded shared-memory wavefronts, gpu.log_shared_wavefronts) with the measured one.

Run: python3 benchmarks/bench_gpu_shared_padding.py [--only gemm] [--candidates 16]
     [--rounds 5] [--quick] [--opencl]
Without a CUDA device it says why and stops; with --opencl it then checks the candidates on
OpenCL (kiln.opencl(0), PoCL on the CPU here, warps of 32 assumed): that shows that padded
candidates compute the right result, and its times are no performance figure. --quick uses
small sizes.
"""
import os
import statistics
import sys

import kiln
from kiln import autotune as ms
from kiln import te, tir

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpu_topi import conv2d, gemm, run_checked  # noqa: E402
from common import (chosen_workloads, gpu_candidates_parser,  # noqa: E402
                    gpu_target_and_device, load_average, print_table, spearman)

WORKLOADS = {"gemm": (gemm, "GEMM 1024^3 fp32"), "conv2d": (conv2d, "conv2d 3x3 56x56 64->64")}


PADDINGS = {1: "for vector reads", 2: "for scalar reads"}


def with_padding(space, candidate, pad):
    """The candidate replayed with every copy's padding decision set to pad (0: compact, or a
    key of PADDINGS)."""
    decisions = candidate.decisions
    for i, inst in enumerate(decisions.as_json()["instructions"]):
        if inst["kind"] == "sample_categorical" and inst["attrs"]["candidates"] == [0, 1, 2]:
            decisions = decisions.with_decision(i, pad)
    return space.replay(candidate.sketch, decisions)


def shared_wavefronts(candidate, target):
    """The bank model's shared-memory wavefronts per call (gpu.log_shared_wavefronts undone)."""
    names = ms.feature_names()
    x = ms.extract_features(tir.lower(candidate.mod["main"]), target)
    return 2.0 ** float(x[names.index("gpu.log_shared_wavefronts")]) - 1


def variants(func, target, count):
    """Up to count candidates as [compact, padded for vector reads, padded for scalar reads],
    where some padding changes the tiles."""
    space = ms.SpaceGenerator(func, target)
    out = []
    for seed in range(40 * count):
        candidate = space.sample(seed % len(space.sketches), seed=seed)
        if candidate is None:
            continue
        versions = [with_padding(space, candidate, pad) for pad in (0, 1, 2)]
        if None in versions or not any("sch.storage_align(" in str(v.trace)
                                       for v in versions[1:]):
            continue
        out.append(versions)
        if len(out) == count:
            break
    return out


def main():
    parser = gpu_candidates_parser(__doc__.splitlines()[0], 16, "padded candidates each", 5)
    args = parser.parse_args()
    names = chosen_workloads(parser, args.only, WORKLOADS)

    chosen = gpu_target_and_device(kiln, args.opencl, "the padded candidates",
                                   opencl_target="opencl -thread_warp_size=32")
    if chosen is None:
        return
    target, device = chosen

    rows = []
    for name in names:
        make, title = WORKLOADS[name]
        tensors, inputs, reference, _, check_rows = make(args.quick)
        func = te.create_prim_func(tensors)
        found = variants(func, str(target), args.candidates)
        built = [[kiln.build(c.mod, target=target) for c in versions] for versions in found]
        times = [[[], [], []] for _ in found]
        for _ in range(args.rounds):
            for i, versions in enumerate(built):
                for k, rt in enumerate(versions):
                    times[i][k].append(run_checked(rt, tensors, inputs, reference, check_rows,
                                                   device, args.repeat))
        for pad, text in PADDINGS.items():
            chosen = [i for i, versions in enumerate(found)
                      if "sch.storage_align(" in str(versions[pad].trace)]
            speedups = [statistics.median(times[i][0]) / statistics.median(times[i][pad])
                        for i in chosen]
            predicted = [shared_wavefronts(found[i][0], str(target)) /
                         max(shared_wavefronts(found[i][pad], str(target)), 1) for i in chosen]
            faster = sum(s > 1.03 for s in speedups)
            rows.append([title if not args.quick else f"{name} (--quick)", text,
                         str(len(chosen)),
                         f"{statistics.median(speedups):.3f}" if speedups else "n/a",
                         f"{faster}/{len(chosen)}", f"{spearman(predicted, speedups):.2f}"])
            print("  ".join(rows[-1]), flush=True)
    print(f"\nTarget {target}, device {device}; {args.rounds} rounds of {args.repeat} repeats; "
          f"load average {load_average()}")
    title = "Padded shared tiles against compact ones, tiled candidates of the GPU space"
    if target.kind != "cuda":
        title += " (OpenCL check: NOT a performance figure)"
    print_table(title, ["workload", "padding", "padded candidates", "median compact / padded",
                        "faster padded", "rank correlation with the model"], rows)


if __name__ == "__main__":
    main()
