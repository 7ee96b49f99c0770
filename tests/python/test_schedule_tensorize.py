"""blockize, tensorize and the registry of tensor intrinsics. blockize has golden IR, numeric
checks on the interpreter and trace round trips; tensorize is checked structurally, numerically
on the interpreter with an intrinsic whose implementation is ordinary TensorIR, and numerically
through the LLVM backend with the shipped x86 intrinsics where the CPU has them. Every error
case leaves the schedule unchanged."""
import numpy as np
import pytest

import kiln
from kiln import te, tir

from schedule_helpers import (assert_same_results, assert_trace_roundtrip, elementwise_chain,
                              matmul, matmul_bf16, matmul_u8s8s32, random_args)

VNNI = "x86.avx512.vnni.dot_16x4_u8s8s32"
AVXVNNI = "x86.avxvnni.dot_8x4_u8s8s32"
BF16 = "x86.avx512.bf16.dot_16x2_bf16bf16f32"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def needs_cpu(flag):
    return pytest.mark.skipif(flag not in cpu_flags(), reason=f"needs a CPU with {flag}")


def assert_fails_unchanged(sch, error, match, action):
    """`action` raises `error` with a message matching `match` and leaves `sch` as it was."""
    mod, length = sch.mod, len(sch.trace)
    with pytest.raises(error, match=match):
        action()
    kiln.ir.assert_structural_equal(sch.mod, mod)
    assert len(sch.trace) == length


def tiled(func, lanes, depth):
    """A schedule of a matmul-like block C[i, j] over k with j split by `lanes` and k by `depth`,
    the tile loops innermost: i, j_0, k_0, j_1, k_1. Returns the schedule and j_1."""
    sch = tir.Schedule(func)
    _, j, k = sch.get_loops(sch.get_block("C"))
    j0, j1 = sch.split(j, factors=[None, lanes])
    k0, k1 = sch.split(k, factors=[None, depth])
    sch.reorder(j0, k0, j1, k1)
    return sch, j1


# ---------------------------------------------------------------------------------------------
# blockize

