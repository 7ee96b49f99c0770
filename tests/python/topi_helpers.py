"""Helpers shared by the topi tests: build a topi result with kiln.build (or run it on the
reference interpreter) and compare it with a NumPy reference."""
import numpy as np

import kiln
from kiln import te, tir


def check(inputs, output, arrays, expected, rtol=1e-5, atol=1e-6, scalars=None,
          interpret=False):
    """Checks output (computed from inputs on arrays) against the NumPy array expected.

    scalars: {te.var: value} for the scalar parameters of the function."""
    scalars = scalars or {}
    func = te.create_prim_func(list(inputs) + [output] + list(scalars))
    expected = np.asarray(expected)
    out = np.zeros(expected.shape, dtype=output.dtype)
    args = list(arrays) + [out] + list(scalars.values())
    if interpret:
        tir.interpret(func, *args)
    else:
        kiln.build(func, target="llvm")(*args)
    if out.dtype == np.bool_ or np.issubdtype(out.dtype, np.integer):
        np.testing.assert_array_equal(out, expected)
    else:
        np.testing.assert_allclose(out.astype("float64"), expected, rtol=rtol, atol=atol)
    return out


def rand(rng, *shape, dtype="float32", scale=1.0):
    return (rng.uniform(-1.0, 1.0, size=shape) * scale).astype(dtype)
