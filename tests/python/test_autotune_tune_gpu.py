"""Tuning for a GPU target end to end: kiln.autotune.tune_tir and ``kiln tune`` with
``--target opencl`` measure candidates on the OpenCL device (PoCL on a CPU here) against the
untuned function's CPU build, store records under the device, and kiln.build(database=) applies
the best one (an argmax over all elements among them, whose threads combine (index, value)
pairs, and a GEMM tiled for thread blocks, virtual threads and threads); the local runner
reports a candidate that does not build or computes a wrong result on the device;
``--target cuda`` without a CUDA device fails with a message, not a crash. Tests that run
kernels skip without an OpenCL device. (PoCL's times only show that timing runs.)"""
import subprocess
import sys

import numpy as np
import pytest

import kiln
from kiln import autotune as ms
from kiln import te, tir, topi

from gpu_helpers import bind_threads, opencl_missing, skip_unless

SMALL = dict(num_trials_per_iter=8, population=32, random_per_round=8, children_per_round=16,
             final_pool_k=5, final_pool_rounds=1, final_top_k=2, final_rounds=2,
             local_search_trials=2, drift_check_every=0,
             progress=False)

WORKLOAD_FILE = """
from kiln import te

def row_sum():
    A = te.placeholder((4, 512), "float32", name="A")
    k = te.reduce_axis((0, 512), name="k")
    return te.create_prim_func([A, te.compute((4,), lambda i: te.sum(A[i, k], axis=k),
                                              name="B")])
"""


