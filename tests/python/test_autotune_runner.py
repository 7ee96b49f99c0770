"""kiln.autotune.LocalRunner: candidates built, checked against the untuned function and timed
in a worker process; crashes, aborts, hangs, wrong results and build errors recorded while the
batch goes on; in-place functions measured on fresh arguments; interleaved rounds; the target
key; Ctrl-C; and no worker process left behind. No test asserts a time beyond its being
positive."""
import json
import os
import signal
import threading

import numpy as np
import pytest

import kiln
from kiln import autotune as ms
from kiln import te, tir
from kiln.error import KilnRuntimeError, KilnTypeError, KilnValueError

N = 256


def scale(factor, bump=False):
    """B = A * factor over float32[N]; with bump, B[37] gets 1 more."""
    A = te.placeholder((N,), name="A")
    if bump:
        B = te.compute((N,), lambda i: te.if_then_else(i == 37, A[i] * factor + 1.0,
                                                       A[i] * factor), name="B")
    else:
        B = te.compute((N,), lambda i: A[i] * factor, name="B")
    return te.create_prim_func([A, B])


def split_vectorized(func):
    """The function split by 16, the inner loop vectorized."""
    sch = tir.Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    _, inner = sch.split(i, factors=[None, 16])
    sch.vectorize(inner)
    return sch


def gpu_bound(func):
    """The function with its loop bound to threadIdx.x: the CPU build refuses it."""
    sch = tir.Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.bind(i, "threadIdx.x")
    return sch


def in_place(factor):
    """B[i] = B[i] * factor: the te function B = A * factor with A's accesses redirected to B
    and A dropped from the parameters (te cannot write an in-place update)."""
    A = te.placeholder((N,), name="A")
    B = te.compute((N,), lambda i: A[i] * factor, name="B")
    doc = json.loads(kiln.ir.save_json(te.create_prim_func([A, B])))
    root = doc["root"]
    (_, a_buffer), (b_var, b_buffer) = root["buffer_map"]

    def redirect(node):
        if isinstance(node, dict):
            return {key: (b_buffer if key == "buffer" and value == a_buffer else redirect(value))
                    for key, value in node.items()}
        if isinstance(node, list):
            return [redirect(item) for item in node]
        return node

    root["body"] = redirect(root["body"])
    root["params"] = [b_var]
    root["buffer_map"] = [[b_var, b_buffer]]
    return kiln.ir.load_json(json.dumps(doc))


def child_processes():
    """The pids whose parent is this process (live or zombie), from /proc: a set, to compare
    with the children that other tests may have left."""
    children = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == os.getpid():
            children.add(int(name))
    return children


@pytest.fixture
def runner():
    with ms.LocalRunner(repeat=3, min_repeat_ms=1) as r:
        r.set_task(scale(2.0), "llvm", name="scale")
        yield r


def assert_ok(result, times):
    assert result.status == "ok", result.error
    assert result.error == ""
    assert len(result.run_secs) == times
    assert all(t > 0 for t in result.run_secs)
    assert result.median > 0
    assert result.number >= 1
    assert result.build_ms > 0


def test_correct_candidates_are_timed(runner):
    sch = split_vectorized(scale(2.0))
    results = runner.run([sch, sch.mod, scale(2.0), ms.MeasureInput(sch)])
    assert len(results) == 4
    for result in results:
        assert_ok(result, 3)
    assert_ok(runner.run([sch], repeat=5)[0], 5)


def test_a_wrong_schedule_names_the_element(runner):
    wrong, right = runner.run([scale(2.0, bump=True), scale(2.0)])
    assert wrong.status == "wrong_result"
    assert wrong.error.startswith("argument B differs from the untuned function's result at "
                                  "index [37]: expected "), wrong.error
    assert wrong.error.endswith("; 1 of 256 elements differ"), wrong.error
    assert wrong.run_secs == () and wrong.median is None
    assert_ok(right, 3)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_build_past_build_timeout_s_is_a_timeout_and_the_batch_goes_on(workers):
    """The build has a limit of its own (build_timeout_s); the check and timing keep timeout_s."""
    with ms.LocalRunner(repeat=1, min_repeat_ms=1, build_timeout_s=0.001,
                        build_workers=workers) as runner:
        runner.set_task(scale(2.0))
        results = runner.run([split_vectorized(scale(2.0)), scale(2.0)])
    for result in results:
        assert result.status == "timeout"
        assert result.error == ("the candidate did not build within 0.001 s "
                                "(RunnerConfig.build_timeout_s): the worker was stopped")


