"""Calling compiled functions from Python: NumPy arrays without a copy, kiln.nd arrays, DLPack
producers and numbers; and each argument error the runtime detects, raised as a kiln exception
with the runtime's message, after which the process keeps working."""
import json

import numpy as np
import pytest

import kiln
from kiln import te

from runtime_helpers import (CountingProducer, NumpyDLPackWrapper, add_one, aligned_copy,
                             aligned_empty, matmul, vector_add)


@pytest.fixture(scope="module")
def rt_matmul():
    return kiln.build(matmul(32, 24, 16))


@pytest.fixture(scope="module")
def rt_symbolic():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.placeholder((m,), name="B")
    C = te.compute((n, m), lambda i, j: A[i, j] + B[j], name="C")
    return kiln.build(te.create_prim_func([A, B, C]))


def matmul_args(rng=None):
    rng = rng or np.random.default_rng(0)
    a = aligned_copy(rng.uniform(-1, 1, (32, 16)).astype("float32"))
    b = aligned_copy(rng.uniform(-1, 1, (16, 24)).astype("float32"))
    c = aligned_empty((32, 24))
    return a, b, c


def assert_still_works(rt):
    a, b, c = matmul_args()
    rt(a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# Passing tensors

def test_numpy_output_is_written_in_place(rt_matmul):
    a, b, c = matmul_args()
    c[...] = np.nan
    address = c.ctypes.data
    rt_matmul["main"](a, b, c)
    assert c.ctypes.data == address
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)


def test_numpy_view_into_a_larger_buffer_is_written_in_place():
    rt = kiln.build(add_one(64))
    big = aligned_empty((4, 64))
    big[...] = -5.0
    a = aligned_copy(np.arange(64, dtype="float32"))
    rt(a, big[2])  # a compact, aligned row of a larger array
    np.testing.assert_array_equal(big[2], np.arange(64) + 1)
    np.testing.assert_array_equal(big[[0, 1, 3]], -5.0)


@pytest.mark.parametrize("offset", [4, 16, 32])
def test_misaligned_numpy_arrays_give_correct_results(rt_matmul, offset):
    a, b, _ = matmul_args()
    a, b = aligned_copy(a, offset=offset), aligned_copy(b, offset=offset)
    c = aligned_empty((32, 24), offset=offset)
    rt_matmul(a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)


def test_fresh_numpy_arrays_of_any_alignment(rt_matmul):
    rng = np.random.default_rng(1)
    for _ in range(8):
        a = rng.uniform(-1, 1, (32, 16)).astype("float32")
        b = rng.uniform(-1, 1, (16, 24)).astype("float32")
        c = np.zeros((32, 24), "float32")
        rt_matmul(a, b, c)
        np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)


def test_kiln_nd_arrays(rt_matmul):
    a, b, _ = matmul_args()
    na, nb = kiln.nd.array(a), kiln.nd.array(b)
    nc = kiln.nd.empty((32, 24), "float32", device=kiln.cpu(0))
    rt_matmul(na, nb, nc)
    np.testing.assert_allclose(nc.numpy(), a.astype("float64") @ b, rtol=1e-5, atol=1e-5)


def test_dlpack_object_is_consumed_and_released():
    rt = kiln.build(add_one(64))
    a = aligned_copy(np.arange(64, dtype="float32"))
    out = aligned_empty((64,))
    producer = CountingProducer(out)
    rt(a, producer)
    np.testing.assert_array_equal(out, np.arange(64) + 1)
    assert producer.deleted == 1  # the consumer calls the deleter once, after the call


def test_numpy_dlpack_through_a_wrapper():
    rt = kiln.build(add_one(64))
    a = np.arange(64, dtype="float32")
    out = np.zeros(64, "float32")
    rt(NumpyDLPackWrapper(a), NumpyDLPackWrapper(out))
    np.testing.assert_array_equal(out, np.arange(64) + 1)


def test_numpy_from_dlpack_shares_kiln_nd_memory():
    rt = kiln.build(add_one(16))
    a = kiln.nd.array(np.arange(16, dtype="float32"))
    out = kiln.nd.empty((16,), "float32")
    view = np.from_dlpack(out)
    rt(a, out)
    np.testing.assert_array_equal(view, np.arange(16) + 1)
    view[0] = 100.0
    assert out.numpy()[0] == 100.0


def test_scalar_for_a_tensor_and_tensor_for_a_scalar():
    alpha = te.var("alpha", "float32")
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * alpha, name="B")
    rt = kiln.build(te.create_prim_func([A, alpha, B]))
    a, b = np.ones(8, "float32"), np.zeros(8, "float32")
    with pytest.raises(kiln.KilnTypeError, match=r"main: argument A: expected a tensor "
                                                 r"\(DLTensor\*\), found a float scalar"):
        rt(1.0, 2.0, b)
    with pytest.raises(kiln.KilnTypeError,
                       match=r"main: argument alpha: expected a float32 scalar, found a tensor"):
        rt(a, a, b)
    rt(a, 2.5, b)
    np.testing.assert_array_equal(b, 2.5)


# ---------------------------------------------------------------------------------------------
# Argument errors: each names the function and the argument, and the next call works.

def test_wrong_argument_count(rt_matmul):
    a, b, _ = matmul_args()
    with pytest.raises(kiln.KilnTypeError, match="main: expected 3 arguments, found 2"):
        rt_matmul(a, b)
    assert_still_works(rt_matmul)


