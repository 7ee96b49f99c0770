"""Dynamic shared memory ("shared.dyn"): the dynamic shared buffers of a kernel are laid out in one
block of bytes (merge_dynamic_shared_memory), which CUDA declares as an `extern __shared__`
array and OpenCL receives as a `__local` kernel argument, its size passed by the launch. Checked
on the GPU corpus's dynamic_shared_matmul (two tiles of different dtypes) with NVRTC and on
OpenCL (PoCL on the CPU); the verifier counts the block against the shared-memory limit, and
a block over CUDA's 48 KiB of static shared memory compiles as dynamic shared memory."""
import numpy as np
import pytest

import kiln
from kiln import te, tir

from gpu_helpers import (assert_close, expected_results, gpu_dynamic_shared_matmul, nvrtc_missing,
                         opencl_missing, run_on_device, skip_unless)


def test_launch_passes_the_bytes_of_the_block():
    _, mod = gpu_dynamic_shared_matmul()
    host = str(tir.lower(mod, target="cuda")["main"])
    # A's tile: 16 x 8 float16 = 256 bytes; B's: 8 x 16 float32 = 512 bytes, at byte 256.
    assert "T.int64(4), T.int64(4), T.int64(1), T.int64(768), A.data" in host


def test_cuda_declares_one_extern_shared_block():
    skip_unless(nvrtc_missing())
    _, mod = gpu_dynamic_shared_matmul()
    rt = kiln.build(mod, target="cuda -arch=sm_80")
    source = rt.get_source("cuda")
    assert source.count("extern __shared__ __align__(16) unsigned char dyn_shared[];") == 1
    assert "*(ushort4*)(((unsigned short*)dyn_shared) + " in source
    assert "*(float4*)(((float*)dyn_shared) + " in source
    assert ".extern .shared .align 16 .b8 dyn_shared[];" in rt.get_source("ptx")


def test_opencl_takes_a_local_argument_and_computes_the_product():
    skip_unless(opencl_missing())
    func, mod = gpu_dynamic_shared_matmul()
    rt = kiln.build(mod, target="opencl")
    source = rt.get_source("opencl")
    assert "__global float* restrict C, __local uint4* restrict dyn_shared_param)" in source
    assert "__local uchar* dyn_shared = (__local uchar*)dyn_shared_param;" in source
    args, expected = expected_results(func)
    assert_close(run_on_device(rt, args, kiln.opencl(0)), expected)


def test_the_verifier_counts_the_block():
    _, mod = gpu_dynamic_shared_matmul()
    with pytest.raises(kiln.KilnValueError,
                       match=r"verify_gpu_code: kernel main_kernel0: 768 bytes of shared memory "
                             r"exceed the target's limit 512"):
        tir.lower(mod, target="cuda -max_shared_memory_per_block=512")


def staged_copy(scope, n=16384):
    """One block of 256 threads stages n float32 (64 KiB for the default n) in `scope`, then
    writes them back reversed."""
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[n - 1 - i] + 1.0, name="B")
    func = te.create_prim_func([A, B])
    sch = tir.Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    bx, _, tx = sch.split(i, factors=[1, None, 256])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    shared = sch.cache_read(sch.get_block("B"), 0, scope)
    sch.compute_at(shared, bx)
    _, ctx = sch.split(sch.get_loops(shared)[1], factors=[None, 256])
    sch.bind(ctx, "threadIdx.x")
    return func, sch.mod


def test_more_than_48_kib_compiles_only_as_dynamic_shared_memory():
    skip_unless(nvrtc_missing())
    target = "cuda -arch=sm_90 -max_shared_memory_per_block=232448"
    _, dynamic = staged_copy("shared.dyn")
    rt = kiln.build(dynamic, target=target)
    assert "T.int64(65536), A.data" in str(tir.lower(dynamic, target=target)["main"])
    assert ".extern .shared .align 16 .b8 dyn_shared[];" in rt.get_source("ptx")
    _, static = staged_copy("shared")
    with pytest.raises(kiln.KilnValueError,
                       match=r"verify_gpu_code: kernel main_kernel0: 65536 bytes of \"shared\" "
                             r"memory exceed the 49152 bytes that shared arrays sized when the "
                             r"kernel is compiled may have; put the larger buffers in "
                             r"\"shared.dyn\""):
        kiln.build(static, target=target)


def test_staged_copy_runs_on_opencl():
    skip_unless(opencl_missing())
    func, mod = staged_copy("shared.dyn", n=1024)
    rt = kiln.build(mod, target="opencl")
    args, expected = expected_results(func)
    assert_close(run_on_device(rt, args, kiln.opencl(0)), expected)