@pytest.mark.parametrize("fault, status, error", [
    ("crash", "crash", "the worker was killed by SIGSEGV (segmentation fault) while running it "
                       "for the correctness check"),
    ("abort", "crash", "the worker was killed by SIGABRT (abort) while running it for the "
                       "correctness check"),
    ("hang", "timeout", "the candidate did not finish within 1 s: the worker was stopped while "
                        "running it for the correctness check"),
])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_fault_is_recorded_and_the_batch_goes_on(fault, status, error, workers):
    with ms.LocalRunner(repeat=2, min_repeat_ms=1, timeout_s=1, build_workers=workers) as runner:
        runner.set_task(scale(2.0))
        sch = split_vectorized(scale(2.0))
        failed, after, last = runner.run([ms.MeasureInput(sch, fault=fault), sch, scale(2.0)])
        assert failed.status == status
        assert failed.error.startswith(error), failed.error
        assert failed.run_secs == ()
        assert_ok(after, 2)
        assert_ok(last, 2)


def test_several_workers_build_a_batch_and_each_times_its_own():
    # Two workers stage the batch side by side; the results come back in the batch's order,
    # whichever worker built each, and a fault in one worker costs only its candidate.
    before = child_processes()
    sch = split_vectorized(scale(2.0))
    batch = [sch, scale(2.0, bump=True), ms.MeasureInput(sch, "crash"), scale(2.0),
             ms.MeasureInput(sch, "wrong_result"), sch]
    with ms.LocalRunner(repeat=2, min_repeat_ms=1, build_workers=2) as runner:
        runner.set_task(scale(2.0))
        assert len(child_processes() - before) == 1  # the second starts with the first batch
        results = runner.run(batch)
        assert len(child_processes() - before) == 2
        assert [r.status for r in results] == ["ok", "wrong_result", "crash", "ok",
                                               "wrong_result", "ok"]
        for k in (0, 3, 5):
            assert_ok(results[k], 2)
        assert "while running it for the correctness check" in results[2].error
        assert all(r.build_ms > 0 for r in results)
        assert_ok(runner.run([sch])[0], 2)  # a batch of one: built and timed in one worker
        interleaved = runner.run_interleaved([sch, scale(2.0)], rounds=3)
        assert [len(r.run_secs) for r in interleaved] == [3, 3]
    assert child_processes() - before == set()


def test_an_injected_wrong_result_is_caught(runner):
    sch = split_vectorized(scale(2.0))
    failed, after = runner.run([ms.MeasureInput(sch, "wrong_result"), sch])
    assert failed.status == "wrong_result"
    assert failed.error.startswith("argument B differs from the untuned function's result at "
                                   "index [128]"), failed.error
    assert_ok(after, 3)


def test_a_build_error_is_recorded(runner):
    failed, after = runner.run([gpu_bound(scale(2.0)), split_vectorized(scale(2.0))])
    assert failed.status == "build_error"
    assert "is bound to the GPU thread index threadIdx.x" in failed.error
    assert_ok(after, 3)


def test_in_place_functions_get_fresh_arguments_for_every_call():
    # 50 calls per repeat of B *= 2 would scale B by 2**150 without restoring: the check after
    # the timed calls would fail, and so would the next candidate's first check.
    with ms.LocalRunner(number=50, min_repeat_ms=1) as runner:
        runner.set_task(in_place(2.0))
        results = runner.run([in_place(2.0), in_place(2.0), in_place(3.0)], repeat=3)
    assert_ok(results[0], 3)
    assert_ok(results[1], 3)
    assert results[0].number == 50
    assert results[2].status == "wrong_result"


@pytest.mark.parametrize("vary", [False, True])
def test_moving_the_arguments_between_repeats_keeps_every_result_right(vary):
    # With vary_placement, each repeat (and each round) runs on arguments moved and restored:
    # results stay right, in-place functions included (each call on fresh values).
    with ms.LocalRunner(number=20, min_repeat_ms=1, vary_placement=vary) as runner:
        runner.set_task(in_place(2.0))
        assert_ok(runner.run([in_place(2.0)], repeat=5)[0], 5)
        results = runner.run_interleaved([in_place(2.0), in_place(2.0)], rounds=4)
    assert_ok(results[0], 4)
    assert_ok(results[1], 4)


