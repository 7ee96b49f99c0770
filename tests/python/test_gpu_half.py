"""float16 and bfloat16 on the GPU targets: stored as their bits, computed in float32 and rounded
to nearest even after each operation, as on the CPU. CUDA converts with the cvt instructions
(inline PTX: cvt.rn.bf16.f32 from sm_80, bfloat16 in software before), OpenCL with the core
vload_half / vstore_half_rte (no cl_khr_fp16 needed). The results on OpenCL (PoCL on the CPU)
must equal NumPy's / ml_dtypes' bit for bit, special values included; a float16 GEMM with
float32 accumulation compiles with NVRTC and runs on OpenCL."""
import numpy as np
import pytest

import kiln
from kiln import te, tir

from gpu_helpers import (expected_results, gpu_matmul_fp16, nvrtc_missing, opencl_missing,
                         run_on_device, skip_unless)


def scale_and_shift(dtype, n=64):
    """B = A * 3 - 0.5 in `dtype`: two roundings per element."""
    A = te.placeholder((n,), dtype, name="A")
    B = te.compute((n,), lambda i: A[i] * 3.0 - 0.5, name="B")
    func = te.create_prim_func([A, B])
    sch = tir.Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    bx, tx = sch.split(i, factors=[None, 32])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch.mod


def edge_values(np_dtype, n=64):
    """Zeros, extremes that overflow when tripled, subnormals, infinities, NaN, halfway cases,
    then random values."""
    if np_dtype is np.float16:
        info = np.finfo(np_dtype)
    else:
        info = pytest.importorskip("ml_dtypes").finfo(np_dtype)
    special = [0.0, -0.0, 1.0, -1.0, float(info.max), -float(info.max), float(info.tiny),
               float(info.tiny) / 4, float(info.smallest_subnormal), np.inf, -np.inf, np.nan,
               0.1, 1 / 3, 2049.0, 4097.0]
    rng = np.random.default_rng(7)
    values = np.concatenate([np.array(special), rng.uniform(-100, 100, n - len(special))])
    return values.astype(np_dtype)


def bits(array):
    return array.view(np.uint16)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_results_equal_numpy_bit_for_bit_on_opencl(dtype):
    skip_unless(opencl_missing())
    if dtype == "float16":
        np_dtype = np.float16
    else:
        np_dtype = pytest.importorskip("ml_dtypes").bfloat16
    a = edge_values(np_dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = (a * np_dtype(3.0)).astype(np_dtype) - np_dtype(0.5)
    rt = kiln.build(scale_and_shift(dtype), target="opencl")
    _, b = run_on_device(rt, [a, np.zeros_like(a)], kiln.opencl(0))
    nan = np.isnan(expected.astype(np.float32))
    assert np.array_equal(np.isnan(b.astype(np.float32)), nan)
    assert np.array_equal(bits(b)[~nan], bits(expected)[~nan])


def test_cuda_converts_float16_with_cvt_instructions():
    skip_unless(nvrtc_missing())
    rt = kiln.build(scale_and_shift("float16"), target="cuda -arch=sm_80")
    assert "cuda_fp16.h" not in rt.get_source("cuda")
    ptx = rt.get_source("ptx")
    assert "cvt.f32.f16" in ptx and "cvt.rn.f16.f32" in ptx


@pytest.mark.parametrize("arch", ["sm_75", "sm_80"])
def test_cuda_bfloat16_uses_cvt_from_sm_80(arch):
    skip_unless(nvrtc_missing())
    rt = kiln.build(scale_and_shift("bfloat16"), target=f"cuda -arch={arch}")
    assert ("cvt.rn.bf16.f32" in rt.get_source("ptx")) == (arch == "sm_80")


def test_float16_gemm_accumulates_in_float32():
    func, mod = gpu_matmul_fp16()
    if not nvrtc_missing():
        rt = kiln.build(mod, target="cuda -arch=sm_80")
        ptx = rt.get_source("ptx")
        # float16 tiles copied as their bits, four elements (8 bytes) at a time; products summed
        # in float32.
        assert "ld.global.nc.v2.u32" in ptx and "st.shared.v2.u32" in ptx
        assert "cvt.f32.f16" in ptx and "fma.rn.f32" in ptx
    skip_unless(opencl_missing())
    rt = kiln.build(mod, target="opencl")
    args, expected = expected_results(func)
    a, b, c = run_on_device(rt, args, kiln.opencl(0))
    want = args[0].astype(np.float32) @ args[1].astype(np.float32)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c, expected[2], rtol=1e-5, atol=1e-5)
