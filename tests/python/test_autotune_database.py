"""kiln.autotune.Database: the tuning database from Python. Files (creation, migration, refusal
of newer, foreign and damaged files), batches committed whole, target-aware lookups, thread
counts (matched by the tuner's lookups, preferred by best), dedupe and resume counts, export and
merge, warnings for rows it cannot use, and several processes on one file (two writers at once; a
writer killed with SIGKILL). No assertion depends on timing."""
import contextlib
import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import warnings

import pytest

import kiln
from kiln import autotune as ms
from kiln import te
from kiln.error import TuningRecordThreadsWarning

ZEN3 = ms.TargetKey("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver3 -mattr=+avx2,+fma",
                    "AMD EPYC 7B13", "avx2,fma")
ZEN4 = ms.TargetKey("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4 -mattr=+avx512f",
                    "AMD EPYC 9654", "avx2,avx512f,fma")
TRACE = {"version": 1, "instructions": [{"kind": "split", "inputs": ["l0"], "decision": [4, 8]}]}


def gemm_func():
    A = te.placeholder((64, 64), "float32", name="A")
    B = te.placeholder((64, 64), "float32", name="B")
    k = te.reduce_axis((0, 64), name="k")
    C = te.compute((64, 64), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def gemm_key():
    """A workload key as the tuner makes one: the structural hash and a serialized function."""
    func = gemm_func()
    return kiln.ir.structural_hash(func), json.dumps({"text": str(func)})


def measurement(workload, candidate_hash, run_secs=(1e-3,), target=ZEN3, **fields):
    return ms.Measurement(workload, target, TRACE, candidate_hash, tuple(run_secs),
                          kiln_version="test", **fields)


@pytest.fixture
def db_path(tmp_path):
    return str(tmp_path / "tuning.db")


@pytest.fixture
def db(db_path):
    with ms.Database(db_path) as database:
        yield database


@pytest.fixture
def workload(db):
    return db.commit_workload(*gemm_key())


@contextlib.contextmanager
def no_warnings():
    """A context in which any warning fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# ----- Files ------------------------------------------------------------------------------------

def test_new_file_gets_the_schema_in_wal_mode(db_path):
    with ms.Database(db_path) as db:
        assert len(db) == 0
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == ms.SCHEMA_VERSION
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"workloads", "records"}


def test_reopened_file_keeps_its_records(db_path):
    with ms.Database(db_path) as db:
        wl = db.commit_workload(*gemm_key())
        db.commit_records([measurement(wl, 1, (2e-3, 1e-3, 3e-3))])
    with ms.Database(db_path) as db:
        assert db.workloads() == [wl]
        (record,) = db.records()
    assert record.run_secs == (2e-3, 1e-3, 3e-3)
    assert record.median == 2e-3
    assert record.target_key == ZEN3
    assert json.loads(record.trace) == TRACE


VERSION_1_SCHEMA = """
CREATE TABLE workloads (id INTEGER PRIMARY KEY, key_version INTEGER NOT NULL,
  structural_hash TEXT NOT NULL, func_json TEXT NOT NULL, created TEXT NOT NULL);
CREATE INDEX workloads_by_key ON workloads (key_version, structural_hash);
CREATE TABLE records (id INTEGER PRIMARY KEY, workload_id INTEGER NOT NULL REFERENCES workloads (id),
  target TEXT NOT NULL, target_kind TEXT NOT NULL, device_model TEXT NOT NULL,
  device_features TEXT NOT NULL, trace_json TEXT NOT NULL, candidate_hash TEXT NOT NULL,
  run_secs_json TEXT NOT NULL, median REAL, spread REAL, status TEXT NOT NULL, error TEXT NOT NULL,
  kiln_version TEXT NOT NULL, ir_format_version INTEGER NOT NULL, created TEXT NOT NULL);
CREATE INDEX records_by_candidate
  ON records (workload_id, target, device_model, device_features, candidate_hash);
CREATE INDEX records_by_median
  ON records (workload_id, target, device_model, device_features, status, median);
PRAGMA application_id = 1802071150;
PRAGMA user_version = 1;
"""


def make_version_1_file(path):
    """A tuning database as a kiln of schema version 1 wrote it (no search metadata)."""
    with sqlite3.connect(path) as raw:
        raw.executescript(VERSION_1_SCHEMA)
        raw.execute("INSERT INTO workloads VALUES (1, 1, '00000000000000ff', '{\"f\": 1}', "
                    "'2024-01-02T03:04:05.000Z')")
        raw.execute("INSERT INTO records VALUES (1, 1, ?, 'llvm', ?, ?, '{\"version\":1}', "
                    "'000000000000002a', '[0.002]', 0.002, 0.0, 'timeout', 'too slow', 'old', 1, "
                    "'2024-01-02T03:04:06.000Z')", (ZEN3.target, ZEN3.device_model,
                                                    ZEN3.device_features))
    raw.close()


def test_version_1_file_is_migrated(tmp_path):
    path = str(tmp_path / "old.db")
    make_version_1_file(path)
    with no_warnings(), ms.Database(path) as db:
        (record,) = db.records()
        assert db.count(1, ZEN3) == 1
    assert (record.status, record.error, record.kiln_version) == ("timeout", "too slow", "old")
    assert record.search == {}
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == ms.SCHEMA_VERSION
    raw.close()


# The schema of version 2 as kiln created it: records without their thread count.
VERSION_2_SCHEMA = """
CREATE TABLE workloads (id INTEGER PRIMARY KEY, key_version INTEGER NOT NULL,
  structural_hash TEXT NOT NULL, func_json TEXT NOT NULL, created TEXT NOT NULL);
CREATE INDEX workloads_by_key ON workloads (key_version, structural_hash);
CREATE TABLE records (id INTEGER PRIMARY KEY, workload_id INTEGER NOT NULL REFERENCES workloads (id),
  target TEXT NOT NULL, target_kind TEXT NOT NULL, device_model TEXT NOT NULL,
  device_features TEXT NOT NULL, trace_json TEXT NOT NULL, candidate_hash TEXT NOT NULL,
  run_secs_json TEXT NOT NULL, median REAL, spread REAL, status TEXT NOT NULL, error TEXT NOT NULL,
  kiln_version TEXT NOT NULL, ir_format_version INTEGER NOT NULL, created TEXT NOT NULL,
  search_json TEXT NOT NULL DEFAULT '{}');
CREATE INDEX records_by_candidate
  ON records (workload_id, target, device_model, device_features, candidate_hash);
CREATE INDEX records_by_median
  ON records (workload_id, target, device_model, device_features, status, median);
PRAGMA application_id = 1802071150;
PRAGMA user_version = 2;
"""


def make_version_2_file(path):
    """A tuning database as a kiln of schema version 2 wrote it: two ok records of one workload
    on ZEN3, of an unknown thread count."""
    with sqlite3.connect(path) as raw:
        raw.executescript(VERSION_2_SCHEMA)
        raw.execute("INSERT INTO workloads VALUES (1, 1, '00000000000000ff', '{\"f\": 1}', "
                    "'2024-01-02T03:04:05.000Z')")
        for record_id, candidate, seconds in [(1, "000000000000002a", 0.002),
                                              (2, "000000000000002b", 0.001)]:
            raw.execute("INSERT INTO records VALUES (?, 1, ?, 'llvm', ?, ?, '{\"version\":1}', ?, "
                        "?, ?, 0.0, 'ok', '', 'old', 1, '2024-01-02T03:04:06.000Z', "
                        "'{\"generation\":1}')",
                        (record_id, ZEN3.target, ZEN3.device_model, ZEN3.device_features,
                         candidate, json.dumps([seconds]), seconds))
    raw.close()


def test_version_2_file_is_migrated_and_its_records_stay_usable(tmp_path):
    path = str(tmp_path / "old.db")
    make_version_2_file(path)
    with no_warnings(), ms.Database(path) as db:
        records = db.records()
        assert [r.num_threads for r in records] == [0, 0]
        assert records[0].search == {"generation": 1}
        assert records[0].target_key == ZEN3  # num_threads 0: unknown
        assert [r.candidate_hash for r in db.best(1, ZEN3, k=2)] == [0x2b, 0x2a]
        # A tuning run for 2 threads starts afresh.
        assert db.count(1, dataclasses.replace(ZEN3, num_threads=2)) == 0
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == ms.SCHEMA_VERSION
    raw.close()
    # A lookup for 2 threads applies the fastest record, saying it was tuned for an unknown count.
    with ms.Database(path) as db:
        with pytest.warns(TuningRecordThreadsWarning,
                          match="measured with 2 threads; the best record, tuned for an unknown "
                          r"number of threads \(a record of schema version 2 or older\), is "
                          "used; tune with num_threads=2"):
            (best,) = db.best(1, dataclasses.replace(ZEN3, num_threads=2))
        assert (best.candidate_hash, best.num_threads) == (0x2b, 0)


def test_newer_schema_version_is_refused(db_path):
    ms.Database(db_path).close()
    with sqlite3.connect(db_path) as raw:
        raw.execute("PRAGMA user_version = 99")
    raw.close()
    with pytest.raises(kiln.KilnRuntimeError) as error:
        ms.Database(db_path)
    assert str(error.value) == (
        f"kiln.autotune.Database: '{db_path}' has schema version 99, newer than version "
        f"{ms.SCHEMA_VERSION} that this kiln reads; open it with a newer kiln or export it there "
        "(export_jsonl)")


def test_database_of_another_program_is_refused(db_path):
    with sqlite3.connect(db_path) as raw:
        raw.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY)")
    raw.close()
    with pytest.raises(kiln.KilnRuntimeError, match="is a SQLite database but not a kiln tuning "
                       "database"):
        ms.Database(db_path)


@pytest.mark.parametrize("content", [
    b"workload,target,seconds\ngemm,llvm,0.001\n" * 40,
    bytes((i * 7919 + 13) % 256 for i in range(8192)),
], ids=["text", "random-bytes"])
def test_file_that_is_not_a_database_is_refused(db_path, content):
    with open(db_path, "wb") as f:
        f.write(content)
    with pytest.raises(kiln.KilnRuntimeError) as error:
        ms.Database(db_path)
    assert str(error.value) == (
        f"kiln.autotune.Database: reading '{db_path}' failed: the file is not a SQLite database "
        "(SQLite: file is not a database)")


def test_truncated_file_is_refused(db_path):
    with ms.Database(db_path) as db:
        wl = db.commit_workload(*gemm_key())
        db.commit_records([measurement(wl, i) for i in range(300)])
    with sqlite3.connect(db_path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.close()
    os.truncate(db_path, os.path.getsize(db_path) // 2)
    with pytest.raises(kiln.KilnRuntimeError) as error:
        ms.Database(db_path).records()
    assert f"'{db_path}' failed: the file is corrupt; restore it from a copy or a JSON-lines " \
           "export (SQLite: database disk image is malformed)" in str(error.value)


def test_closed_database_refuses_calls(db_path):
    with ms.Database(db_path) as db:
        pass
    with pytest.raises(kiln.KilnValueError) as error:
        db.workloads()
    assert str(error.value) == (f"kiln.autotune.Database.workloads: the tuning database "
                                f"'{db_path}' is closed; open it again")
    for method in ("best", "has_workload", "query_tuning_record", "query_schedule",
                   "query_ir_module"):
        args = (gemm_func(),) if method == "has_workload" else (gemm_func(), "llvm")
        with pytest.raises(kiln.KilnValueError) as error:
            getattr(db, method)(*args)
        assert str(error.value) == (f"kiln.autotune.Database.{method}: the tuning database "
                                    f"'{db_path}' is closed; open it again")
    db.close()  # closing twice is allowed
    assert repr(db) == f"kiln.autotune.Database({db_path!r}, closed)"


def test_path_like_is_accepted_and_wrong_types_are_named(tmp_path):
    with ms.Database(tmp_path / "p.db") as db:
        assert db.path == str(tmp_path / "p.db")
    with pytest.raises(kiln.KilnTypeError) as error:
        ms.Database(3)
    assert str(error.value) == ("kiln.autotune.Database: path must be a path (str or "
                                "os.PathLike), found an object of type int")


# ----- Workloads --------------------------------------------------------------------------------

def test_workload_is_found_by_hash_and_confirmed_by_equal(db):
    structural_hash, func_json = gemm_key()
    wl = db.commit_workload(structural_hash, func_json)
    assert (wl.structural_hash, wl.func_json, wl.key_version) == (
        structural_hash, func_json, ms.WORKLOAD_KEY_VERSION)
    assert db.commit_workload(structural_hash, func_json) == wl
    # Same hash, another function: a second workload.
    other = db.commit_workload(structural_hash, '{"text": "another"}')
    assert other.id != wl.id
    calls = []

    def equal(stored, given):
        calls.append(stored)
        return json.loads(stored)["text"] == json.loads(given)["text"]

    assert db.find_workload(structural_hash, '{"text": "another"}', equal) == other
    assert calls == [func_json, '{"text": "another"}']
    assert db.find_workload(structural_hash + 1, func_json) is None
    assert db.workloads() == [wl, other]


def test_equal_that_raises_or_returns_a_non_bool(db):
    structural_hash, func_json = gemm_key()
    db.commit_workload(structural_hash, func_json)

    def broken(stored, given):
        raise ZeroDivisionError("comparison failed")

    with pytest.raises(ZeroDivisionError, match="comparison failed"):
        db.commit_workload(structural_hash, '{"text": "x"}', broken)
    with pytest.raises(kiln.KilnTypeError) as error:
        db.commit_workload(structural_hash, '{"text": "x"}', lambda a, b: "yes")
    assert str(error.value) == ("kiln.autotune.Database.commit_workload: equal's result must be "
                                "a bool, found an object of type str")
    assert len(db.workloads()) == 1


def test_structural_hash_must_fit_64_bits(db):
    with pytest.raises(kiln.KilnValueError) as error:
        db.commit_workload(2**64, "{}")
    assert str(error.value) == ("kiln.autotune.Database.commit_workload: structural_hash must be "
                                "a 64-bit hash in [0, 2**64), found 18446744073709551616")
    with pytest.raises(kiln.KilnTypeError, match="structural_hash must be an int, found an "
                       "object of type str"):
        db.commit_workload("ff", "{}")


# ----- Records ----------------------------------------------------------------------------------

def test_committed_record_carries_what_the_database_derives(db, workload):
    (record_id,) = db.commit_records([measurement(workload, 2**64 - 1, (4e-3, 1e-3, 2e-3, 3e-3),
                                                  search={"generation": 2, "score": 0.5})])
    (record,) = db.records(workload, ZEN3)
    assert record.id == record_id
    assert record.workload_id == workload.id
    assert record.candidate_hash == 2**64 - 1
    assert record.target_kind == "llvm"
    assert record.median == pytest.approx(2.5e-3)
    assert record.spread == pytest.approx(3e-3 / 2.5e-3)
    assert record.search == {"generation": 2, "score": 0.5}
    assert record.ir_format_version == ms.IR_FORMAT_VERSION
    assert record.created.endswith("Z")


def test_batch_failing_in_the_middle_stores_nothing(db, workload):
    batch = [measurement(workload, 1), measurement(workload, 2), measurement(workload.id + 9, 3),
             measurement(workload, 4)]
    with pytest.raises(kiln.KilnValueError) as error:
        db.commit_records(batch)
    assert str(error.value) == (
        f"kiln.autotune.Database.commit_records: measurement 3 of 4 names workload "
        f"{workload.id + 9}, which is not in '{db.path}'; add it with commit_workload; nothing "
        "of the batch was stored")
    assert len(db) == 0
    del batch[2]
    assert len(db.commit_records(batch)) == 3


@pytest.mark.parametrize("fields, error_class, message", [
    (dict(run_secs=(1e-3, float("nan"))), kiln.KilnValueError,
     "run_secs must be positive finite seconds, found [0.001,null]"),
    (dict(run_secs=()), kiln.KilnValueError,
     "a record with status 'ok' needs its run times, found an empty run_secs"),
    (dict(status="fast"), kiln.KilnValueError,
     "measurements[0].status must be one of 'ok', 'build_error', 'run_error', 'wrong_result', "
     "'timeout', 'crash', found 'fast'"),
    (dict(trace="[1, 2"), kiln.KilnValueError,
     "trace_json must be a JSON object (a schedule trace), found '[1, 2'"),
    (dict(trace=3), kiln.KilnTypeError,
     "measurements[0].trace must be JSON text (str) or a dict, found an object of type int"),
    (dict(target="llvm"), kiln.KilnTypeError,
     "target must be a kiln.autotune.TargetKey (the target string and the device it was "
     "measured on), found an object of type str"),
    (dict(target=ms.TargetKey("llvm", "")), kiln.KilnValueError,
     "device_model must name the device the record is for"),
    (dict(candidate_hash=-1), kiln.KilnValueError,
     "measurements[0].candidate_hash must be a 64-bit hash in [0, 2**64), found -1"),
    (dict(run_secs="fast"), kiln.KilnTypeError,
     "measurements[0].run_secs must be a list of numbers, found an object of type str"),
], ids=["nan", "no-times", "status", "trace-json", "trace-type", "target-type", "device",
        "hash", "run-secs-type"])
def test_invalid_measurement_is_refused(db, workload, fields, error_class, message):
    values = dict(workload=workload, target=ZEN3, trace=TRACE, candidate_hash=7, run_secs=(1e-3,))
    values.update(fields)
    with pytest.raises(error_class) as error:
        db.commit_records([ms.Measurement(**values)])
    assert str(error.value).startswith("kiln.autotune.Database.commit_records: ")
    assert message in str(error.value)
    assert len(db) == 0


def test_failed_candidates_are_stored_with_their_reason(db, workload):
    db.commit_records([measurement(workload, 1, (), status="crash", error="SIGSEGV"),
                       measurement(workload, 2, (5e-6,), status="wrong_result",
                                   error="max abs error 3.0")])
    assert db.best(workload, ZEN3, k=5) == []
    assert [r.status for r in db.records(workload, ZEN3)] == ["crash", "wrong_result"]
    assert db.records(status="crash")[0].median is None
    assert db.count(workload, ZEN3) == 2


def test_best_orders_ok_records_by_median(db, workload):
    db.commit_records([measurement(workload, 1, (3e-3,)), measurement(workload, 2, (1e-3,)),
                       measurement(workload, 3, (2e-3, 9e-3, 2e-3)),
                       measurement(workload, 4, (1e-3,))])
    assert [r.candidate_hash for r in db.best(workload, ZEN3, k=3)] == [2, 4, 3]
    assert [r.candidate_hash for r in db.best(workload.id, ZEN3)] == [2]
    with pytest.raises(kiln.KilnValueError, match="k must be >= 0, found -1"):
        db.best(workload, ZEN3, k=-1)


def test_best_pools_the_samples_of_a_candidate_measured_again(db, workload):
    # Candidate 5 was lucky once (1 ms) but measures 4 ms on ten interleaved rounds; candidate 6
    # measures 2 ms every time: pooled, 6 is the faster.
    db.commit_records([measurement(workload, 5, (1e-3,)), measurement(workload, 6, (2e-3,))])
    db.commit_records([measurement(workload, 5, (4e-3,) * 10),
                       measurement(workload, 6, (2e-3,) * 10)])
    best = db.best(workload, ZEN3, k=2)
    assert [r.candidate_hash for r in best] == [6, 5]
    assert best[0].median == pytest.approx(2e-3) and len(best[0].run_secs) == 11
    assert best[1].median == pytest.approx(4e-3)


def test_lookups_match_the_target_string_and_the_device(db, workload):
    other_model = ms.TargetKey(ZEN3.target, "AMD EPYC 7R13", ZEN3.device_features)
    other_features = ms.TargetKey(ZEN3.target, ZEN3.device_model, "avx2")
    db.commit_records([measurement(workload, 1, target=ZEN4),
                       measurement(workload, 2, target=other_model),
                       measurement(workload, 3, target=other_features)])
    assert db.best(workload, ZEN3, k=10) == []
    assert db.records(workload, ZEN3) == []
    assert not db.is_measured(workload, ZEN3, 1)
    assert db.count(workload, ZEN3) == 0
    assert db.measured_hashes(workload, ZEN3) == set()
    assert [r.candidate_hash for r in db.best(workload, ZEN4, k=10)] == [1]
    assert [r.candidate_hash for r in db.records(workload, other_model)] == [2]
    assert [r.candidate_hash for r in db.records(target=other_features)] == [3]
    assert len(db.records()) == 3


def test_dedupe_and_resume_counts(db, workload):
    db.commit_records([measurement(workload, 20), measurement(workload, 30, (), status="timeout")])
    db.commit_records([measurement(workload, 10), measurement(workload, 20, (2e-3,))])
    assert db.measured_hashes(workload, ZEN3) == {10, 20, 30}
    assert db.is_measured(workload, ZEN3, 30)
    assert not db.is_measured(workload, ZEN3, 40)
    assert db.count(workload, ZEN3) == 4
    assert len(db) == 4


def threads(n, key=ZEN3):
    """``key`` with ``num_threads=n``."""
    return dataclasses.replace(key, num_threads=n)


def test_records_carry_the_thread_count_of_their_target_key(db, workload):
    assert ZEN3.num_threads == 0  # unknown, by default
    db.commit_records([measurement(workload, 1, target=threads(4))])
    (record,) = db.records()
    assert record.num_threads == 4
    assert record.target_key == threads(4)
    with pytest.raises(kiln.KilnValueError, match="num_threads must be the number of threads the "
                       "kernel ran on \\(>= 1\\), or 0 when it is unknown, found -1"):
        db.commit_records([measurement(workload, 2, target=threads(-1))])


def test_the_tuners_lookups_match_the_thread_count(db, workload):
    db.commit_records([measurement(workload, 1, target=threads(1)),
                       measurement(workload, 2, target=threads(1)),
                       measurement(workload, 1, target=threads(2))])
    assert db.count(workload, threads(1)) == 2
    assert db.count(workload, threads(2)) == 1
    assert db.count(workload, ZEN3) == 0
    assert db.measured_hashes(workload, threads(2)) == {1}
    assert not db.is_measured(workload, threads(2), 2)
    assert [r.num_threads for r in db.records(workload, threads(2))] == [2]


def test_best_prefers_the_thread_count_and_falls_back_with_one_warning(db, workload):
    db.commit_records([measurement(workload, 1, (4e-3,), target=threads(1)),
                       measurement(workload, 2, (3e-3,), target=threads(1)),
                       measurement(workload, 3, (1e-3,), target=threads(2)),
                       measurement(workload, 4, (1e-4,), target=threads(4, ZEN4))])
    with no_warnings():
        assert [r.candidate_hash for r in db.best(workload, threads(1), k=5)] == [2, 1]
        assert [r.candidate_hash for r in db.best(workload, threads(2), k=5)] == [3]
    # No record of 4 threads on ZEN3: the fastest of the other counts, never ZEN4's.
    with pytest.warns(TuningRecordThreadsWarning) as caught:
        best = db.best(workload, threads(4), k=5)
    assert [(r.candidate_hash, r.num_threads) for r in best] == [(3, 2), (2, 1), (1, 1)]
    (warning,) = caught
    assert str(warning.message) == (
        f"kiln.autotune.Database.best: {db.path} holds no record of workload {workload.id} on "
        f"target '{ZEN3.target}' and CPU model '{ZEN3.device_model}' measured with 4 threads; "
        "the best record, tuned for 2 threads, is used; tune with num_threads=4 to have a record "
        "for this thread count")
    with no_warnings():
        db.best(workload, threads(4))  # warned already


def test_best_takes_num_threads_only_with_a_target_string(db, workload):
    with pytest.raises(kiln.KilnValueError, match="num_threads is given with a TargetKey, which "
                       "carries its own thread count \\(0\\); leave num_threads out"):
        db.best(workload, ZEN3, num_threads=2)
    with pytest.raises(kiln.KilnValueError, match="kiln.autotune.Database.best: num_threads must "
                       "be the number of threads the function will run on"):
        db.best(workload, "llvm", num_threads=-1)
    with pytest.raises(kiln.KilnTypeError, match="num_threads must be an int"):
        db.best(workload, "llvm", num_threads="2")


def test_lookups_name_their_argument_types(db, workload):
    with pytest.raises(kiln.KilnTypeError) as error:
        db.best("gemm", ZEN3)
    assert str(error.value) == ("kiln.autotune.Database.best: workload must be a "
                                "kiln.autotune.Workload or its id (an int), found an object of "
                                "type str")
    with pytest.raises(kiln.KilnTypeError, match="kiln.autotune.Database.count: target must be a "
                       "kiln.autotune.TargetKey"):
        db.count(workload, None)
    with pytest.raises(kiln.KilnTypeError, match="commit_records: measurements must be a list"):
        db.commit_records(measurement(workload, 1))


# ----- Versions and damaged rows ----------------------------------------------------------------

def test_records_of_another_ir_format_version_are_ignored_with_a_warning(db_path):
    newer = ms.IR_FORMAT_VERSION + 1
    with ms.Database(db_path, ir_format_version=newer) as db:
        wl = db.commit_workload(*gemm_key())
        db.commit_records([measurement(wl, 1, ir_format_version=newer)] * 2)
    with pytest.warns(ms.DatabaseWarning) as caught:
        db = ms.Database(db_path)
    assert [str(w.message) for w in caught] == [
        f"kiln.autotune.Database: 2 record(s) of '{db_path}' have IR format version {newer}, not "
        f"version {ms.IR_FORMAT_VERSION} that this kiln reads; they are ignored"]
    with no_warnings():
        assert db.records() == []
        assert db.best(wl, ZEN3) == []
        assert db.count(wl, ZEN3) == 0
        assert len(db) == 2
    db.close()


def test_workloads_of_another_key_version_are_ignored_with_a_warning(db_path):
    with ms.Database(db_path, key_version=ms.WORKLOAD_KEY_VERSION + 1) as db:
        wl = db.commit_workload(*gemm_key())
        db.commit_records([measurement(wl, 1)])
    with pytest.warns(ms.DatabaseWarning, match="1 workload\\(s\\) of .* have workload key "
                      "version 2, not version 1 that this kiln reads; they and their records "
                      "are ignored"):
        db = ms.Database(db_path)
    assert db.workloads() == []
    assert db.records() == []
    assert db.find_workload(*gemm_key()) is None
    db.close()


def test_rows_damaged_by_hand_are_skipped_with_a_warning_each(db, workload):
    ids = db.commit_records([measurement(workload, h, (h * 1e-3,)) for h in (1, 2, 3)])
    with sqlite3.connect(db.path) as raw:
        raw.execute("UPDATE records SET trace_json = '{\"version\": 1,' WHERE id = ?", (ids[0],))
        raw.execute("UPDATE records SET search_json = 'null' WHERE id = ?", (ids[1],))
    raw.close()
    with pytest.warns(ms.DatabaseWarning) as caught:
        best = db.best(workload, ZEN3, k=1)
    assert [r.candidate_hash for r in best] == [3]
    assert [str(w.message) for w in caught] == [
        f"kiln.autotune.Database: record {ids[0]} of '{db.path}' is skipped: its trace_json is "
        "not a JSON object",
        f"kiln.autotune.Database: record {ids[1]} of '{db.path}' is skipped: its search_json is "
        "not a JSON object"]
    with no_warnings():  # each row is reported once
        assert len(db.records()) == 1


# ----- Export and merge -------------------------------------------------------------------------

def fill(db):
    wl = db.commit_workload(*gemm_key())
    other = db.commit_workload(5, '{"text": "softmax"}')
    db.commit_records([measurement(wl, 1, (1e-3, 2e-3), search={"generation": 0}),
                       measurement(wl, 2, target=ZEN4),
                       measurement(other, 3, (), status="build_error", error="no such intrinsic")])


def without_ids(records):
    return [(r.target, r.device_model, r.device_features, r.trace, r.candidate_hash, r.run_secs,
             r.median, r.spread, r.status, r.error, r.kiln_version, r.ir_format_version,
             r.search, r.created) for r in records]


def test_export_and_merge_round_trip(tmp_path):
    with ms.Database(tmp_path / "a.db") as source, ms.Database(tmp_path / "b.db") as copy:
        fill(source)
        assert source.export_jsonl(tmp_path / "a.jsonl") == 3
        lines = (tmp_path / "a.jsonl").read_text().splitlines()
        assert json.loads(lines[0])["format"] == "kiln.autotune.tuning_records"
        summary = copy.merge(tmp_path / "a.jsonl")
        assert summary == ms.MergeSummary(workloads_added=2, records_added=3, duplicates=0,
                                          incompatible=0, unreadable=0)
        assert without_ids(copy.records()) == without_ids(source.records())
        assert [(w.structural_hash, w.func_json, w.created) for w in copy.workloads()] == \
            [(w.structural_hash, w.func_json, w.created) for w in source.workloads()]


def test_merge_from_a_database_file_skips_duplicates(tmp_path):
    with ms.Database(tmp_path / "a.db") as source, ms.Database(tmp_path / "b.db") as target:
        fill(source)
        first = target.merge(str(tmp_path / "a.db"))
        again = target.merge(str(tmp_path / "a.db"))
        assert (first.records_added, first.duplicates) == (3, 0)
        assert (again.workloads_added, again.records_added, again.duplicates) == (0, 0, 3)
        assert len(target) == 3
        assert without_ids(target.records()) == without_ids(source.records())


def test_merge_from_an_older_file_leaves_it_unchanged(tmp_path):
    path = str(tmp_path / "old.db")
    make_version_1_file(path)
    with ms.Database(tmp_path / "b.db") as target:
        assert target.merge(path).records_added == 1
        assert target.records()[0].kiln_version == "old"
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 1
    raw.close()


def test_merge_skips_other_versions_and_bad_lines_with_warnings(tmp_path):
    export = tmp_path / "a.jsonl"
    with ms.Database(tmp_path / "a.db") as source:
        fill(source)
        source.export_jsonl(export)
    lines = export.read_text().splitlines()
    record = json.loads(lines[3])
    record["record"]["ir_format_version"] = ms.IR_FORMAT_VERSION + 5
    export.write_text("\n".join(lines + ['{"record": {"workload": 1, "tar', json.dumps(record)])
                      + "\n")
    with ms.Database(tmp_path / "b.db") as target:
        with pytest.warns(ms.DatabaseWarning) as caught:
            summary = target.merge(export, equal=lambda a, b: a == b)
        assert (summary.records_added, summary.incompatible, summary.unreadable) == (3, 1, 1)
    messages = [str(w.message) for w in caught]
    assert messages[0] == (f"kiln.autotune.Database.merge: line 7 of '{export}' is skipped: it is "
                           "not JSON")
    assert "1 record(s) of" in messages[1] and "were not merged" in messages[1]


def test_merge_refuses_a_file_of_another_kind(tmp_path, db):
    notes = tmp_path / "notes.txt"
    notes.write_text("gemm was fast\n")
    with pytest.raises(kiln.KilnRuntimeError) as error:
        db.merge(notes)
    assert str(error.value) == (
        f"kiln.autotune.Database.merge: '{notes}' is neither a kiln tuning database nor a "
        "JSON-lines export of one: its first line is not the header of a kiln tuning-record "
        "export")


# ----- Several processes ------------------------------------------------------------------------

WRITER = """
import sys
from kiln import autotune as ms
path, writer, batches, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
key = ms.TargetKey({target!r}, {model!r}, {features!r})
with ms.Database(path) as db:
    print("ready", flush=True)
    sys.stdin.readline()  # start together with the other writers
    wl = db.commit_workload(12345, '{{"text": "gemm"}}')
    b = 0
    while batches < 0 or b < batches:
        db.commit_records([ms.Measurement(wl, key, {{"version": 1}}, (writer << 32) | (b * size + i),
                                          (1e-3 * (i + 1),)) for i in range(size)])
        print("committed", b + 1, flush=True)
        b += 1
""".format(target=ZEN3.target, model=ZEN3.device_model, features=ZEN3.device_features)


def start_writers(path, writers, batches, size):
    """Starts one writer process per id in `writers` and lets them go once all have opened the
    file, so that their transactions interleave."""
    processes = [subprocess.Popen([sys.executable, "-c", WRITER, path, str(w), str(batches),
                                   str(size)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for w in writers]
    for process in processes:
        assert process.stdout.readline() == "ready\n", process.stderr.read()
    for process in processes:
        process.stdin.write("go\n")
        process.stdin.flush()
    return processes


def test_two_processes_writing_at_once_lose_and_duplicate_nothing(db_path):
    batches, size = 30, 20
    for process in start_writers(db_path, (1, 2), batches, size):
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        assert out.splitlines()[-1] == f"committed {batches}"
    with no_warnings(), ms.Database(db_path) as db:
        (wl,) = db.workloads()  # both committed the same function: stored once
        hashes = db.measured_hashes(wl, ZEN3)
        assert len(db) == 2 * batches * size
        assert len(hashes) == 2 * batches * size
        assert {h >> 32 for h in hashes} == {1, 2}


def test_killed_writer_loses_at_most_its_batch_in_flight(db_path):
    size = 50
    (process,) = start_writers(db_path, (1,), -1, size)
    reported = 0
    for line in process.stdout:
        reported += 1
        if reported == 3:
            break
    time.sleep(0.01)  # usually lands inside a commit; the assertions hold wherever it lands
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL
    reported += sum(1 for line in process.stdout if line.startswith("committed"))
    for stream in (process.stdin, process.stdout, process.stderr):
        stream.close()
    with no_warnings(), ms.Database(db_path) as db:
        stored = len(db)
        assert stored % size == 0, "a batch was stored in part"
        assert reported * size <= stored <= (reported + 1) * size
        assert len(db.records()) == stored