def test_interleaved_runs_give_one_time_per_round(runner):
    sch = split_vectorized(scale(2.0))
    results = runner.run_interleaved(
        [sch, gpu_bound(scale(2.0)), ms.MeasureInput(sch, "crash"), scale(2.0)], rounds=4)
    assert_ok(results[0], 4)
    assert results[1].status == "build_error"
    assert results[2].status == "crash"
    assert_ok(results[3], 4)


def test_a_candidate_built_before_comes_from_the_object_cache(tmp_path):
    cache = tmp_path / "objects"
    sch = split_vectorized(scale(2.0))
    with ms.LocalRunner(repeat=2, min_repeat_ms=1, object_cache_dir=cache) as r:
        r.set_task(scale(2.0), "llvm", name="scale")
        first, other = r.run([sch, scale(2.0)])
        assert_ok(first, 2)
        assert not first.build_from_cache
        # The function as written: the workers compiled it for the task (the reference).
        assert other.build_from_cache
        again = r.run([sch])[0]
        assert_ok(again, 2)
        assert again.build_from_cache
        (interleaved,) = r.run_interleaved([sch], rounds=3)
        assert_ok(interleaved, 3)
        assert interleaved.build_from_cache
        # A fault is injected after the build: the cached object runs into it all the same.
        assert r.run([ms.MeasureInput(sch, "wrong_result")])[0].status == "wrong_result"
    assert len([p for p in cache.iterdir() if p.name.startswith("llvmcache-")]) >= 2
    # The workers built for the canonical target string: an in-process build for it loads the
    # same object.
    rt = kiln.build(sch, target=str(kiln.target.Target("llvm")), object_cache=cache)
    assert rt.build_timings["from_cache"]
    a = kiln.nd.array(np.arange(N, dtype="float32"))
    b = kiln.nd.empty((N,), "float32")
    rt(a, b)
    np.testing.assert_array_equal(b.numpy(), 2 * np.arange(N, dtype="float32"))


def test_without_an_object_cache_every_candidate_is_compiled(runner):
    sch = split_vectorized(scale(2.0))
    results = runner.run([sch]) + runner.run([sch])
    assert not any(r.build_from_cache for r in results)


def test_the_target_key_names_the_cpu_and_the_features(runner):
    key = runner.target_key()
    assert isinstance(key, ms.TargetKey)
    assert key.device_model == ms.cpu_model_name() != ""
    # The target and its ISA features are those a build for "llvm" states in its manifest.
    rt = kiln.build(scale(2.0), target="llvm")
    assert key.target == rt.target
    assert key.device_features == ",".join(json.loads(rt.manifest)["host_features"])
    with ms.LocalRunner(worker="") as idle:
        with pytest.raises(KilnValueError, match="no task was set; call set_task first"):
            idle.target_key()


def test_no_worker_outlives_the_runner():
    before = child_processes()
    with ms.LocalRunner(repeat=1, min_repeat_ms=1, build_workers=1) as runner:
        runner.set_task(scale(2.0))
        assert len(child_processes() - before) == 1
        runner.run([ms.MeasureInput(scale(2.0), "crash"), scale(2.0)])
        assert len(child_processes() - before) == 1  # the crashed worker reaped, a new one
    assert child_processes() - before == set()
    with pytest.raises(KilnValueError, match="LocalRunner.run: the runner was closed"):
        runner.run([scale(2.0)])


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_stops_the_batch_and_keeps_what_was_measured(workers):
    # Python's Ctrl-C handler, which Python does not install when it starts with SIGINT ignored
    # (a test run started in the background).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        check_ctrl_c_stops_the_batch(workers)
    finally:
        signal.signal(signal.SIGINT, previous)


def check_ctrl_c_stops_the_batch(workers):
    before = child_processes()
    with ms.LocalRunner(repeat=1, min_repeat_ms=1, timeout_s=60, build_workers=workers) as runner:
        runner.set_task(scale(2.0))
        timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt) as caught:
                runner.run([scale(2.0), ms.MeasureInput(scale(2.0), "hang"), scale(2.0)])
        finally:
            timer.cancel()
        results = caught.value.results
        assert len(results) <= 1  # never the hanging candidate or the one after it
        for result in results:
            assert_ok(result, 1)
        assert child_processes() - before == set()  # the workers were stopped and reaped
        assert_ok(runner.run([scale(2.0)])[0], 1)  # in a new worker


