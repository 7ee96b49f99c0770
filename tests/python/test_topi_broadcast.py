"""kiln.topi's element-wise operators against NumPy: broadcasting arithmetic, comparisons,
logical operators, where, the unary math functions and cast; built with LLVM unless noted."""
import numpy as np
import pytest

from kiln import te, topi
from topi_helpers import check, rand


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize("op, ref", [
    (topi.add, np.add), (topi.subtract, np.subtract), (topi.multiply, np.multiply),
    (topi.divide, np.divide), (topi.maximum, np.maximum), (topi.minimum, np.minimum)])
def test_arithmetic_broadcasts_like_numpy(rng, op, ref):
    A = te.placeholder((3, 1, 5), name="A")
    B = te.placeholder((4, 1), name="B")
    a, b = rand(rng, 3, 1, 5), rand(rng, 4, 1) + 2.0
    check([A, B], op(A, B), [a, b], ref(a, b))


def test_power_and_floor_ops(rng):
    A = te.placeholder((6,), name="A")
    B = te.placeholder((6,), name="B")
    a, b = np.abs(rand(rng, 6)) + 0.5, rand(rng, 6) * 3
    check([A, B], topi.power(A, B), [a, b], np.power(a, b), rtol=1e-5)
    X = te.placeholder((7,), "int32", name="X")
    x = np.array([-7, -3, -1, 0, 2, 5, 9], "int32")
    check([X], topi.floor_divide(X, 3), [x], x // 3)
    check([X], topi.floor_mod(X, 3), [x], x % 3)
    check([A], topi.floor_mod(A, 0.3), [a], np.mod(a, np.float32(0.3)), atol=1e-6)


def test_scalar_operands_take_the_tensor_dtype():
    A = te.placeholder((4,), "float16", name="A")
    C = topi.multiply(2, topi.add(A, 1.5))
    assert C.dtype == "float16"
    a = np.arange(4).astype("float16")
    check([A], C, [a], 2 * (a + np.float16(1.5)), rtol=1e-3)


def test_symbolic_shape_broadcasts(rng):
    n = te.var("n")
    A = te.placeholder((n, 3), name="A")
    B = te.placeholder((3,), name="B")
    C = topi.add(A, B)
    assert C.shape[0].same_as(n)
    a, b = rand(rng, 5, 3), rand(rng, 3)
    check([A, B], C, [a, b], a + b)


def test_comparisons_and_logical_ops(rng):
    A = te.placeholder((2, 5), name="A")
    B = te.placeholder((5,), name="B")
    a, b = rand(rng, 2, 5), rand(rng, 5)
    a[0, 0] = b[0]
    for op, ref in [(topi.equal, np.equal), (topi.not_equal, np.not_equal),
                    (topi.less, np.less), (topi.less_equal, np.less_equal),
                    (topi.greater, np.greater), (topi.greater_equal, np.greater_equal)]:
        out = op(A, B)
        assert out.dtype == "bool"
        check([A, B], out, [a, b], ref(a, b))
    both = topi.logical_and(topi.greater(A, 0.0), topi.logical_not(topi.less(A, 0.5)))
    check([A], both, [a], (a > 0) & ~(a < 0.5))
    either = topi.logical_or(topi.greater(A, 0.5), topi.less(B, -0.5))
    check([A, B], either, [a, b], (a > 0.5) | (b < -0.5))


def test_where_broadcasts_its_three_operands(rng):
    C = te.placeholder((3, 1), "bool", name="C")
    X = te.placeholder((4,), name="X")
    c, x = np.array([[True], [False], [True]]), rand(rng, 4)
    check([C, X], topi.where(C, X, 0.0), [c, x], np.where(c, x, 0.0))
    M = te.placeholder((3, 4), "int32", name="M")
    m = np.array([[0, 1, 2, 0]] * 3, "int32")
    check([M, X], topi.where(M, X, -1.0), [m, x], np.where(m != 0, x, -1.0))


_ERF = np.vectorize(__import__("math").erf)


@pytest.mark.parametrize("name, ref, low", [
    ("exp", np.exp, -3), ("log", np.log, 0.1), ("tanh", np.tanh, -3),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), -5), ("erf", _ERF, -2),
    ("rsqrt", lambda x: 1 / np.sqrt(x), 0.1), ("sqrt", np.sqrt, 0), ("abs", np.abs, -2),
    ("negative", np.negative, -2), ("floor", np.floor, -3), ("ceil", np.ceil, -3),
    ("round", np.round, -3), ("sin", np.sin, -3), ("log1p", np.log1p, 0)])
def test_unary_math(rng, name, ref, low):
    A = te.placeholder((9,), name="A")
    a = rng.uniform(low, 3, size=9).astype("float32")
    a[0] = 2.5  # round: half to even
    check([A], getattr(topi, name)(A), [a], ref(a.astype("float64")), rtol=2e-6, atol=2e-6)


def test_float16_math_is_computed_in_float32(rng):
    A = te.placeholder((8,), "float16", name="A")
    a = rand(rng, 8, dtype="float16") * 4
    out = topi.exp(A)
    assert out.dtype == "float16"
    check([A], out, [a], np.exp(a.astype("float32")).astype("float16"), rtol=1e-3)


def test_cast_and_clip(rng):
    A = te.placeholder((6,), name="A")
    a = np.array([-3.7, -0.5, 0.0, 0.4, 2.9, 300.0], "float32")
    check([A], topi.cast(topi.clip(A, -2.0, 100.0), "int32"), [a],
          np.clip(a, -2, 100).astype("int32"))
    check([A], topi.cast(A, "float16"), [a], a.astype("float16"))


def test_the_reference_interpreter_agrees(rng):
    A = te.placeholder((2, 3), name="A")
    B = te.placeholder((3,), name="B")
    a, b = rand(rng, 2, 3), rand(rng, 3)
    check([A, B], topi.sigmoid(topi.subtract(A, B)), [a, b], 1 / (1 + np.exp(b - a)),
          interpret=True)
