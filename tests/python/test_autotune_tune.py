"""The search end to end: kiln.autotune.tune_tir / tune_tasks / compile_tir, kiln.build with a
database, the `kiln` command line, and what a tuning run survives (faulty candidates, Ctrl-C,
kill -9, two processes on one database, records of another CPU or thread count). Budgets are
small: these tests check behaviour; benchmarks/bench_tune.py measures how good the schedules
get."""
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import pytest

import kiln
from kiln import autotune as ms
from kiln import te, tir
from kiln.error import (KilnTypeError, KilnValueError, TuningRecordMissingWarning,
                        TuningRecordThreadsWarning)

from tune_helpers import SMALL, matmul, run_matmul

WORKLOAD_FILE = """
from kiln import te

def matmul(n={n}):
    a = te.placeholder((n, n), "float32", name="A")
    b = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c])

def small():
    return matmul(32)

def two():
    return [("mm", matmul(32)), ("mm48", matmul(48))]

def named():
    return ("mine", matmul(16))
"""


def workload_file(tmp_path, n=48):
    path = tmp_path / "workloads.py"
    path.write_text(WORKLOAD_FILE.replace("{n}", str(n)))
    return path


def cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "kiln", *map(str, args)], capture_output=True,
                          text=True, timeout=600, **kwargs)


def test_tune_tir_stores_a_schedule_that_build_applies(tmp_path):
    func = matmul()
    db = ms.tune_tir(func, target="llvm", work_dir=tmp_path, max_trials_global=16, **SMALL)
    assert isinstance(db, ms.Database)
    assert (tmp_path / "tuning.db").is_file() and (tmp_path / "tune.log").is_file()
    assert (tmp_path / "cost_model").is_dir()
    log = (tmp_path / "tune.log").read_text()
    # Rounds of 8 stop 2 trials short of 16 (local_search_trials): the local search's.
    assert "trials 8/16" in log and "trials 14/16" in log and "final:" in log
    assert "final pool: " in log
    # Every measured candidate is a record; all of them ran right.
    (workload,) = db.workloads()
    records = db.records(workload)
    assert len({r.candidate_hash for r in records}) == 16
    assert all(r.status == "ok" for r in records)
    # Each trial keeps the hash of its lowered code (a resumed run skips schedules of that
    # code), and no two trials share one.
    trials = [r for r in records if r.search.get("stage") in ("screen", "local", "baseline")]
    codes = [r.search["code_hash"] for r in trials]
    assert all(isinstance(c, int) and c > 0 for c in codes)
    assert len(set(codes)) == len(codes) == 16
    # The best schedule replays on the function and differs from it.
    sch = ms.compile_tir(db, func, target="llvm")
    assert isinstance(sch, tir.Schedule)
    assert not kiln.ir.structural_equal(sch.mod.functions["main"], func)
    run_matmul(kiln.build(sch, target="llvm"))
    # db.best names the function and the target as a user does.
    # The best is the verdict of the final interleaved rounds, which timed the top candidates
    # side by side: the record marked winner.
    best = db.best(func, "llvm")
    winners = [r for r in db.records(workload) if r.search.get("winner")]
    assert len(winners) == 1 and winners[0].search["stage"] == "final"
    # The final rounds timed the best two of a pool of five (and the baseline) timed before.
    pool = {r.candidate_hash for r in records if r.search.get("stage") == "pool"}
    final = {r.candidate_hash for r in records if r.search.get("stage") == "final"}
    assert len(pool) >= 5 and 2 <= len(final) < len(pool) and final <= pool
    assert len(best) == 1 and best[0].candidate_hash == winners[0].candidate_hash
    assert db.best(matmul(24), "llvm") == []  # never tuned
    # MetaSchedule's lookups give the same record and schedule; of a module of several
    # functions, the one named workload_name.
    assert db.has_workload(func) and not db.has_workload(matmul(24))
    assert db.query_tuning_record(func, "llvm") == best[0]
    assert db.query_tuning_record(matmul(24), "llvm") is None
    module = kiln.ir.IRModule({"main": func, "other": matmul(24)})
    assert kiln.ir.structural_equal(db.query_schedule(module, "llvm").mod, sch.mod)
    assert kiln.ir.structural_equal(db.query_ir_module(func, "llvm"), sch.mod)
    assert db.query_schedule(module, "llvm", workload_name="other") is None
    with pytest.raises(KilnValueError, match=r"Database.query_ir_module: expected one function "
                       r"or a function named 'mm' \(workload_name\), found a module of 2 "
                       r"functions \('main', 'other'\)"):
        db.query_ir_module(module, "llvm", workload_name="mm")
    # The pool and the final rounds load the objects their candidates were compiled to, as
    # does a build from the database in the work_dir.
    assert (tmp_path / "object_cache").is_dir()
    assert re.search(r"final pool: \d+ candidates x 1 interleaved rounds, \d+ built from the "
                     r"object cache", log)
    assert re.search(r"final: .* GFLOP/s, \d+ built from the object cache", log)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TuningRecordMissingWarning)
        rt = kiln.build(func, target="llvm", database=db)
        assert rt.build_timings["from_cache"]
        run_matmul(rt)
        rt = kiln.build(func, target="llvm", database=str(tmp_path / "tuning.db"),
                        object_cache="")
        assert not rt.build_timings["from_cache"]
        run_matmul(rt)


