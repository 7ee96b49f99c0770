"""kiln.topi's reductions against NumPy: axis as an int, a tuple or None, keepdims, symbolic
extents, mean's float32 accumulation, and argmax/argmin's first-occurrence and NaN rules."""
import numpy as np
import pytest

from kiln import te, topi
from topi_helpers import check, rand


@pytest.fixture
def rng():
    return np.random.default_rng(1)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean"])
@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), ((0, 2), True),
                                            (-1, True)])
def test_reductions_match_numpy(rng, name, axis, keepdims):
    A = te.placeholder((3, 4, 5), name="A")
    a = rand(rng, 3, 4, 5) + (1.0 if name == "prod" else 0.0)
    ref = getattr(np, name)(a.astype("float64"), axis=axis, keepdims=keepdims)
    check([A], getattr(topi, name)(A, axis=axis, keepdims=keepdims), [a], ref, rtol=1e-5,
          atol=1e-5)


def test_symbolic_extent(rng):
    n = te.var("n")
    A = te.placeholder((n, 6), name="A")
    a = rand(rng, 7, 6)
    check([A], topi.sum(A, axis=0), [a], a.sum(axis=0), atol=1e-5)
    check([A], topi.mean(A, axis=0, keepdims=True), [a], a.mean(axis=0, keepdims=True),
          atol=1e-6)


def test_mean_of_float16_accumulates_in_float32(rng):
    A = te.placeholder((4096,), "float16", name="A")
    a = (rng.uniform(0, 1, size=4096)).astype("float16")
    out = topi.mean(A)
    assert out.dtype == "float16"
    check([A], out, [a], np.float16(a.astype("float64").mean()), rtol=1e-3)


def test_mean_of_ints_is_float32():
    A = te.placeholder((2, 3), "int32", name="A")
    out = topi.mean(A, axis=1)
    assert out.dtype == "float32"
    a = np.array([[1, 2, 4], [5, 5, 7]], "int32")
    check([A], out, [a], a.mean(axis=1))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions_take_the_first_occurrence(rng, name):
    A = te.placeholder((4, 6), name="A")
    a = np.round(rand(rng, 4, 6) * 2)  # many ties
    for axis in (0, 1, -1, None):
        out = getattr(topi, name)(A, axis=axis)
        assert out.dtype == "int32"
        check([A], out, [a], getattr(np, name)(a, axis=axis))
    check([A], getattr(topi, name)(A, axis=1, keepdims=True), [a],
          getattr(np, name)(a, axis=1, keepdims=True))


def test_arg_reductions_return_the_first_nan():
    A = te.placeholder((3, 4), name="A")
    a = np.array([[1, np.nan, 3, np.nan], [np.nan, 0, 9, 1], [2, 2, 1, 1]], "float32")
    check([A], topi.argmax(A, axis=1), [a], np.argmax(a, axis=1))
    check([A], topi.argmin(A, axis=1), [a], np.argmin(a, axis=1))


def test_arg_reductions_of_infinities_and_extreme_values_take_the_first():
    """Rows of nothing but -inf (+inf for argmin), or the lowest (largest) value of the dtype,
    give index 0 as NumPy does: the reducer's identity never wins a tie."""
    A = te.placeholder((3, 4), name="A")
    low = np.finfo("float32").min
    a = np.array([[-np.inf] * 4, [low] * 4, [-np.inf, low, low, -np.inf]], "float32")
    check([A], topi.argmax(A, axis=1), [a], np.argmax(a, axis=1))
    check([A], topi.argmin(A, axis=1), [-a], np.argmin(-a, axis=1))
    B = te.placeholder((2, 3), "int32", name="B")
    info = np.iinfo("int32")
    b = np.array([[info.min] * 3, [info.max] * 3], "int32")
    check([B], topi.argmax(B, axis=1), [b], np.argmax(b, axis=1))
    check([B], topi.argmin(B, axis=1), [b], np.argmin(b, axis=1))


def test_argmax_of_ints_on_the_interpreter():
    A = te.placeholder((2, 5), "int8", name="A")
    a = np.array([[-128, -128, -5, 7, 7], [3, 3, 3, 3, 3]], "int8")
    check([A], topi.argmax(A, axis=1), [a], np.argmax(a, axis=1), interpret=True)
    check([A], topi.argmin(A, axis=1), [a], np.argmin(a, axis=1), interpret=True)


def test_all_and_any():
    A = te.placeholder((3, 2), "bool", name="A")
    a = np.array([[True, True], [True, False], [False, False]])
    check([A], topi.all(A, axis=1), [a], a.all(axis=1))
    check([A], topi.any(A, axis=1), [a], a.any(axis=1))
    check([A], topi.any(A, keepdims=True), [a], a.any(keepdims=True))