def test_blockize_elementwise_tile():
    func = elementwise_chain()
    sch = tir.Schedule(func)
    i, _ = sch.get_loops(sch.get_block("B"))
    _, i1 = sch.split(i, factors=[None, 8])
    outer = sch.blockize(i1)
    assert sch.get(outer).name_hint == "B_o"
    text = sch.mod["main"].script()
    assert '''    for i_0 in range(3):
        with T.block("B_o"):
            v_i_o = T.axis.remap("S", [i_0])
            T.reads(A[v_i_o * 8:v_i_o * 8 + 8, 0:10])
            T.writes(B[v_i_o * 8:v_i_o * 8 + 8, 0:10])
            for i_1, j in T.grid(8, 10):
                with T.block("B"):
                    v_i_i, v_j = T.axis.remap("SS", [i_1, j])
                    T.reads(A[v_i_o * 8 + v_i_i, v_j])
                    T.writes(B[v_i_o * 8 + v_i_i, v_j])
                    B[v_i_o * 8 + v_i_i, v_j] = A[v_i_o * 8 + v_i_i, v_j] * T.float32(2)
''' in text, text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_blockize_reduction_moves_the_init_to_the_outer_block():
    func = matmul(16, 12, 8)
    sch, j1 = tiled(func, 4, 4)
    sch.blockize(j1)
    assert sch.mod["main"].script() == '''# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 12), "float32"), C: T.Buffer((16, 12), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    for i, j_0, k_0 in T.grid(16, 3, 2):
        with T.block("C_o"):
            v_i, v_j_o, v_k_o = T.axis.remap("SSR", [i, j_0, k_0])
            T.reads(A[v_i, v_k_o * 4:v_k_o * 4 + 4], B[v_k_o * 4:v_k_o * 4 + 4, v_j_o * 4:v_j_o * 4 + 4])
            T.writes(C[v_i, v_j_o * 4:v_j_o * 4 + 4])
            with T.init():
                for j_1_init in range(4):
                    with T.block("C_init"):
                        v_j_i_init = T.axis.remap("S", [j_1_init])
                        T.reads()
                        T.writes(C[v_i, v_j_o * 4 + v_j_i_init])
                        C[v_i, v_j_o * 4 + v_j_i_init] = T.float32(0)
            for j_1, k_1 in T.grid(4, 4):
                with T.block("C"):
                    v_j_i, v_k_i = T.axis.remap("SR", [j_1, k_1])
                    T.reads(A[v_i, v_k_o * 4 + v_k_i], B[v_k_o * 4 + v_k_i, v_j_o * 4 + v_j_i])
                    T.writes(C[v_i, v_j_o * 4 + v_j_i])
                    C[v_i, v_j_o * 4 + v_j_i] = C[v_i, v_j_o * 4 + v_j_i] + A[v_i, v_k_o * 4 + v_k_i] * B[v_k_o * 4 + v_k_i, v_j_o * 4 + v_j_i]'''
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_blockize_at_the_outermost_loop_and_then_inside():
    func = matmul(16, 12, 8)
    sch = tir.Schedule(func)
    i, j, _ = sch.get_loops(sch.get_block("C"))
    sch.blockize(j)
    sch.blockize(i)
    names = [sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_block("C_o_o"))]
    assert names == ["C_o_init", "C_o"]
    assert 'with T.block("C_o_init")' in sch.mod["main"].script()
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_blockize_symbolic_extent():
    from schedule_helpers import symbolic_row_sum
    func = symbolic_row_sum()
    sch = tir.Schedule(func)
    _, k = sch.get_loops(sch.get_block("B"))
    _, k1 = sch.split(k, factors=[None, 4])
    sch.blockize(k1)
    assert 'v_i, v_k_o = T.axis.remap("SR", [i, k_0])' in sch.mod["main"].script()
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_blockize_error_loop_with_two_blocks():
    sch = tir.Schedule(matmul(16, 12, 8))
    block = sch.get_block("C")
    i, j, _ = sch.get_loops(block)
    sch.decompose_reduction(block, j)
    assert_fails_unchanged(sch, tir.schedule.NotSingleChildBlockError,
                           "loop 'i' holds 2 blocks; blockize needs exactly one",
                           lambda: sch.blockize(i))


def test_blockize_error_binding_does_not_divide():
    sch = tir.Schedule(matmul(16, 12, 8))
    i, j, _ = sch.get_loops(sch.get_block("C"))
    fused = sch.fuse(i, j)
    _, inner = sch.split(fused, factors=[None, 8])
    assert_fails_unchanged(
        sch, tir.schedule.SubspaceNotDivisibleError,
        r"the binding \(i_j_fused_0 \* 8 \+ i_j_fused_1\) // 12 of iterator 'v_i' of block 'C' "
        r"does not divide into a part over the loops above 'i_j_fused_1' and a part over the "
        r"loops from it down: it takes a part of i_j_fused_0 \* 8 \+ i_j_fused_1, which fuses "
        r"loops from both sides of the blockized loop", lambda: sch.blockize(inner))


# ---------------------------------------------------------------------------------------------
# The registry

