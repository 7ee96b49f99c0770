"""GPU semantics of kiln.tir.interpret: the GPU program that tir.lower(..., target=...) returns
(a host function and its kernels, with the barriers of insert_barriers) runs as thread blocks
whose threads step from barrier to barrier, and matches the unscheduled function; scheduled
TensorIR keeps its serial meaning unless gpu=True, where a missing barrier is an error. The
hand-written programs (divergent barriers, shared memory per block, local memory per thread)
are in tests/cpp/interpreter/interpreter_gpu_test.cc."""
import numpy as np
import pytest

import kiln
from kiln import tir

from gpu_helpers import GPU_WORKLOADS, assert_close, expected_results, gpu_block_reverse


@pytest.mark.parametrize("name", sorted(GPU_WORKLOADS))
def test_lowered_gpu_program_matches_the_unscheduled_function(name):
    func, mod = GPU_WORKLOADS[name]()
    args, expected = expected_results(func)
    lowered = tir.lower(mod, target="opencl")
    tir.interpret(lowered, *args)
    assert_close(args, expected)


def test_lower_for_a_gpu_target_returns_the_host_and_its_kernels():
    _, mod = gpu_block_reverse()
    lowered = tir.lower(mod, target="cuda")
    assert isinstance(lowered, kiln.ir.IRModule)
    assert sorted(lowered.keys()) == ["main", "main_kernel0"]
    kernel = lowered["main_kernel0"]
    assert 'T.device_launch("main_kernel0"' in str(lowered["main"])
    assert 'T.storage_sync("shared")' in str(kernel)


def test_scheduled_tensorir_runs_serially_by_default():
    func, mod = gpu_block_reverse()
    args, expected = expected_results(func)
    tir.interpret(mod, *args)
    assert_close(args, expected)


def test_scheduled_tensorir_with_gpu_semantics_misses_a_barrier():
    # Thread 31 reads A_shared[32] before thread 32 writes it: the schedule relies on the
    # barrier that lowering inserts between the two loops.
    func, mod = gpu_block_reverse()
    args, _ = expected_results(func)
    with pytest.raises(kiln.KilnRuntimeError,
                       match=r"tir.interpret: thread \(32, 0, 0\) of block \(0, 0, 0\) writes "
                             r"A_shared\[32\], which thread \(31, 0, 0\) read since the last "
                             r"barrier: a storage_sync is missing between them"):
        tir.interpret(mod, *args, gpu=True)


def test_gpu_false_runs_a_module_serially_and_kernels_still_launch():
    func, mod = gpu_block_reverse()
    args, expected = expected_results(func)
    tir.interpret(tir.lower(mod, target="opencl"), *args, gpu=False)
    assert_close(args, expected)


def test_host_function_without_its_kernels_is_an_error():
    func, mod = gpu_block_reverse()
    args, _ = expected_results(func)
    host = tir.lower(mod, target="opencl")["main"]
    with pytest.raises(kiln.KilnValueError,
                       match="device_launch of kernel main_kernel0, which is not among the "
                             "kernels given"):
        tir.interpret(host, *args)


def test_gpu_must_be_a_bool():
    func, mod = gpu_block_reverse()
    args, _ = expected_results(func)
    with pytest.raises(kiln.KilnTypeError, match="tir.interpret"):
        tir.interpret(mod, *args, gpu="yes")


def test_lower_rejects_a_bad_target():
    _, mod = gpu_block_reverse()
    with pytest.raises(kiln.KilnError):
        tir.lower(mod, target="no-such-target")


def test_cpu_target_lowers_as_without_target():
    func, mod = gpu_block_reverse()
    lowered = tir.lower(mod, target="llvm")
    assert str(lowered["main"]) == str(tir.lower(mod)["main"])
    a = np.arange(256, dtype="float32")
    b = np.zeros(256, dtype="float32")
    tir.interpret(lowered, a, b)
    np.testing.assert_allclose(b, a.reshape(4, 64)[:, ::-1].reshape(-1) + 1)
