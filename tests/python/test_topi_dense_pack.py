"""topi.nn.dense_pack and pack_dense_weight: the NC{bn}n layout and its zero padding, bn taken
from the target's register tile (never this machine's vector width), the product against NumPy
under topi.default_schedule for dividing and non-dividing out_dim, a symbolic batch and a bias,
a register tile whose vectors read whole packed panels, and the errors."""
import re
import warnings

import numpy as np
import pytest

import kiln
from kiln import te, tir, topi
from kiln.error import VectorizeFallbackWarning
from kiln.target import gemm_blocking

X86 = "-mtriple=x86_64-pc-linux-gnu"
RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.uniform(-1, 1, size=shape).astype("float32")


def build(args, target="llvm"):
    """The default-scheduled function, built with VectorizeFallbackWarning as an error, and its
    schedule."""
    sch = topi.default_schedule(args, target=target)
    with warnings.catch_warnings():
        warnings.simplefilter("error", VectorizeFallbackWarning)
        return kiln.build(sch.mod, target=target), sch


# --- The layout --------------------------------------------------------------------------------

def test_packed_weight_holds_each_column_in_its_panel_and_zeros_past_out_dim():
    w = rand(37, 24)
    packed = topi.nn.pack_dense_weight(w, bn=16)
    assert packed.shape == (3, 24, 16) and packed.flags["C_CONTIGUOUS"]
    for n in (0, 15, 16, 36):
        np.testing.assert_array_equal(packed[n // 16, :, n % 16], w[n])
    assert not packed[2, :, 5:].any()  # columns 37..47 are padding


@pytest.mark.parametrize("target", [f"llvm {X86} -mcpu=haswell", f"llvm {X86} -mcpu=icelake-server",
                                    "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1", "llvm"])
def test_panel_width_is_the_targets_register_tile(target):
    packed = topi.nn.pack_dense_weight(rand(256, 8), target=target)
    assert packed.shape[2] == gemm_blocking(target, "float32", n=256)[1]


def test_panel_width_differs_with_the_vector_width_of_the_target():
    avx2 = topi.nn.pack_dense_weight(rand(256, 8), target=f"llvm {X86} -mcpu=haswell")
    avx512 = topi.nn.pack_dense_weight(rand(256, 8), target=f"llvm {X86} -mcpu=icelake-server")
    assert (avx2.shape[2], avx512.shape[2]) == (16, 64)


def test_a_packing_stage_gives_the_numpy_packing():
    w = rand(37, 24)
    W = te.placeholder((37, 24), "float32", name="W")
    packed = topi.nn.pack_dense_weight(W, bn=16)
    out = np.zeros((3, 24, 16), "float32")
    kiln.build(te.create_prim_func([W, packed]))(w, out)
    np.testing.assert_array_equal(out, topi.nn.pack_dense_weight(w, bn=16))


# --- The product -------------------------------------------------------------------------------

@pytest.mark.parametrize("m, k, n", [(1, 64, 64), (37, 256, 128), (16, 96, 100), (5, 32, 48)])
def test_dense_pack_matches_numpy(m, k, n):
    w, x = rand(n, k), rand(m, k)
    packed = topi.nn.pack_dense_weight(w)
    X = te.placeholder((m, k), "float32", name="x")
    W = te.placeholder(packed.shape, "float32", name="W")
    Y = topi.nn.dense_pack(X, W, units=n)
    rt, sch = build([X, W, Y])
    out = np.zeros((m, n), "float32")
    rt(x, packed, out)
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-4, atol=1e-4)
    assert 'scope="local"' in sch.mod["main"].script()  # a register tile


def test_dense_pack_with_a_symbolic_batch_and_a_bias():
    s = te.var("s")
    w, bias = rand(200, 256), rand(200)
    packed = topi.nn.pack_dense_weight(w)
    X = te.placeholder((s, 256), "float32", name="x")
    W = te.placeholder(packed.shape, "float32", name="W")
    B = te.placeholder((200,), "float32", name="b")
    rt, sch = build([X, W, B, topi.nn.dense_pack(X, W, bias=B, units=200)])
    script = sch.mod["main"].script()
    assert 'scope="local"' in script and "T.unroll" in script  # rows of the tile, symbolic
    for rows in (1, 7, 40):
        x = rand(rows, 256)
        out = np.zeros((rows, 200), "float32")
        rt(x, packed, bias, out)
        np.testing.assert_allclose(out, x @ w.T + bias, rtol=1e-4, atol=1e-4)


def test_the_register_tile_reads_whole_panels():
    # Panels of 8 columns where the tile would take more (16 on AVX2, 64 on AVX-512): NR follows
    # the panels, so every load of the weight is one contiguous vector of a panel (on AVX-512
    # one of its 256-bit halves).
    w, x = rand(64, 64), rand(12, 64)
    packed = topi.nn.pack_dense_weight(w, bn=8)
    X = te.placeholder((12, 64), "float32", name="x")
    W = te.placeholder(packed.shape, "float32", name="W")
    rt, sch = build([X, W, topi.nn.dense_pack(X, W)])
    out = np.zeros((12, 64), "float32")
    rt(x, packed, out)
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-4, atol=1e-4)
    lowered = tir.lower(sch.mod)["main"].script()
    loads = re.findall(r"W_1\[([^\]]*)\]", lowered)
    assert loads and all(re.fullmatch(r"T\.Ramp\(.*, 1, 8\)", index) for index in loads), loads