def test_wrong_dtype(rt_matmul):
    a, b, c = matmul_args()
    with pytest.raises(kiln.KilnTypeError,
                       match="main: argument A: expected dtype float32, found float64"):
        rt_matmul(a.astype("float64"), b, c)
    assert_still_works(rt_matmul)


def test_wrong_ndim(rt_matmul):
    a, b, c = matmul_args()
    with pytest.raises(kiln.KilnValueError, match="main: argument B: expected ndim 2, found 1"):
        rt_matmul(a, b.reshape(-1), c)
    assert_still_works(rt_matmul)


def test_wrong_shape(rt_matmul):
    a, b, c = matmul_args()
    with pytest.raises(kiln.KilnValueError,
                       match="main: argument C: dimension 1: expected 24, found 23"):
        rt_matmul(a, b, np.zeros((32, 23), "float32"))
    assert_still_works(rt_matmul)


def test_non_contiguous_array(rt_matmul):
    a, b, c = matmul_args()
    transposed = np.zeros((16, 32), "float32").T  # shape (32, 16), strides (1, 32)
    with pytest.raises(kiln.KilnValueError,
                       match=r"main: argument A: expected a compact row-major tensor, found "
                             r"strides \(1, 32\) for shape \(32, 16\)"):
        rt_matmul(transposed, b, c)
    assert_still_works(rt_matmul)


def test_symbolic_dimension_bound_two_ways(rt_symbolic):
    a = np.zeros((3, 5), "float32")
    with pytest.raises(kiln.KilnValueError,
                       match=r"main: argument B: dimension 0 is m = 5 \(bound by argument A\), "
                             r"found 6"):
        rt_symbolic(a, np.zeros(6, "float32"), np.zeros((3, 5), "float32"))
    b, c = np.arange(5, dtype="float32"), np.zeros((3, 5), "float32")
    rt_symbolic(a + 1, b, c)
    np.testing.assert_array_equal(c, 1 + b[None, :] + np.zeros((3, 1)))


def test_null_data_pointer():
    rt = kiln.build(add_one(64))
    a = np.zeros(64, "float32")
    producer = CountingProducer(shape=(64,))
    with pytest.raises(kiln.KilnValueError, match="main: argument B: data pointer is NULL"):
        rt(a, producer)
    assert producer.deleted == 1
    out = np.zeros(64, "float32")
    rt(a, out)
    np.testing.assert_array_equal(out, 1.0)


def test_wrong_device():
    rt = kiln.build(add_one(64))
    out = np.zeros(64, "float32")
    with pytest.raises(kiln.KilnValueError,
                       match="main: argument B: device: expected cpu, found cuda:0"):
        rt(np.zeros(64, "float32"), CountingProducer(out, device_type=2))


def test_object_that_is_not_a_tensor(rt_matmul):
    a, b, _ = matmul_args()
    with pytest.raises(kiln.KilnTypeError,
                       match="main: argument C: cannot pass an object of type str"):
        rt_matmul(a, b, "c")
    assert_still_works(rt_matmul)


def test_integer_scalar_out_of_range():
    n = te.var("n", "int32")
    A = te.placeholder((4,), "int32", name="A")
    B = te.compute((4,), lambda i: A[i] + n, name="B")
    rt = kiln.build(te.create_prim_func([A, n, B]))
    a, b = np.zeros(4, "int32"), np.zeros(4, "int32")
    with pytest.raises(kiln.KilnValueError,
                       match="main: argument n: value 4294967296 does not fit in int32"):
        rt(a, 2**32, b)
    with pytest.raises(kiln.KilnValueError, match="does not fit in 64 bits"):
        rt(a, 2**70, b)
    rt(a, -7, b)
    np.testing.assert_array_equal(b, -7)


def test_errors_are_kiln_errors(rt_matmul):
    with pytest.raises(kiln.KilnError):
        rt_matmul()
    with pytest.raises(TypeError):  # KilnTypeError is a TypeError too
        rt_matmul(1, 2, 3)


def test_symbolic_vector_add_with_nd_arrays_of_two_sizes():
    rt = kiln.build(vector_add())
    for n in (3, 1000):
        a = kiln.nd.array(np.arange(n, dtype="float32"))
        b = kiln.nd.array(np.ones(n, "float32"))
        c = kiln.nd.empty((n,))
        rt(a, b, c)
        np.testing.assert_array_equal(c.numpy(), np.arange(n) + 1)


def test_calls_from_several_python_threads(rt_matmul):
    import threading

    errors = []

    def worker(seed):
        try:
            for _ in range(20):
                a, b, c = matmul_args(np.random.default_rng(seed))
                rt_matmul(a, b, c)
                np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.parametrize("dtype, alignment", [("float32", 4), ("float64", 8), ("int8", 1)])
def test_kernels_assume_only_the_element_alignment(dtype, alignment):
    # What every NumPy array guarantees, so that NumPy arrays are passed without a copy.
    rt = kiln.build(add_one(dtype=dtype), target="llvm")
    spec = json.loads(rt.manifest)["functions"][0]["args"]
    assert [arg["alignment"] for arg in spec] == [alignment, alignment]
    a = aligned_copy(np.arange(64).astype(dtype), offset=alignment)
    b = aligned_empty((64,), dtype, offset=alignment)
    rt(a, b)
    np.testing.assert_array_equal(b, np.arange(64).astype(dtype) + 1)