def test_a_second_run_resumes_and_spends_only_what_is_left(tmp_path):
    func = matmul(32)
    first = ms.tune_tasks([("mm", func)], work_dir=tmp_path, max_trials_global=8, **SMALL)
    assert first[0].trials == 8 and first[0].trials_this_run == 8
    assert first[0].best_seconds > 0 and first[0].best_gflops > 0
    assert first[0].best_trace is not None and first[0].best_so_far[-1][0] == 8
    same = ms.tune_tasks([("mm", func)], work_dir=tmp_path, max_trials_global=8, **SMALL)
    assert same[0].trials_this_run == 0 and same[0].trials == 8
    more = ms.tune_tasks([("mm", func)], work_dir=tmp_path, max_trials_global=16, **SMALL)
    assert more[0].trials_this_run == 8 and more[0].trials == 16
    assert more[0].best_seconds <= first[0].best_seconds * 1.5  # seeded from the stored best


def test_each_thread_count_is_tuned_on_its_own_and_build_prefers_its_own(tmp_path):
    func = matmul(32)
    one = ms.tune_tasks([("mm", func)], work_dir=tmp_path, max_trials_global=8, num_threads=1,
                        **SMALL)
    two = ms.tune_tasks([("mm", func)], work_dir=tmp_path, max_trials_global=8, num_threads=2,
                        **SMALL)
    assert one[0].trials_this_run == 8
    assert two[0].trials_this_run == 8 and two[0].trials == 8  # the 1-thread trials do not count
    db = ms.Database(tmp_path / "tuning.db")
    assert {r.num_threads for r in db.records()} == {1, 2}
    assert db.best(func, "llvm", num_threads=1)[0].num_threads == 1
    assert db.best(func, "llvm", num_threads=2)[0].num_threads == 2
    try:
        kiln.runtime.set_num_threads(1)
        with warnings.catch_warnings():
            warnings.simplefilter("error", TuningRecordThreadsWarning)
            run_matmul(kiln.build(func, database=db), n=32)
            assert db.best(func, "llvm")[0].num_threads == 1  # the runtime's count by default
        # No record of 3 threads: the best of 1 or 2 threads is applied, with one warning.
        kiln.runtime.set_num_threads(3)
        with pytest.warns(TuningRecordThreadsWarning, match="kiln.build: .* no record of function "
                          "'main' on target .* measured with 3 threads; the best record, tuned "
                          "for [12] threads?, is used; tune with num_threads=3"):
            run_matmul(kiln.build(func, database=db), n=32)
        with warnings.catch_warnings():
            warnings.simplefilter("error", TuningRecordThreadsWarning)
            run_matmul(kiln.build(func, database=db), n=32)  # warned already
        with pytest.warns(TuningRecordThreadsWarning, match="compile_tir: .* measured with 4 "
                          "threads"):
            assert ms.compile_tir(db, func, num_threads=4) is not None
    finally:
        kiln.runtime.set_num_threads(0)  # the default again


