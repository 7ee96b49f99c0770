"""kiln's LLVM pipeline (opt level 3, the default): what the code a schedule makes needs from
LLVM still happens. Loops a schedule marks unrolled but leaves to LLVM are unrolled and their
register tiles promoted; loops a schedule leaves serial and scalar are vectorized by LLVM;
guarded rows built either way compute the same as NumPy; LLVM's own O1 and O2 pipelines
remain available through -opt-level."""
import re

import numpy as np
import pytest

import kiln
from kiln import te, tir

from runtime_helpers import matmul


def matmul_args(m, n, k):
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (m, k)).astype("float32")
    b = rng.uniform(-1, 1, (k, n)).astype("float32")
    return a, b, np.zeros((m, n), "float32")


def tiled_matmul(unroll_explicit):
    """A 64 x 64 x 32 matmul with a 4 x 16 accumulator tile in "local" memory whose rows are
    marked unrolled; unroll_explicit=0 leaves the unrolling to LLVM."""
    sch = tir.Schedule(matmul(64, 64, 32))
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    io, ii = sch.split(i, factors=[None, 4])
    jo, ji = sch.split(j, factors=[None, 16])
    sch.reorder(io, jo, k, ii, ji)
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, jo)
    sch.decompose_reduction(block, k)
    sch.unroll(ii)
    sch.vectorize(ji)
    sch.annotate(io, "pragma_unroll_explicit", unroll_explicit)
    return sch


def test_a_tile_unrolled_by_llvm_lives_in_registers():
    rt = kiln.build(tiled_matmul(unroll_explicit=0).mod, target="llvm")
    ll = rt.get_source("ll")
    # The loop was handed to LLVM (its metadata asked for a full unroll) and is gone, and with
    # it every access to the tile through memory: no stack slot holds the accumulators.
    assert "llvm.loop.unroll.full" not in ll
    assert not re.search(r"alloca \[\d+ x float\]", ll), ll
    a, b, c = matmul_args(64, 64, 32)
    rt(a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cpu", [
    "-mtriple=x86_64-pc-linux-gnu -mcpu=haswell",
    "-mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512",  # prefers ymm: the tile is zmm
    "-mtriple=x86_64-pc-linux-gnu -mcpu=znver4",
    "-mtriple=aarch64-linux-gnu -mcpu=neoverse-n1",
])
def test_a_tile_unrolled_by_llvm_lives_in_registers_on_every_cpu(cpu):
    # Whatever CPU runs the test: the tile's zero-fill and write-back, left to LLVM's
    # vectorizers, use the tile's own vectors (no half-width stores) and no gathers.
    ll = kiln.build(tiled_matmul(unroll_explicit=0).mod, target="llvm " + cpu).get_source("ll")
    assert not re.search(r"alloca \[\d+ x float\]", ll), ll
    assert "gather" not in ll and "scatter" not in ll, ll


def test_a_tile_unrolled_by_llvm_matches_the_tile_kiln_unrolls():
    by_llvm = kiln.build(tiled_matmul(unroll_explicit=0).mod, target="llvm")
    by_kiln = kiln.build(tiled_matmul(unroll_explicit=1).mod, target="llvm")
    a, b, c1 = matmul_args(64, 64, 32)
    c2 = c1.copy()
    by_llvm(a, b, c1)
    by_kiln(a, b, c2)
    np.testing.assert_array_equal(c1, c2)


def test_a_serial_scalar_loop_is_vectorized_by_llvm():
    A = te.placeholder((1024,), name="A")
    B = te.compute((1024,), lambda i: A[i] * 2.0 + 1.0, name="B")
    rt = kiln.build(te.create_prim_func([A, B]), target="llvm")
    assert re.search(r"<\d+ x float>", rt.get_source("ll"))
    a = np.arange(1024, dtype="float32")
    b = np.zeros(1024, "float32")
    rt(a, b)
    np.testing.assert_array_equal(b, a * 2 + 1)


def loop_properties(ll):
    """Per loop of the LLVM IR text (each !llvm.loop node), the names of its properties."""
    nodes = dict(re.findall(r"^(!\d+) = (?:distinct )?!\{(.*)\}$", ll, re.M))
    found = []
    for loop_id in sorted(set(re.findall(r"!llvm\.loop (!\d+)", ll))):
        names = set()
        for operand in re.findall(r"!\d+", nodes[loop_id]):
            names.update(re.findall(r'!"([\w.]+)"', nodes.get(operand, "")))
        found.append(names)
    return found


def test_a_parallel_loop_over_scalar_work_is_vectorized_by_llvm():
    # Its thread's chunk is a loop over straight-line code: LLVM's loop vectorizer takes it,
    # with pragma_llvm_unroll = 0 on it too (the tuner's mark fixes loops over loops only).
    A = te.placeholder((4096,), name="A")
    B = te.compute((4096,), lambda i: A[i] * 2.0 + 1.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.parallel(i)
    sch.annotate(i, "pragma_llvm_unroll", 0)
    rt = kiln.build(sch.mod, target="llvm")
    assert re.search(r"<\d+ x float>", rt.get_source("ll"))
    a = np.arange(4096, dtype="float32")
    b = np.zeros(4096, "float32")
    rt(a, b)
    np.testing.assert_array_equal(b, a * 2 + 1)


def test_a_fixed_parallel_loop_over_loops_is_left_as_scheduled():
    # pragma_llvm_unroll = 0 on a parallel loop over rows: the loop over a thread's rows and
    # the loop over a row's elements both tell LLVM not to unroll or vectorize them.
    A = te.placeholder((64, 100), name="A")
    B = te.compute((64, 100), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.parallel(i)
    sch.annotate(i, "pragma_llvm_unroll", 0)
    rt = kiln.build(sch.mod, target="llvm")
    ll = rt.get_source("ll")
    assert not re.search(r"<\d+ x float>", ll)
    properties = loop_properties(ll)
    assert len(properties) == 2
    for names in properties:
        assert {"llvm.loop.unroll.disable", "llvm.loop.vectorize.enable"} <= names
    a = np.random.default_rng(0).random((64, 100), dtype="float32")
    b = np.zeros((64, 100), "float32")
    rt(a, b)
    np.testing.assert_array_equal(b, a * 2 + 1)


def padded_rows(n=56):
    """A padding stage written row by row with a guard per element (a convolution's input
    padding): the guard is the same for every element of a row."""
    data = te.placeholder((8, n, n), name="data")
    pad = te.compute(
        (8, n + 2, n + 2),
        lambda c, y, x: te.if_then_else(
            te.all(y >= 1, y < n + 1, x >= 1, x < n + 1), data[c, y - 1, x - 1], 0.0),
        name="pad")
    func = te.create_prim_func([data, pad])
    sch = tir.Schedule(func)
    _, _, x = sch.get_loops(sch.get_block("pad"))
    sch.unroll(x)
    return sch


@pytest.mark.parametrize("target", ["llvm", "llvm -opt-level=2", "llvm -opt-level=1"])
def test_guarded_rows_match_numpy_at_every_opt_level(target):
    rt = kiln.build(padded_rows().mod, target=target)
    data = np.random.default_rng(1).standard_normal((8, 56, 56)).astype("float32")
    out = np.full((8, 58, 58), np.nan, "float32")
    rt(data, out)
    np.testing.assert_array_equal(out, np.pad(data, ((0, 0), (1, 1), (1, 1))))