def dot_4x4_desc():
    """C[i] += sum_k A[k] * B[k, i] over float32, 4 lanes and depth 4 (matmul's j and k)."""
    A = te.placeholder((4,), "float32", name="A")
    B = te.placeholder((4, 4), "float32", name="B")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((4,), lambda i: te.sum(A[k] * B[k, i], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def dot_4x4_impl():
    """The same computation with the depth loop outermost and the lanes loop unrolled."""
    sch = tir.Schedule(dot_4x4_desc())
    i, k = sch.get_loops(sch.get_block("C"))
    sch.reorder(k, i)
    sch.unroll(i)
    return sch.mod["main"]


@pytest.fixture(scope="module")
def dot_4x4():
    name = "test.dot_4x4_f32"
    tir.TensorIntrin.register(name, dot_4x4_desc(), dot_4x4_impl(), override=True)
    return name


def test_shipped_intrinsics_are_registered():
    names = tir.TensorIntrin.names()
    assert VNNI in names and AVXVNNI in names and BF16 in names
    intrin = tir.TensorIntrin.get(VNNI)
    assert intrin.name == VNNI
    assert [intrin.desc.buffer_map[p].dtype for p in intrin.desc.params] == [
        "uint8", "int8", "int32"]
    assert "llvm.x86.avx512.vpdpbusd.512" in intrin.impl.script()
    avxvnni = tir.TensorIntrin.get(AVXVNNI)
    assert [[int(d) for d in avxvnni.desc.buffer_map[p].shape]
            for p in avxvnni.desc.params] == [[4], [8, 4], [8]]
    assert "llvm.x86.avx512.vpdpbusd.256" in avxvnni.impl.script()
    assert "llvm.x86.avx512bf16.dpbf16ps.512" in tir.TensorIntrin.get(BF16).impl.script()


def test_register_drops_the_init_of_a_te_description(dot_4x4):
    desc = tir.TensorIntrin.get(dot_4x4).desc
    assert "T.init" not in desc.script()
    assert "T.init" in dot_4x4_desc().script()


def test_get_unknown_intrinsic():
    assert tir.TensorIntrin.get("no.such.intrinsic", allow_missing=True) is None
    with pytest.raises(kiln.KilnValueError,
                       match="TensorIntrin.get: no tensor intrinsic is named 'no.such.intrinsic'; "
                             "registered: .*x86.avx512.vnni.dot_16x4_u8s8s32"):
        tir.TensorIntrin.get("no.such.intrinsic")


def test_register_twice_needs_override(dot_4x4):
    with pytest.raises(kiln.KilnValueError, match="an intrinsic named 'test.dot_4x4_f32' is "
                                                  r"already registered \(pass override=True"):
        tir.TensorIntrin.register(dot_4x4, dot_4x4_desc(), dot_4x4_impl())


def test_register_checks_that_the_buffers_agree():
    A = te.placeholder((4,), "float32", name="A")
    B = te.compute((4,), lambda i: A[i] * 2.0, name="B")
    other = te.create_prim_func([A, B])
    with pytest.raises(kiln.KilnValueError, match="the description of intrinsic 'test.bad' takes 3 "
                                                  "parameters and the implementation 2"):
        tir.TensorIntrin.register("test.bad", dot_4x4_desc(), other)
    A8 = te.placeholder((8,), "float32", name="A")
    B8 = te.compute((8,), lambda i: A8[i] * 2.0, name="B")
    with pytest.raises(kiln.KilnValueError,
                       match=r"parameter 0 of intrinsic 'test.bad' is A\[4\] \(float32\) in the "
                             r"description but A\[8\] \(float32\) in the implementation"):
        tir.TensorIntrin.register("test.bad", other, te.create_prim_func([A8, B8]))
    assert tir.TensorIntrin.get("test.bad", allow_missing=True) is None


# ---------------------------------------------------------------------------------------------
# tensorize

def test_tensorize_with_a_te_intrinsic_runs_on_the_interpreter(dot_4x4):
    func = matmul(16, 12, 8)
    sch, j1 = tiled(func, 4, 4)
    sch.tensorize(j1, dot_4x4)
    text = sch.mod["main"].script()
    assert '''            for k in range(4):
                for i_1 in T.unroll(4):
                    with T.block("C_1"):
                        v_i_1, v_k = T.axis.remap("SR", [i_1, k])
                        T.reads(A[v_i, v_k_o * 4 + v_k], B[v_k_o * 4 + v_k, v_j_o * 4 + v_i_1])
                        T.writes(C[v_i, v_j_o * 4 + v_i_1])
                        C[v_i, v_j_o * 4 + v_i_1] = C[v_i, v_j_o * 4 + v_i_1] + A[v_i, v_k_o * 4 + v_k] * B[v_k_o * 4 + v_k, v_j_o * 4 + v_i_1]''' in text, text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_tensorize_a_blockized_block(dot_4x4):
    func = matmul(16, 12, 8)
    sch, j1 = tiled(func, 4, 4)
    outer = sch.blockize(j1)
    inner = sch.get_block("C")
    sch.tensorize(outer, dot_4x4)
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)
    with pytest.raises(tir.schedule.StaleHandleError, match="removed by tensorize"):
        sch.get_loops(inner)


def test_tensorize_vnni_golden():
    func = matmul_u8s8s32()
    sch, j1 = tiled(func, 16, 4)
    sch.tensorize(j1, VNNI)
    assert sch.mod["main"].script() == '''# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((32, 64), "uint8"), B: T.Buffer((4, 16, 16, 4), "int8"), C: T.Buffer((32, 64), "int32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    for i, j_0, k_0 in T.grid(32, 4, 16):
        with T.block("C_o"):
            v_i, v_j_o, v_k_o = T.axis.remap("SSR", [i, j_0, k_0])
            T.reads(A[v_i, v_k_o * 4:v_k_o * 4 + 4], B[v_j_o, v_k_o, 0:16, 0:4])
            T.writes(C[v_i, v_j_o * 16:v_j_o * 16 + 16])
            T.block_attr({"kiln.tensor_intrin": "x86.avx512.vnni.dot_16x4_u8s8s32"})
            with T.init():
                for j_1_init in range(16):
                    with T.block("C_init"):
                        v_j_i_init = T.axis.remap("S", [j_1_init])
                        T.reads()
                        T.writes(C[v_i, v_j_o * 16 + v_j_i_init])
                        C[v_i, v_j_o * 16 + v_j_i_init] = 0
            C[v_i, T.Ramp(v_j_o * 16, 1, 16)] = T.call_llvm_pure_intrin("int32x16", "llvm.x86.avx512.vpdpbusd.512", C[v_i, T.Ramp(v_j_o * 16, 1, 16)], T.Broadcast(T.reinterpret("int32", A[v_i, T.Ramp(v_k_o * 4, 1, 4)]), 16), T.reinterpret("int32x16", B[v_j_o, v_k_o, T.Ramp(0, 1, 64) // T.Broadcast(4, 64), T.Ramp(0, 1, 64) % T.Broadcast(4, 64)]))'''
    assert sch.trace.as_python().splitlines()[-1] == (
        'sch.tensorize(block_or_loop=l5, tensor_intrin="x86.avx512.vnni.dot_16x4_u8s8s32")')
    assert_trace_roundtrip(sch, func)


def test_compute_inline_refuses_a_producer_that_a_tensorized_block_loads_as_a_vector():
    # A's 62 columns padded to 64 (a stage, as topi.nn.dense_int8 pads its data to whole groups
    # of 4): once the product is tensorized it loads the padded rows 4 at a time, and the pad's
    # scalar expression cannot take a vector of indices.
    A = te.placeholder((32, 62), "uint8", name="A")
    padded = te.compute((32, 64), lambda i, k: te.if_then_else(k < 62, A[i, k],
                                                                te.const(0, "uint8")), name="A_pad")
    B = te.placeholder((4, 16, 16, 4), "int8", name="B")
    r = te.reduce_axis((0, 64), name="k")
    C = te.compute((32, 64), lambda i, j: te.sum(
        padded[i, r].astype("int32") * B[j // 16, r // 4, j % 16, r % 4].astype("int32"), axis=r),
        name="C")
    func = te.create_prim_func([A, B, C])
    sch, j1 = tiled(func, 16, 4)
    sch.tensorize(j1, VNNI)
    pad = sch.get_block("A_pad")
    assert_fails_unchanged(
        sch, tir.schedule.ScheduleError,
        r"buffer 'A_pad' is loaded with vector indices "
        r"\(A_pad\[v_i, T.Ramp\(v_k_o \* 4, 1, 4\)\]",
        lambda: sch.compute_inline(pad))


def test_tensorize_bf16_structure():
    func = matmul_bf16()
    sch, j1 = tiled(func, 16, 2)
    sch.tensorize(j1, BF16)
    text = sch.mod["main"].script()
    assert ('C[v_i, T.Ramp(v_j_o * 16, 1, 16)] = T.call_llvm_pure_intrin("float32x16", '
            '"llvm.x86.avx512bf16.dpbf16ps.512", C[v_i, T.Ramp(v_j_o * 16, 1, 16)], '
            'T.Broadcast(T.reinterpret("int32", A[v_i, T.Ramp(v_k_o * 2, 1, 2)]), 16), '
            'T.reinterpret("int32x16", B[v_j_o, v_k_o, T.Ramp(0, 1, 32) // T.Broadcast(2, 32), '
            'T.Ramp(0, 1, 32) % T.Broadcast(2, 32)]))') in text, text
    assert_trace_roundtrip(sch, func)


def test_tensorized_tile_is_indexed_inside_every_dimension():
    # The 16x4 tile of B that vpdpbusd reads as one 64-byte vector is indexed per dimension
    # (lane // 4, lane % 4), never past the extent 4 of the last one; flattening makes it one
    # contiguous vector load again.
    sch, j1 = tiled(matmul_u8s8s32(), 16, 4)
    sch.tensorize(j1, VNNI)
    lowered = tir.lower(sch.mod)["main"].script()
    assert 'T.reinterpret("int32x16", B_1[T.Ramp(j_0 * 1024 + k_0 * 64, 1, 64)])' in lowered


X86_TRIPLE = "-mtriple=x86_64-pc-linux-gnu"


def matmul_u8s8s32_nc8n4c():
    return matmul_u8s8s32(lanes=8)


@pytest.mark.parametrize("intrin, func, lanes, depth, cpu, instruction", [
    (VNNI, matmul_u8s8s32, 16, 4, "znver4", "vpdpbusd"),
    (AVXVNNI, matmul_u8s8s32_nc8n4c, 8, 4, "alderlake", "{vex}\tvpdpbusd"),
    (BF16, matmul_bf16, 16, 2, "znver4", "vdpbf16ps")])
def test_tensorize_compiles_for_a_target_with_the_features_on_any_host(
        tmp_path, intrin, func, lanes, depth, cpu, instruction):
    # Code for an AVX-512 or AVX-VNNI CPU is compiled (not run) whatever this machine is.
    sch, j1 = tiled(func(), lanes, depth)
    sch.tensorize(j1, intrin, target=f"llvm {X86_TRIPLE} -mcpu={cpu}")
    rt = kiln.build(sch.mod, target=f"llvm {X86_TRIPLE} -mcpu={cpu}")
    assert instruction in rt.get_source("asm")
    rt.export_library(tmp_path / "tensorized.so")
    assert (tmp_path / "tensorized.so").stat().st_size > 0


@pytest.mark.parametrize("intrin, func, lanes, depth, missing", [
    (VNNI, matmul_u8s8s32, 16, 4, "avx512f, avx512vnni"),
    (AVXVNNI, matmul_u8s8s32_nc8n4c, 8, 4, "avxvnni"),
    (BF16, matmul_bf16, 16, 2, "avx512bf16, avx512bw")])
def test_build_refuses_an_intrinsic_the_target_cannot_run(intrin, func, lanes, depth, missing):
    # Built for haswell (AVX2) the intrinsic would abort LLVM's instruction selection; the
    # build refuses it by name, and the process goes on.
    sch, j1 = tiled(func(), lanes, depth)
    sch.tensorize(j1, intrin)
    target = f"llvm {X86_TRIPLE} -mcpu=haswell"
    with pytest.raises(kiln.KilnValueError,
                       match=rf"build: function main uses the tensor intrinsic '{intrin}' \(block "
                             rf"'C_o'\), which needs the target features .*; the target "
                             rf"'llvm {X86_TRIPLE} -mcpu=haswell' lacks {missing} \(its features: "
                             rf"[^)]*avx2[^)]*\)\."):
        kiln.build(sch.mod, target=target)
    assert kiln.build(tir.Schedule(func()).mod, target=target) is not None


def test_build_for_this_cpu_refuses_an_intrinsic_it_lacks():
    if "avx512_vnni" in cpu_flags():
        pytest.skip("this CPU has AVX-512 VNNI: the host target can use the intrinsic")
    sch, j1 = tiled(matmul_u8s8s32(), 16, 4)
    sch.tensorize(j1, VNNI)
    with pytest.raises(kiln.KilnValueError, match=r"needs the target features avx512f, "
                                                   r"avx512vnni; the target 'llvm .*' lacks"):
        kiln.build(sch.mod)


def test_tensorize_with_a_target_refuses_what_it_lacks():
    func = matmul_u8s8s32()
    sch, j1 = tiled(func, 16, 4)
    assert_fails_unchanged(
        sch, tir.schedule.TensorizeTargetError,
        rf"tensorize: intrinsic '{VNNI}' needs the target features avx512f, avx512vnni; the "
        rf"target 'llvm {X86_TRIPLE} -mcpu=haswell' lacks avx512f, avx512vnni \(its features: "
        rf"sse4.2, avx, avx2, fma, f16c\)",
        lambda: sch.tensorize(j1, VNNI, target=f"llvm {X86_TRIPLE} -mcpu=haswell"))


def test_intrinsics_declare_their_features():
    assert tir.TensorIntrin.get(VNNI).required_features == ["avx512f", "avx512vnni"]
    assert tir.TensorIntrin.get(AVXVNNI).required_features == ["avxvnni"]
    assert tir.TensorIntrin.get(BF16).required_features == ["avx512bf16", "avx512bw"]
    desc, impl = dot_4x4_desc(), dot_4x4_impl()
    tir.TensorIntrin.register("test.dot_4x4_features", desc, impl, override=True,
                              required_features=["avx2", "fma", "avx2"])
    assert tir.TensorIntrin.get("test.dot_4x4_features").required_features == ["avx2", "fma"]
    with pytest.raises(kiln.KilnValueError, match=r"declares the feature '\+avx2'"):
        tir.TensorIntrin.register("test.dot_4x4_bad", desc, impl, required_features=["+avx2"])


@pytest.mark.parametrize("intrin, func, lanes", [
    pytest.param(VNNI, matmul_u8s8s32, 16, marks=needs_cpu("avx512_vnni")),
    pytest.param(AVXVNNI, matmul_u8s8s32_nc8n4c, 8, marks=needs_cpu("avx_vnni"))])
def test_tensorize_int8_dot_product_runs_through_llvm(intrin, func, lanes):
    func = func()
    sch, j1 = tiled(func, lanes, 4)
    sch.tensorize(j1, intrin)
    rt = kiln.build(sch.mod, target="llvm -mcpu=native")
    assert "vpdpbusd" in rt.get_source("asm")
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, size=(32, 64)).astype("uint8")
    b = rng.integers(-128, 128, size=(64 // lanes, 16, lanes, 4)).astype("int8")
    expected = np.zeros((32, 64), "int32")
    tir.interpret(func, a, b, expected)
    c = np.full((32, 64), 7, "int32")
    rt["main"](a, b, c)
    np.testing.assert_array_equal(c, expected)


@needs_cpu("avx512_bf16")
def test_tensorize_bf16_runs_through_llvm():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    func = matmul_bf16()
    sch, j1 = tiled(func, 16, 2)
    sch.tensorize(j1, BF16)
    rt = kiln.build(sch.mod, target="llvm -mcpu=native")
    assert "vdpbf16ps" in rt.get_source("asm")
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, size=(32, 32)).astype(ml_dtypes.bfloat16)
    b = rng.uniform(-1, 1, size=(4, 16, 16, 2)).astype(ml_dtypes.bfloat16)
    expected = np.zeros((32, 64), "float32")
    tir.interpret(func, a, b, expected)
    c = np.full((32, 64), 7, "float32")
    rt["main"](a, b, c)
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


def test_tensorize_error_dtype_mismatch():
    sch, j1 = tiled(matmul_u8s8s32(a_dtype="int8"), 16, 4)
    assert_fails_unchanged(
        sch, tir.schedule.TensorizeMismatchError,
        r"block 'C_o' does not match the description of intrinsic "
        r"'x86.avx512.vnni.dot_16x4_u8s8s32': the description's block reads A\[vk\] with dtype "
        r"uint8; the block reads A\[v_i, v_k_o \* 4 \+ v_k_i\] with dtype int8",
        lambda: sch.tensorize(j1, VNNI))


def test_tensorize_error_expression_mismatch(dot_4x4):
    A = te.placeholder((16, 8), "float32", name="A")
    B = te.placeholder((8, 12), "float32", name="B")
    r = te.reduce_axis((0, 8), name="k")
    C = te.compute((16, 12), lambda i, j: te.sum(A[i, r] + B[r, j], axis=r), name="C")
    sch, j1 = tiled(te.create_prim_func([A, B, C]), 4, 4)
    assert_fails_unchanged(
        sch, tir.schedule.TensorizeMismatchError,
        r"the description computes `A\[v_k\] \* B\[v_k, v_i\]` where the block computes "
        r"`A\[v_i, v_k_o \* 4 \+ v_k_i\] \+ B\[v_k_o \* 4 \+ v_k_i, v_j_o \* 4 \+ v_j_i\]`",
        lambda: sch.tensorize(j1, dot_4x4))


def test_tensorize_error_tile_cut_short(dot_4x4):
    # 10 columns in tiles of 4: the last tile is guarded, and the intrinsic computes whole ones.
    sch, j1 = tiled(matmul(16, 10, 8), 4, 4)
    assert_fails_unchanged(
        sch, tir.schedule.TensorizeMismatchError,
        r"block 'C' runs only where v_j_o \* 4 \+ j_1 < 10: its tile is cut short \(a split "
        r"whose factors do not divide the extent\), and the intrinsic computes whole tiles; pad "
        r"the buffers to a multiple of the tile", lambda: sch.tensorize(j1, dot_4x4))


def test_tensorize_error_tile_extent_mismatch():
    sch, j1 = tiled(matmul_u8s8s32(), 8, 4)
    assert_fails_unchanged(
        sch, tir.schedule.TensorizeMismatchError,
        r"the description's loop 'i' runs over \[0, 16\) but the block's loop 'j_1' over \[0, 8\)",
        lambda: sch.tensorize(j1, VNNI))


def test_tensorize_error_output_dtype_mismatch():
    sch, j1 = tiled(matmul(16, 32, 16), 16, 4)
    assert_fails_unchanged(
        sch, tir.schedule.TensorizeMismatchError,
        r"the description stores to C\[vi\] with dtype int32; the block stores to "
        r"C\[v_i, v_j_o \* 16 \+ v_j_i\] with dtype float32", lambda: sch.tensorize(j1, VNNI))


def test_tensorize_error_block_that_is_not_blockized():
    sch, _ = tiled(matmul_u8s8s32(), 16, 4)
    block = sch.get_block("C")
    assert_fails_unchanged(
        sch, tir.schedule.TensorizeMismatchError,
        "the description has a For where the block has a BufferStore",
        lambda: sch.tensorize(block, VNNI))


def test_tensorize_error_tile_is_not_contiguous():
    sch, j1 = tiled(matmul_u8s8s32(packed=False), 16, 4)
    assert_fails_unchanged(
        sch, tir.schedule.TensorizeLayoutError,
        r"the implementation of intrinsic 'x86.avx512.vnni.dot_16x4_u8s8s32' reads its \[16, 4\] "
        r"tile B as one contiguous vector \(B\[0, T.Ramp\(0, 1, 64\)\]\), but the tile is bound "
        r"to B\[v_j_o \* 16:v_j_o \* 16 \+ 16, v_k_o \* 4:v_k_o \* 4 \+ 4\] of a buffer of shape "
        r"\[64, 64\], which is not contiguous", lambda: sch.tensorize(j1, VNNI))


def test_tensorize_error_unknown_intrinsic():
    sch, j1 = tiled(matmul_u8s8s32(), 16, 4)
    assert_fails_unchanged(sch, kiln.KilnValueError,
                           "TensorIntrin.get: no tensor intrinsic is named 'x86.nope'",
                           lambda: sch.tensorize(j1, "x86.nope"))


def test_tensorize_error_from_blockize():
    sch = tir.Schedule(matmul(16, 12, 8))
    block = sch.get_block("C")
    i, j, _ = sch.get_loops(block)
    sch.decompose_reduction(block, j)
    assert_fails_unchanged(sch, tir.schedule.NotSingleChildBlockError,
                           "tensorize: loop 'i' holds 2 blocks",
                           lambda: sch.tensorize(i, VNNI))


def test_random_args_of_the_int8_workload_are_usable():
    # The numeric helpers accept the new workloads (uint8, int8, int32 parameters).
    args = random_args(matmul_u8s8s32(m=2, n=16, k=4))
    assert [a.dtype for a in args] == [np.uint8, np.int8, np.int32]


def test_blockize_inside_a_unit_outer_loop_keeps_the_bindings_in_scope():
    # The outer part of y (extent 1) has no iterator in the outer block: the inner bindings must
    # use its value, not the loop above the block.
    from schedule_helpers import depthwise_conv2d
    func = depthwise_conv2d()
    sch = tir.Schedule(func)
    block = sch.get_block("dwconv")
    _, y, _, _, _ = sch.get_loops(block)
    _, y1 = sch.split(y, factors=[1, 6])
    sch.blockize(y1)
    text = sch.mod["main"].script()
    assert 'v_y, v_x, v_ry, v_rx = T.axis.remap("SSRR", [y_1, x, ry, rx])' in text, text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_blockize_condition_over_outer_loops_uses_the_outer_iterator():
    from schedule_helpers import symbolic_row_sum
    func = symbolic_row_sum()
    sch = tir.Schedule(func)
    _, k = sch.get_loops(sch.get_block("B"))
    _, k1, _ = sch.split(k, factors=[None, 4, 3])
    sch.blockize(k1)
    text = sch.mod["main"].script()
    assert "T.where(v_k_o * 12 + " in text, text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_blockize_of_a_fused_loop_with_a_unit_part():
    from schedule_helpers import conv2d
    func = conv2d()
    sch = tir.Schedule(func)
    block = sch.get_block("conv")
    b, o = sch.get_loops(block)[:2]
    fused = sch.fuse(b, o)
    sch.blockize(fused)
    assert "v_b_1 = T.axis.spatial(1, 0)" in sch.mod["main"].script()
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_blockize_binding_that_outer_loops_move_by_no_step():
    # After fusing i and j and splitting by [2, 4, 6], v_j = (f0 * 24 + f1 * 6 + f2) % 6 depends
    # on f2 only: inside the outer block it must not name f0 and f1.
    from schedule_helpers import WORKLOADS
    func = WORKLOADS["batch_matmul"]()
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    _, i, j, _ = sch.get_loops(block)
    fused = sch.fuse(i, j)
    _, _, f2 = sch.split(fused, factors=[2, 4, 6])
    sch.blockize(f2)
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)
