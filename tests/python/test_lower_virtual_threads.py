"""Virtual threads (loops bound to vthread.x/y/z) through lowering: inject_virtual_threads runs
them inside their thread, the shared fetch once for all of them and each virtual thread's
accumulator in its own copy; the vthread GEMM of gpu_helpers matches NumPy on the GPU
interpreter (threads stepping from barrier to barrier) and on an OpenCL device, and compiles
with NVRTC; a vthread schedule also builds for the CPU, where it is a serial loop; a vthread
loop of symbolic extent is an error. The golden IR is in
tests/cpp/tir/inject_virtual_threads_test.cc."""
import re

import numpy as np
import pytest

import kiln
from kiln import te, tir

from gpu_helpers import (assert_close, expected_results, gpu_vthread_tiled_matmul,
                         nvrtc_missing, opencl_missing, run_on_device, skip_unless)


def kernel_of(mod, target="opencl"):
    lowered = tir.lower(mod, target=target)
    kernels = [name for name in lowered.keys() if name != "main"]
    assert kernels == ["main_kernel0"]
    return str(lowered["main_kernel0"])


def test_the_fetch_runs_once_and_each_virtual_thread_keeps_its_accumulators():
    _, mod = gpu_vthread_tiled_matmul()
    text = kernel_of(mod)
    assert "vthread" not in text
    # 2 x 2 outputs per thread for each of the 2 x 2 virtual threads.
    assert re.search(r'T\.allocate\(\(16,\), "float32", scope="local"\)', text), text
    # One store into each shared tile per k step (A_shared and B_shared, unrolled over
    # nothing: the fetch is not repeated per virtual thread).
    assert len(re.findall(r"A_shared\[[^\]]*\] = ", text)) == 1, text
    assert len(re.findall(r"B_shared\[[^\]]*\] = ", text)) == 1, text
    # The barriers around the fetch are reached by every thread: none inside a guard.
    assert text.count('T.storage_sync("shared")') == 2, text


def test_the_vthread_gemm_matches_on_the_gpu_interpreter():
    func, mod = gpu_vthread_tiled_matmul(32, 48, 24)
    args, expected = expected_results(func)
    tir.interpret(tir.lower(mod, target="opencl"), *args)
    assert_close(args, expected)


def test_the_vthread_gemm_runs_on_opencl():
    skip_unless(opencl_missing())
    func, mod = gpu_vthread_tiled_matmul(32, 48, 24)
    args, expected = expected_results(func)
    rt = kiln.build(mod, target="opencl")
    assert_close(run_on_device(rt, args, kiln.opencl(0)), expected)


def test_the_vthread_gemm_compiles_with_nvrtc():
    skip_unless(nvrtc_missing())
    _, mod = gpu_vthread_tiled_matmul()
    rt = kiln.build(mod, target="cuda -arch=sm_80")
    assert ".entry main_kernel0" in rt.get_source("ptx")
    assert "vthread" not in rt.get_source("cuda")


def test_a_vthread_loop_on_the_cpu_is_a_loop():
    n = 64
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    func = te.create_prim_func([A, B])
    sch = tir.Schedule(func)
    v, i = sch.split(sch.get_loops("B")[0], factors=[4, None])
    sch.bind(v, "vthread.x")
    assert "vthread" not in str(tir.lower(sch.mod))
    a = np.random.default_rng(0).uniform(-1, 1, n).astype("float32")
    b = np.zeros(n, "float32")
    kiln.build(sch.mod, target="llvm")(a, b)
    np.testing.assert_allclose(b, a * 2)


def test_the_pass_alone_returns_a_function_without_vthreads_as_it_is():
    A = te.placeholder((8,), "float32", name="A")
    func = te.create_prim_func([A, te.compute((8,), lambda i: A[i] + 1.0, name="B")])
    assert tir.transform.inject_virtual_threads(func).same_as(func)


def test_a_symbolic_vthread_extent_is_an_error():
    n = te.var("n")
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    sch.bind(sch.get_loops("B")[0], "vthread.x")
    with pytest.raises(kiln.KilnValueError,
                       match=r"inject_virtual_threads: loop i is bound to vthread.x with the "
                             r"minimum 0 and the extent n; virtual threads need a constant "
                             r"extent from 0"):
        tir.lower(sch.mod)
