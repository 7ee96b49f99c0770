"""What each compiler takes to build the candidates its own tuner measured: kiln.build on
kiln's tuning records and tvm.compile on MetaSchedule's, read from a bench_vs_tvm.py work dir.

For each workload, --candidates trials spread evenly over each tuner's successful trials are
replayed into schedules, then built in alternation (a kiln candidate, a TVM candidate, ...) in
--rounds rounds, in this process. A build's time is the process's CPU time (immune to other
work on the machine; both compilers build on the calling thread) and its wall time: lowering,
LLVM optimization and machine code, and loading the code into the process (kiln: its JIT; TVM:
tvm.compile's executable). MetaSchedule's builder also exports each build to an archive that its
runner links into a shared library; that is not counted. kiln's builds use no object cache.

Run: python3 benchmarks/bench_build_vs_tvm.py --work-dir bench_vs_tvm_work [--only conv2d]
     [--candidates 24] [--rounds 2] [--threads N] [--size 1024] [--search-only]
(run bench_vs_tvm.py first; prints a table; never fails on time.)
"""
import argparse
import json
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_vs_tvm as bvt  # noqa: E402
from common import load_average, print_table  # noqa: E402


def spread(items, count):
    """`count` items spread evenly over `items` (all of them when there are fewer)."""
    if len(items) <= count:
        return list(items)
    return [items[round(i * (len(items) - 1) / (count - 1))] for i in range(count)]


def kiln_candidates(spec, tuner_dir, threads, count):
    """(label, build) per chosen kiln trial: build() compiles it once."""
    import kiln
    from kiln import te, tir
    from kiln.error import VectorizeFallbackWarning
    warnings.simplefilter("ignore", VectorizeFallbackWarning)  # a tuning candidate's own matter
    func = spec["make"](te)
    trials = spread([t for t in bvt.kiln_trials(tuner_dir, threads) if t.seconds], count)
    builds = []
    for t in trials:
        sch = tir.Schedule(func)
        tir.Trace.apply_json_to_schedule(json.loads(t.source.trace), sch)
        builds.append((f"kiln trial {t.index}", lambda mod=sch.mod: kiln.build(mod, "llvm")))
    return builds


def tvm_candidates(spec, tuner_dir, threads, count):
    """(label, build) per chosen MetaSchedule trial."""
    tvm, tvm_ms = bvt.tvm_import()
    from tvm.s_tir import Schedule
    target = bvt.tvm_target(tvm, threads)
    bvt.repair_tvm_records(tuner_dir)
    with open(os.path.join(tuner_dir, "database_workload.json")) as f:
        workload = tvm_ms.database.Workload.from_json(json.loads(f.readline()))
    trials = spread([t for t in bvt.tvm_trials(tuner_dir) if t.seconds], count)
    builds = []
    for t in trials:
        record = tvm_ms.database.TuningRecord.from_json(json.loads(t.source)[1], workload)
        sch = Schedule(workload.mod)
        record.trace.apply_to_schedule(sch, remove_postproc=False)
        builds.append((f"TVM trial {t.index}",
                       lambda mod=sch.mod: tvm.compile(mod, target=target)))
    return builds


def timed(build):
    """(CPU ms, wall ms) of one build."""
    cpu, wall = time.process_time(), time.perf_counter()
    build()
    return (time.process_time() - cpu) * 1e3, (time.perf_counter() - wall) * 1e3


def measure(candidates, rounds):
    """{tuner: {"cpu": [ms per build], "wall": [...]}}, the tuners' candidates built in turn."""
    times = {tuner: {"cpu": [], "wall": []} for tuner in candidates}
    for tuner, builds in candidates.items():
        if builds:
            timed(builds[0][1])  # the first build of each compiler pays for starting LLVM
    longest = max(len(b) for b in candidates.values())
    for _ in range(rounds):
        for i in range(longest):
            for tuner, builds in candidates.items():
                if i < len(builds):
                    cpu, wall = timed(builds[i][1])
                    times[tuner]["cpu"].append(cpu)
                    times[tuner]["wall"].append(wall)
    return times


def report(name, spec, times, counts):
    rows = []
    kiln_median = statistics.median(times["kiln"]["cpu"]) if times["kiln"]["cpu"] else None
    for tuner, t in times.items():
        if not t["cpu"]:
            continue
        cpu = sorted(t["cpu"])
        median = statistics.median(cpu)
        rows.append([tuner, str(counts[tuner]), f"{median:.1f}",
                     f"{cpu[int(0.9 * (len(cpu) - 1))]:.1f}", f"{cpu[-1]:.1f}",
                     f"{statistics.median(t['wall']):.1f}",
                     f"{median / kiln_median:.2f}x" if kiln_median else "-"])
    print_table(f"{spec['title']}: each tuner's candidates built by its compiler",
                ["compiler", "candidates", "CPU ms median", "CPU ms p90", "CPU ms slowest",
                 "wall ms median", "vs kiln"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", default="bench_vs_tvm_work")
    parser.add_argument("--only", default="", help="comma-separated workloads: gemm,conv2d")
    parser.add_argument("--candidates", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--size", type=int, default=1024, help="GEMM size (n x n x n)")
    parser.add_argument("--search-only", action="store_true",
                        help="kiln's records of bench_vs_tvm.py --search-only")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(bvt.WORKLOADS)
    os.environ["TVM_NUM_THREADS"] = str(args.threads)
    tvm_reason = bvt.tvm_problem()
    load_before = load_average()
    for name in names:
        spec = bvt.WORKLOADS[name](args.size)
        wdir = bvt.workload_dir(os.path.abspath(args.work_dir), name, args.size, args.threads)
        candidates = {"kiln": kiln_candidates(spec, bvt.kiln_dir(wdir, args), args.threads,
                                              args.candidates)}
        if tvm_reason is None:
            candidates["TVM"] = tvm_candidates(spec, os.path.join(wdir, "tvm"), args.threads,
                                               args.candidates)
        else:
            print(f"TVM column skipped: {tvm_reason}")
        if not any(candidates.values()):
            print(f"[{name}] no records in {wdir}: run bench_vs_tvm.py first")
            continue
        times = measure(candidates, args.rounds)
        report(name, spec, times, {t: len(b) for t, b in candidates.items()})
    print(f"\nload average before {load_before}, after {load_average()}")


if __name__ == "__main__":
    main()