def add_then_sine(m=48, n=40):
    A = te.placeholder((m, n), "float32", name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    C = te.compute((m, n), lambda i, j: te.sin(B[i, j]), name="C")
    return te.create_prim_func([A, C]), lambda a: np.sin(2 * a + 1)


def row_sum(m=6, n=1000):
    A = te.placeholder((m, n), "float32", name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((m,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return te.create_prim_func([A, B]), lambda a: a.sum(axis=1)


def full_sum(n=3000):
    A = te.placeholder((n,), "float32", name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((), lambda: te.sum(A[k], axis=k), name="B")
    return te.create_prim_func([A, B]), lambda a: a.sum()


def full_argmax(n=3000):
    x = te.placeholder((n,), "float32", name="x")
    return te.create_prim_func([x, topi.argmax(x)])


def run_on_device(rt, func, expected):
    shapes = [[int(d) for d in func.buffer_map[p].shape] for p in func.params]
    a = np.random.default_rng(1).uniform(-1, 1, size=shapes[0]).astype("float32")
    device = kiln.opencl(0)
    arrays = [kiln.nd.array(a, device=device),
              kiln.nd.array(np.zeros(shapes[1], "float32"), device=device)]
    rt["main"](*arrays)
    np.testing.assert_allclose(arrays[1].numpy(), expected(a), rtol=1e-4, atol=1e-4)


def cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "kiln", *map(str, args)], capture_output=True,
                          text=True, timeout=300, **kwargs)


@pytest.mark.parametrize("workload", [add_then_sine, row_sum, full_sum],
                         ids=["elementwise", "row_sum", "full_sum"])
def test_tune_tir_on_opencl_stores_device_records_that_build_applies(tmp_path, workload):
    skip_unless(opencl_missing())
    func, expected = workload()
    db = ms.tune_tir(func, target="opencl", work_dir=tmp_path, max_trials_global=16, **SMALL)
    records = db.records(db.workloads()[0])
    ok = [r for r in records if r.status == "ok"]
    assert ok, [(r.status, r.error) for r in records]
    device = kiln.opencl(0)
    for r in records:
        assert r.target_kind == "opencl" and r.num_threads == 1
        assert (r.device_model, r.device_features) == (device.device_name,
                                                        "driver=" + device.driver_version)
    assert all(r.median > 0 for r in ok)
    sch = ms.compile_tir(db, func, target="opencl")
    assert sch is not None and "thread_binding" in str(sch.mod)
    run_on_device(kiln.build(func, target="opencl", database=db), func, expected)


def test_tune_tir_on_opencl_gives_argmax_over_all_elements_threads(tmp_path):
    """The cross_thread_reduction rule's sketches of an argmax to one value (one thread block,
    two stages through rfactor) are measured; the best candidate computes NumPy's argmax, the
    first of tied elements included."""
    skip_unless(opencl_missing())
    func = full_argmax()
    # PoCL compiles each argmax kernel in about a second: few trials.
    options = dict(SMALL, num_trials_per_iter=4)
    db = ms.tune_tir(func, target="opencl", work_dir=tmp_path, max_trials_global=4, **options)
    ok = [r for r in db.records(db.workloads()[0]) if r.status == "ok"]
    assert any("threadIdx.x" in r.trace for r in ok)
    best = ms.compile_tir(db, func, target="opencl").mod["main"].script()
    assert 'thread="threadIdx.x"' in best
    x = np.random.default_rng(2).integers(-20, 20, size=3000).astype("float32")
    device = kiln.opencl(0)
    arrays = [kiln.nd.array(x, device=device), kiln.nd.array(np.zeros((), "int32"), device=device)]
    kiln.build(func, target="opencl", database=db)["main"](*arrays)
    assert arrays[1].numpy() == np.argmax(x)


def test_tune_tir_on_opencl_tiles_a_gemm_and_builds_a_correct_best_record(tmp_path):
    """The tiled sketch of multi_level_tiling_gpu (thread blocks, virtual threads, threads,
    shared-memory staging) is measured on the device; the best record, whichever it is,
    computes the product."""
    skip_unless(opencl_missing())
    m, n, k = 64, 48, 32
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis((0, k), name="k")
    func = te.create_prim_func([A, B, te.compute(
        (m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")])
    # PoCL compiles each tiled kernel in about a second: few trials.
    options = dict(SMALL, num_trials_per_iter=4)
    db = ms.tune_tir(func, target="opencl", work_dir=tmp_path, max_trials_global=6, **options)
    ok = [rec for rec in db.records(db.workloads()[0]) if rec.status == "ok"]
    tiled = [rec for rec in ok if "vthread.x" in rec.trace and "kiln.cooperative_fetch" in rec.trace]
    assert tiled, [(rec.status, rec.error) for rec in db.records(db.workloads()[0])]
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (m, k)).astype("float32")
    b = rng.uniform(-1, 1, (k, n)).astype("float32")
    device = kiln.opencl(0)
    arrays = [kiln.nd.array(x, device=device) for x in (a, b, np.zeros((m, n), "float32"))]
    kiln.build(func, target="opencl", database=db)["main"](*arrays)
    np.testing.assert_allclose(arrays[2].numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_runner_on_the_device_reports_build_errors_and_wrong_results():
    skip_unless(opencl_missing())
    func, _ = add_then_sine(16, 8)
    sch = tir.Schedule(func)
    sch.compute_inline(sch.get_block("B"))
    bind_threads(sch, sch.get_block("C"), 2, threads=32)
    with ms.LocalRunner(repeat=2, min_repeat_ms=1, build_workers=1) as runner:
        runner.set_task(func, target="opencl")
        assert runner.target_key().device_model == kiln.opencl(0).device_name
        ok, unbound, wrong = runner.run([sch.mod, func,
                                         ms.MeasureInput(sch.mod, fault="wrong_result")])
    assert ok.status == "ok" and len(ok.run_secs) == 2 and ok.median > 0, ok.error
    assert unbound.status == "build_error" and "sch.bind" in unbound.error
    assert wrong.status == "wrong_result"
    assert "argument C differs from the untuned function's result" in wrong.error


def test_kiln_tune_with_target_opencl_tunes_a_file(tmp_path):
    skip_unless(opencl_missing())
    path = tmp_path / "ops.py"
    path.write_text(WORKLOAD_FILE)
    db = tmp_path / "gpu.db"
    done = cli("tune", f"{path}:row_sum", "--target", "opencl", "--trials", 8, "--per-iter", 4,
               "--db", db, "--no-progress")
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()[2:]
    assert len(rows) == 1 and int(rows[0].split()[1]) > 0  # trials
    shown = cli("db", "show", db, "--top", 1)
    assert shown.returncode == 0 and kiln.opencl(0).device_name in shown.stdout


def test_tuning_for_cuda_without_a_device_says_so(tmp_path):
    if kiln.cuda(0).exist:
        pytest.skip("this machine has a CUDA device; the test needs a machine without one")
    func, _ = row_sum()
    with pytest.raises(kiln.KilnRuntimeError, match="needs a CUDA device to measure on, and this "
                                                    "machine has none"):
        ms.tune_tir(func, target="cuda", work_dir=tmp_path / "py", max_trials_global=4, **SMALL)
    path = tmp_path / "ops.py"
    path.write_text(WORKLOAD_FILE)
    done = cli("tune", f"{path}:row_sum", "--target", "cuda", "--trials", 4,
               "--db", tmp_path / "cuda.db", "--no-progress")
    assert done.returncode == 1
    assert done.stderr.startswith("kiln tune: Runner.set_task: the target 'cuda -arch=")
    assert "needs a CUDA device" in done.stderr and "Traceback" not in done.stderr
