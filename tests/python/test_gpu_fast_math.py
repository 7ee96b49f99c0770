"""The -fast-math option of the GPU targets: float32 math functions become CUDA's fast
intrinsics (__expf, __sinf, ...; NVRTC compiles with --use_fast_math) and OpenCL's native_
functions (built with -cl-fast-relaxed-math); without it the code keeps the IEEE functions. The
fast results on OpenCL (PoCL on the CPU) stay within a looser tolerance of NumPy's."""
import json

import numpy as np
import pytest

import kiln
from kiln import te, tir

from gpu_helpers import nvrtc_missing, opencl_missing, run_on_device, skip_unless


def math_mix(n=256):
    """B = exp(A) + log(A + 1.5) * sin(A) - cos(A) * sqrt(A + 1.5), A in [-1, 1]."""
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: te.exp(A[i]) + te.log(A[i] + 1.5) * te.sin(A[i]) -
                   te.cos(A[i]) * te.sqrt(A[i] + 1.5), name="B")
    func = te.create_prim_func([A, B])
    sch = tir.Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    bx, tx = sch.split(i, factors=[None, 64])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch.mod


def reference(a):
    return np.exp(a) + np.log(a + 1.5) * np.sin(a) - np.cos(a) * np.sqrt(a + 1.5)


def test_targets_parse_the_flag():
    for kind in ("cuda", "opencl"):
        t = kiln.target.Target(f"{kind} -fast-math")
        assert t.fast_math and str(t).endswith(" -fast-math")
        assert kiln.target.Target(str(t)) == t
        assert not kiln.target.Target(kind).fast_math
    with pytest.raises(kiln.KilnValueError, match=r"unknown option '-fast-math' in 'llvm "):
        kiln.target.Target("llvm -fast-math")
    with pytest.raises(kiln.KilnValueError, match=r"malformed option '-fastmath' .* -fast-math"):
        kiln.target.Target("cuda -fastmath")


def test_cuda_uses_fast_intrinsics_only_with_the_flag():
    skip_unless(nvrtc_missing())
    ieee = kiln.build(math_mix(), target="cuda -arch=sm_80")
    fast = kiln.build(math_mix(), target="cuda -arch=sm_80 -fast-math")
    for name in ("__expf(", "__logf(", "__sinf(", "__cosf("):
        assert name in fast.get_source("cuda") and name not in ieee.get_source("cuda")
    assert "sqrtf(" in fast.get_source("cuda") and "expf(" in ieee.get_source("cuda")
    # The hardware's approximations, and --use_fast_math's flush to zero.
    assert "sin.approx.ftz.f32" in fast.get_source("ptx")
    assert "sin.approx" not in ieee.get_source("ptx")


def test_opencl_uses_native_functions_only_with_the_flag():
    skip_unless(opencl_missing())
    a = np.random.default_rng(3).uniform(-1, 1, 256).astype("float32")
    results = {}
    for target in ("opencl", "opencl -fast-math"):
        rt = kiln.build(math_mix(), target=target)
        source = rt.get_source("opencl")
        blob = json.loads(rt.manifest)["device_blobs"][0]
        if target == "opencl":
            assert "native_" not in source and "exp(" in source
            assert "build_options" not in blob
        else:
            for name in ("native_exp(", "native_log(", "native_sin(", "native_cos(",
                         "native_sqrt("):
                assert name in source
            assert blob["build_options"] == "-cl-fast-relaxed-math"
        results[target] = run_on_device(rt, [a, np.zeros_like(a)], kiln.opencl(0))[1]
    np.testing.assert_allclose(results["opencl"], reference(a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results["opencl -fast-math"], reference(a), rtol=1e-3, atol=1e-3)
