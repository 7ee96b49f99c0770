"""The baseline schedule of a tuning run (TuneConfig.baseline): topi.default_schedule's schedule,
or a user's, measured as one ordinary record of each task's first round, so that the best record
is never slower than it; measured once per database, skipped with a logged reason when it
cannot be made or replayed. Small budgets: these tests check records and log lines, never
timings."""
import json
import subprocess
import sys

import pytest

import kiln
from kiln import autotune as ms
from kiln import tir, topi
from kiln.error import KilnTypeError, KilnValueError

from tune_helpers import matmul, write_ops_file

SMALL = dict(num_trials_per_iter=4, population=16, random_per_round=4, children_per_round=8,
             final_pool_k=5, final_pool_rounds=1, final_top_k=2, final_rounds=2,
             local_search_trials=0, progress=False)


def baseline_records(db):
    return [r for w in db.workloads() for r in db.records(w) if r.search["stage"] == "baseline"]


def log_of(work_dir):
    return (work_dir / "tune.log").read_text()


def test_the_default_schedule_is_measured_as_a_record_of_the_first_round(tmp_path):
    func = matmul(32)
    (result,) = ms.tune_tasks([("mm", func)], work_dir=tmp_path, max_trials_global=4, **SMALL)
    assert result.trials == 4  # the baseline is one of the trials
    assert "[mm] baseline (topi.default_schedule): " in log_of(tmp_path)
    assert " ms\n" in log_of(tmp_path).split("[mm] baseline (topi.default_schedule): ")[1]
    db = ms.Database(tmp_path / "tuning.db")
    (record,) = baseline_records(db)
    assert record.status == "ok" and record.search["baseline"] == "topi.default_schedule"
    # Its trace replays to the function topi.default_schedule schedules.
    expected = topi.default_schedule(func, target="llvm").mod.functions["main"]
    replayed = tir.Schedule(func)
    tir.Trace.apply_json_to_schedule(json.loads(record.trace), replayed)
    assert kiln.ir.structural_equal(replayed.mod.functions["main"], expected)
    assert record.candidate_hash == kiln.ir.structural_hash(expected)


def test_the_best_record_is_never_slower_than_the_baseline(tmp_path):
    func = matmul(32)
    # Without the final rounds the best record is the lowest median of the records.
    db = ms.tune_tir(func, work_dir=tmp_path, max_trials_global=4,
                     **dict(SMALL, final_top_k=0))
    (baseline,) = baseline_records(db)
    (best,) = db.best(func, "llvm")
    assert best.median <= baseline.median
    sch = ms.compile_tir(db, func)
    assert kiln.ir.structural_hash(sch.mod.functions["main"]) == best.candidate_hash


def test_a_resumed_run_does_not_measure_the_baseline_again(tmp_path):
    func = matmul(32)
    ms.tune_tasks([("mm", func)], work_dir=tmp_path, max_trials_global=4, **SMALL)
    (same,) = ms.tune_tasks([("mm", func)], work_dir=tmp_path, max_trials_global=4, **SMALL)
    assert same.trials_this_run == 0
    (more,) = ms.tune_tasks([("mm", func)], work_dir=tmp_path, max_trials_global=8, **SMALL)
    assert more.trials_this_run == 4
    assert len(baseline_records(ms.Database(tmp_path / "tuning.db"))) == 1
    assert "[mm] baseline (topi.default_schedule): in the database already" in log_of(tmp_path)


def test_baseline_none_measures_no_baseline(tmp_path):
    (result,) = ms.tune_tasks([("mm", matmul(32))], work_dir=tmp_path, max_trials_global=4,
                              baseline=None, **SMALL)
    assert result.trials == 4
    assert baseline_records(ms.Database(tmp_path / "tuning.db")) == []
    assert "baseline" not in log_of(tmp_path)


