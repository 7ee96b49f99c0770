"""kiln.topi.nn's softmax, normalizations and activations against NumPy: several axes, a
symbolic batch, large magnitudes (softmax is max-subtracted), float16 inputs with float32
statistics, and PyTorch's GELU formulas written in NumPy."""
import math

import numpy as np
import pytest

from kiln import te, topi
from topi_helpers import check, rand


@pytest.fixture
def rng():
    return np.random.default_rng(3)


def softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax(rng, axis):
    A = te.placeholder((3, 4, 5), name="A")
    a = rand(rng, 3, 4, 5, scale=3.0)
    a64 = a.astype("float64")
    check([A], topi.nn.softmax(A, axis=axis), [a], softmax_ref(a64, axis), atol=1e-6)
    check([A], topi.nn.log_softmax(A, axis=axis), [a], np.log(softmax_ref(a64, axis)),
          atol=1e-5)


def test_softmax_of_large_magnitudes_is_finite(rng):
    n = te.var("n")
    A = te.placeholder((n, 6), name="A")
    a = np.array([[1e4, 1e4 - 1, -1e4, 0, 88.0, 89.0], [1e38, -1e38, 0, 1, 2, 3]], "float32")
    a64 = a.astype("float64")
    check([A], topi.nn.softmax(A), [a], softmax_ref(a64, -1), atol=1e-6)
    check([A], topi.nn.log_softmax(A), [a], a64 - a64.max(-1, keepdims=True) - np.log(
        np.exp(a64 - a64.max(-1, keepdims=True)).sum(-1, keepdims=True)), rtol=1e-5)


def test_softmax_float16_accumulates_in_float32(rng):
    A = te.placeholder((2, 512), "float16", name="A")
    a = rand(rng, 2, 512, dtype="float16", scale=8.0)
    out = topi.nn.softmax(A)
    assert out.dtype == "float16"
    check([A], out, [a], softmax_ref(a.astype("float64"), -1), rtol=2e-3, atol=1e-5)


def layer_norm_ref(x, gamma, beta, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    out = (x - mean) / np.sqrt(var + eps) * gamma
    return out if beta is None else out + beta


def test_layer_norm(rng):
    n = te.var("n")
    X = te.placeholder((n, 4, 8), name="X")
    G = te.placeholder((8,), name="G")
    B = te.placeholder((8,), name="B")
    x, g, b = rand(rng, 3, 4, 8, scale=5.0) + 2.0, rand(rng, 8), rand(rng, 8)
    check([X, G, B], topi.nn.layer_norm(X, G, B, axis=-1), [x, g, b],
          layer_norm_ref(x.astype("float64"), g, b, (-1,), 1e-5), atol=1e-5)
    G2 = te.placeholder((4, 8), name="G2")
    g2 = rand(rng, 4, 8)
    check([X, G2], topi.nn.layer_norm(X, G2, None, axis=[1, 2], epsilon=1e-3), [x, g2],
          layer_norm_ref(x.astype("float64"), g2, None, (1, 2), 1e-3), atol=1e-5)


def test_rms_norm(rng):
    X = te.placeholder((3, 16), name="X")
    W = te.placeholder((16,), name="W")
    x, w = rand(rng, 3, 16), rand(rng, 16)
    x64 = x.astype("float64")
    ref = x64 / np.sqrt((x64 ** 2).mean(axis=-1, keepdims=True) + 1e-6) * w
    check([X, W], topi.nn.rms_norm(X, W, axis=-1, epsilon=1e-6), [x, w], ref, atol=1e-6)
    check([X, W], topi.nn.rms_norm(X, W, axis=1, epsilon=1e-6), [x, w], ref, atol=1e-6,
          interpret=True)


def test_norms_of_float16_use_float32_statistics(rng):
    X = te.placeholder((2, 1024), "float16", name="X")
    W = te.placeholder((1024,), "float16", name="W")
    x = (rand(rng, 2, 1024) * 4 + 100).astype("float16")
    w = np.ones(1024, "float16")
    x64 = x.astype("float64")
    out = topi.nn.layer_norm(X, W, W, axis=-1)
    assert out.dtype == "float16"
    check([X, W], out, [x, w], layer_norm_ref(x64, 1.0, 1.0, (-1,), 1e-5), rtol=1e-2, atol=2e-2)
    ref = x64 / np.sqrt((x64 ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    check([X, W], topi.nn.rms_norm(X, W, axis=-1), [x, w], ref, rtol=2e-3)


_ERF = np.vectorize(math.erf)


def test_gelu_follows_pytorch_formulas(rng):
    A = te.placeholder((64,), name="A")
    a = np.linspace(-6, 6, 64).astype("float32")
    x = a.astype("float64")
    exact = 0.5 * x * (1 + _ERF(x / math.sqrt(2)))
    tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    check([A], topi.nn.gelu(A), [a], exact, rtol=1e-5, atol=1e-6)
    check([A], topi.nn.gelu(A, approximate="tanh"), [a], tanh, rtol=1e-5, atol=1e-6)


def test_relu_silu_leaky_relu(rng):
    A = te.placeholder((3, 7), name="A")
    a = rand(rng, 3, 7, scale=4.0)
    x = a.astype("float64")
    check([A], topi.nn.relu(A), [a], np.maximum(a, 0))
    check([A], topi.nn.silu(A), [a], x / (1 + np.exp(-x)), atol=1e-6)
    check([A], topi.nn.leaky_relu(A, 0.1), [a], np.where(x > 0, x, 0.1 * x), atol=1e-6)
    I = te.placeholder((4,), "int32", name="I")
    check([I], topi.nn.relu(I), [np.array([-2, 0, 3, -1], "int32")], [0, 0, 3, 0])


def test_swiglu(rng):
    n = te.var("n")
    A = te.placeholder((n, 8), name="A")
    a = rand(rng, 3, 8, scale=3.0)
    gate, up = a[:, :4].astype("float64"), a[:, 4:]
    check([A], topi.nn.swiglu(A), [a], gate / (1 + np.exp(-gate)) * up, atol=1e-6)
