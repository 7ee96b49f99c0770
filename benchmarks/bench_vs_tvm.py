"""kiln's tuner against TVM's MetaSchedule on this machine, on GEMM (1024^3 float32) and a
ResNet-50 3x3 convolution (56x56, 64 -> 64 channels, NCHW, batch 1), both from the bare tensor
expression and on the same number of threads.

The yardstick: kiln reaches 90% of the final speed that MetaSchedule gets in its trials within a
tenth of those trials and a tenth of its tuning wall time.

Each workload is tuned by kiln (ms.tune_tir, its trials counted and timed from the database
records' timestamps) and by TVM (tvm.s_tir.meta_schedule.tune_tir on the same computation
written with TVM's te, target llvm with this CPU and num-cores = the threads, its LocalBuilder and
LocalRunner; its trials counted from its JSON database and timed by a measure callback), each
tuner in a process of its own. Then one process builds both final schedules, and every schedule
that was a tuner's best so far during its run, checks each against NumPy and times them all,
with NumPy (OpenBLAS), in alternating rounds. A tuner's curve is the speed, timed here, of its
best-so-far schedule after each trial; the table gives the trials and tuning seconds each tuner
needed to reach 90% of its own final speed and of the other's, with the float32 FMA peak
(benchmarks/fma_peak.c) and the load average before and after. "GFLOP/s in tuning" is the best
as the tuner measured it in its own runner. Each tuner keeps its own settings otherwise (kiln:
32 candidates a batch; TVM: 64, its evolutionary search, XGBoost model and runner). A trial's
time is that of its batch's end: kiln's records are committed per batch, and TVM's callback
notes the end of each; the seconds between two runs of a resumed tuning do not count. Best-so-
far schedules slower than a quarter of the tuner's best are not timed (they are far below
every threshold); the curve is printed with the table.

Run: python3 benchmarks/bench_vs_tvm.py [--only gemm,conv2d] [--kiln-trials 128]
     [--tvm-trials 1000] [--threads N] [--size 1024] [--work-dir bench_vs_tvm_work]
     [--rounds 3] [--repeat 7] [--number 1] [--compare-only] [--search-only]
(prints tables; never fails on time.) A work dir that exists resumes what it holds: a tuner
whose trials are all there is not run again, so --compare-only, or the same command, times
a long TVM run again without repeating it. --size changes the GEMM's size (small for a quick
check). Layout: WORK/NAME_tTHREADS/{kiln,tvm}/ with each tuner's database and logs and
sessions.jsonl (start and end of each tuning run); WORK/NAME_tTHREADS/compare.json keeps the
last comparison's numbers. --search-only tunes kiln without its baseline (the first trial is then
the search's, not topi.default_schedule's), into WORK/NAME_tTHREADS/kiln-search/: what kiln's
design space and search reach on their own.

TVM is optional, for this benchmark only (kiln does not depend on it); without it the TVM
column is skipped with the reason. Written for TVM 0.27 (its MetaSchedule lives in
tvm.s_tir.meta_schedule and takes targets as dicts):
    pip install apache-tvm "apache-tvm-ffi<0.1.15" xgboost-cpu psutil
apache-tvm-ffi 0.1.15 crashes TVM 0.27 when it serializes TIR, which MetaSchedule's mutators
do (checked here before tuning). TVM's default builder imports every tensor intrinsic
(CUDA, ROCm, Hexagon ...) in each fresh worker, a minute of CPU per batch on a 2-core machine,
past its 30 s build timeout; the builder here builds the same way without that import.
"""
import argparse
import dataclasses
import datetime
import importlib.metadata
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (chosen_workloads, conv2d_func, gemm_func, kiln_seconds,  # noqa: E402
                    load_average, median_seconds, numpy_conv2d_nchw, print_table)

# Fractions of a speed: the yardstick's 90%, and the slowest best-so-far schedule (against the
# tuner's own best) that is built and timed for the curve; slower ones are far below any
# threshold and would take long to time.
REACH = 0.9
CURVE_FLOOR = 0.25
# kiln records that are trials; "final" and "drift" records time a candidate again.
KILN_TRIAL_STAGES = ("baseline", "screen", "local")
# MetaSchedule stores a candidate that failed with this run time.
TVM_FAILED_SECONDS = 1e9
TVM_TRIALS_PER_ITER = 64


