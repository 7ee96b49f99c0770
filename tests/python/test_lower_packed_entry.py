"""The passes that make the packed entry point the code generator compiles, from Python:
lower_intrinsics (math calls as arithmetic that vectorizes, checked against NumPy on the
reference interpreter) and make_packed_api (the argument spec of the manifest and its errors)."""
import json

import numpy as np
import pytest

from kiln import te, tir
from kiln.tir import transform


@pytest.mark.parametrize("name, reference", [
    ("exp", np.exp), ("tanh", np.tanh), ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("log", np.log), ("sin", np.sin), ("cos", np.cos)])
def test_lower_intrinsics_matches_numpy(name, reference):
    A = te.placeholder((64,), "float32", name="A")
    B = te.compute((64,), lambda i: getattr(te, name)(A[i]), name="B")
    lowered = transform.lower_intrinsics(tir.lower(te.create_prim_func([A, B])))
    assert "T.%s(" % name not in lowered.script()
    a = np.linspace(0.1, 9.0, 64, dtype="float32")
    b = np.zeros(64, "float32")
    tir.interpret(lowered, a, b)
    np.testing.assert_allclose(b, reference(a.astype("float64")), rtol=3e-7, atol=0)


def test_make_packed_api_spec():
    n = te.var("n")
    A = te.placeholder((n, 4), "float32", name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] * 2.0, name="B")
    lowered = tir.lower(te.create_prim_func([A, B]))
    entry = transform.make_packed_api(lowered, "double")
    attrs = entry.attrs
    assert attrs["global_symbol"] == "main"  # kept from create_prim_func
    assert attrs["kiln.packed"] and attrs["kiln.noalias"]
    spec = json.loads(attrs["kiln.arg_spec"])
    assert spec == {
        "name": "double", "symbol": "main", "sym_vars": ["n"], "sym_var_dtypes": [str(n.dtype)],
        "args": [
            {"name": "A", "kind": "tensor", "dtype": "float32", "ndim": 2, "shape": ["n", 4],
             "strides": None, "device": "cpu", "alignment": 4, "written": False},
            {"name": "B", "kind": "tensor", "dtype": "float32", "ndim": 2, "shape": ["n", 4],
             "strides": None, "device": "cpu", "alignment": 4, "written": True}]}
    assert "T.packed_arg_data(0)" in entry.script()
    assert "T.packed_arg_shape(0, 0)" in entry.script()
    assert transform.make_packed_api(entry, "double").same_as(entry)


def test_make_packed_api_error_names_the_dimension():
    from kiln.error import KilnValueError
    n = te.var("n")
    A = te.placeholder((n * 2,), "float32", name="A")
    B = te.compute((n * 2,), lambda i: A[i], name="B")
    func = tir.lower(te.create_prim_func([A, B, n]))
    with pytest.raises(KilnValueError, match=r"parameter 0 \(A\): dimension 0 is n \* 2; "
                                             r"argument specs allow only constants and variables"):
        transform.make_packed_api(func, "f")
