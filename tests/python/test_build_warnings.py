"""Warnings of kiln.build: each vectorized loop that lowering leaves serial is reported with its
function, loop and reason, as a VectorizeFallbackWarning at build time, in Module.warnings and
in the manifest; the results stay right. A loop that vectorizes reports nothing."""
import json
import re
import warnings

import numpy as np
import pytest

import kiln
from kiln import te, tir
from kiln.error import KilnWarning, VectorizeFallbackWarning


def split_and_vectorize(func, block, factor=8):
    sch = tir.Schedule(func)
    (i,) = sch.get_loops(sch.get_block(block))
    _, inner = sch.split(i, factors=[None, factor])
    sch.vectorize(inner)
    return sch.mod


def shifted_gather(n=64):
    """Y[i] = X[Idx[i - 1]] where i >= 1, else 0: a load guarded by a condition that varies
    across lanes, whose index is a load out of bounds itself on lane 0 (a masked load evaluates
    its index on every lane)."""
    X = te.placeholder((n,), "float32", name="X")
    Idx = te.placeholder((n,), "int32", name="Idx")
    Y = te.compute((n,), lambda i: te.if_then_else(i >= 1, X[Idx[i - 1]],
                                                   te.const(0.0, "float32")), name="Y")
    return te.create_prim_func([X, Idx, Y])


def scale(n):
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    return te.create_prim_func([A, B])


def test_guarded_load_that_cannot_be_masked_warns_with_its_reason():
    reason = ("function main: loop i_1 is not vectorized (it runs serially): "
              "if_then_else(1 <= i_0 * 8 + i_1, ...) varies across lanes and guards a load "
              "that may be out of bounds with indices that load out of bounds too")
    with pytest.warns(VectorizeFallbackWarning, match=re.escape(reason)):
        rt = kiln.build(split_and_vectorize(shifted_gather(), "Y"))
    assert rt.warnings == [reason]
    assert json.loads(rt.manifest)["warnings"] == [reason]
    x = np.arange(64, dtype="float32")
    idx = ((np.arange(64) * 7) % 64).astype("int32")
    y = np.full(64, np.nan, "float32")
    rt(x, idx, y)
    np.testing.assert_array_equal(y, np.concatenate([[0], x[idx[:-1]]]))


def test_split_tail_is_a_masked_store_and_does_not_warn():
    # 100 = 12 * 8 + 4: the steady loop is vector code, and so is the tail, whose bound check
    # varies across lanes: it stores (and loads) only the lanes below 100.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rt = kiln.build(split_and_vectorize(scale(100), "B"))
    assert rt.warnings == []
    assert "@llvm.masked.store.v8f32" in rt.get_source("ll")
    assert "@llvm.masked.load.v8f32" in rt.get_source("ll")
    a = np.random.default_rng(0).standard_normal(100).astype("float32")
    b = np.zeros(100, "float32")
    rt(a, b)
    np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))


def test_each_function_of_a_module_is_named():
    mod = kiln.IRModule({"gather": split_and_vectorize(shifted_gather(), "Y")["main"],
                         "exact": split_and_vectorize(scale(96), "B")["main"]})
    with pytest.warns(VectorizeFallbackWarning, match="function gather: loop i_1"):
        rt = kiln.build(mod)
    assert len(rt.warnings) == 1 and rt.warnings[0].startswith("function gather: loop i_1 ")


def test_a_vectorizable_loop_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rt = kiln.build(split_and_vectorize(scale(96), "B"))
    assert rt.warnings == []
    assert json.loads(rt.manifest)["warnings"] == []
    assert "<8 x float>" in rt.get_source("ll")


def test_warning_classes():
    assert issubclass(VectorizeFallbackWarning, KilnWarning)
    assert issubclass(KilnWarning, UserWarning)
    assert kiln.KilnWarning is KilnWarning


def test_loaded_module_has_no_build_warnings(tmp_path):
    with pytest.warns(VectorizeFallbackWarning):
        rt = kiln.build(split_and_vectorize(shifted_gather(), "Y"))
    rt.export_library(tmp_path / "gather.so")
    loaded = kiln.runtime.load_module(tmp_path / "gather.so")
    assert loaded.warnings is None
