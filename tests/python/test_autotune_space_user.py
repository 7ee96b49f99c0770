"""A design space of the user's (MetaSchedule's ScheduleFn): kiln.autotune.SpaceGenerator and
tune_tir / tune_tasks with ``space=`` a schedule function. Its candidates keep the user's
structure, compute what the function computes, are stored with the space's identity, and seed
only runs of the same space; a schedule function that fails or returns the wrong thing is
refused with a message naming the API and the space."""
import json
import re
import subprocess
import sys

import numpy as np
import pytest

import kiln
from kiln import autotune as ms
from kiln import ir, te, tir
from kiln.error import KilnTypeError, KilnValueError, TuningNoScheduleWarning

from gpu_helpers import opencl_missing, skip_unless
from tune_helpers import SMALL, matmul, run_matmul


def check_matmul(mod):
    run_matmul(kiln.build(mod, target="llvm"))


def tiled(sch):
    """i and j tiled by sampled factors, the inner j tile vectorized, the outer i parallel."""
    i, j, k = sch.get_loops("C")
    i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=16))
    j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))
    sch.reorder(i0, j0, k, i1, j1)
    sch.vectorize(j1)
    sch.parallel(i0)


def two_sketches(sch):
    """The tiled sketch, and one that also caches the accumulators in a local tile."""
    other = sch.copy()
    tiled(sch)
    tiled(other)
    c = other.get_block("C")
    other.reverse_compute_at(other.cache_write(c, 0, "local"), other.get_loops(c)[1])
    return [sch, other]


def kinds(trace_json):
    return [inst["kind"] for inst in json.loads(trace_json)["instructions"]]


def test_space_generator_samples_candidates_of_the_user_sketch():
    space = ms.SpaceGenerator(matmul(), "llvm", space=tiled)
    assert len(space.sketches) == 1
    assert space.space_id.startswith("tiled#")
    decisions = set()
    for seed in range(8):
        c = space.sample(0, seed=seed)
        assert c is not None
        trace = c.trace.as_json()["instructions"]
        tiles = [inst["decision"] for inst in trace if inst["kind"] == "sample_perfect_tile"]
        assert len(tiles) == 2
        decisions.add(json.dumps(tiles))
        # Nothing of the rules' (no register tile, no packing), the user's loops as written.
        assert "cache_read" not in [inst["kind"] for inst in trace]
        check_matmul(c.mod)
    assert len(decisions) > 3
    mutated = space.mutate(space.sample(0, seed=1).decisions, seed=3)
    assert mutated is not None
    check_matmul(space.replay(0, mutated).mod)


def test_root_annotations_leave_parallel_vectors_and_unrolling_to_the_postprocessor():
    def annotated(sch):
        i, j, k = sch.get_loops("C")
        i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=16))
        j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))
        sch.reorder(i0, j0, k, i1, j1)
        root = sch.get_block("root")
        sch.annotate(root, "kiln.parallel_max", 64)
        sch.annotate(root, "kiln.vectorize_max", 16)
        sch.annotate(root, "kiln.unroll_max_step", sch.sample_categorical([0, 16], [0.5, 0.5]))

    space = ms.SpaceGenerator(matmul(), "llvm", space=annotated)
    unrolled, both = 0, 0
    for seed in range(8):
        c = space.sample(0, seed=seed)
        instructions = c.trace.as_json()["instructions"]
        applied = [inst["kind"] for inst in instructions]
        # (A loop of one iteration is neither parallel nor a vector.)
        both += "parallel" in applied and "vectorize" in applied
        # The sampled depth: 16 unrolls, 0 leaves the loops as they are.
        unrolled += any(inst["kind"] == "annotate" and inst["attrs"].get("ann_val") == 16
                        and inst["attrs"]["ann_key"] == "pragma_auto_unroll_max_step"
                        for inst in instructions)
        check_matmul(c.mod)
    assert 0 < unrolled < 8
    assert both >= 5


def test_tune_tir_with_a_user_space_tunes_its_decisions(tmp_path):
    func = matmul()
    db = ms.tune_tir(func, work_dir=tmp_path, max_trials_global=16, space=two_sketches,
                     baseline=None, **SMALL)
    records = db.records()
    assert records
    ids = {r.search.get("space") for r in records if r.status == "ok"}
    assert len(ids) == 1 and next(iter(ids)).startswith("two_sketches#")
    sketches = {r.search["sketch"] for r in records if "sketch" in r.search}
    assert sketches == {0, 1}
    for r in records:
        assert r.status == "ok", r.error
        assert kinds(r.trace).count("sample_perfect_tile") == 2
        assert ("cache_write" in kinds(r.trace)) == (r.search["sketch"] == 1)
    log = (tmp_path / "tune.log").read_text()
    assert "[main] design space: two_sketches, 2 sketches" in log
    check_matmul(ms.compile_tir(db, func).mod)