# --- The workloads, written once for kiln's te and TVM's te (the same functions: common.py).

def gemm(n):
    rng = np.random.default_rng(0)
    args = [rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32),
            np.zeros((n, n), np.float32)]
    return dict(title=f"GEMM {n}^3 fp32", make=lambda te: gemm_func(te, n), args=args,
                numpy=lambda x, y: x @ y, flops=2 * n ** 3)


CONV = dict(n=1, c=64, h=56, w=56, f=64, kh=3, kw=3, pad=1)


def conv2d(_size):
    n, c, h, w, f, kh, kw, pad = CONV.values()
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((n, c, h, w), dtype=np.float32),
            rng.standard_normal((f, c, kh, kw), dtype=np.float32),
            np.zeros((n, f, h, w), np.float32)]
    return dict(title="conv2d 3x3 56x56 64->64", make=lambda te: conv2d_func(te, **CONV),
                args=args, numpy=lambda x, k: numpy_conv2d_nchw(x, k, pad),
                flops=2 * n * f * h * w * c * kh * kw)


WORKLOADS = {"gemm": gemm, "conv2d": conv2d}


def check(spec, out):
    """Raises AssertionError when `out` differs from NumPy's result."""
    expected = spec["numpy"](*spec["args"][:-1])
    np.testing.assert_allclose(out, expected, rtol=2e-3, atol=2e-3)


# --- The work dir: sessions, trials and their times.

def workload_dir(work_dir, name, size, threads):
    label = f"{name}{size}" if name == "gemm" else name
    return os.path.join(work_dir, f"{label}_t{threads}")


def append_json_line(path, value):
    with open(path, "a") as f:
        f.write(json.dumps(value) + "\n")


def read_json_lines(path):
    """The JSON values of a file of one value per line; a line cut short by a killed run (the
    last one) is skipped."""
    if not os.path.exists(path):
        return []
    values = []
    with open(path) as f:
        for line in f:
            try:
                values.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return values


@dataclasses.dataclass
class Sessions:
    """The tuning runs of one tuner in a work dir: [start, end] in seconds since the epoch. A run
    that was killed ends at its last trial's time."""
    spans: list

    @staticmethod
    def load(tuner_dir, trial_times):
        spans = []
        for event in read_json_lines(os.path.join(tuner_dir, "sessions.jsonl")):
            if "start" in event:
                spans.append([event["start"], None])
            elif "end" in event and spans:
                spans[-1][1] = event["end"]
        for i, span in enumerate(spans):
            if span[1] is None:
                until = spans[i + 1][0] if i + 1 < len(spans) else float("inf")
                span[1] = max([t for t in trial_times if span[0] <= t < until], default=span[0])
        return Sessions(spans)

    def elapsed(self, when):
        """Tuning seconds before `when`, over all runs (the time between runs does not count)."""
        return sum(max(0.0, min(when, end) - start) for start, end in self.spans)

    def wall(self):
        """Seconds of all runs, or None when the work dir has no record of them."""
        return self.elapsed(float("inf")) if self.spans else None


def record_session(tuner_dir, event):
    os.makedirs(tuner_dir, exist_ok=True)
    append_json_line(os.path.join(tuner_dir, "sessions.jsonl"), {event: time.time()})


@dataclasses.dataclass
class Trial:
    """One measured candidate: its place in the tuner's order (1-based), when its result was
    known (seconds since the epoch, or None), its time as the tuner measured it (None: failed),
    and what rebuilds it (a kiln TuningRecord, or a line of TVM's JSON database)."""
    index: int
    time: float
    seconds: float
    source: object


def iso_seconds(text):
    """Seconds since the epoch of an ISO 8601 UTC time ("2026-11-29T03:31:57.407Z")."""
    return datetime.datetime.fromisoformat(text).timestamp()


