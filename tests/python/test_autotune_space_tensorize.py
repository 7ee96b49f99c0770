"""The schedule rule tensorize of the tuner's design space: on a target with an intrinsic's
features (znver4 has AVX-512 VNNI and BF16) an int8 or bfloat16 matmul gets a tensorized sketch
whose candidates compile to the intrinsic's instruction on any x86 host; on a target without
them (haswell) it gets none and the other sketches still compute the function. The rule's
packing and tiling are checked numerically on any host with a reference intrinsic (the same
description, plain TensorIR as implementation); the candidates run with vpdpbusd only where
this CPU has AVX-512 VNNI. A target with AVX-VNNI only (alderlake) gets the 8-lane intrinsic,
vpdpbusd on ymm; one with both forms (sapphirerapids) the 16-lane one only."""
import json

import numpy as np
import pytest

import kiln
from kiln import autotune as ms
from kiln import te, tir
from kiln.autotune import SpaceGenerator, extract_features
from kiln.target import Target

from schedule_helpers import matmul_bf16, matmul_u8s8s32

VNNI = "x86.avx512.vnni.dot_16x4_u8s8s32"
AVXVNNI = "x86.avxvnni.dot_8x4_u8s8s32"
ZNVER4 = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4"
ALDERLAKE = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=alderlake"
SAPPHIRERAPIDS = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=sapphirerapids"
HASWELL = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell"
REFERENCE = "test.space.dot_16x4_u8s8s32_reference"

HOST_HAS_VNNI = all(Target("llvm").has_feature(f) for f in ("avx512f", "avx512vnni")) or (
    Target("llvm").has_feature("avxvnni"))
needs_host_vnni = pytest.mark.skipif(
    not HOST_HAS_VNNI, reason="this CPU lacks AVX-512 VNNI and AVX-VNNI: tensorized candidates "
                              "compile but cannot run here")


def int8_matmul(m=64, n=64, k=64, layout="nk"):
    """C[i, j] (int32) = sum_k A[i, k] (uint8) * B (int8), B as (n, k) ("nk", C = A @ B.T) or
    (k, n) ("kn", C = A @ B)."""
    A = te.placeholder((m, k), "uint8", name="A")
    r = te.reduce_axis((0, k), name="k")
    if layout == "nk":
        B = te.placeholder((n, k), "int8", name="B")
        value = lambda i, j: B[j, r]  # noqa: E731
    else:
        B = te.placeholder((k, n), "int8", name="B")
        value = lambda i, j: B[r, j]  # noqa: E731
    C = te.compute((m, n), lambda i, j: te.sum(
        A[i, r].astype("int32") * value(i, j).astype("int32"), axis=r), name="C")
    return te.create_prim_func([A, B, C])


