"""kiln.target.Target: parsing, the canonical string, the ISA features, and the vector unit and
caches that schedules derive their tiles from. The properties are the named CPU's, whatever CPU
runs the test; the host's are checked against its own features. gemm_blocking: the tiles it
derives fit the registers, and the GEMM schedule built on them keeps its accumulators in
registers (compile-only checks of the assembly for AVX-512 and AVX2 targets on any x86 host)."""
import os
import platform

import numpy as np
import pytest

import kiln
from kiln import te, tir
from kiln.target import Target, gemm_blocking

X86 = "-mtriple=x86_64-pc-linux-gnu"  # named x86 CPUs parse on any host with their triple


@pytest.mark.parametrize("text,bits,registers,fma,lanes", [
    (f"llvm {X86} -mcpu=znver4", 512, 32, True, 16),
    (f"llvm {X86} -mcpu=skylake-avx512", 512, 32, True, 16),
    (f"llvm {X86} -mcpu=haswell", 256, 16, True, 8),
    (f"llvm {X86} -mcpu=znver2", 256, 16, True, 8),
    (f"llvm {X86} -mcpu=x86-64", 128, 16, False, 4),
    (f"llvm {X86} -mcpu=haswell -mattr=-fma", 256, 16, False, 8),
])
def test_vector_unit_of_named_cpus(text, bits, registers, fma, lanes):
    t = Target(text)
    assert t.vector_register_bits == bits
    assert t.num_vector_registers == registers
    assert t.has_fma is fma
    assert t.vector_lanes("float32") == lanes
    assert 128 <= t.preferred_vector_bits <= bits
    assert t.l1d_cache_bytes is None and t.l2_cache_bytes is None and t.l3_cache_bytes is None
    assert not t.is_host


def test_preferred_width_of_a_cpu_tuned_for_256_bit_vectors():
    t = Target(f"llvm {X86} -mcpu=skylake-avx512")
    assert (t.vector_register_bits, t.preferred_vector_bits) == (512, 256)


def test_lanes_per_dtype():
    t = Target(f"llvm {X86} -mcpu=znver4")
    assert t.vector_lanes("float64") == 8
    assert t.vector_lanes("float16") == 32
    assert t.vector_lanes("int8") == 64
    assert t.vector_lanes(np.float32) == 16


def test_host_agrees_with_its_features():
    host = Target("llvm")
    assert host.is_host
    assert host.kind == "llvm"
    assert host.cpu and host.triple
    if not host.triple.startswith("x86_64"):
        pytest.skip("the host is not x86-64")
    expected = 512 if host.has_feature("avx512f") else 256 if host.has_feature("avx") else 128
    assert host.vector_register_bits == expected
    assert host.num_vector_registers == (32 if host.has_feature("avx512f") else 16)
    assert host.has_fma == host.has_feature("fma")


def test_host_caches_from_the_system():
    if not os.path.exists("/sys/devices/system/cpu/cpu0/cache/index0/level"):
        pytest.skip("this system does not describe its caches in sysfs")
    host = Target()
    assert host.l1d_cache_bytes >= 4096
    assert host.l2_cache_bytes > host.l1d_cache_bytes


def test_canonical_string_round_trips():
    for text in ("llvm", f"llvm {X86} -mcpu=znver4", f"llvm {X86} -mcpu=haswell -opt-level=2"):
        t = Target(text)
        again = Target(str(t))
        assert again == t and hash(again) == hash(t)
        assert str(again) == str(t)
        assert repr(t) == f"kiln.target.Target({str(t)!r})"
    assert Target(Target(f"llvm {X86} -mcpu=haswell")) == Target(f"llvm {X86} -mcpu=haswell")
    assert Target(f"llvm {X86} -mcpu=haswell") != Target(f"llvm {X86} -mcpu=znver4")


def test_features_and_attrs():
    t = Target(f"llvm {X86} -mcpu=haswell -mattr=-fma")
    assert t.has_feature("avx2") and not t.has_feature("fma")
    assert "avx2" in t.features and "fma" not in t.features
    assert t.mattr == ["-fma"]
    assert t.cpu == "haswell"
    assert Target("llvm -opt-level=1").opt_level == 1