def kiln_trials(tuner_dir, threads):
    """kiln's trials in a work dir, in the order measured: records of the thread count whose
    stage is a trial, timed by their commit (one timestamp per batch)."""
    from kiln import autotune as ms
    path = os.path.join(tuner_dir, "tuning.db")
    if not os.path.exists(path):
        return []
    db = ms.Database(path)
    records = [r for wl in db.workloads() for r in db.records(workload=wl)
               if r.num_threads == threads and (r.search or {}).get("stage") in KILN_TRIAL_STAGES]
    records.sort(key=lambda r: r.id)
    return [Trial(i + 1, iso_seconds(r.created), r.median if r.status == "ok" else None, r)
            for i, r in enumerate(records)]


def tvm_record_lines(tuner_dir):
    path = os.path.join(tuner_dir, "database_tuning_record.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line for line in f.read().splitlines() if line.strip()]


def repair_tvm_records(tuner_dir):
    """Drops a line that a killed run cut short from TVM's JSON database (TVM cannot load the
    file with it); returns the lines kept."""
    lines = tvm_record_lines(tuner_dir)
    kept = []
    for line in lines:
        try:
            json.loads(line)
            kept.append(line)
        except json.JSONDecodeError:
            pass
    if len(kept) < len(lines):
        with open(os.path.join(tuner_dir, "database_tuning_record.json"), "w") as f:
            f.write("".join(line + "\n" for line in kept))
    return kept


def tvm_trials(tuner_dir):
    """TVM's trials: the lines of its JSON database, in the order measured (each batch is
    appended in order), timed by the measure callback's progress.jsonl, which notes the number
    of lines after each batch. A candidate's time is the mean of its run_secs, as
    MetaSchedule ranks them."""
    batches = read_json_lines(os.path.join(tuner_dir, "progress.jsonl"))
    trials = []
    for i, line in enumerate(tvm_record_lines(tuner_dir)):
        try:
            run_secs = json.loads(line)[1][1]
        except (json.JSONDecodeError, IndexError, TypeError):
            continue  # a line cut short by a killed run
        seconds = statistics.mean(run_secs) if run_secs else None
        if seconds is not None and seconds >= TVM_FAILED_SECONDS:
            seconds = None
        when = next((b["time"] for b in batches if b["lines"] > i), None)
        trials.append(Trial(len(trials) + 1, when, seconds, line))
    return trials


def best_so_far_points(trials):
    """The trials after which the tuner's best (by its own measure) improved."""
    points, best = [], None
    for t in trials:
        if t.seconds is not None and (best is None or t.seconds < best):
            best = t.seconds
            points.append(t)
    return points


# --- Tuning, each tuner in a process of its own (`--tuner kiln|tvm`).

def kiln_dir(wdir, args):
    """kiln's work dir of a workload: with its baseline, or the search alone (--search-only)."""
    return os.path.join(wdir, "kiln-search" if args.search_only else "kiln")


def tune_kiln(spec, tuner_dir, trials, threads, search_only):
    from kiln import autotune as ms
    from kiln import te
    done = len(kiln_trials(tuner_dir, threads))
    if done >= trials:
        print(f"  kiln: {done} trials in {tuner_dir} already, not tuned again")
        return
    record_session(tuner_dir, "start")
    options = {"baseline": None} if search_only else {}
    ms.tune_tir(spec["make"](te), target="llvm", work_dir=tuner_dir, max_trials_global=trials,
                num_threads=threads, **options)
    record_session(tuner_dir, "end")


def tvm_import():
    """(tvm, its meta_schedule) of TVM 0.27, or raises ImportError with the reason."""
    import tvm
    try:
        from tvm.s_tir import meta_schedule as tvm_ms
    except ImportError as e:
        raise ImportError(f"TVM {tvm.__version__} has no tvm.s_tir.meta_schedule (this "
                          f"benchmark is written for TVM 0.27): {e}") from e
    return tvm, tvm_ms


def tvm_target(tvm, threads):
    cpu = tvm.target.codegen.llvm_get_system_cpu()
    return tvm.target.Target({"kind": "llvm", "mcpu": cpu, "num-cores": threads})


def tvm_build_without_tensor_intrinsics(mod, target, _params):
    """MetaSchedule's default_build without its import of tvm.s_tir.tensor_intrin: that import
    registers every target's tensor intrinsics (a minute of CPU on this machine, in each worker
    of each batch); these workloads tensorize nothing."""
    from tvm.driver import build as tvm_build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock
    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm_build(mod, target=target)


def tune_tvm(spec, tuner_dir, trials, threads):
    import logging
    tvm, tvm_ms = tvm_import()
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback
    done = len(repair_tvm_records(tuner_dir))
    if done >= trials:
        print(f"  TVM: {done} trials in {tuner_dir} already, not tuned again")
        return
    os.makedirs(tuner_dir, exist_ok=True)
    progress_path = os.path.join(tuner_dir, "progress.jsonl")
    start = time.time()

    @derived_object
    class NoteProgress(PyMeasureCallback):
        """After each batch (and after AddToDatabase, which comes first): when, and the
        database's number of lines; prints the progress."""

        def apply(self, task_scheduler, task_id, measure_candidates, builder_results,
                  runner_results):
            lines = tvm_record_lines(tuner_dir)
            append_json_line(progress_path, {"time": time.time(), "lines": len(lines)})
            best = min((t.seconds for t in tvm_trials(tuner_dir) if t.seconds), default=None)
            best_text = f"{spec['flops'] / best / 1e9:.1f} GFLOP/s" if best else "none ok"
            print(f"  TVM: {len(lines)}/{trials} trials, best {best_text} "
                  f"({time.time() - start:.0f} s this run)", flush=True)

    # The console gets warnings only; the log files under tuner_dir/logs keep everything.
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
    target = tvm_target(tvm, threads)
    remaining = trials - done
    record_session(tuner_dir, "start")
    tvm_ms.tune_tir(
        spec["make"](tvm.te), target, work_dir=tuner_dir, max_trials_global=remaining,
        num_trials_per_iter=min(TVM_TRIALS_PER_ITER, remaining),
        builder=tvm_ms.builder.LocalBuilder(f_build=tvm_build_without_tensor_intrinsics),
        runner=tvm_ms.runner.LocalRunner(), num_tuning_cores=os.cpu_count(),
        measure_callbacks=tvm_ms.MeasureCallback.create("default") + [NoteProgress()])
    record_session(tuner_dir, "end")


TVM_INSTALL = 'pip install apache-tvm "apache-tvm-ffi<0.1.15" xgboost-cpu psutil'
TVM_SELF_CHECK = """
import tvm
from tvm.s_tir import meta_schedule
import xgboost
tvm.ir.save_json(tvm.tirx.Var("x", "int32"))
print(tvm.__version__)
"""


def tvm_problem():
    """Why TVM's column cannot be had here, or None. Checked in a process of its own: a broken
    TVM install can crash the process."""
    if importlib.util.find_spec("tvm") is None:
        return f"TVM is not installed ({TVM_INSTALL})"
    done = subprocess.run([sys.executable, "-c", TVM_SELF_CHECK], capture_output=True, text=True)
    if done.returncode == 0:
        return None
    if done.returncode < 0 or "Segfault" in done.stderr:
        try:
            ffi = importlib.metadata.version("apache-tvm-ffi")
        except importlib.metadata.PackageNotFoundError:
            ffi = "?"
        return (f"TVM crashes serializing TIR (apache-tvm-ffi {ffi}; TVM 0.27 needs "
                "pip install \"apache-tvm-ffi<0.1.15\")")
    last = (done.stderr.strip().splitlines() or ["?"])[-1]
    return f"TVM does not load here: {last} ({TVM_INSTALL})"


def run_tuner(tuner, args, name, tuner_dir, trials):
    """Runs one tuner in a child process; returns its exit code. The child prints progress."""
    command = [sys.executable, os.path.abspath(__file__), "--tuner", tuner, "--only", name,
               "--size", str(args.size), "--threads", str(args.threads), "--work-dir",
               args.work_dir, f"--{tuner}-trials", str(trials)]
    if args.search_only:
        command.append("--search-only")
    env = dict(os.environ, TVM_NUM_THREADS=str(args.threads))
    print(f"[{name}] tuning with {tuner}: {trials} trials on {args.threads} threads into "
          f"{tuner_dir}", flush=True)
    start = time.perf_counter()
    code = subprocess.run(command, env=env).returncode
    print(f"[{name}] {tuner} done in {time.perf_counter() - start:.0f} s (exit code {code})",
          flush=True)
    return code


# --- Building and timing in one process.

def settle():
    """Lets the worker threads of the function timed before go to sleep (OpenBLAS's, TVM's and
    kiln's spin a while after a call and would take the cores of the next one)."""
    time.sleep(0.5)


def warm_up(call, seconds=0.2):
    """Calls `call` for `seconds` (twice at least): the threads of its library are awake and
    spinning when the timing starts, as they are for the second of two builds timed back to
    back; without it the first build of a library after a pause runs slower."""
    start = time.perf_counter()
    for count in range(1 << 30):
        if count >= 2 and time.perf_counter() - start >= seconds:
            return
        call()


@dataclasses.dataclass
class Timed:
    """A function timed in the rounds: `run` returns seconds per call."""
    label: str
    run: object
    seconds: list = dataclasses.field(default_factory=list)

    def median(self):
        return statistics.median(self.seconds) if self.seconds else None


def kiln_timed(label, rt, spec, args):
    """A built kiln module, checked against NumPy, as a Timed."""
    import kiln
    outputs = [a.copy() for a in spec["args"]]
    rt(*outputs)
    check(spec, outputs[-1])
    nd_args = [kiln.nd.array(a) for a in spec["args"]]

    def run():
        warm_up(lambda: rt(*nd_args))
        return kiln_seconds(rt, nd_args, repeat=args.repeat, number=args.number)
    return Timed(label, run)


def tvm_timed(label, tvm, mod, target, spec, args):
    """A TVM module built from a scheduled IRModule, checked against NumPy, as a Timed."""
    rt = tvm.compile(mod, target=target).jit()
    dev = tvm.cpu(0)
    tensors = [tvm.runtime.tensor(a, dev) for a in spec["args"]]
    rt["main"](*tensors)
    check(spec, tensors[-1].numpy())
    evaluator = rt.time_evaluator("main", dev, number=args.number, repeat=args.repeat)

    def run():
        warm_up(lambda: rt["main"](*tensors))
        return evaluator(*tensors).median
    return Timed(label, run)


def timed_builds(tuner, trials, schedule_of, build, hash_of, final_schedule, build_final):
    """(the final build, {trial index: Timed of the best so far after it, None where it failed})
    of one tuner. `schedule_of(trial)` replays a trial's schedule, `build(label, mod)` builds and
    checks one, `hash_of(mod)` tells two schedules apart; the final schedule is usually the last
    best so far, and one schedule is built and timed once."""
    by_code, points = {}, {}
    best = min(t.seconds for t in trials if t.seconds)
    for t in best_so_far_points(trials):
        if t.seconds > best / CURVE_FLOOR:
            continue
        try:
            mod = schedule_of(t).mod
            key = hash_of(mod)
            if key not in by_code:
                by_code[key] = build(f"{tuner} trial {t.index}", mod)
            points[t.index] = by_code[key]
        except Exception as e:  # noqa: BLE001 (a wrong or failing candidate is reported)
            print(f"  {tuner} trial {t.index}: {type(e).__name__}: {str(e)[:200]}")
            points[t.index] = None
    final = by_code.get(hash_of(final_schedule.mod)) or build_final()
    return final, points


def kiln_builds(spec, tuner_dir, trials, args):
    """timed_builds of kiln's work dir; the final build is kiln.build(func, database=...)."""
    import kiln
    from kiln import autotune as ms
    from kiln import ir, te, tir
    func = spec["make"](te)
    kiln.runtime.set_num_threads(args.threads)
    db = ms.Database(os.path.join(tuner_dir, "tuning.db"))

    def schedule_of(trial):
        sch = tir.Schedule(func)
        tir.Trace.apply_json_to_schedule(json.loads(trial.source.trace), sch)
        return sch
    return timed_builds(
        "kiln", trials, schedule_of,
        lambda label, mod: kiln_timed(label, kiln.build(mod, target="llvm"), spec, args),
        ir.structural_hash, ms.compile_tir(db, func, target="llvm"),
        lambda: kiln_timed("kiln final", kiln.build(func, target="llvm", database=db), spec,
                           args))


def tvm_builds(spec, tuner_dir, trials, args):
    """timed_builds of TVM's work dir; the final schedule is compile_tir's."""
    tvm, tvm_ms = tvm_import()
    from tvm.s_tir import Schedule
    from tvm_ffi import structural_hash
    target = tvm_target(tvm, args.threads)
    func = spec["make"](tvm.te)
    repair_tvm_records(tuner_dir)
    database = tvm_ms.database.JSONDatabase(work_dir=tuner_dir, allow_missing=False)
    final = tvm_ms.tir_integration.compile_tir(database, func, target)
    with open(os.path.join(tuner_dir, "database_workload.json")) as f:
        workload = tvm_ms.database.Workload.from_json(json.loads(f.readline()))

    def schedule_of(trial):
        record = tvm_ms.database.TuningRecord.from_json(json.loads(trial.source)[1], workload)
        sch = Schedule(workload.mod)
        record.trace.apply_to_schedule(sch, remove_postproc=False)
        return sch

    def build(label, mod):
        return tvm_timed(label, tvm, mod, target, spec, args)
    return timed_builds("TVM", trials, schedule_of, build, structural_hash, final,
                        lambda: build("TVM final", final.mod))


def time_in_rounds(entries, rounds):
    """Times every entry once per round, in the same order each round, each after a pause and
    a warm-up (in its run): every build starts from the same state."""
    for r in range(rounds):
        for e in entries:
            settle()
            e.seconds.append(e.run())
        print(f"  round {r + 1}/{rounds} timed ({len(entries)} builds)", flush=True)


@dataclasses.dataclass
class Outcome:
    """What one tuner gave on one workload."""
    tuner: str
    trials: list
    wall: float
    sessions: Sessions
    final: Timed = None
    points: dict = None
    error: str = ""

    def final_gflops(self, flops):
        return flops / self.final.median() / 1e9 if self.final and self.final.seconds else None

    def curve(self, flops):
        """[(trial, GFLOP/s here of the best so far after it)] at each improvement that was
        timed; 0.0 where the build failed or computed a wrong result."""
        out = []
        for index, timed in sorted((self.points or {}).items()):
            out.append((index, flops / timed.median() / 1e9 if timed and timed.seconds else 0.0))
        return out

    def reach(self, flops, target_gflops):
        """(trials, tuning seconds) until the best so far ran at target_gflops or more, or
        None."""
        if not target_gflops:
            return None
        for index, gflops in self.curve(flops):
            if gflops >= target_gflops:
                trial = self.trials[index - 1]
                seconds = self.sessions.elapsed(trial.time) if trial.time else None
                return index, seconds
        return None


def tuner_outcome(tuner, spec, tuner_dir, args):
    trials = kiln_trials(tuner_dir, args.threads) if tuner == "kiln" else tvm_trials(tuner_dir)
    sessions = Sessions.load(tuner_dir, [t.time for t in trials if t.time])
    outcome = Outcome(tuner, trials, sessions.wall(), sessions)
    if not any(t.seconds for t in trials):
        outcome.error = f"no successful trial in {tuner_dir}"
        return outcome
    try:
        builds = kiln_builds if tuner == "kiln" else tvm_builds
        outcome.final, outcome.points = builds(spec, tuner_dir, trials, args)
    except Exception as e:  # noqa: BLE001 (reported in the table)
        outcome.error = f"{type(e).__name__}: {str(e)[:300]}"
    return outcome


def numpy_timed(spec, args):
    inputs = spec["args"][:-1]

    def run():
        with threadpool_limits(limits=args.threads, user_api="blas"):
            warm_up(lambda: spec["numpy"](*inputs))
            return median_seconds(lambda: spec["numpy"](*inputs), repeat=args.repeat,
                                  number=args.number)
    return Timed("NumPy", run)


def text(value, form):
    return "-" if value is None else form.format(value)


def reach_text(reached):
    if reached is None:
        return "not reached", "-"
    return str(reached[0]), text(reached[1], "{:.0f}")


def report(name, spec, outcomes, numpy, peak, args):
    flops = spec["flops"]
    t_numpy = numpy.median()
    finals = {o.tuner: o.final_gflops(flops) for o in outcomes}
    rows = []
    for o in outcomes:
        other = [t for t in finals if t != o.tuner]
        own, theirs = finals[o.tuner], (finals[other[0]] if other else None)
        tuner_best = min((t.seconds for t in o.trials if t.seconds), default=None)
        own_reach = reach_text(o.reach(flops, REACH * own)) if own else ("-", "-")
        other_reach = reach_text(o.reach(flops, REACH * theirs)) if own and theirs else ("-", "-")
        rows.append([o.tuner, str(len(o.trials)), text(o.wall, "{:.0f}"),
                     text(flops / tuner_best / 1e9 if tuner_best else None, "{:.1f}"),
                     text(own, "{:.1f}"),
                     text(t_numpy * own * 1e9 / flops if own else None, "{:.2f}x"),
                     text(own / peak if own and peak else None, "{:.0%}"),
                     *own_reach, *other_reach])
    g_numpy = flops / t_numpy / 1e9
    rows.append(["NumPy", "-", "-", "-", f"{g_numpy:.1f}", "1.00x",
                 text(g_numpy / peak if peak else None, "{:.0%}"), "-", "-", "-", "-"])
    print_table(f"{spec['title']}, {args.threads} threads: medians of {args.rounds} alternating "
                "rounds", HEADER, rows)
    for o in outcomes:
        if o.error:
            print(f"  {o.tuner}: {o.error}")
        else:
            print(f"  {o.tuner} curve (trial: GFLOP/s here of its best so far): "
                  + ", ".join(f"{i}: {g:.1f}" if g else f"{i}: failed"
                              for i, g in o.curve(flops)))
    verdict(outcomes, finals, flops)


def verdict(outcomes, finals, flops):
    """The yardstick: kiln at 90% of TVM's final speed within a tenth of TVM's trials and wall
    time."""
    by_tuner = {o.tuner: o for o in outcomes}
    if not (finals.get("kiln") and finals.get("TVM")):
        return
    kiln_run, tvm_run = by_tuner["kiln"], by_tuner["TVM"]
    reached = kiln_run.reach(flops, REACH * finals["TVM"])
    goal = (f"yardstick: kiln at {REACH:.0%} of TVM's final {finals['TVM']:.1f} GFLOP/s within "
            f"a tenth of TVM's {len(tvm_run.trials)} trials and {text(tvm_run.wall, '{:.0f}')} s")
    if reached is None:
        print(f"  {goal}: not reached in kiln's {len(kiln_run.trials)} trials")
        return
    trials, seconds = reached
    met = trials * 10 <= len(tvm_run.trials) and seconds is not None and \
        tvm_run.wall is not None and seconds * 10 <= tvm_run.wall
    print(f"  {goal}: reached at trial {trials} "
          f"({trials / len(tvm_run.trials):.1%} of TVM's trials) after "
          f"{text(seconds, '{:.0f}')} s "
          f"({text(seconds / tvm_run.wall if seconds and tvm_run.wall else None, '{:.1%}')} "
          f"of TVM's wall time): {'met' if met else 'not met'}")


HEADER = ["tuner", "trials", "tune s", "GFLOP/s in tuning", "GFLOP/s", "vs NumPy",
          "% FMA peak", "trials to 90%", "s to 90%", "trials to 90% of other",
          "s to 90% of other"]


def save(path, name, spec, outcomes, numpy, peak, args):
    """Writes the comparison's numbers to `path` (JSON): every round's seconds, each trial's
    time in tuning and tuning seconds so far, each tuner's curve."""
    flops = spec["flops"]
    value = dict(workload=name, title=spec["title"], threads=args.threads, flops=flops,
                 fma_peak_gflops=peak, numpy_seconds_by_round=numpy.seconds, tuners={})
    for o in outcomes:
        value["tuners"][o.tuner] = dict(
            trials=len(o.trials), wall_seconds=o.wall, error=o.error,
            final_seconds_by_round=o.final.seconds if o.final else None,
            best_so_far_seconds_by_round={i: t.seconds if t else None
                                          for i, t in sorted((o.points or {}).items())},
            trials_measured=[dict(trial=t.index, seconds=t.seconds,
                                  tuning_seconds=o.sessions.elapsed(t.time) if t.time else None)
                             for t in o.trials],
            curve=o.curve(flops))
    with open(path, "w") as f:
        json.dump(value, f, indent=1)


def compare(name, spec, wdir, tvm_reason, peak, args):
    """Builds, checks and times what the work dir holds; prints the table and saves it."""
    outcomes = [tuner_outcome("kiln", spec, kiln_dir(wdir, args), args)]
    if tvm_reason is None:
        outcomes.append(tuner_outcome("TVM", spec, os.path.join(wdir, "tvm"), args))
    numpy = numpy_timed(spec, args)
    entries = [numpy]
    for o in outcomes:
        for timed in [o.final] + [t for _, t in sorted((o.points or {}).items())]:
            if timed and all(timed is not e for e in entries):
                entries.append(timed)
    print(f"[{name}] timing {len(entries)} builds in {args.rounds} rounds", flush=True)
    time_in_rounds(entries, args.rounds)
    report(name, spec, outcomes, numpy, peak, args)
    os.makedirs(wdir, exist_ok=True)
    save(os.path.join(wdir, "compare.json"), name, spec, outcomes, numpy, peak, args)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated workloads: gemm,conv2d")
    parser.add_argument("--kiln-trials", type=int, default=128)
    parser.add_argument("--tvm-trials", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="threads of both tuners' kernels and of NumPy")
    parser.add_argument("--size", type=int, default=1024, help="GEMM size (n x n x n)")
    parser.add_argument("--work-dir", default="bench_vs_tvm_work")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=1, help="calls per timing")
    parser.add_argument("--compare-only", action="store_true",
                        help="no tuning: time the best of what the work dir holds")
    parser.add_argument("--search-only", action="store_true",
                        help="kiln without its baseline schedule (work dir kiln-search)")
    parser.add_argument("--tuner", choices=["kiln", "tvm"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = chosen_workloads(parser, args.only, WORKLOADS)
    args.work_dir = os.path.abspath(args.work_dir)
    if args.tuner:  # a child process: one tuner, one workload
        (name,) = names
        spec = WORKLOADS[name](args.size)
        wdir = workload_dir(args.work_dir, name, args.size, args.threads)
        if args.tuner == "kiln":
            tune_kiln(spec, kiln_dir(wdir, args), args.kiln_trials, args.threads,
                      args.search_only)
        else:
            tune_tvm(spec, os.path.join(wdir, "tvm"), args.tvm_trials, args.threads)
        return
    # TVM reads its thread count when its runtime starts, in this process and in the children.
    os.environ["TVM_NUM_THREADS"] = str(args.threads)
    from bench_gemm import fma_peak
    load_before = load_average()
    tvm_reason = tvm_problem()
    if tvm_reason:
        print(f"TVM column skipped: {tvm_reason}")
    peak = fma_peak(args.threads)
    for name in names:
        spec = WORKLOADS[name](args.size)
        wdir = workload_dir(args.work_dir, name, args.size, args.threads)
        if not args.compare_only:
            run_tuner("kiln", args, name, kiln_dir(wdir, args), args.kiln_trials)
            if tvm_reason is None:
                run_tuner("tvm", args, name, os.path.join(wdir, "tvm"), args.tvm_trials)
        compare(name, spec, wdir, tvm_reason, peak, args)
    import kiln
    from kiln import autotune as ms
    tvm_text = "TVM not used"
    if tvm_reason is None:
        tvm, _ = tvm_import()
        tvm_text = f"TVM {tvm.__version__} target {tvm_target(tvm, args.threads)}"
    print(f"\nkiln target {kiln.target.Target('llvm')}; {tvm_text}; CPU {ms.cpu_model_name()}, "
          f"{args.threads} threads; FMA peak {text(peak, '{:.1f}')} GFLOP/s; load average "
          f"before {load_before}, after {load_average()}")


if __name__ == "__main__":
    main()
