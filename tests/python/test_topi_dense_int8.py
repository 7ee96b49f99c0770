"""topi.nn.dense_int8 and pack_dense_weight_int8: uint8 data times an int8 weight, accumulated
in int32. The NC16n4c and NC8n4c layouts and their padding; the layout follows the target's
features. On a target with AVX-512 VNNI (icelake-server, on any host) the default schedule
tensorizes the product with vpdpbusd on zmm, on a target with AVX-VNNI only (alderlake) with
the VEX-encoded vpdpbusd on ymm: checked in the assembly, and numerically through the same
schedule with a reference intrinsic (the VNNI description, plain TensorIR as implementation) on
the interpreter and on this CPU; vpdpbusd itself runs only where this CPU has VNNI. On this CPU's
target the default schedule matches NumPy exactly for both layouts, non-dividing out_dim and
in_dim and a symbolic batch included. Bad arguments name the API and the argument."""
import numpy as np
import pytest

import kiln
from kiln import te, tir, topi

VNNI = "x86.avx512.vnni.dot_16x4_u8s8s32"
AVXVNNI = "x86.avxvnni.dot_8x4_u8s8s32"
REFERENCE = "test.dense_int8.dot_16x4_u8s8s32_reference"
REFERENCE_8 = "test.dense_int8.dot_8x4_u8s8s32_reference"
X86 = "-mtriple=x86_64-pc-linux-gnu"
ICELAKE = f"llvm {X86} -mcpu=icelake-server"
ALDERLAKE = f"llvm {X86} -mcpu=alderlake"
HOST_HAS_VNNI = topi.nn.has_vnni("llvm")
HOST_LANES = topi.nn.vnni_lanes("llvm")
RNG = np.random.default_rng(0)

# (rows, in_dim, out_dim): whole tiles; out_dim not a multiple of 16; in_dim not a multiple of
# 4 either (the data is padded); one row.
SHAPES = [(8, 64, 64), (30, 60, 40), (5, 30, 33), (1, 128, 256)]


def register_reference(name, lanes):
    """The description of the VNNI dot product on lanes lanes, registered under name with
    itself as the implementation (plain TensorIR, no required features)."""
    A = te.placeholder((4,), "uint8", name="A")
    B = te.placeholder((lanes, 4), "int8", name="B")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((lanes,), lambda i: te.sum(A[k].astype("int32") * B[i, k].astype("int32"),
                                              axis=k), name="C")
    func = te.create_prim_func([A, B, C])
    tir.TensorIntrin.register(name, func, func, override=True)
    return name


@pytest.fixture(scope="module")
def reference_intrinsic():
    return register_reference(REFERENCE, 16)


@pytest.fixture(scope="module")
def reference_intrinsic_8():
    return register_reference(REFERENCE_8, 8)


def operands(rows, in_dim, out_dim):
    x = RNG.integers(0, 256, size=(rows, in_dim)).astype("uint8")
    w = RNG.integers(-128, 128, size=(out_dim, in_dim)).astype("int8")
    return x, w, x.astype("int32") @ w.T.astype("int32")


def dense_int8(rows, in_dim, packed, out_dim, bias=False):
    """The te tensors of dense_int8 over a weight of packed's shape: [x, W, (b,) y]."""
    X = te.placeholder((rows, in_dim), "uint8", name="x")
    W = te.placeholder(packed.shape, "int8", name="W")
    if not bias:
        return [X, W, topi.nn.dense_int8(X, W, units=out_dim)]
    B = te.placeholder((out_dim,), "int32", name="b")
    return [X, W, B, topi.nn.dense_int8(X, W, bias=B, units=out_dim)]


# --- The layout --------------------------------------------------------------------------------