def int8_batch_matmul(b=2, m=32, n=32, k=64):
    A = te.placeholder((b, m, k), "uint8", name="A")
    B = te.placeholder((b, n, k), "int8", name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((b, m, n), lambda x, i, j: te.sum(
        A[x, i, r].astype("int32") * B[x, j, r].astype("int32"), axis=r), name="C")
    return te.create_prim_func([A, B, C])


def float_matmul(m=64, n=64, k=64):
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def int8_matmul_a_transposed(m=64, n=64, k=64):
    """C = A.T @ B.T with A as (k, m): the depth is not A's contiguous dimension."""
    A = te.placeholder((k, m), "uint8", name="A")
    B = te.placeholder((n, k), "int8", name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(
        A[r, i].astype("int32") * B[j, r].astype("int32"), axis=r), name="C")
    return te.create_prim_func([A, B, C])


def int8_args(func, seed=0):
    rng = np.random.default_rng(seed)
    args = []
    for param in func.params:
        buffer = func.buffer_map[param]
        shape = [int(d) for d in buffer.shape]
        if buffer.dtype == "uint8":
            args.append(rng.integers(0, 256, size=shape).astype("uint8"))
        elif buffer.dtype == "int8":
            args.append(rng.integers(-128, 128, size=shape).astype("int8"))
        else:
            args.append(np.full(shape, 7, buffer.dtype))  # the init must overwrite it
    return args


def expected_output(func, args):
    out = [a.copy() for a in args]
    out[-1][...] = 0
    tir.interpret(func, *out)
    return out[-1]


def tensorized_sketches(space):
    return [s for s, sketch in enumerate(space.sketches) if "sch.tensorize(" in sketch.as_python()]


@pytest.fixture(scope="module")
def reference_intrinsic():
    """VNNI's description with a plain TensorIR implementation and no required features: the
    rule's packing and tiling, computed by any CPU."""
    A = te.placeholder((4,), "uint8", name="A")
    B = te.placeholder((16, 4), "int8", name="B")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((16,), lambda i: te.sum(
        A[k].astype("int32") * B[i, k].astype("int32"), axis=k), name="C")
    func = te.create_prim_func([A, B, C])
    tir.TensorIntrin.register(REFERENCE, func, func, override=True)
    return REFERENCE


# ---------------------------------------------------------------------------------------------
# A target with the features: a tensorized sketch whose candidates compile to vpdpbusd

def test_znver4_int8_matmul_has_a_tensorized_sketch():
    space = SpaceGenerator(int8_matmul(), ZNVER4)
    # The block as it is gets the two tilings of multi_level_tiling (SSRSRS, SSRRS).
    assert len(space.sketches) == 3
    assert tensorized_sketches(space) == [2]
    text = space.sketches[2].as_python()
    # B (n, k) is packed into 16x4 tiles, j is split by the 16 lanes and k by the depth 4.
    assert ('sch.transform_layout(block=b1, buffer=["write", 0], index_map="lambda d0, d1: '
            '[d0 // 16, d1 // 4, d0 % 16, d1 % 4]")') in text, text
    assert "factors=[None, 16]" in text and "factors=[None, 4]" in text, text
    assert f'tensor_intrin="{VNNI}"' in text, text
    assert "sample_perfect_tile" in text and "sample_categorical" in text


@pytest.mark.parametrize("seed", range(4))
def test_znver4_tensorized_candidates_compile_to_vpdpbusd(seed):
    func = int8_matmul()
    space = SpaceGenerator(func, ZNVER4)
    candidate = space.sample(tensorized_sketches(space)[0], seed)
    assert candidate is not None, space.rejections
    text = candidate.mod["main"].script()
    assert f'"kiln.tensor_intrin": "{VNNI}"' in text
    rt = kiln.build(candidate.mod, target=ZNVER4)  # compiled, not run: any x86 host
    assert "vpdpbusd" in rt.get_source("asm")
    # The cost model reads the lowered program.
    features = extract_features(tir.lower(candidate.mod)["main"], ZNVER4)
    assert np.all(np.isfinite(features))


@pytest.mark.parametrize("name, func, unpacked", [
    ("kn", lambda: int8_matmul(layout="kn"), True),
    ("packed by the caller", matmul_u8s8s32, False),
    ("batch", int8_batch_matmul, True),
    ("uneven tiles", lambda: int8_matmul(30, 48, 36), True)])
def test_znver4_layouts_the_rule_supports(name, func, unpacked):
    space = SpaceGenerator(func(), ZNVER4)
    sketches = tensorized_sketches(space)
    assert len(sketches) == 1, name
    assert ("cache_read" in space.sketches[sketches[0]].as_python()) == unpacked
    candidate = space.sample(sketches[0], 0)
    assert candidate is not None, space.rejections
    assert "vpdpbusd" in kiln.build(candidate.mod, target=ZNVER4).get_source("asm")


def test_znver4_bf16_matmul_is_tensorized_with_vdpbf16ps():
    space = SpaceGenerator(matmul_bf16(), ZNVER4)
    sketches = tensorized_sketches(space)
    assert len(sketches) == 1
    assert 'tensor_intrin="x86.avx512.bf16.dot_16x2_bf16bf16f32"' in (
        space.sketches[sketches[0]].as_python())
    candidate = space.sample(sketches[0], 0)
    assert "vdpbf16ps" in kiln.build(candidate.mod, target=ZNVER4).get_source("asm")


@pytest.mark.parametrize("func", [float_matmul, lambda: int8_matmul(64, 40, 64),
                                  lambda: int8_matmul(64, 64, 30), int8_matmul_a_transposed])
def test_znver4_no_tensorized_sketch_where_the_intrinsic_does_not_fit(func):
    # float32 is not what the intrinsics compute; 40 columns are not whole 16-lane tiles; a
    # depth of 30 is not whole groups of 4; A (k, m) does not hold 4 bytes of k contiguously.
    space = SpaceGenerator(func(), ZNVER4)
    assert tensorized_sketches(space) == []
    # The tilings of multi_level_tiling: SSRSRS, and SSRRS where the target has a register
    # tile for the output (not for 40 int32 columns in 16-lane vectors).
    assert 1 <= len(space.sketches) <= 2
    assert all("cache_write" in sketch.as_python() for sketch in space.sketches)


def test_tensorized_candidate_trace_replays_on_the_function():
    # The database stores the whole trace; kiln.build(database=) replays it on the function.
    func = int8_matmul()
    space = SpaceGenerator(func, ZNVER4)
    candidate = space.sample(tensorized_sketches(space)[0], 0)
    replayed = tir.Schedule(func)
    tir.Trace.apply_json_to_schedule(json.loads(json.dumps(candidate.trace.as_json())), replayed)
    kiln.ir.assert_structural_equal(replayed.mod, candidate.mod)


def test_mutated_tensorized_candidates_replay():
    space = SpaceGenerator(int8_matmul(), ZNVER4)
    sketch = tensorized_sketches(space)[0]
    candidate = space.sample(sketch, 0)
    for seed in range(8):
        mutated = space.mutate(candidate.decisions, seed)
        if mutated is None:
            continue
        replayed = space.replay(sketch, mutated)
        assert replayed is not None, space.rejections
        assert "vpdpbusd" in kiln.build(replayed.mod, target=ZNVER4).get_source("asm")


# ---------------------------------------------------------------------------------------------
# AVX-VNNI: the 8-lane form where the target has no AVX-512 VNNI

@pytest.mark.parametrize("func", [int8_matmul, lambda: int8_matmul(64, 40, 64)])
def test_alderlake_int8_matmul_is_tensorized_with_the_avxvnni_intrinsic(func):
    # 40 columns are whole 8-lane tiles.
    space = SpaceGenerator(func(), ALDERLAKE)
    sketches = tensorized_sketches(space)
    assert len(sketches) == 1
    text = space.sketches[sketches[0]].as_python()
    assert f'tensor_intrin="{AVXVNNI}"' in text and VNNI not in text, text
    assert ('index_map="lambda d0, d1: [d0 // 8, d1 // 4, d0 % 8, d1 % 4]"') in text, text
    assert "factors=[None, 8]" in text and "factors=[None, 4]" in text, text


@pytest.mark.parametrize("seed", range(3))
def test_alderlake_tensorized_candidates_compile_to_vpdpbusd_on_ymm(seed):
    space = SpaceGenerator(int8_matmul(), ALDERLAKE)
    candidate = space.sample(tensorized_sketches(space)[0], seed)
    assert candidate is not None, space.rejections
    asm = kiln.build(candidate.mod, target=ALDERLAKE).get_source("asm")  # compiled, not run
    dots = [line.strip() for line in asm.splitlines() if "vpdpbusd" in line]
    assert dots and all(line.startswith("{vex}") and "%ymm" in line for line in dots), dots


def test_sapphirerapids_has_both_forms_and_gets_the_wider_only():
    target = Target(SAPPHIRERAPIDS)
    assert target.has_feature("avxvnni") and target.has_feature("avx512vnni")
    space = SpaceGenerator(int8_matmul(), SAPPHIRERAPIDS)
    sketches = tensorized_sketches(space)
    assert len(sketches) == 1
    text = space.sketches[sketches[0]].as_python()
    assert f'tensor_intrin="{VNNI}"' in text and AVXVNNI not in text, text
    # Asked for the 8-lane form alone, the rule uses it there too.
    space = SpaceGenerator(int8_matmul(), SAPPHIRERAPIDS, tensor_intrinsics=[AVXVNNI])
    assert len(tensorized_sketches(space)) == 1


# ---------------------------------------------------------------------------------------------
# A target without the features: no tensorized sketch, the others still work

def test_haswell_has_no_tensorized_sketch():
    space = SpaceGenerator(int8_matmul(), HASWELL)
    assert tensorized_sketches(space) == []
    assert len(space.sketches) == 2  # SSRSRS and SSRRS
    assert all("cache_write" in sketch.as_python() for sketch in space.sketches)


@pytest.mark.parametrize("seed", range(3))
def test_haswell_candidates_compute_the_int8_matmul(seed):
    func = int8_matmul()
    space = SpaceGenerator(func, HASWELL)
    candidate = space.sample(0, seed)
    assert candidate is not None, space.rejections
    args = int8_args(func, seed)
    expected = expected_output(func, args)
    rt = kiln.build(candidate.mod, target=HASWELL)
    assert "vpdpbusd" not in rt.get_source("asm")
    rt(*args)
    np.testing.assert_array_equal(args[-1], expected)


def test_host_target_has_a_tensorized_sketch_exactly_when_this_cpu_has_vnni():
    # "llvm" is this CPU: a tensorized sketch exactly when it has the features.
    space = SpaceGenerator(int8_matmul(), "llvm")
    assert (tensorized_sketches(space) != []) == HOST_HAS_VNNI


def test_tensor_intrinsics_empty_turns_the_rule_off():
    space = SpaceGenerator(int8_matmul(), ZNVER4, tensor_intrinsics=[])
    assert tensorized_sketches(space) == []
    with pytest.raises(kiln.KilnTypeError, match="tensor_intrinsics must be a list of str"):
        SpaceGenerator(int8_matmul(), ZNVER4, tensor_intrinsics=VNNI)
    with pytest.raises(kiln.KilnValueError, match="no tensor intrinsic is named 'x86.nope'"):
        SpaceGenerator(int8_matmul(), ZNVER4, tensor_intrinsics=["x86.nope"])


# ---------------------------------------------------------------------------------------------
# Numeric checks: the reference intrinsic on any host, vpdpbusd where the CPU has it

@pytest.mark.parametrize("layout", ["nk", "kn"])
@pytest.mark.parametrize("seed", range(3))
def test_tensorized_candidates_compute_the_matmul_with_a_reference_intrinsic(
        reference_intrinsic, layout, seed):
    func = int8_matmul(layout=layout)
    space = SpaceGenerator(func, HASWELL, tensor_intrinsics=[reference_intrinsic])
    assert tensorized_sketches(space) == [2]
    candidate = space.sample(2, seed)
    assert candidate is not None, space.rejections
    assert f'"kiln.tensor_intrin": "{reference_intrinsic}"' in candidate.mod["main"].script()
    args = int8_args(func, seed)
    expected = expected_output(func, args)
    np.testing.assert_array_equal(
        expected, args[0].astype("int32") @ (args[1].T if layout == "nk" else args[1]).astype(
            "int32"))
    kiln.build(candidate.mod, target=HASWELL)(*args)
    np.testing.assert_array_equal(args[-1], expected)


@needs_host_vnni
@pytest.mark.parametrize("layout", ["nk", "kn"])
@pytest.mark.parametrize("seed", range(3))
def test_tensorized_candidates_run_with_vpdpbusd_on_this_cpu(layout, seed):
    func = int8_matmul(layout=layout)
    space = SpaceGenerator(func, "llvm")
    sketches = tensorized_sketches(space)
    assert len(sketches) == 1
    candidate = space.sample(sketches[0], seed)
    assert candidate is not None, space.rejections
    rt = kiln.build(candidate.mod, target="llvm")
    assert "vpdpbusd" in rt.get_source("asm")
    args = int8_args(func, seed)
    expected = args[0].astype("int32") @ (args[1].T if layout == "nk" else args[1]).astype("int32")
    rt(*args)
    np.testing.assert_array_equal(args[-1], expected)


# ---------------------------------------------------------------------------------------------
# Tuning with an intrinsic registered from Python: the runner's workers get it too

def test_the_runner_measures_candidates_of_an_intrinsic_registered_from_python(
        reference_intrinsic):
    func = int8_matmul()
    space = SpaceGenerator(func, HASWELL, tensor_intrinsics=[reference_intrinsic])
    candidates = [space.sample(2, seed) for seed in range(2)]
    with ms.LocalRunner(repeat=1, min_repeat_ms=1) as runner:
        runner.set_task(func, HASWELL)
        results = runner.run([c.mod for c in candidates])
    for result in results:
        assert result.status == "ok", result.error


def test_tune_tir_tensorizes_with_the_intrinsics_it_is_given(reference_intrinsic, tmp_path):
    # epsilon 1: every candidate is a random sample, a third of them from the tensorized
    # sketch (the cost model would pick what it rates best, maybe none of them).
    func = int8_matmul()
    db = ms.tune_tir(func, target=HASWELL, work_dir=tmp_path, max_trials_global=24,
                     num_trials_per_iter=12, tensor_intrinsics=[reference_intrinsic],
                     epsilon=1.0, progress=False)
    records = db.records()
    tensorized = [r for r in records if reference_intrinsic in str(r.trace)]
    assert tensorized, [r.search for r in records]
    assert all(r.status == "ok" for r in tensorized), [r.error for r in tensorized]
    with pytest.raises(kiln.KilnTypeError, match="tensor_intrinsics must be a list of str"):
        ms.tune_tir(func, target=HASWELL, work_dir=tmp_path, max_trials_global=1,
                    tensor_intrinsics=reference_intrinsic, progress=False)