def test_functions_that_share_a_name_go_by_their_outputs_and_show_a_bar_each(tmp_path, capsys):
    # te.create_prim_func names every function "main": the tasks go by their outputs' names,
    # a name still repeated gets "#2", and a name given stays.
    x = te.placeholder((64,), "float32", name="X")
    doubled = te.create_prim_func([x, te.compute((64,), lambda i: x[i] * 2, name="Y")])
    config = dict(SMALL, progress=True, max_trials_global=2, num_trials_per_iter=2,
                  local_search_trials=0, final_pool_rounds=0, final_rounds=0, baseline=None)
    results = ms.tune_tasks([matmul(8), doubled, matmul(16), ("mine", matmul(4))],
                            work_dir=tmp_path, **config)
    assert [r.task for r in results] == ["C", "Y", "C#2", "mine"]
    # One bar per task, each there from the start (at 0 trials), whether or not the task
    # scheduler gave it a round.
    bars = capsys.readouterr().err.replace("\r", "\n")
    for name in ("C", "Y", "C#2", "mine"):
        assert re.search(rf"^{re.escape(name)}: +0%.* 0/2 ", bars, re.M), bars


def test_a_time_budget_ends_the_rounds_and_the_final_rounds_pick(tmp_path):
    func = matmul()
    results = ms.tune_tasks([func], work_dir=tmp_path, max_trials_global=4096, time_budget_s=3,
                            **SMALL)
    assert results[0].out_of_time
    assert 0 < results[0].trials_this_run < 4096
    log = (tmp_path / "tune.log").read_text()
    assert f"time budget of 3 s spent after {results[0].trials_this_run} trials" in log
    stages = {r.search.get("stage") for r in ms.Database(tmp_path / "tuning.db").records()}
    assert "final" in stages and "local" not in stages
    run_matmul(kiln.build(func, database=tmp_path / "tuning.db"))
    # The command line's --time-budget.
    done = cli("tune", f"{workload_file(tmp_path)}:small", "--trials", 4096, "--per-iter", 8,
               "--time-budget", 2, "--db", tmp_path / "c.db", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "time budget of 2 s spent" in (tmp_path / "c_work" / "tune.log").read_text()


def test_faulty_candidates_are_recorded_and_the_search_goes_on(tmp_path):
    # Candidates 1, 3, 5 and 6 of the run crash, hang, compute a wrong result and abort.
    runner = ms.LocalRunner(ms.RunnerConfig(
        repeat=2, timeout_s=5, fault_plan={1: "crash", 3: "hang", 5: "wrong_result", 6: "abort"}))
    results = ms.tune_tasks([matmul(32)], work_dir=tmp_path, runner=runner,
                            max_trials_global=16, **SMALL)
    assert results[0].trials_this_run == 16
    assert results[0].failures == {"crash": 2, "timeout": 1, "wrong_result": 1}
    assert results[0].best_seconds > 0
    db = ms.Database(tmp_path / "tuning.db")
    statuses = sorted(r.status for r in db.records(db.workloads()[0]) if r.status != "ok")
    assert statuses == ["crash", "crash", "timeout", "wrong_result"]
    errors = [r.error for r in db.records(db.workloads()[0]) if r.status != "ok"]
    assert all(errors)
    # The best is a candidate that ran right, and it still builds right.
    run_matmul(kiln.build(matmul(32), database=db), n=32)
    runner.close()


def test_build_warns_once_without_a_record_and_refuses_a_schedule(tmp_path):
    db = ms.Database(tmp_path / "empty.db")
    func = matmul(16)
    with pytest.warns(TuningRecordMissingWarning, match="no record of function 'main'"):
        run_matmul(kiln.build(func, database=db), n=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TuningRecordMissingWarning)
        run_matmul(kiln.build(func, database=db), n=16)  # warned already
    with pytest.raises(KilnValueError, match="not a tir.Schedule"):
        kiln.build(tir.Schedule(func), database=db)
    assert ms.compile_tir(db, func) is None
    # A path where there is no database: the build warns and builds as given, and neither it
    # nor compile_tir leaves an empty database there.
    missing = tmp_path / "no_such" / "tuning.db"
    with pytest.warns(TuningRecordMissingWarning, match="no tuning database at .*no_such"):
        run_matmul(kiln.build(func, database=missing), n=16)
    with pytest.warns(TuningRecordMissingWarning, match="no schedule to compile"):
        assert ms.compile_tir(str(missing), func) is None
    assert not missing.parent.exists()


def test_records_of_another_cpu_model_are_not_applied(tmp_path):
    func = matmul(32)
    db = ms.tune_tir(func, work_dir=tmp_path / "here", max_trials_global=8, **SMALL)
    exported = tmp_path / "records.jsonl"
    db.export_jsonl(exported)
    model = ms.cpu_model_name()
    lines = exported.read_text().splitlines()
    changed = [line.replace(json.dumps(model)[1:-1], "Some Other CPU 9000") for line in lines]
    assert changed != lines
    (tmp_path / "other.jsonl").write_text("\n".join(changed) + "\n")
    other = ms.Database(tmp_path / "other.db")
    other.merge(tmp_path / "other.jsonl")
    assert len(other.records(other.workloads()[0])) == len(db.records(db.workloads()[0]))
    assert ms.compile_tir(other, func) is None
    assert other.best(func, "llvm") == [] and len(db.best(func, "llvm")) == 1
    with pytest.warns(TuningRecordMissingWarning, match="CPU model"):
        kiln.build(func, database=other)


def test_bad_arguments_name_the_api_and_what_was_found(tmp_path):
    with pytest.raises(KilnTypeError, match="tune_tir: expected a PrimFunc.*found .*int"):
        ms.tune_tir(42, work_dir=tmp_path)
    with pytest.raises(KilnTypeError, match="unknown TuneConfig field 'trials'"):
        ms.tune_tasks([matmul(8)], work_dir=tmp_path, trials=3)
    with pytest.raises(KilnValueError, match="work_dir"):
        ms.tune_tasks([matmul(8)])
    with pytest.raises(KilnValueError, match="one weight per task \\(2\\)"):
        ms.tune_tasks([matmul(8), matmul(16)], work_dir=tmp_path, weights=[1.0])
    with pytest.raises(KilnValueError, match="weight of task 1 must be a positive number, found -2"):
        ms.tune_tasks([matmul(8), matmul(16)], work_dir=tmp_path, weights=[1, -2])
    with pytest.raises(KilnValueError, match="weight of task 0 .* found 'x'"):
        ms.tune_tasks([("mm", matmul(8), "x")], work_dir=tmp_path)
    with pytest.raises(KilnValueError, match="search_threads.*-1"):
        ms.tune_tir(matmul(8), work_dir=tmp_path, max_trials_global=4, search_threads=-1)
    for budget in (0, -1.5, float("nan")):
        with pytest.raises(KilnValueError, match="time_budget_s must be a positive number"):
            ms.tune_tir(matmul(8), work_dir=tmp_path, max_trials_global=4, time_budget_s=budget)
    with pytest.raises(KilnTypeError, match="time_budget_s"):
        ms.tune_tir(matmul(8), work_dir=tmp_path, max_trials_global=4, time_budget_s="1 min")
    n = tir.Var("n", "int32")
    a = te.placeholder((n,), "float32", name="A")
    b = te.compute((n,), lambda i: a[i] * 2, name="B")
    with pytest.raises(KilnValueError, match="symbolic"):
        ms.tune_tir(te.create_prim_func([a, b]), work_dir=tmp_path, max_trials_global=4)
    (tmp_path / "garbage.db").write_bytes(b"not a database" * 100)
    with pytest.raises(kiln.KilnRuntimeError, match="not a SQLite database"):
        ms.tune_tir(matmul(8), database=tmp_path / "garbage.db", max_trials_global=4)
    assert (tmp_path / "garbage.db").read_bytes() == b"not a database" * 100


def test_cli_tunes_a_file_and_shows_the_database(tmp_path):
    path = workload_file(tmp_path)
    db = tmp_path / "t.db"
    done = cli("tune", f"{path}:two", "--trials", 8, "--per-iter", 4, "--db", db, "--no-progress")
    assert done.returncode == 0, done.stderr
    table = done.stdout.splitlines()
    assert table[0].split()[:2] == ["task", "trials"]
    assert {line.split()[0] for line in table[2:]} == {"mm", "mm48"}
    listing = cli("db", "list", db)
    assert listing.returncode == 0 and len(listing.stdout.splitlines()) == 4  # header + 2
    # Both list and show give the thread count the records were measured with.
    with ms.Database(db) as opened:
        (threads,) = {str(r.num_threads) for r in opened.records()}
    header, _, *rows = listing.stdout.splitlines()
    assert header.split()[:4] == ["id", "hash", "records", "threads"]
    assert all(row.split()[3] == threads for row in rows)
    shown = cli("db", "show", db, "--top", 1)
    assert shown.returncode == 0 and "median ms" in shown.stdout
    header, _, *rows = shown.stdout.splitlines()
    at = header.index("threads")  # the device column has spaces: cut at the column's offset
    assert len(rows) == 2 and all(row[at:].split()[0] == threads for row in rows)
    # The candidates were compiled into t_work/object_cache, where a build from t.db finds them.
    assert (tmp_path / "t_work" / "object_cache").is_dir()
    rt = kiln.build(matmul(48), database=db)
    assert rt.build_timings["from_cache"]
    run_matmul(rt)
    exported = cli("db", "export", db, tmp_path / "e.jsonl")
    assert exported.returncode == 0 and (tmp_path / "e.jsonl").stat().st_size > 0
    missing = cli("tune", f"{path}:nothing", "--db", db)
    assert missing.returncode != 0 and "defines no 'nothing'" in missing.stderr
    # A (name, func) pair is one task of that name.
    one = cli("tune", f"{path}:named", "--trials", 2, "--per-iter", 2, "--db", tmp_path / "n.db",
              "--no-progress", "--no-baseline")
    assert one.returncode == 0, one.stderr
    assert [line.split()[0] for line in one.stdout.splitlines()[2:]] == ["mine"]
    # Reading a database that is not there is an error, and leaves no empty one behind.
    for command in (["list"], ["show"], ["export", tmp_path / "x.jsonl"]):
        absent = cli("db", command[0], tmp_path / "absent.db", *command[1:])
        assert absent.returncode == 1 and "no tuning database at" in absent.stderr
    assert not (tmp_path / "absent.db").exists() and not (tmp_path / "x.jsonl").exists()


def wait_for_records(db_path, count, proc, limit_s=300):
    deadline = time.time() + limit_s
    while time.time() < deadline:
        assert proc.poll() is None, proc.communicate()
        if os.path.exists(db_path):
            db = ms.Database(db_path)
            workloads = db.workloads()
            if workloads and len(db.records(workloads[0])) >= count:
                db.close()
                return
            db.close()
        time.sleep(0.2)
    raise AssertionError(f"no {count} records in {db_path} within {limit_s} s")


@pytest.mark.parametrize("how", ["sigint", "sigkill"])
def test_a_stopped_run_keeps_its_batches_and_resumes(tmp_path, how):
    path = workload_file(tmp_path, n=32)
    db_path = tmp_path / "t.db"
    args = ["tune", f"{path}:matmul", "--trials", 400, "--per-iter", 4, "--db", db_path,
            "--no-progress"]
    # Ctrl-C's default action in the child, whatever this process inherited (a test run started
    # in the background ignores SIGINT, and so would its children).
    proc = subprocess.Popen([sys.executable, "-m", "kiln", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_for_records(db_path, 8, proc)
        proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    if how == "sigint":
        assert proc.returncode == 130 and "run the same command again to resume" in err
    else:
        assert proc.returncode == -signal.SIGKILL
    # The database is consistent; kill -9 loses the batch in flight (batches are committed
    # whole), Ctrl-C commits what the batch had measured.
    db = ms.Database(db_path)
    (workload,) = db.workloads()
    kept = len({r.candidate_hash for r in db.records(workload)})
    assert kept >= 8
    if how == "sigkill":
        assert kept % 4 == 0
    db.close()
    done = cli("tune", f"{path}:matmul", "--trials", kept + 4, "--per-iter", 4, "--db", db_path,
               "--no-progress")
    assert done.returncode == 0, done.stderr
    row = done.stdout.splitlines()[2].split()
    assert int(row[1]) == kept + 4 and int(row[2]) == 4  # trials, trials this run


def test_two_processes_tune_into_one_database(tmp_path):
    path = workload_file(tmp_path)
    db_path = tmp_path / "shared.db"
    procs = [subprocess.Popen([sys.executable, "-m", "kiln", "tune", f"{path}:{name}",
                               "--trials", "8", "--per-iter", "4", "--db", str(db_path),
                               "--work-dir", str(tmp_path / name), "--no-progress"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("matmul", "small")]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    db = ms.Database(db_path)
    counts = [len({r.candidate_hash for r in db.records(w)}) for w in db.workloads()]
    assert counts == [8, 8]
    assert all(r.status == "ok" for w in db.workloads() for r in db.records(w))