def test_build_accepts_a_target():
    n = 64
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    t = Target("llvm")
    rt = kiln.build(te.create_prim_func([A, B]), target=t)
    assert rt.target == str(t)
    a = np.arange(n, dtype="float32")
    b = np.zeros(n, "float32")
    rt(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_errors():
    with pytest.raises(kiln.KilnTypeError, match=r"kiln.target.Target: expected a target string "
                                                 r"such as \"llvm\" .*found an object of type int"):
        Target(3)
    with pytest.raises(kiln.KilnValueError, match="unknown CPU 'znver9'"):
        Target(f"llvm {X86} -mcpu=znver9")
    with pytest.raises(kiln.KilnValueError, match="unknown target kind 'rocm'"):
        Target("rocm")
    with pytest.raises(kiln.KilnValueError, match="Target.vector_lanes: expected a scalar element "
                                                  "dtype such as float32, found float32x4"):
        Target(f"llvm {X86} -mcpu=haswell").vector_lanes("float32x4")
    with pytest.raises(kiln.KilnTypeError, match="Target.has_feature: expected a feature name"):
        Target().has_feature(1)


def test_a_target_parses_the_same_each_time_and_a_bad_one_fails_each_time():
    # Parses of CPU targets are kept per text: what is kept must be what a first parse gives,
    # and an error must not be kept as a result.
    text = f"llvm {X86} -mcpu=haswell -mattr=-fma"
    first, second = Target(text), Target(text)
    assert str(first) == str(second) and not second.has_feature("fma")
    for _ in range(2):
        with pytest.raises(kiln.KilnValueError, match="unknown CPU 'znver9'"):
            Target(f"llvm {X86} -mcpu=znver9")


@pytest.mark.parametrize("text,n,tile", [
    (f"llvm {X86} -mcpu=znver4", 1024, (6, 64)),
    (f"llvm {X86} -mcpu=znver4", None, (6, 64)),
    (f"llvm {X86} -mcpu=skylake-avx512", 1024, (6, 64)),
    (f"llvm {X86} -mcpu=haswell", 1024, (6, 16)),
    (f"llvm {X86} -mcpu=haswell", None, (6, 16)),
    (f"llvm {X86} -mcpu=haswell", 96, (6, 16)),
    (f"llvm {X86} -mcpu=haswell", 40, (14, 8)),
    (f"llvm {X86} -mcpu=x86-64", 1024, (6, 8)),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1", 1024, (6, 16)),
])
def test_gemm_blocking_register_tile(text, n, tile):
    t = Target(text)
    assert gemm_blocking(t, "float32", n=n) == tile + (1,)
    assert gemm_blocking(text, "float32", n=n) == tile + (1,)
    mr, nr = tile
    lanes = t.vector_lanes("float32")
    vectors = nr // lanes
    assert nr % lanes == 0
    # accumulators + vectors of B + the broadcast of A fit in the registers
    assert mr * vectors + vectors + 1 <= t.num_vector_registers
    assert vectors & (vectors - 1) == 0  # a power of two
    if n is not None:
        assert n % nr == 0


def test_gemm_blocking_of_other_dtypes():
    assert gemm_blocking(f"llvm {X86} -mcpu=haswell", "float64", n=1024) == (6, 8, 1)
    assert gemm_blocking(f"llvm {X86} -mcpu=znver4", "float64", n=1024) == (6, 32, 1)


def test_gemm_blocking_panels_fit_half_of_l2():
    # Other targets' caches are unknown: 256 KiB of L2 is assumed, so 2 strips of 1024 x 16
    # float32 (64 KiB each) per pass over A on haswell, and 1 strip of 1024 x 64 on znver4.
    haswell, znver4 = f"llvm {X86} -mcpu=haswell", f"llvm {X86} -mcpu=znver4"
    assert gemm_blocking(haswell, "float32", n=1024, k=1024, threads=1) == (6, 16, 2)
    assert gemm_blocking(znver4, "float32", n=1024, k=1024, threads=1) == (6, 64, 1)
    assert gemm_blocking(haswell, "float32", n=1024, k=256, threads=1) == (6, 16, 8)
    # The groups of strips leave work for every thread, and divide n / NR.
    assert gemm_blocking(haswell, "float32", n=64, k=256, threads=2) == (6, 16, 2)
    assert gemm_blocking(haswell, "float32", n=48, k=16, threads=1) == (6, 16, 1)
    # Without k there is no cache blocking.
    assert gemm_blocking(haswell, "float32", n=1024) == (6, 16, 1)
    host = Target()
    mr, nr, panels = gemm_blocking(host, "float32", n=1024, k=1024, threads=1)
    assert panels == 1 or panels * 1024 * nr * 4 <= (host.l2_cache_bytes or 256 * 1024) // 2


def test_gemm_blocking_errors():
    with pytest.raises(kiln.KilnValueError, match="gemm_blocking: no register tile of "
                                                  "float32 fits target .* with NR dividing n = 7"):
        gemm_blocking(f"llvm {X86} -mcpu=haswell", "float32", n=7)
    with pytest.raises(kiln.KilnTypeError, match="kiln.target.Target: expected a target string"):
        gemm_blocking(16, "float32")


def gemm_schedule(target, n, tile=None):
    """The hand schedule of tutorials/02_optimize_gemm.ipynb, blocked by gemm_blocking."""
    mr, nr, panels = tile or gemm_blocking(target, "float32", n=n, k=n)
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    block = sch.get_block("C")
    i, j, kk = sch.get_loops(block)
    io, ii = sch.split(i, factors=[None, mr])
    jo, jp, ji = sch.split(j, factors=[None, panels, nr])
    sch.reorder(jo, io, jp, kk, ii, ji)
    sch.vectorize(ji)
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, jp)
    sch.vectorize(sch.get_loops(local)[-1])
    packed = sch.cache_read(block, 1, "global")
    sch.transform_layout(packed, ("write", 0), lambda kx, nx: [nx // nr, kx, nx % nr])
    pack_k, pack_n = sch.get_loops(packed)
    _, pack_lanes = sch.split(pack_n, factors=[None, target.vector_lanes("float32")])
    sch.vectorize(pack_lanes)
    sch.parallel(pack_k)
    sch.unroll(ii)
    sch.decompose_reduction(block, kk)
    sch.parallel(jo)
    return sch.mod


def fma_loop(asm):
    """The innermost loop with the most FMAs in x86 assembly text, as a list of instructions
    (a loop: a label and a branch back to it)."""
    lines = [line.strip() for line in asm.splitlines()]
    labels = {line[:-1]: n for n, line in enumerate(lines) if line.startswith(".LBB")}
    loops = [(labels[line.split()[-1]], n) for n, line in enumerate(lines)
             if line.startswith("j") and labels.get(line.split()[-1], n) < n]
    innermost = [(s, e) for s, e in loops if not any(s < s2 < e for s2, _ in loops)]
    start, end = max(innermost, key=lambda loop: sum(
        line.startswith("vfmadd") for line in lines[loop[0]:loop[1]]))
    return lines[start:end + 1]


x86_only = pytest.mark.skipif(not Target().triple.startswith("x86_64"),
                              reason="the assembly checks read x86 assembly")


@x86_only
@pytest.mark.parametrize("text,register,fmas", [
    (f"llvm {X86} -mcpu=znver4", "zmm", 24),
    (f"llvm {X86} -mcpu=skylake-avx512", "zmm", 24),
    (f"llvm {X86} -mcpu=haswell", "ymm", 12),
])
def test_gemm_schedule_keeps_its_tile_in_registers(text, register, fmas):
    # Compile only: the code is for the named CPU, whatever this one is.
    rt = kiln.build(gemm_schedule(Target(text), 256), target=text)
    loop = fma_loop(rt.get_source("asm"))
    fma = [line for line in loop if line.startswith("vfmadd")]
    assert len(fma) % fmas == 0 and fma  # LLVM may unroll the k loop
    assert all(f"%{register}" in line for line in fma)
    assert not [line for line in loop if "(%rsp)" in line], "the inner loop spills"


@x86_only
def test_a_tile_too_big_for_avx2_spills():
    # The 4 x 64 tile fits AVX-512's 32 registers; on AVX2's 16 it spills in the inner loop,
    # which is what gemm_blocking avoids.
    haswell = Target(f"llvm {X86} -mcpu=haswell")
    rt = kiln.build(gemm_schedule(haswell, 256, tile=(4, 64, 1)), target=haswell)
    assert [line for line in fma_loop(rt.get_source("asm")) if "(%rsp)" in line]


# Runs the code it builds: haswell's on an x86-64 host only.
x86_host = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                              reason="runs code built for haswell, an x86-64 CPU model")


@pytest.mark.parametrize("text", ["llvm", pytest.param("llvm -mcpu=haswell", marks=x86_host)])
def test_gemm_schedule_is_correct(text):
    t = Target(text)
    if not all(Target().has_feature(f) for f in t.features):
        pytest.skip(f"this CPU cannot run {text}")
    n = 256  # not a multiple of MR = 6: the last row tile is partial
    rt = kiln.build(gemm_schedule(t, n), target=t)
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    rt(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
