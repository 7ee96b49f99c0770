"""topi.default_schedule for GPU targets on reductions to one value (sum, max, min, mean,
argmax and argmin over every axis): the schedule runs on an OpenCL device (PoCL on the CPU)
against NumPy for lengths that are and are not multiples of the thread count, 1 and 2^20 + 3
among them, float32 and int32, a symbolic length; argmax and argmin keep NumPy's first index
among ties, across threads and thread blocks, and its first NaN, with -inf and the lowest
values among the inputs; the CUDA C of the same programs compiles with NVRTC for sm_80; the
schedule is two kernels (thread blocks reducing slices, then one block reducing their partial
results, both values of argmax's (index, value) pairs) for a long input and one thread block
for a short one, sized by the target's threads per block."""
import functools
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
ARG_REDUCERS = {"argmax": (topi.argmax, np.argmax), "argmin": (topi.argmin, np.argmin)}


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


def test_argmax_of_a_long_input_is_reduced_in_two_kernels():
    """Both values of the (index, value) pairs get partial results (rfactor) and are combined
    across threads in shared memory."""
    sch = scheduled(full_arg("argmax", 2**20 + 3, "float32"))
    script = sch.mod["main"].script()
    assert "T_argmax_v0_rf" in script and "T_argmax_v1_rf" in script
    assert len(kernels(sch)) == 2
    assert thread_extents(script, "threadIdx.x") == [256, 256]
    source = kiln.build(sch.mod, target="opencl").get_source("opencl")
    assert "__local int T_argmax_rf_red0[256] __attribute__((aligned(16)));" in source
    assert "__local float T_argmax_rf_red1[256] __attribute__((aligned(16)));" in source


def test_a_reduction_to_one_value_threads_cannot_combine_is_refused_with_the_reason():
    """A guarded update (a where condition) is no reduction lowering combines across threads."""
    x = te.placeholder((1000,), "float32", name="x")
    k = te.reduce_axis((0, 1000), name="k")
    y = te.compute((), lambda: te.sum(x[k], axis=k, where=x[k] > 0), name="y")
    with pytest.raises(KilnValueError, match=r"no GPU schedule for block 'y' .* cannot "
                                             r"combine .* as argmax's"):
        scheduled([x, y])


# --- argmax and argmin over every element --------------------------------------------------------

def full_arg(name, n, dtype):
    x = te.placeholder((n,), dtype, name="x")
    return [x, ARG_REDUCERS[name][0](x)]


@functools.lru_cache(maxsize=None)
def arg_module(name, n, dtype):
    return kiln.build(scheduled(full_arg(name, n, dtype)).mod, target="opencl")


def run_arg(name, xv):
    rt = arg_module(name, xv.shape[0], str(xv.dtype))
    return run_on_device(rt, [xv, np.zeros((), "int32")], kiln.opencl(0))[-1]


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("name", sorted(ARG_REDUCERS))
def test_opencl_argmax_of_a_vector_like_numpy(name, dtype, n):
    """Negative and positive values; int32 values in [-100, 100) tie many times over, across
    threads and thread blocks."""
    skip_unless(opencl_missing())
    rng = np.random.default_rng(n)
    if dtype == "int32":
        xv = rng.integers(-100, 100, size=n).astype("int32")
    else:
        xv = rng.standard_normal(n).astype("float32")
    assert run_arg(name, xv) == ARG_REDUCERS[name][1](xv)


def special_values(case, n, is_max):
    """An input of n values for one of NumPy's rules; its extreme values sit far apart, in
    different thread blocks of the two-stage schedule."""
    worst = -np.inf if is_max else np.inf
    best = np.float32(7.0 if is_max else -7.0)
    x = np.full(n, -1.0 if is_max else 1.0, "float32")
    if case == "ties":  # the first of equal extremes
        x[[n - 5, n // 2, 3001]] = best
    elif case == "all_equal":
        x[:] = best
    elif case == "infinite":  # only the identity's value: index 0
        x[:] = worst
    elif case == "lowest":  # the lowest (largest) finite value everywhere
        x[:] = np.finfo("float32").min if is_max else np.finfo("float32").max
    elif case == "nan":  # the first NaN wins over every number and infinity
        x[[n - 3, 4000]] = np.nan
        x[10] = -worst
    elif case == "infinity_wins":
        x[[n // 3, 17]] = -worst
    return x


@pytest.mark.parametrize("case", ["ties", "all_equal", "infinite", "lowest", "nan",
                                  "infinity_wins"])
@pytest.mark.parametrize("name", sorted(ARG_REDUCERS))
def test_opencl_argmax_follows_numpy_rules(name, case):
    skip_unless(opencl_missing())
    for n in (5000, 2**20 + 3):  # two thread blocks; 256 of them
        xv = special_values(case, n, name == "argmax")
        assert run_arg(name, xv) == ARG_REDUCERS[name][1](xv), n


@pytest.mark.parametrize("name", sorted(ARG_REDUCERS))
def test_opencl_argmax_of_the_lowest_integers_is_the_first(name):
    skip_unless(opencl_missing())
    info = np.iinfo("int32")
    xv = np.full(5000, info.min if name == "argmax" else info.max, "int32")
    assert run_arg(name, xv) == 0


def test_argmax_lowered_program_matches_numpy_on_the_interpreter():
    xv = np.random.default_rng(3).integers(-5, 5, size=1000).astype("float32")
    lowered = tir.lower(scheduled(full_arg("argmax", 1000, "float32")).mod, target="opencl")
    got = np.zeros((), "int32")
    tir.interpret(lowered, xv, got)
    assert got == np.argmax(xv)


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("name", sorted(ARG_REDUCERS))
def test_cuda_argmax_schedule_compiles_with_nvrtc(name, n):
    skip_unless(nvrtc_missing())
    rt = kiln.build(scheduled(full_arg(name, n, "float32"), CUDA).mod, target=CUDA)
    assert ".target sm_80" in rt.get_source("ptx")
