"""What computes the results a tuning run checks its candidates against (TuneConfig.reference):
the function as written, topi.default_schedule (for large workloads, whose plain loops take
minutes), or a user's schedule; LocalRunner.set_task(reference=...). A wrong reference cannot
pass unseen, and one that cannot be made falls back to the function as written. Small budgets:
these tests check records and log lines, never timings."""
import subprocess
import sys

import pytest

from kiln import autotune as ms
from kiln import te, topi
from kiln.autotune import tune as tune_module
from kiln.error import KilnTypeError, KilnValueError

from tune_helpers import write_ops_file

SMALL = dict(num_trials_per_iter=4, population=16, random_per_round=4, children_per_round=8,
             final_top_k=0, final_rounds=2, local_search_trials=0, progress=False)


def matmul(n=32, times=None):
    a = te.placeholder((n, n), "float32", name="A")
    b = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    if times is None:
        c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    else:
        c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j] * times, axis=k),
                       name="C")
    return te.create_prim_func([a, b, c])


def statuses(db):
    return sorted(r.status for w in db.workloads() for r in db.records(w))


def log_of(work_dir):
    return (work_dir / "tune.log").read_text()


def test_a_small_function_is_checked_against_the_function_as_written(tmp_path):
    ms.tune_tasks([("mm", matmul())], work_dir=tmp_path, max_trials_global=4, **SMALL)
    assert "[mm] reference results: the function as written\n" in log_of(tmp_path)


def test_auto_uses_the_default_schedule_past_the_operations_threshold(tmp_path, monkeypatch):
    # 2 * 32^3 operations: above a threshold lowered for the test.
    monkeypatch.setattr(tune_module, "_REFERENCE_SCHEDULE_FLOPS", 1000.0)
    db = ms.tune_tir(matmul(), work_dir=tmp_path, max_trials_global=4, **SMALL)
    assert "[main] reference results: topi.default_schedule\n" in log_of(tmp_path)
    assert statuses(db) == ["ok"] * 4


@pytest.mark.parametrize("reference", ["default", "untuned"])
def test_named_references_give_correct_candidates(tmp_path, reference):
    (result,) = ms.tune_tasks([("mm", matmul())], work_dir=tmp_path, max_trials_global=4,
                              reference=reference, **SMALL)
    expected = "topi.default_schedule" if reference == "default" else "the function as written"
    assert f"[mm] reference results: {expected}\n" in log_of(tmp_path)
    assert result.failures == {}
    assert statuses(ms.Database(tmp_path / "tuning.db")) == ["ok"] * 4


def test_a_wrong_reference_fails_every_candidate(tmp_path):
    def doubled(func):
        return topi.default_schedule(matmul(times=2.0))

    (result,) = ms.tune_tasks([("mm", matmul())], work_dir=tmp_path, max_trials_global=4,
                              reference=doubled, **SMALL)
    assert "[mm] reference results: " in log_of(tmp_path)
    assert "doubled" in log_of(tmp_path)
    assert statuses(ms.Database(tmp_path / "tuning.db")) == ["wrong_result"] * 4
    assert result.best_seconds == 0


def test_a_reference_that_raises_falls_back_to_the_function_as_written(tmp_path):
    def broken(func):
        raise RuntimeError("no schedule today")

    (result,) = ms.tune_tasks([("mm", matmul())], work_dir=tmp_path, max_trials_global=4,
                              reference=broken, **SMALL)
    assert ("[mm] reference results: the function as written (test_a_reference_that_raises_"
            "falls_back_to_the_function_as_written.<locals>.broken falls back: it raised "
            "RuntimeError: no schedule today)\n") in log_of(tmp_path)
    assert result.failures == {}


def test_bad_references_are_refused(tmp_path):
    with pytest.raises(KilnValueError, match='reference must be "auto", "untuned", "default" '
                                             'or a callable'):
        ms.tune_tasks([matmul()], work_dir=tmp_path, reference="fast", **SMALL)
    with pytest.raises(KilnTypeError, match="found an object of type int"):
        ms.tune_tasks([matmul()], work_dir=tmp_path, reference=3, **SMALL)


def test_the_runner_takes_a_reference_schedule():
    func = matmul()
    with ms.LocalRunner(repeat=1) as runner:
        runner.set_task(func, "llvm", "mm", reference=topi.default_schedule(func))
        (same, doubled) = runner.run([func, topi.default_schedule(matmul(times=2.0)).mod])
        assert same.status == "ok" and doubled.status == "wrong_result"
    with ms.LocalRunner(repeat=1) as runner:
        with pytest.raises(KilnValueError, match="the reference schedule of task 'mm' cannot "
                                                 "give reference results .* it does not take "
                                                 "the function's arguments"):
            runner.set_task(func, "llvm", "mm", reference=matmul(n=16))


def test_the_command_line_takes_the_reference(tmp_path):
    write_ops_file(tmp_path / "ops.py")
    for choice, expected in (("default", "topi.default_schedule"),
                             ("untuned", "the function as written")):
        work = tmp_path / choice
        done = subprocess.run([sys.executable, "-m", "kiln", "tune", f"{tmp_path / 'ops.py'}:mm",
                               "--trials", "2", "--per-iter", "2", "--db", str(work) + ".db",
                               "--work-dir", str(work), "--no-progress", "--reference", choice],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert f"reference results: {expected}\n" in log_of(work)
    refused = subprocess.run([sys.executable, "-m", "kiln", "tune", f"{tmp_path / 'ops.py'}:mm",
                              "--reference", "fast"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "invalid choice: 'fast'" in refused.stderr