def test_dense_pack_out_dtype_accumulates():
    x = (RNG.integers(-100, 100, size=(4, 64))).astype("int8")
    w = (RNG.integers(-100, 100, size=(32, 64))).astype("int8")
    packed = topi.nn.pack_dense_weight(w, bn=16)
    X = te.placeholder((4, 64), "int8", name="x")
    W = te.placeholder(packed.shape, "int8", name="W")
    rt, _ = build([X, W, topi.nn.dense_pack(X, W, out_dtype="int32")])
    out = np.zeros((4, 32), "int32")
    rt(x, packed, out)
    np.testing.assert_array_equal(out, x.astype("int32") @ w.T.astype("int32"))


# --- Errors --------------------------------------------------------------------------------------

def test_errors_name_the_api_the_argument_and_what_was_expected():
    X = te.placeholder((4, 64), "float32", name="x")
    W = te.placeholder((2, 64, 16), "float32", name="W")
    with pytest.raises(kiln.KilnValueError, match=r"topi.nn.dense_pack: weight W2 must have 3 "
                                                  r"dimensions, found 2"):
        topi.nn.dense_pack(X, te.placeholder((32, 64), "float32", name="W2"))
    with pytest.raises(kiln.KilnValueError, match=r"topi.nn.dense_pack: the in_dim of data x "
                                                  r"\(shape \(4, 48\)\) is 48, but weight W "
                                                  r"\(shape \(2, 64, 16\)\) is packed for in_dim "
                                                  r"64"):
        topi.nn.dense_pack(te.placeholder((4, 48), "float32", name="x"), W)
    with pytest.raises(kiln.KilnTypeError, match=r"topi.nn.dense_pack: the tensors x and W must "
                                                 r"have the same dtype, found float32 and "
                                                 r"float16"):
        topi.nn.dense_pack(X, te.placeholder((2, 64, 16), "float16", name="W"))
    with pytest.raises(kiln.KilnValueError, match=r"topi.nn.dense_pack: units must be within the "
                                                  r"last panel of the weight, 17 to 32 \(2 "
                                                  r"panels of 16\), found 12"):
        topi.nn.dense_pack(X, W, units=12)
    with pytest.raises(kiln.KilnValueError, match=r"topi.nn.dense_pack: weight W must have "
                                                  r"constant dimensions"):
        topi.nn.dense_pack(X, te.placeholder((te.var("b"), 64, 16), "float32", name="W"))
    with pytest.raises(kiln.KilnValueError, match=r"topi.nn.pack_dense_weight: weight must be "
                                                  r"2-D \(out_dim, in_dim\), found shape "
                                                  r"\(2, 3, 4\)"):
        topi.nn.pack_dense_weight(np.zeros((2, 3, 4), "float32"))
    with pytest.raises(kiln.KilnValueError, match=r"topi.nn.pack_dense_weight: bn must be at "
                                                  r"least 1, found 0"):
        topi.nn.pack_dense_weight(rand(4, 4), bn=0)
    with pytest.raises(kiln.KilnTypeError, match=r"topi.nn.pack_dense_weight: weight must be a "
                                                 r"numpy.ndarray or a te.Tensor, found an object "
                                                 r"of type list"):
        topi.nn.pack_dense_weight([[1.0]])
    with pytest.raises(kiln.KilnTypeError, match=r"topi.nn.pack_dense_weight: target must be a "
                                                 r"target string"):
        topi.nn.pack_dense_weight(rand(4, 4), target=3)
