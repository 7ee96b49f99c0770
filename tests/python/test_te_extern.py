"""te.extern and tir.call_extern: a GEMM through OpenBLAS's cblas_sgemm composed with te.compute
stages, built for llvm, interpreted, exported and loaded back; a libm function that needs no
library; the errors of a missing symbol and of a malformed extern; the tuner leaving the extern
block as it is."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kiln
from kiln import te, tir
from kiln.autotune import SpaceGenerator

OPENBLAS = "libopenblas.so.0"
CBLAS_ROW_MAJOR, CBLAS_NO_TRANS = 101, 111


def openblas_available():
    try:
        kiln.runtime.load_library(OPENBLAS)
    except kiln.KilnValueError:
        return False
    return True


needs_openblas = pytest.mark.skipif(
    not openblas_available(), reason=f"{OPENBLAS} is not installed (Debian: libopenblas0)")


def sgemm(ins, outs):
    """C = A @ B through cblas_sgemm, row-major, extents taken from the buffers."""
    a, b = ins
    c, = outs
    m, k = a.shape
    n = b.shape[1]
    return tir.call_extern("void", "cblas_sgemm", CBLAS_ROW_MAJOR, CBLAS_NO_TRANS,
                           CBLAS_NO_TRANS, m, n, k, tir.const(1.0, "float32"),
                           a.access_ptr("r"), k, b.data, n, tir.const(0.0, "float32"),
                           c.access_ptr("w"), n)


def gemm_bias_relu(m=24, n=20, k=16):
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    bias = te.placeholder((n,), "float32", name="bias")
    C = te.extern((m, n), [A, B], sgemm, name="gemm", dtype="float32")
    D = te.compute((m, n), lambda i, j: te.max(C[i, j] + bias[j], 0.0), name="D")
    return te.create_prim_func([A, B, bias, D])


def gemm_args(m=24, n=20, k=16, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype("float32")
    b = rng.standard_normal((k, n)).astype("float32")
    bias = rng.standard_normal(n).astype("float32")
    expected = np.maximum(a @ b + bias, 0)
    return [a, b, bias, np.zeros((m, n), "float32")], expected


def hypot_func(n=16):
    X = te.placeholder((n,), "float64", name="X")
    Y = te.placeholder((n,), "float64", name="Y")
    Z = te.compute((n,), lambda i: tir.call_pure_extern("float64", "hypot", X[i], Y[i]),
                   name="Z")
    return te.create_prim_func([X, Y, Z])


def test_create_prim_func_makes_one_opaque_block():
    func = gemm_bias_relu()
    sch = tir.Schedule(func)
    block = sch.get(sch.get_block("gemm"))
    assert list(block.iter_vars) == []
    assert [r.buffer.name for r in block.reads] == ["A", "B"]
    assert [r.buffer.name for r in block.writes] == ["gemm"]
    assert [int(r.extent) for r in block.writes[0].region] == [24, 20]
    assert sch.get_loops(sch.get_block("gemm")) == []
    text = func.script()
    assert 'T.call_extern("void", "cblas_sgemm", 101, 111, 111, 24, 20, 16' in text
    assert "A.data, 16, B.data, 20, T.float32(0), gemm.data, 20" in text
    # The stage after it is an ordinary te.compute block reading the extern's result.
    assert [r.buffer.name for r in sch.get(sch.get_block("D")).reads] == ["gemm", "bias"]


def test_extern_returns_a_tensor_or_a_list():
    A = te.placeholder((4,), "float32", name="A")
    one = te.extern((4,), [A], lambda ins, outs: tir.call_extern("void", "f", ins[0].data,
                                                                   outs[0].data))
    assert isinstance(one, te.Tensor) and one.dtype == "float32" and one.name == "extern"
    assert isinstance(one.op, te.ExternOp) and one.op.inputs == [A]
    two = te.extern([(4,), (2, 2)], [A], lambda ins, outs: tir.call_extern(
        "void", "g", outs[0].data, outs[1].data), dtype=["float32", "int32"], name="two")
    assert [t.dtype for t in two] == ["float32", "int32"]
    assert [[int(d) for d in t.shape] for t in two] == [[4], [2, 2]]


@needs_openblas
def test_gemm_through_openblas_then_bias_relu_on_llvm():
    func = gemm_bias_relu()
    args, expected = gemm_args()
    kiln.build(func, target="llvm")(*args)
    np.testing.assert_allclose(args[3], expected, rtol=1e-5, atol=1e-5)


@needs_openblas
def test_gemm_through_openblas_in_the_interpreter():
    func = gemm_bias_relu()
    args, expected = gemm_args(seed=1)
    tir.interpret(func, *args)
    np.testing.assert_allclose(args[3], expected, rtol=1e-5, atol=1e-5)


@needs_openblas
def test_exported_module_needs_openblas_and_loads_in_a_fresh_process(tmp_path):
    func = gemm_bias_relu()
    path = tmp_path / "gemm.so"
    kiln.build(func, target="llvm").export_library(str(path))
    needed = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True).stdout
    assert "libopenblas.so.0" in needed
    # A process that never loads OpenBLAS itself: the module's DT_NEEDED entry brings it.
    script = textwrap.dedent(f"""
        import numpy as np, kiln
        rng = np.random.default_rng(2)
        a = rng.standard_normal((24, 16)).astype("float32")
        b = rng.standard_normal((16, 20)).astype("float32")
        bias = rng.standard_normal(20).astype("float32")
        d = np.zeros((24, 20), "float32")
        kiln.runtime.load_module({str(path)!r})["main"](a, b, bias, d)
        np.testing.assert_allclose(d, np.maximum(a @ b + bias, 0), rtol=1e-5, atol=1e-5)
        print("ok")
    """)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_libm_extern_needs_no_library(tmp_path):
    func = hypot_func()
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(16), rng.standard_normal(16)
    z = np.zeros(16)
    kiln.build(func, target="llvm")(x, y, z)
    np.testing.assert_allclose(z, np.hypot(x, y), rtol=1e-12)
    z_interp = np.zeros(16)
    tir.interpret(func, x, y, z_interp)
    np.testing.assert_allclose(z_interp, np.hypot(x, y), rtol=1e-12)
    path = tmp_path / "hypot.so"
    kiln.build(func, target="llvm").export_library(str(path))
    needed = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True).stdout
    assert "openblas" not in needed
    z_loaded = np.zeros(16)
    kiln.runtime.load_module(str(path))["main"](x, y, z_loaded)
    np.testing.assert_allclose(z_loaded, np.hypot(x, y), rtol=1e-12)


def missing_symbol_func():
    A = te.placeholder((4,), "float32", name="A")
    B = te.extern((4,), [A], lambda ins, outs: tir.call_extern(
        "int32", "kiln_no_such_function_xyz", ins[0].data, outs[0].data, 4), name="B")
    return te.create_prim_func([A, B])


def test_missing_symbol_is_an_error_naming_it():
    func = missing_symbol_func()
    with pytest.raises(kiln.KilnError, match=r"kiln_no_such_function_xyz.*load_library"):
        kiln.build(func, target="llvm")
    a, b = np.zeros(4, "float32"), np.zeros(4, "float32")
    with pytest.raises(kiln.KilnValueError,
                       match=r"tir.interpret: call_extern: the C function "
                             r"'kiln_no_such_function_xyz' is not defined in this process"):
        tir.interpret(func, a, b)


def test_load_library_error_names_the_library():
    with pytest.raises(kiln.KilnValueError, match=r"cannot load libkiln_missing_42\.so"):
        kiln.runtime.load_library("libkiln_missing_42.so")


def test_extern_errors():
    A = te.placeholder((4,), "float32", name="A")
    other = tir.decl_buffer((4,), "float32", name="other")
    with pytest.raises(kiln.KilnValueError,
                       match=r"te.extern: the statement of extern E uses the pointer other"):
        te.extern((4,), [A], lambda ins, outs: tir.call_extern("void", "f", other.data),
                  name="E")
    with pytest.raises(kiln.KilnTypeError, match=r"te.extern: fcompute must return a statement"):
        te.extern((4,), [A], lambda ins, outs: 3, name="E")
    with pytest.raises(kiln.KilnValueError, match=r"only the pointer to element 0"):
        te.extern((4,), [A], lambda ins, outs: tir.call_extern(
            "void", "f", ins[0].access_ptr("r", offset=2)), name="E")


def test_interpreter_refuses_a_signature_it_cannot_call():
    A = te.placeholder((4,), "float16", name="A")
    B = te.extern((4,), [A], lambda ins, outs: tir.call_extern(
        "void", "hypot", ins[0][0]), name="B")
    func = te.create_prim_func([A, B])
    with pytest.raises(kiln.KilnValueError, match=r"argument 1 .* has dtype float16"):
        tir.interpret(func, np.zeros(4, "float16"), np.zeros(4, "float16"))


@needs_openblas
def test_design_space_leaves_the_extern_block_alone():
    func = gemm_bias_relu(64, 64, 64)
    space = SpaceGenerator(func, "llvm")
    gemm = tir.Schedule(func)
    original = gemm.get(gemm.get_block("gemm"))
    for sketch in space.sketches:
        assert "gemm" not in sketch.as_python()
    for seed in range(3):
        candidate = space.sample(0, seed)
        assert candidate is not None, space.rejections
        sch = tir.Schedule(candidate.mod)
        block = sch.get(sch.get_block("gemm"))
        assert kiln.ir.structural_equal(block.body, original.body)
        assert sch.get_loops(sch.get_block("gemm")) == []
        args, expected = gemm_args(64, 64, 64, seed)
        kiln.build(candidate.mod)(*args)
        np.testing.assert_allclose(args[3], expected, rtol=1e-4, atol=1e-4)


@needs_openblas
def test_tuning_a_function_with_an_extern_stage(tmp_path):
    from kiln import autotune as ms
    func = gemm_bias_relu(64, 64, 64)
    db = ms.tune_tir(func, target="llvm", work_dir=tmp_path, max_trials_global=8,
                     num_trials_per_iter=8, population=16, random_per_round=8,
                     children_per_round=8, final_top_k=1, final_rounds=1, local_search_trials=1,
                     progress=False)
    best = db.best(func, "llvm")
    assert len(best) == 1 and best[0].status == "ok"
    rt = kiln.build(func, target="llvm", database=db)
    args, expected = gemm_args(64, 64, 64, 5)
    rt(*args)
    np.testing.assert_allclose(args[3], expected, rtol=1e-4, atol=1e-4)
