"""kiln.topi's shape and index transforms against NumPy: reshape (with -1 and symbolic
dimensions), transpose, concatenate, split, take (clip and wrap), pad, expand_dims, squeeze,
broadcast_to and strided_slice."""
import numpy as np
import pytest

from kiln import te, topi
from topi_helpers import check, rand


@pytest.fixture
def rng():
    return np.random.default_rng(2)


def test_reshape(rng):
    A = te.placeholder((2, 3, 4), name="A")
    a = rand(rng, 2, 3, 4)
    check([A], topi.reshape(A, (4, -1)), [a], a.reshape(4, -1))
    check([A], topi.reshape(A, (24,)), [a], a.reshape(24))
    n = te.var("n")
    S = te.placeholder((n, 6), name="S")
    s = rand(rng, 5, 6)
    check([S], topi.reshape(S, (n, 2, 3)), [s], s.reshape(5, 2, 3))
    # An output shape such as (n * 2, 3) is not a valid argument shape (only constants and
    # variables are), so the result is reshaped back to (n, 6) after an element-wise step.
    flat = topi.add(topi.reshape(S, (-1, 3)), 1.0)
    check([S], topi.reshape(flat, (n, 6)), [s], s + 1.0)


def test_transpose(rng):
    A = te.placeholder((2, 3, 4), name="A")
    a = rand(rng, 2, 3, 4)
    check([A], topi.transpose(A), [a], a.transpose())
    check([A], topi.transpose(A, (1, -1, 0)), [a], a.transpose(1, 2, 0))


def test_concatenate_and_split(rng):
    n = te.var("n")
    A = te.placeholder((n, 2), name="A")
    B = te.placeholder((3, 2), name="B")
    C = te.placeholder((1, 2), name="C")
    a, b, c = rand(rng, 4, 2), rand(rng, 3, 2), rand(rng, 1, 2)
    joined = topi.concatenate([A, B, C], axis=0)  # (n + 4, 2): reduced to a valid output shape
    check([A, B, C], topi.sum(joined, axis=0), [a, b, c],
          np.concatenate([a, b, c], axis=0).sum(axis=0), atol=1e-5)
    check([A], topi.concatenate([A, A], axis=1), [a], np.concatenate([a, a], axis=1))
    check([B], topi.concatenate((B, B), axis=-1), [b], np.concatenate([b, b], axis=1))
    X = te.placeholder((2, 6), name="X")
    x = rand(rng, 2, 6)
    for spec in (3, [1, 4]):
        pieces = topi.split(X, spec, axis=1)
        for piece, ref in zip(pieces, np.split(x, spec, axis=1)):
            check([X], piece, [x], ref)


def test_take_and_embedding(rng):
    W = te.placeholder((10, 4), name="W")
    n = te.var("n")
    ids = te.placeholder((2, n), "int32", name="ids")
    w = rand(rng, 10, 4)
    i = np.array([[0, 9, 3], [12, -1, 5]], "int32")
    check([W, ids], topi.take(W, ids, axis=0), [w, i], np.take(w, i, axis=0, mode="clip"))
    check([W, ids], topi.take(W, ids, axis=0, mode="wrap"), [w, i],
          np.take(w, i, axis=0, mode="wrap"))
    check([W, ids], topi.take(W, ids), [w, i], np.take(w, i, mode="clip"))
    check([W, ids], topi.take(W, ids, axis=1, mode="wrap"), [w, i],
          np.take(w, i, axis=1, mode="wrap"))


def test_pad(rng):
    A = te.placeholder((2, 3), name="A")
    a = rand(rng, 2, 3)
    check([A], topi.pad(A, [1, 0], [2, 3], pad_value=-1.0), [a],
          np.pad(a, ((1, 2), (0, 3)), constant_values=-1.0))
    check([A], topi.nn.pad(A, [1, 1]), [a], np.pad(a, 1))


def test_expand_dims_squeeze_broadcast_to(rng):
    A = te.placeholder((3, 1, 2), name="A")
    a = rand(rng, 3, 1, 2)
    check([A], topi.expand_dims(A, 1, 2), [a], a.reshape(3, 1, 1, 1, 2))
    check([A], topi.expand_dims(A, -1), [a], a[..., None])
    check([A], topi.squeeze(A), [a], a.squeeze())
    check([A], topi.squeeze(A, axis=1), [a], a.squeeze(1))
    check([A], topi.broadcast_to(A, (4, 3, 5, 2)), [a], np.broadcast_to(a, (4, 3, 5, 2)))


def test_strided_slice(rng):
    A = te.placeholder((5, 6), name="A")
    a = rand(rng, 5, 6)
    check([A], topi.strided_slice(A, [1, -1], [None, 0], [2, -2]), [a], a[1::2, -1:0:-2])
    check([A], topi.strided_slice(A, [2], [100], axes=[1]), [a], a[:, 2:100])
    n = te.var("n")
    S = te.placeholder((n, 4), name="S")
    s = rand(rng, 7, 4)
    # The sliced symbolic axis has an expression as its extent: reduced to a valid output shape.
    check([S], topi.sum(topi.strided_slice(S, [1, 0], [None, 4], [3, 1]), axis=0), [s],
          s[1::3].sum(axis=0), atol=1e-6)
    check([S], topi.sum(topi.strided_slice(S, [2], [5]), axis=0), [s], s[2:5].sum(axis=0),
          atol=1e-6)
    check([S], topi.strided_slice(S, [1], [3], axes=[1]), [s], s[:, 1:3])