def test_bad_configs_are_refused():
    with pytest.raises(KilnValueError,
                       match=r"make_local_runner: RunnerConfig.repeat must be >= 1, found 0"):
        ms.LocalRunner(repeat=0)
    with pytest.raises(KilnValueError, match=r"RunnerConfig.build_workers must be >= 0 \(0: "
                       r"picked from the cores\), found -1"):
        ms.LocalRunner(build_workers=-1)
    with pytest.raises(KilnValueError, match=r"RunnerConfig.build_timeout_s must be a finite "
                       r"number > 0, found 0"):
        ms.LocalRunner(build_timeout_s=0)
    with pytest.raises(KilnTypeError, match="unknown RunnerConfig field 'repeats'"):
        ms.LocalRunner(repeats=3)
    with pytest.raises(KilnTypeError, match=r"kiln.autotune.RunnerConfig: timeout_s must be a number \(int or float\), "
                       "found an object of type str"):
        ms.LocalRunner(timeout_s="10")
    with pytest.raises(KilnTypeError, match=r"kiln.autotune.RunnerConfig: vary_placement must be "
                       "a bool, found an object of type str"):
        ms.LocalRunner(vary_placement="yes")
    with pytest.raises(KilnTypeError, match="config must be a RunnerConfig, found dict"):
        ms.LocalRunner({"repeat": 3})
    with pytest.raises(KilnRuntimeError, match="the tune worker executable '/nonexistent/worker' "
                       r"\(from RunnerConfig.worker\) is not an executable file"):
        ms.LocalRunner(worker="/nonexistent/worker")


def test_the_worker_path_can_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("KILN_TUNE_WORKER", "/nonexistent/kiln_tune_worker")
    with pytest.raises(KilnRuntimeError, match="from the environment variable KILN_TUNE_WORKER"):
        ms.LocalRunner()


def test_bad_batches_are_refused_before_measuring(runner):
    with ms.LocalRunner() as idle:
        with pytest.raises(KilnValueError, match="Runner.run: no task was set; call set_task"):
            idle.run([scale(2.0)])
    with pytest.raises(KilnValueError, match=r"LocalRunner.run: candidates\[0\].fault must be one "
                       r"of '', 'crash', 'abort', 'hang', 'wrong_result' \(a test hook\), "
                       r"found 'explode'"):
        runner.run([ms.MeasureInput(scale(2.0), "explode")])
    with pytest.raises(KilnValueError, match=r"repeat must be >= 0 \(0: RunnerConfig.repeat\)"):
        runner.run([scale(2.0)], repeat=-1)
    with pytest.raises(KilnValueError, match="rounds must be >= 1, found 0"):
        runner.run_interleaved([scale(2.0)], rounds=0)
    with pytest.raises(KilnTypeError, match="candidates must be a list"):
        runner.run(scale(2.0))
    with pytest.raises(KilnTypeError, match=r"candidates\[1\] must be"):
        runner.run([scale(2.0), "not a module"])


def test_set_task_refuses_arguments_larger_than_the_memory_and_keeps_the_task_before():
    # 2^40 float32 elements per tensor: 8 TiB of arguments, refused before any worker tries.
    n = 1 << 40
    a = te.placeholder((n,), "float32", name="a")
    b = te.compute((n,), lambda i: a[i] * 2.0, name="b")
    huge = te.create_prim_func([a, b])
    with ms.LocalRunner() as runner:
        runner.set_task(scale(2.0), "llvm")
        with pytest.raises(KilnValueError, match=r"Runner.set_task: the arguments of task 'huge' "
                           r"take 8192.0 GiB, and a worker holds them twice \(a working and a "
                           r"pristine copy\), but this machine has [0-9.]+ GiB of memory "
                           r"available: tune a smaller instance of the function"):
            runner.set_task(huge, "llvm", name="huge")
        assert runner.run([scale(2.0)])[0].status == "ok"


def test_set_task_refuses_an_untuned_function_that_does_not_build():
    with ms.LocalRunner() as runner:
        with pytest.raises(KilnValueError, match="set_task: the untuned function of task 'bound' "
                           "cannot give reference results on target .*: it does not build: "):
            runner.set_task(gpu_bound(scale(2.0)).mod, "llvm", name="bound")