def test_a_dict_gives_each_task_its_own_space(tmp_path):
    tasks = [("small", matmul(32)), ("large", matmul(48))]
    ms.tune_tasks(tasks, work_dir=tmp_path, max_trials_global=16, space={"large": tiled},
                  baseline=None, **SMALL)
    db = ms.Database(tmp_path / "tuning.db")
    spaces = {}
    for w in db.workloads():
        func = ir.load_json(w.func_json)
        n = int(func.buffer_map[func.params[0]].shape[0])
        spaces[n] = {r.search.get("space", "rules").split("#")[0] for r in db.records(w)}
    assert spaces == {32: {"rules"}, 48: {"tiled"}}
    with pytest.raises(KilnValueError, match=r"space names tasks \['larg'\] that are not among "
                                             r"the tasks \['small', 'large'\]"):
        ms.tune_tasks(tasks, work_dir=tmp_path, space={"larg": tiled}, **SMALL)
    with pytest.raises(KilnTypeError, match=r"space must be .*found an object of type int"):
        ms.tune_tasks(tasks, work_dir=tmp_path, space={"large": 3}, **SMALL)


def test_a_run_is_seeded_only_with_records_of_its_own_space(tmp_path):
    func = matmul()
    ms.tune_tir(func, work_dir=tmp_path, max_trials_global=16, baseline=None, **SMALL)
    db = ms.tune_tir(func, work_dir=tmp_path, max_trials_global=32, space=tiled, baseline=None,
                     **SMALL)
    records = db.records()
    rules = [r for r in records if "space" not in r.search]
    user = [r for r in records if "space" in r.search]
    assert len(rules) >= 16 and user
    # The second run measured only candidates of its space (children of the rules' records
    # would carry their register tiles); the final rounds re-measure the best of both.
    for r in user:
        assert kinds(r.trace).count("sample_perfect_tile") == 2, r.trace
        assert "cache_write" not in kinds(r.trace)
    search_stages = {r.search.get("stage") for r in records}
    assert "final" in search_stages


def test_a_space_without_sampling_is_one_candidate(tmp_path):
    def fixed(sch):
        i, _, _ = sch.get_loops("C")
        sch.parallel(i)

    results = ms.tune_tasks([matmul()], work_dir=tmp_path, max_trials_global=16, space=fixed,
                            baseline=None, **SMALL)
    assert results[0].trials == 1
    assert results[0].best_seconds > 0


def test_a_space_whose_every_candidate_is_refused_ends_with_the_reasons(tmp_path):
    m = n = 32
    a = te.placeholder((m, n), "float32", name="A")
    k = te.reduce_axis((0, n), name="k")
    s = te.compute((m,), lambda i: te.sum(a[i, k], axis=k), name="S")
    y = te.compute((m, n), lambda i, j: a[i, j] / s[i], name="Y")
    func = te.create_prim_func([a, y])

    def recomputing(sch):  # the row sum under the loop over columns: computed n times a row
        sch.compute_at(sch.get_block("S"), sch.get_loops("Y")[1])

    with pytest.warns(TuningNoScheduleWarning, match=r"task main has no schedule measured right "
                      r"after 0 trials \(postproc refuse_recomputation: "
                      r"RecomputedReductionError: \d+\)"):
        results = ms.tune_tasks([func], work_dir=tmp_path, max_trials_global=16,
                                space=recomputing, baseline=None, **SMALL)
    assert results[0].trials == 0
    log = (tmp_path / "tune.log").read_text()
    assert re.search(r"\[main\] no candidates left to measure \(0 measured in this run\); "
                     r"refused: postproc refuse_recomputation: RecomputedReductionError x \d+",
                     log), log


