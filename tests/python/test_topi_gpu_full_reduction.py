"""topi.default_schedule for GPU targets on reductions to one value (sum, max, min, mean over
every axis): the schedule runs on an OpenCL device (PoCL on the CPU) against NumPy for lengths
that are and are not multiples of the thread count, 1 and 2^20 + 3 among them, float32 and int32,
a symbolic length; the CUDA C of the same programs compiles with NVRTC for sm_80; the schedule
is two kernels (thread blocks reducing slices, then one block reducing their partial results)
for a long input and one thread block for a short one, sized by the target's threads per block;
argmax over all elements, which GPU threads cannot combine, is refused with the reason."""
import re

import numpy as np
import pytest

import kiln
from kiln import te, tir, topi
from kiln.error import KilnValueError

from gpu_helpers import nvrtc_missing, opencl_missing, run_on_device, skip_unless

CUDA = "cuda -arch=sm_80"
LENGTHS = [1, 1000, 2**20 + 3]
REDUCERS = {"sum": (topi.sum, np.sum), "max": (topi.max, np.max), "min": (topi.min, np.min)}


def values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "int32":  # small enough that 2^20 of them sum without overflow
        return rng.integers(-100, 100, size=shape).astype("int32")
    return rng.uniform(0.0, 1.0, size=shape).astype("float32")


def full(reducer, shape, dtype, keepdims=False):
    x = te.placeholder(shape, dtype, name="x")
    return [x, REDUCERS[reducer][0](x, keepdims=keepdims)]


def scheduled(tensors, target="opencl"):
    return topi.default_schedule(te.create_prim_func(tensors), target=target)


def run_opencl(tensors, inputs, out_shape):
    rt = kiln.build(scheduled(tensors).mod, target="opencl")
    args = list(inputs) + [np.zeros(out_shape, tensors[-1].dtype)]
    return run_on_device(rt, args, kiln.opencl(0))[-1]


def assert_reduced(got, expected, dtype):
    if dtype == "int32":
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-5)


def kernels(sch, target="opencl"):
    return [k for k in tir.lower(sch.mod, target=target).functions if k != "main"]


def thread_extents(script, axis):
    return [int(n) for n in re.findall(r'T.thread_binding\((\d+), thread="' + re.escape(axis),
                                       script)]


# --- On the device, against NumPy -------------------------------------------------------------

@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("reducer", sorted(REDUCERS))
def test_opencl_reduces_a_vector_like_numpy(reducer, dtype, n):
    skip_unless(opencl_missing())
    xv = values((n,), dtype)
    got = run_opencl(full(reducer, (n,), dtype), [xv], ())
    assert_reduced(got, REDUCERS[reducer][1](xv).astype(dtype), dtype)


@pytest.mark.parametrize("shape", [(1, 1), (37, 29), (1025, 1023)])
def test_opencl_sums_a_matrix_like_numpy(shape):
    skip_unless(opencl_missing())
    xv = values(shape, "float32")
    got = run_opencl(full("sum", shape, "float32"), [xv], ())
    np.testing.assert_allclose(got, xv.sum(dtype="float64"), rtol=1e-5)


@pytest.mark.parametrize("keepdims", [False, True])
def test_opencl_mean_over_everything_like_numpy(keepdims):
    """The mean's division is a 0-d block (keepdims=False) that gets one thread of its own."""
    skip_unless(opencl_missing())
    x = te.placeholder((300, 700), "float32", name="x")
    y = topi.mean(x, keepdims=keepdims)
    xv = values((300, 700), "float32")
    got = run_opencl([x, y], [xv], xv.mean(keepdims=keepdims).shape)
    np.testing.assert_allclose(got, xv.mean(keepdims=keepdims), rtol=1e-5)


def test_opencl_sum_of_squares_inlines_the_square():
    skip_unless(opencl_missing())
    x = te.placeholder((5000,), "float32", name="x")
    y = topi.sum(topi.multiply(x, x))
    xv = values((5000,), "float32")
    np.testing.assert_allclose(run_opencl([x, y], [xv], ()), (xv * xv).sum(), rtol=1e-5)


