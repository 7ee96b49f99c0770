"""The loop passes of lowering from Python: loop_partition, vectorize_loops and unroll_loops,
run through kiln.tir.lower on scheduled te operators and one at a time through
kiln.tir.transform. Each checks the IR and the numbers on the reference interpreter against
NumPy."""
import re

import numpy as np

import kiln
from kiln import te, tir
from kiln.tir import transform


def elementwise(n=100):
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    return te.create_prim_func([A, B])


def split_and_vectorize(func, factor=8):
    sch = tir.Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    _, inner = sch.split(i, factors=[None, factor])
    sch.vectorize(inner)
    return sch.mod["main"]


def run_elementwise(func, n=100, seed=0):
    a = np.random.default_rng(seed).standard_normal(n).astype("float32")
    b = np.zeros(n, "float32")
    tir.interpret(func, a, b)
    return a, b


def test_split_tail_is_partitioned_and_the_steady_loop_vectorized():
    lowered = tir.lower(split_and_vectorize(elementwise()))
    text = lowered.script()
    # Steady state: 12 vector iterations without a check; the tail keeps it and stays serial.
    assert "for i_0 in range(12):" in text
    assert "    for i_0 in range(12):\n        B[T.Ramp(i_0 * 8, 1, 8)] = A[T.Ramp(i_0 * 8, 1, 8)]" in text
    assert ('for i_1 in T.serial(8, annotations={"kiln.vectorize_fallback": "an if statement\'s '
            'condition 12 * 8 + i_1 < 100 varies across lanes and its branches have side '
            'effects"}):\n        if i_1 < 4:') in text
    a, b = run_elementwise(lowered)
    np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))


def test_passes_one_at_a_time():
    flat = transform.simplify(transform.flatten_buffers(transform.lower_opaque_block(
        transform.lower_init_block(split_and_vectorize(elementwise(96))))))
    partitioned = transform.loop_partition(flat)
    # 96 is a multiple of 8: the check is provably true everywhere and disappears.
    assert "if" not in partitioned.script()
    vectorized = transform.vectorize_loops(partitioned)
    assert "T.Ramp" in vectorized.script()
    assert "T.vectorized" not in vectorized.script()
    a, b = run_elementwise(vectorized, 96)
    np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))
    # Nothing left to do: the passes return the very same function.
    assert transform.loop_partition(vectorized).same_as(vectorized)
    assert transform.vectorize_loops(vectorized).same_as(vectorized)
    assert transform.unroll_loops(vectorized).same_as(vectorized)
    assert transform.lower_intrinsics(vectorized).same_as(vectorized)


def test_symbolic_extent_split_point():
    n = te.var("n")
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[None, 4])
    lowered = tir.lower(sch.mod["main"])
    text = lowered.script()
    assert "n // 4" in text
    for size in (0, 3, 4, 13):
        a = np.arange(size, dtype="float32")
        b = np.zeros(size, "float32")
        tir.interpret(lowered, a, b)
        np.testing.assert_array_equal(b, a + 1)


def test_unrolled_loop_is_copied():
    sch = tir.Schedule(elementwise(4))
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.unroll(i)
    lowered = tir.lower(sch.mod["main"])
    text = lowered.script()
    assert "for" not in text
    for k in range(4):
        assert "B[%d] = A[%d] * T.float32(2) + T.float32(1)" % (k, k) in text
    a, b = run_elementwise(lowered, 4)
    np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))


def test_auto_unroll_annotation():
    sch = tir.Schedule(elementwise(16))
    (i,) = sch.get_loops(sch.get_block("B"))
    outer, _ = sch.split(i, factors=[None, 4])
    sch.annotate(outer, "pragma_auto_unroll_max_step", 16)
    lowered = tir.lower(sch.mod["main"])
    assert "for" not in lowered.script()
    a, b = run_elementwise(lowered, 16)
    np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))


def test_llvm_unroll_zero_keeps_llvm_from_unrolling_the_loops_left():
    # pragma_llvm_unroll = 0 (what the tuner puts on every nest it schedules): the loop that
    # stays a loop carries llvm.loop.unroll.disable into LLVM, and the result is unchanged.
    sch = tir.Schedule(elementwise(1024))
    (i,) = sch.get_loops(sch.get_block("B"))
    outer, _ = sch.split(i, factors=[None, 4])
    sch.annotate(outer, "pragma_auto_unroll_max_step", 4)
    sch.annotate(outer, "pragma_llvm_unroll", 0)
    assert "kiln.llvm_unroll_disable" in tir.lower(sch.mod["main"]).script()
    rt = kiln.build(sch.mod)
    assert "llvm.loop.unroll.disable" in rt.get_source("ll")
    a = np.arange(1024, dtype="float32")
    b = np.zeros(1024, "float32")
    rt(a, b)
    np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))


def test_llvm_vectorize_zero_keeps_llvm_from_vectorizing_the_loops_left():
    # pragma_llvm_vectorize = 0 (the tuner's nests): a serial scalar loop that LLVM's loop
    # vectorizer would vectorize stays scalar, and the result is unchanged.
    sch = tir.Schedule(elementwise(1024))
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.annotate(i, "pragma_llvm_vectorize", 0)
    assert "kiln.llvm_vectorize_disable" in tir.lower(sch.mod["main"]).script()
    rt = kiln.build(sch.mod)
    ll = rt.get_source("ll")
    assert "llvm.loop.vectorize.enable" in ll
    assert not re.search(r"<\d+ x float>", ll)
    a = np.arange(1024, dtype="float32")
    b = np.zeros(1024, "float32")
    rt(a, b)
    np.testing.assert_array_equal(b, a * np.float32(2) + np.float32(1))
