"""The local tuning runner's own cost per candidate: wall time per candidate of a batch, split
into the build (reported by the worker), the timed calls (repeat x number x time per call) and
the rest (messages, serialization, the checked call, warm-up and the search for the number of
calls); plus a worker's start with its task, and the cost of a candidate that crashes.

Run: python3 benchmarks/bench_runner_overhead.py   (prints tables; never fails on time)
"""
import statistics
import time

from kiln import autotune as ms
from kiln import te, tir

from common import print_table

BATCH = 16


def small_kernels():
    """(name, untuned function, scheduled candidate) of two small kernels."""
    A = te.placeholder((4096,), name="A")
    B = te.compute((4096,), lambda i: A[i] * 2.0 + 1.0, name="B")
    axpy = te.create_prim_func([A, B])
    sch = tir.Schedule(axpy)
    (i,) = sch.get_loops(sch.get_block("B"))
    _, inner = sch.split(i, factors=[None, 16])
    sch.vectorize(inner)
    yield "axpy 4096", axpy, sch

    X = te.placeholder((64, 64), name="X")
    Y = te.placeholder((64, 64), name="Y")
    k = te.reduce_axis((0, 64), name="k")
    Z = te.compute((64, 64), lambda i, j: te.sum(X[i, k] * Y[k, j], axis=k), name="Z")
    matmul = te.create_prim_func([X, Y, Z])
    sch = tir.Schedule(matmul)
    i, j, kk = sch.get_loops(sch.get_block("Z"))
    sch.reorder(i, kk, j)
    _, inner = sch.split(j, factors=[None, 16])
    sch.vectorize(inner)
    yield "matmul 64", matmul, sch


def main():
    rows = []
    for name, func, sch in small_kernels():
        for min_repeat_ms in (1.0, 20.0):
            with ms.LocalRunner(repeat=3, min_repeat_ms=min_repeat_ms) as runner:
                start = time.perf_counter()
                runner.set_task(func)
                setup_ms = (time.perf_counter() - start) * 1e3
                runner.run([sch])  # warm: the first build in a process loads more of LLVM
                start = time.perf_counter()
                results = runner.run([sch] * BATCH)
                wall_ms = (time.perf_counter() - start) * 1e3 / BATCH
                assert all(r.status == "ok" for r in results), results
                build_ms = statistics.median(r.build_ms for r in results)
                timed_ms = statistics.median(sum(r.run_secs) * r.number * 1e3 for r in results)
                start = time.perf_counter()
                crashed = runner.run([ms.MeasureInput(sch, "crash"), sch])
                crash_ms = (time.perf_counter() - start) * 1e3 - wall_ms
                assert crashed[0].status == "crash" and crashed[1].status == "ok"
            rows.append((name, f"{min_repeat_ms:g}", f"{setup_ms:.1f}", f"{wall_ms:.1f}",
                         f"{build_ms:.1f}", f"{timed_ms:.1f}",
                         f"{wall_ms - build_ms - timed_ms:.1f}", f"{crash_ms:.1f}"))
    print_table(f"Local runner, milliseconds per candidate (median of a batch of {BATCH}, "
                "repeat 3)",
                ["kernel", "min_repeat_ms", "start+task", "wall", "build", "timed", "rest",
                 "crash+restart"], rows)


if __name__ == "__main__":
    main()