def test_a_baseline_callable_is_measured_under_its_name(tmp_path):
    def split_rows(func):
        sch = tir.Schedule(func)
        i, _, _ = sch.get_loops(sch.get_block("C"))
        sch.parallel(sch.split(i, factors=[None, 8])[0])
        return sch

    func = matmul(32)
    ms.tune_tasks([("mm", func)], work_dir=tmp_path, max_trials_global=4, baseline=split_rows,
                  **SMALL)
    (record,) = baseline_records(ms.Database(tmp_path / "tuning.db"))
    name = "test_a_baseline_callable_is_measured_under_its_name.<locals>.split_rows"
    assert record.search["baseline"] == name
    assert record.candidate_hash == kiln.ir.structural_hash(split_rows(func).mod.functions["main"])
    assert f"[mm] baseline ({name}): " in log_of(tmp_path)


def test_the_baseline_is_timed_again_in_the_final_rounds_even_outside_the_top(tmp_path):
    # Its one early measurement may have been taken while the machine was slower; the final
    # rounds time it beside the top candidates. A slow baseline (the reduction outermost, the
    # rows innermost) is not among the top two of eight candidates, and is timed all the same.
    def slow(func):
        sch = tir.Schedule(func)
        i, j, k = sch.get_loops(sch.get_block("C"))
        sch.reorder(k, j, i)
        return sch

    func = matmul(64)
    ms.tune_tasks([("mm", func)], work_dir=tmp_path, max_trials_global=8, baseline=slow,
                  **SMALL)
    db = ms.Database(tmp_path / "tuning.db")
    finals = [r for w in db.workloads() for r in db.records(w) if r.search["stage"] == "final"]
    name = ("test_the_baseline_is_timed_again_in_the_final_rounds_even_outside_the_top."
            "<locals>.slow")
    assert [r.search.get("baseline") for r in finals].count(name) == 1
    # The pool's top two and the baseline, and the search's fastest single measurement when it
    # is not one of the two.
    assert len(finals) in (3, 4)


def raises(func):
    raise ValueError("no schedule for this one")


def not_a_schedule(func):
    return func


def of_another_function(func):
    sch = tir.Schedule(matmul(16))
    sch.split(sch.get_loops(sch.get_block("C"))[0], factors=[None, 16])
    return sch


@pytest.mark.parametrize("baseline, reason", [
    (raises, "it raised ValueError: no schedule for this one"),
    (not_a_schedule, "it returned an object of type PrimFunc, not a tir.Schedule"),
    (of_another_function, "its trace replays on the function to another function"),
])
def test_a_baseline_that_fails_is_skipped_with_the_reason_in_the_log(tmp_path, baseline, reason):
    (result,) = ms.tune_tasks([("mm", matmul(32))], work_dir=tmp_path, max_trials_global=4,
                              baseline=baseline, **SMALL)
    assert result.trials == 4
    assert baseline_records(ms.Database(tmp_path / "tuning.db")) == []
    assert f"[mm] baseline ({baseline.__qualname__}) skipped: {reason}" in log_of(tmp_path)


def test_bad_baselines_name_the_api_and_what_was_found(tmp_path):
    expected = 'baseline must be "default", None or a callable func -> tir.Schedule'
    with pytest.raises(KilnValueError, match=f"tune_tasks: {expected}, found 'fastest'"):
        ms.tune_tasks([matmul(8)], work_dir=tmp_path, baseline="fastest")
    with pytest.raises(KilnTypeError, match=f"tune_tasks: {expected}, found an object of type "
                       "int"):
        ms.tune_tir(matmul(8), work_dir=tmp_path, baseline=3)
    with pytest.raises(KilnTypeError, match="found an object of type list"):
        ms.tune_tasks([matmul(8)], work_dir=tmp_path, config=ms.TuneConfig(baseline=[]))


def test_the_command_line_measures_the_baseline_unless_told_not_to(tmp_path):
    write_ops_file(tmp_path / "ops.py")
    for flags, expected in (([], 1), (["--no-baseline"], 0)):
        db = tmp_path / f"t{expected}.db"
        done = subprocess.run([sys.executable, "-m", "kiln", "tune", f"{tmp_path / 'ops.py'}:mm",
                               "--trials", "2", "--per-iter", "2", "--db", str(db),
                               "--no-progress", *flags], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        assert len(baseline_records(ms.Database(db))) == expected