def test_nc16n4c_holds_each_group_of_four_bytes_contiguously_with_zero_padding():
    w = RNG.integers(-128, 128, size=(40, 30)).astype("int8")
    packed = topi.nn.pack_dense_weight_int8(w, vnni=True)
    assert packed.shape == (3, 8, 16, 4) and packed.dtype == np.int8
    for n, k in [(0, 0), (17, 5), (39, 29), (20, 28)]:
        assert packed[n // 16, k // 4, n % 16, k % 4] == w[n, k]
    assert not packed[2, :, 8:, :].any() and not packed[:, 7, :, 2:].any()


@pytest.mark.parametrize("vnni", [True, False])
def test_a_packing_stage_gives_the_numpy_packing(vnni):
    w = RNG.integers(-128, 128, size=(40, 30)).astype("int8")
    expected = topi.nn.pack_dense_weight_int8(w, vnni=vnni)
    W = te.placeholder((40, 30), "int8", name="W")
    packed = topi.nn.pack_dense_weight_int8(W, vnni=vnni)
    out = np.zeros(expected.shape, "int8")
    kiln.build(te.create_prim_func([W, packed]))(w, out)
    np.testing.assert_array_equal(out, expected)


def test_nc8n4c_for_a_target_with_avxvnni_only():
    w = RNG.integers(-128, 128, size=(20, 30)).astype("int8")
    packed = topi.nn.pack_dense_weight_int8(w, target=ALDERLAKE)
    assert packed.shape == (3, 8, 8, 4) and packed.dtype == np.int8
    for n, k in [(0, 0), (9, 5), (19, 29), (12, 28)]:
        assert packed[n // 8, k // 4, n % 8, k % 4] == w[n, k]
    assert not packed[2, :, 4:, :].any() and not packed[:, 7, :, 2:].any()
    W = te.placeholder((20, 30), "int8", name="W")
    stage = topi.nn.pack_dense_weight_int8(W, target=ALDERLAKE)
    out = np.zeros(packed.shape, "int8")
    kiln.build(te.create_prim_func([W, stage]))(w, out)
    np.testing.assert_array_equal(out, packed)


@pytest.mark.parametrize("target, lanes", [
    (ICELAKE, 16), (f"llvm {X86} -mcpu=znver4", 16), (f"llvm {X86} -mcpu=haswell", None),
    # AVX-VNNI only: the 256-bit, VEX-encoded form.
    (ALDERLAKE, 8), (f"llvm {X86} -mcpu=haswell -mattr=+avxvnni", 8),
    # Both: the 512-bit form.
    (f"llvm {X86} -mcpu=sapphirerapids", 16), ("llvm", HOST_LANES)])
def test_the_layout_follows_the_targets_features(target, lanes):
    assert topi.nn.vnni_lanes(target) == lanes
    assert topi.nn.has_vnni(target) == (lanes is not None)
    packed = topi.nn.pack_dense_weight_int8(np.zeros((64, 64), "int8"), target=target)
    assert packed.ndim == (4 if lanes else 3)
    if lanes:
        assert packed.shape == (64 // lanes, 16, lanes, 4)


# --- This CPU: the schedule its target gets, run against NumPy ----------------------------------

@pytest.mark.parametrize("vnni", [True, False], ids=["NC16n4c", "panels"])
@pytest.mark.parametrize("rows, in_dim, out_dim", SHAPES)
def test_this_cpu_matches_numpy_exactly(vnni, rows, in_dim, out_dim):
    x, w, expected = operands(rows, in_dim, out_dim)
    packed = topi.nn.pack_dense_weight_int8(w, vnni=vnni)
    bias = RNG.integers(-1000, 1000, size=out_dim).astype("int32")
    sch = topi.default_schedule(dense_int8(rows, in_dim, packed, out_dim, bias=True))
    rt = kiln.build(sch.mod, target="llvm")
    script = sch.mod["main"].script()
    assert 'scope="local"' in script and "T.vectorized" in script  # an int32 register tile
    assert ('"kiln.tensor_intrin"' in script) == (vnni and HOST_HAS_VNNI)
    out = np.full((rows, out_dim), 7, "int32")
    rt(x, packed, bias, out)
    np.testing.assert_array_equal(out, expected + bias)


@pytest.mark.parametrize("vnni", [True, False], ids=["NC16n4c", "panels"])
def test_this_cpu_with_a_symbolic_batch(vnni):
    s = te.var("s")
    _, w, _ = operands(1, 60, 48)
    packed = topi.nn.pack_dense_weight_int8(w, vnni=vnni)
    rt = kiln.build(topi.default_schedule(dense_int8(s, 60, packed, 48)).mod, target="llvm")
    for rows in (1, 7, 33):
        x = RNG.integers(0, 256, size=(rows, 60)).astype("uint8")
        out = np.full((rows, 48), 7, "int32")
        rt(x, packed, out)
        np.testing.assert_array_equal(out, x.astype("int32") @ w.T.astype("int32"))


# --- A target with VNNI: compiled on any host, checked through a reference intrinsic ------------

@pytest.mark.parametrize("rows, in_dim, out_dim", SHAPES + [(None, 30, 33)])
def test_a_vnni_target_tensorizes_with_vpdpbusd(rows, in_dim, out_dim):
    rows = te.var("s") if rows is None else rows
    packed = topi.nn.pack_dense_weight_int8(np.zeros((out_dim, in_dim), "int8"), target=ICELAKE)
    sch = topi.default_schedule(dense_int8(rows, in_dim, packed, out_dim), target=ICELAKE)
    assert f'"kiln.tensor_intrin": "{VNNI}"' in sch.mod["main"].script()
    rt = kiln.build(sch.mod, target=ICELAKE)  # compiled, not run: any x86 host
    assert "vpdpbusd" in rt.get_source("asm")


@pytest.mark.parametrize("rows, in_dim, out_dim", SHAPES)
def test_the_vnni_schedule_computes_dense_int8(reference_intrinsic, rows, in_dim, out_dim):
    # The schedule default_schedule gives ICELAKE, with the reference intrinsic in the place of
    # VNNI's: the same trace but for the name, which the interpreter and this CPU can run.
    x, w, expected = operands(rows, in_dim, out_dim)
    packed = topi.nn.pack_dense_weight_int8(w, target=ICELAKE)
    args = dense_int8(rows, in_dim, packed, out_dim)
    vnni = topi.default_schedule(args, target=ICELAKE)
    reference = topi.default_schedule(args, target=ICELAKE,
                                      tensor_intrinsics=[reference_intrinsic])
    assert vnni.trace.as_python().replace(VNNI, reference_intrinsic) == (
        reference.trace.as_python())
    out = np.full((rows, out_dim), 7, "int32")
    tir.interpret(reference.mod["main"], x, packed, out)
    np.testing.assert_array_equal(out, expected)
    out[...] = 7
    kiln.build(reference.mod, target="llvm")(x, packed, out)
    np.testing.assert_array_equal(out, expected)


def test_the_vnni_schedule_with_a_symbolic_batch(reference_intrinsic):
    s = te.var("s")
    _, w, _ = operands(1, 30, 33)
    packed = topi.nn.pack_dense_weight_int8(w, target=ICELAKE)
    reference = topi.default_schedule(dense_int8(s, 30, packed, 33), target=ICELAKE,
                                      tensor_intrinsics=[reference_intrinsic])
    assert f'"kiln.tensor_intrin": "{reference_intrinsic}"' in reference.mod["main"].script()
    for rows in (1, 31):  # tiles of 30 rows: one partial; a whole one and a partial one
        x = RNG.integers(0, 256, size=(rows, 30)).astype("uint8")
        out = np.full((rows, 33), 7, "int32")
        tir.interpret(reference.mod["main"], x, packed, out)
        np.testing.assert_array_equal(out, x.astype("int32") @ w.T.astype("int32"))


# --- A target with AVX-VNNI only: vpdpbusd on ymm, NC8n4c ----------------------------------------

@pytest.mark.parametrize("rows, in_dim, out_dim", SHAPES + [(None, 30, 33)])
def test_an_avxvnni_target_tensorizes_with_vpdpbusd_on_ymm(rows, in_dim, out_dim):
    rows = te.var("s") if rows is None else rows
    packed = topi.nn.pack_dense_weight_int8(np.zeros((out_dim, in_dim), "int8"),
                                            target=ALDERLAKE)
    assert packed.shape[2:] == (8, 4)
    sch = topi.default_schedule(dense_int8(rows, in_dim, packed, out_dim), target=ALDERLAKE)
    assert f'"kiln.tensor_intrin": "{AVXVNNI}"' in sch.mod["main"].script()
    asm = kiln.build(sch.mod, target=ALDERLAKE).get_source("asm")  # compiled, not run
    dots = [line.strip() for line in asm.splitlines() if "vpdpbusd" in line]
    assert dots, asm
    # The VEX encoding (AVX-VNNI), on ymm registers: no AVX-512 instruction, no zmm.
    assert all(line.startswith("{vex}") and "%ymm" in line for line in dots), dots
    assert "%zmm" not in asm


@pytest.mark.parametrize("rows, in_dim, out_dim", SHAPES)
def test_the_avxvnni_schedule_computes_dense_int8(reference_intrinsic_8, rows, in_dim, out_dim):
    # The schedule default_schedule gives ALDERLAKE, with an 8-lane reference intrinsic in the
    # place of AVX-VNNI's: the same trace but for the name.
    x, w, expected = operands(rows, in_dim, out_dim)
    packed = topi.nn.pack_dense_weight_int8(w, target=ALDERLAKE)
    args = dense_int8(rows, in_dim, packed, out_dim)
    avxvnni = topi.default_schedule(args, target=ALDERLAKE)
    reference = topi.default_schedule(args, target=ALDERLAKE,
                                      tensor_intrinsics=[reference_intrinsic_8])
    assert f'"kiln.tensor_intrin": "{AVXVNNI}"' in avxvnni.mod["main"].script()
    assert avxvnni.trace.as_python().replace(AVXVNNI, reference_intrinsic_8) == (
        reference.trace.as_python())
    out = np.full((rows, out_dim), 7, "int32")
    tir.interpret(reference.mod["main"], x, packed, out)
    np.testing.assert_array_equal(out, expected)
    out[...] = 7
    kiln.build(reference.mod, target="llvm")(x, packed, out)
    np.testing.assert_array_equal(out, expected)


def test_a_target_with_both_forms_takes_the_512_bit_one():
    spr = f"llvm {X86} -mcpu=sapphirerapids"
    packed = topi.nn.pack_dense_weight_int8(np.zeros((64, 64), "int8"), target=spr)
    assert packed.shape == (4, 16, 16, 4)
    script = topi.default_schedule(dense_int8(8, 64, packed, 64), target=spr).mod["main"].script()
    assert f'"kiln.tensor_intrin": "{VNNI}"' in script


@pytest.mark.skipif(HOST_LANES != 8, reason="this CPU's target lacks AVX-VNNI or has AVX-512 "
                                            "VNNI: vpdpbusd on ymm compiles here but is not "
                                            "what this CPU's target gets")
def test_vpdpbusd_on_ymm_runs_on_this_cpu():
    x, w, expected = operands(30, 60, 40)
    packed = topi.nn.pack_dense_weight_int8(w, target="llvm")
    rt = kiln.build(topi.default_schedule(dense_int8(30, 60, packed, 40)).mod, target="llvm")
    assert "vpdpbusd" in rt.get_source("asm") and "%ymm" in rt.get_source("asm")
    out = np.full((30, 40), 7, "int32")
    rt(x, packed, out)
    np.testing.assert_array_equal(out, expected)


# --- Running vpdpbusd -------------------------------------------------------------------------

@pytest.mark.skipif(not HOST_HAS_VNNI, reason="this CPU's target lacks AVX-512 VNNI and "
                                              "AVX-VNNI: vpdpbusd compiles here but cannot run")
def test_vpdpbusd_runs_on_this_cpu():
    x, w, expected = operands(30, 60, 40)
    packed = topi.nn.pack_dense_weight_int8(w, target="llvm")
    rt = kiln.build(topi.default_schedule(dense_int8(30, 60, packed, 40)).mod, target="llvm")
    assert "vpdpbusd" in rt.get_source("asm")
    out = np.full((30, 40), 7, "int32")
    rt(x, packed, out)
    np.testing.assert_array_equal(out, expected)


def test_panels_on_a_vnni_target_get_the_int32_register_tile():
    packed = topi.nn.pack_dense_weight_int8(np.zeros((64, 64), "int8"), target=ICELAKE,
                                            vnni=False)
    sch = topi.default_schedule(dense_int8(8, 64, packed, 64), target=ICELAKE)
    script = sch.mod["main"].script()
    assert "kiln.tensor_intrin" not in script and 'scope="local"' in script
    assert "vpdpbusd" not in kiln.build(sch.mod, target=ICELAKE).get_source("asm")


def test_tensor_intrinsics_empty_turns_tensorization_off():
    packed = topi.nn.pack_dense_weight_int8(np.zeros((64, 64), "int8"), target=ICELAKE)
    sch = topi.default_schedule(dense_int8(8, 64, packed, 64), target=ICELAKE,
                                tensor_intrinsics=[])
    assert "kiln.tensor_intrin" not in sch.mod["main"].script()


# --- Errors --------------------------------------------------------------------------------------

def test_errors_name_the_api_the_argument_and_what_was_expected():
    X = te.placeholder((4, 64), "uint8", name="x")
    W = te.placeholder((2, 16, 16, 4), "int8", name="W")
    with pytest.raises(kiln.KilnTypeError, match=r"topi.nn.dense_int8: data xs must be uint8 "
                                                 r"\(the unsigned operand of the dot product\), "
                                                 r"found int8"):
        topi.nn.dense_int8(te.placeholder((4, 64), "int8", name="xs"), W)
    with pytest.raises(kiln.KilnTypeError, match=r"topi.nn.dense_int8: weight Wu must be int8 "
                                                 r"\(the signed operand of the dot product\), "
                                                 r"found uint8"):
        topi.nn.dense_int8(X, te.placeholder((2, 16, 16, 4), "uint8", name="Wu"))
    with pytest.raises(kiln.KilnValueError, match=r"topi.nn.dense_int8: the in_dim of data x "
                                                  r"\(shape \(4, 72\)\) is 72, but weight W "
                                                  r"\(shape \(2, 16, 16, 4\)\) is packed for "
                                                  r"in_dim 61 to 64 \(16 groups of 4\)"):
        topi.nn.dense_int8(te.placeholder((4, 72), "uint8", name="x"), W)
    with pytest.raises(kiln.KilnValueError, match=r"topi.nn.dense_int8: a 4-D weight must have "
                                                  r"the NC16n4c or NC8n4c layout \(out_dim / "
                                                  r"lanes, ceil\(in_dim / 4\), lanes, 4\) with "
                                                  r"lanes 16 or 8, found W4 of shape "
                                                  r"\(8, 16, 4, 4\)"):
        topi.nn.dense_int8(X, te.placeholder((8, 16, 4, 4), "int8", name="W4"))
    with pytest.raises(kiln.KilnValueError, match=r"topi.nn.dense_int8: out_dtype must be "
                                                  r"\"int32\", found 'int16'"):
        topi.nn.dense_int8(X, W, out_dtype="int16")
    with pytest.raises(kiln.KilnValueError, match=r"topi.nn.dense_int8: weight W2 must have 3 or "
                                                  r"4 dimensions, found 2"):
        topi.nn.dense_int8(X, te.placeholder((32, 64), "int8", name="W2"))
    with pytest.raises(kiln.KilnTypeError, match=r"topi.nn.dense_int8: bias bf must be int32, "
                                                 r"found float32"):
        topi.nn.dense_int8(X, W, bias=te.placeholder((32,), "float32", name="bf"))
    with pytest.raises(kiln.KilnTypeError, match=r"topi.nn.pack_dense_weight_int8: weight must "
                                                 r"be int8 \(the signed operand of the dot "
                                                 r"product\), found float32"):
        topi.nn.pack_dense_weight_int8(np.zeros((16, 4), "float32"))


def test_default_schedule_checks_tensor_intrinsics():
    X = te.placeholder((4, 64), "uint8", name="x")
    W = te.placeholder((2, 16, 16, 4), "int8", name="W")
    args = [X, W, topi.nn.dense_int8(X, W)]
    with pytest.raises(kiln.KilnTypeError, match=r"topi.default_schedule: tensor_intrinsics "
                                                 r"must be a list of str"):
        topi.default_schedule(args, tensor_intrinsics=VNNI)
    with pytest.raises(kiln.KilnValueError, match=r"topi.default_schedule: tensor_intrinsics "
                                                  r"names 'x86.nope', which is not a registered "
                                                  r"tensor intrinsic \(registered: .*x86.avx512"):
        topi.default_schedule(args, tensor_intrinsics=["x86.nope"])