def test_bad_spaces_name_the_api_the_space_and_what_was_found(tmp_path):
    func = matmul()
    with pytest.raises(KilnValueError, match=r"tune_tasks.*space must be .*post-order-apply"):
        ms.tune_tir(func, work_dir=tmp_path, space="rules", **SMALL)
    with pytest.raises(KilnTypeError, match=r"space must be .*found an object of type int"):
        ms.tune_tir(func, work_dir=tmp_path, space=3, **SMALL)

    def broken(sch):
        sch.get_block("D")

    with pytest.raises(KilnValueError, match=r"task main.*design space .*broken raised "
                                             r"BlockNotFoundError") as info:
        ms.tune_tir(func, work_dir=tmp_path, space=broken, **SMALL)
    assert isinstance(info.value.__cause__, tir.ScheduleError)

    def returns_a_number(sch):
        return 1

    with pytest.raises(KilnTypeError, match=r"returns_a_number must change the tir.Schedule.*"
                                            r"an object of type int"):
        ms.tune_tir(func, work_dir=tmp_path, space=returns_a_number, **SMALL)

    def of_another_function(sch):
        return tir.Schedule(matmul(32))

    with pytest.raises(KilnValueError, match=r"sketch 0 of the design space "
                                             r".*of_another_function"):
        ms.SpaceGenerator(func, "llvm", space=of_another_function)
    with pytest.raises(KilnTypeError, match=r"SpaceGenerator: func must be a PrimFunc"):
        ms.SpaceGenerator("C", "llvm", space=tiled)
    # Nothing was tuned into the database by the refused runs.
    assert ms.Database(tmp_path / "tuning.db").records() == []


SPACE_FILE = '''
from kiln import te

def mm():
    a = te.placeholder((32, 32), "float32", name="A")
    b = te.placeholder((32, 32), "float32", name="B")
    k = te.reduce_axis((0, 32), name="k")
    c = te.compute((32, 32), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c])

def tiled(sch):
    i, j, k = sch.get_loops("C")
    i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=8))
    sch.reorder(i0, k, i1, j)
    sch.vectorize(j)

def broken(sch):
    sch.get_block("D")

NOT_A_FUNCTION = 3
'''


def test_cli_tunes_with_a_space_from_a_file(tmp_path):
    path = tmp_path / "spaces.py"
    path.write_text(SPACE_FILE)
    db = tmp_path / "t.db"

    def cli(*args):
        command = [sys.executable, "-m", "kiln", "tune", f"{path}:mm", "--db", db, "--trials", 4,
                   "--per-iter", 4, "--no-baseline", "--no-progress", *args]
        return subprocess.run(list(map(str, command)), capture_output=True, text=True,
                              timeout=600)

    done = cli("--space", f"{path}:tiled")
    assert done.returncode == 0, done.stderr
    with ms.Database(db) as opened:
        records = opened.records()
    assert records and all(r.search["space"].startswith("tiled#") for r in records)
    shown = subprocess.run([sys.executable, "-m", "kiln", "db", "show", str(db)],
                           capture_output=True, text=True, timeout=600)
    assert shown.returncode == 0 and shown.stdout.splitlines()[0].split()[-1] == "from"
    assert all(line.split()[-1] == "tiled" for line in shown.stdout.splitlines()[2:])
    broken = cli("--space", f"{path}:broken")
    assert broken.returncode == 1 and "design space broken raised BlockNotFoundError" in \
        broken.stderr
    wrong = cli("--space", f"{path}:NOT_A_FUNCTION")
    assert wrong.returncode == 1 and "space must be" in wrong.stderr
    absent = cli("--space", f"{path}:nothing")
    assert absent.returncode != 0 and "defines no 'nothing'" in absent.stderr


def test_a_user_space_for_a_gpu_target_binds_its_own_threads(tmp_path):
    skip_unless(opencl_missing())

    def bound(sch):
        i, j, k = sch.get_loops("C")
        i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=16))
        j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))
        sch.reorder(i0, j0, i1, j1, k)
        sch.bind(i0, "blockIdx.x")
        sch.bind(j0, "blockIdx.y")
        sch.bind(i1, "threadIdx.y")
        sch.bind(j1, "threadIdx.x")

    func = matmul(32)
    results = ms.tune_tasks([func], target="opencl", work_dir=tmp_path, max_trials_global=8,
                            space=bound, baseline=None, drift_check_every=0, **SMALL)
    assert results[0].trials_this_run == 8 and not results[0].failures
    sch = ms.compile_tir(ms.Database(tmp_path / "tuning.db"), func, target="opencl")
    assert kinds(json.dumps(sch.trace.as_json())).count("bind") == 4
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((32, 32), dtype=np.float32) for _ in range(2))
    device = kiln.opencl(0)
    args = [kiln.nd.array(a, device), kiln.nd.array(b, device),
            kiln.nd.array(np.zeros((32, 32), np.float32), device)]
    kiln.build(sch.mod, target="opencl")["main"](*args)
    np.testing.assert_allclose(args[2].numpy(), a @ b, rtol=1e-4, atol=1e-4)