def test_symbolic_length_on_opencl_and_the_interpreter():
    n = te.var("n")
    x = te.placeholder((n,), "float32", name="x")
    sch = scheduled([x, topi.sum(x)])
    lowered = tir.lower(sch.mod, target="opencl")
    rt = None if opencl_missing() else kiln.build(sch.mod, target="opencl")
    for length in LENGTHS:
        xv = values((length,), "float32", seed=length)
        if length <= 1000:  # the interpreter runs every thread of every block
            got = np.zeros((), "float32")
            tir.interpret(lowered, xv, got)
            np.testing.assert_allclose(got, xv.sum(), rtol=1e-5)
        if rt is not None:
            got = run_on_device(rt, [xv, np.zeros((), "float32")], kiln.opencl(0))[-1]
            np.testing.assert_allclose(got, xv.sum(dtype="float64"), rtol=1e-5)


@pytest.mark.parametrize("n", [1, 1000, 40000])
def test_lowered_program_matches_numpy_on_the_interpreter(n):
    xv = values((n,), "float32")
    lowered = tir.lower(scheduled(full("max", (n,), "float32")).mod, target="opencl")
    got = np.zeros((), "float32")
    tir.interpret(lowered, xv, got)
    assert got == xv.max()


# --- NVRTC ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("reducer", sorted(REDUCERS))
def test_cuda_schedule_compiles_with_nvrtc(reducer, dtype, n):
    skip_unless(nvrtc_missing())
    rt = kiln.build(scheduled(full(reducer, (n,), dtype), CUDA).mod, target=CUDA)
    assert "__global__ void" in rt.get_source("cuda")
    assert ".target sm_80" in rt.get_source("ptx")


def test_cuda_mean_and_symbolic_length_compile_with_nvrtc():
    skip_unless(nvrtc_missing())
    n = te.var("n")
    x = te.placeholder((n,), "float32", name="x")
    y = te.placeholder((300, 700), "float32", name="y")
    for tensors in ([x, topi.sum(x)], [y, topi.mean(y)]):
        rt = kiln.build(scheduled(tensors, CUDA).mod, target=CUDA)
        assert ".target sm_80" in rt.get_source("ptx")


# --- The structure of the schedule --------------------------------------------------------------

def test_a_long_input_is_reduced_in_two_kernels():
    """Thread blocks of 256 threads reduce slices into partial results (rfactor), then one
    block of as many threads as there are partial results reduces them."""
    sch = scheduled(full("sum", (2**20 + 3,), "float32"))
    script = sch.mod["main"].script()
    assert "_rf" in script
    assert len(kernels(sch)) == 2
    assert thread_extents(script, "threadIdx.x") == [256, 256]
    assert thread_extents(script, "blockIdx.x") == [256, 1]


def test_a_short_input_is_reduced_by_one_thread_block():
    sch = scheduled(full("sum", (1000,), "float32"))
    script = sch.mod["main"].script()
    assert "_rf" not in script
    assert len(kernels(sch)) == 1
    assert thread_extents(script, "threadIdx.x") == [256]
    assert thread_extents(script, "blockIdx.x") == [1]


def test_thread_counts_follow_the_target():
    tensors = full("sum", (100000,), "float32")
    for target, limit in (("opencl -max_threads_per_block=64", 64), (CUDA, 256)):
        sch = scheduled(tensors, target)
        script = sch.mod["main"].script()
        assert max(thread_extents(script, "threadIdx.x")) <= limit
        # The partial results are as many as the second kernel's block has threads.
        assert max(thread_extents(script, "blockIdx.x")) <= limit
        kernels(sch, target)  # verify_gpu_code


def test_argmax_over_everything_is_refused_with_the_reason():
    x = te.placeholder((1000,), "float32", name="x")
    with pytest.raises(KilnValueError, match=r"no GPU schedule for block 'T_argmax' .* cannot "
                                             r"combine .* not argmax"):
        scheduled([x, topi.argmax(x)])
