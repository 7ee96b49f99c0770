"""kiln.tir.interpret on functions built with kiln.te: operators checked against NumPy, and the
numeric rules of kiln's IR (per-operation rounding of float16/bfloat16/float32, integer wrap,
floor division, conversions) checked against NumPy's and ml_dtypes' own arithmetic."""
import ml_dtypes
import numpy as np
import pytest

from kiln import IRModule, te, tir

rng = np.random.default_rng(0)


def build(shape_in, fcompute, dtype="float32", out_dtype=None, n_inputs=1):
    """A function of `n_inputs` placeholders of `shape_in` and one compute of the same shape."""
    inputs = [te.placeholder(shape_in, dtype, name=f"A{k}") for k in range(n_inputs)]
    out = te.compute(shape_in, lambda *idx: fcompute(*[t[idx] for t in inputs]), name="B")
    func = te.create_prim_func(inputs + [out])
    return func


def test_elementwise_add():
    A = te.placeholder((4, 5), "float32", name="A")
    B = te.placeholder((4, 5), "float32", name="B")
    C = te.compute((4, 5), lambda i, j: A[i, j] + B[i, j], name="C")
    a = rng.standard_normal((4, 5), dtype=np.float32)
    b = rng.standard_normal((4, 5), dtype=np.float32)
    c = np.zeros((4, 5), np.float32)
    tir.interpret(te.create_prim_func([A, B, C]), a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_matmul_matches_numpy():
    M, N, K = 24, 16, 32
    A = te.placeholder((M, K), "float32", name="A")
    B = te.placeholder((K, N), "float32", name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = np.full((M, N), np.nan, np.float32)  # the block's init must overwrite this
    tir.interpret(te.create_prim_func([A, B, C]), a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    # The interpreter sums in k order with a float32 rounding after each step.
    expected = np.zeros((M, N), np.float32)
    for kk in range(K):
        expected = expected + a[:, kk:kk + 1] * b[kk:kk + 1, :]
    np.testing.assert_array_equal(c, expected)


@pytest.mark.parametrize("reducer,numpy_reduce", [(te.sum, np.sum), (te.max, np.max),
                                                  (te.min, np.min)])
def test_row_reductions(reducer, numpy_reduce):
    A = te.placeholder((6, 10), "float64", name="A")
    k = te.reduce_axis((0, 10), name="k")
    B = te.compute((6,), lambda i: reducer(A[i, k], axis=k), name="B")
    a = rng.standard_normal((6, 10))
    b = np.zeros(6)
    tir.interpret(te.create_prim_func([A, B]), a, b)
    np.testing.assert_allclose(b, numpy_reduce(a, axis=1), rtol=1e-12)


def test_two_stage_pipeline_with_an_intermediate_buffer():
    A = te.placeholder((8,), "float32", name="A")
    T = te.compute((8,), lambda i: A[i] * 2.0, name="T")
    B = te.compute((8,), lambda i: T[7 - i] + 1.0, name="B")
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, np.float32)
    tir.interpret(te.create_prim_func([A, B]), a, b)
    np.testing.assert_array_equal(b, a[::-1] * 2 + 1)


def test_symbolic_shape_runs_on_any_size():
    n = te.var("n")
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] * A[i], name="B")
    func = te.create_prim_func([A, B])
    for size in (1, 5, 17):
        a = rng.standard_normal(size, dtype=np.float32)
        b = np.zeros(size, np.float32)
        tir.interpret(func, a, b)
        np.testing.assert_array_equal(b, a * a)


def test_scalar_parameter():
    s = te.var("s", "float32")
    A = te.placeholder((4,), "float32", name="A")
    B = te.compute((4,), lambda i: A[i] * s, name="B")
    a = np.arange(4, dtype=np.float32)
    b = np.zeros(4, np.float32)
    tir.interpret(te.create_prim_func([A, B, s]), a, b, 2.5)
    np.testing.assert_array_equal(b, a * np.float32(2.5))


def test_padding_with_if_then_else_does_not_load_out_of_bounds():
    A = te.placeholder((5,), "float32", name="A")
    B = te.compute((8,), lambda i: te.if_then_else(i < 5, A[i], 0.0), name="B")
    a = np.arange(1, 6, dtype=np.float32)
    b = np.full(8, -1.0, np.float32)
    tir.interpret(te.create_prim_func([A, B]), a, b)
    np.testing.assert_array_equal(b, [1, 2, 3, 4, 5, 0, 0, 0])


def test_irmodule_with_one_function_is_accepted():
    A = te.placeholder((3,), "int32", name="A")
    B = te.compute((3,), lambda i: A[i] + 1, name="B")
    mod = IRModule({"main": te.create_prim_func([A, B])})
    a = np.array([1, 2, 3], np.int32)
    b = np.zeros(3, np.int32)
    tir.interpret(mod, a, b)
    np.testing.assert_array_equal(b, [2, 3, 4])


def test_schedule_is_accepted():
    A = te.placeholder((8,), "int32", name="A")
    B = te.compute((8,), lambda i: A[i] * 3, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops("B")
    sch.split(i, factors=[None, 4])
    a = np.arange(8, dtype=np.int32)
    b = np.zeros(8, np.int32)
    tir.interpret(sch, a, b)
    np.testing.assert_array_equal(b, a * 3)


# Numeric rules, checked against NumPy / ml_dtypes, which round after every operation too.

def test_float16_rounds_after_every_operation():
    a = rng.standard_normal(257).astype(np.float16)
    b = (rng.standard_normal(257) * 100).astype(np.float16)
    out = np.zeros(257, np.float16)
    tir.interpret(build((257,), lambda x, y: x * y + x - y / x, "float16", n_inputs=2), a, b, out)
    expected = a * b + a - b / a
    np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16))


def test_bfloat16_rounds_after_every_operation():
    bf16 = ml_dtypes.bfloat16
    a = rng.standard_normal(257).astype(bf16)
    b = (rng.standard_normal(257) * 100).astype(bf16)
    out = np.zeros(257, bf16)
    tir.interpret(build((257,), lambda x, y: x * y + x - y, "bfloat16", n_inputs=2), a, b, out)
    expected = a * b + a - b
    np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16))


def random_float32_bits(count):
    """float32 values from random bit patterns: normals, subnormals, infinities and NaNs."""
    bits = rng.integers(0, 2**32, size=count, dtype=np.uint64).astype(np.uint32)
    # Many values near the float16 range, and exact ties of float16 rounding.
    near = rng.integers(0x33000000, 0x47800000, size=count, dtype=np.uint64).astype(np.uint32)
    ties = (near & ~np.uint32(0x1FFF)) | np.uint32(0x1000)
    return np.concatenate([bits, near, ties]).view(np.float32)


@pytest.mark.parametrize("target", ["float16", "bfloat16"])
def test_float32_conversion_rounds_to_nearest_even(target):
    values = random_float32_bits(20000)
    np_target = np.float16 if target == "float16" else ml_dtypes.bfloat16
    out = np.zeros(values.size, np_target)
    tir.interpret(build((values.size,), lambda x: x.astype(target)), values, out)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = values.astype(np_target)
    got, want = out.view(np.uint16), expected.view(np.uint16)
    nan = np.isnan(expected.astype(np.float32))
    np.testing.assert_array_equal(got[~nan], want[~nan])
    assert np.isnan(out[nan].astype(np.float32)).all()


def test_float64_to_float16_rounds_once():
    # Values just above a float16 tie: rounding to float32 first would land on the tie.
    base = np.float64(1.0) + np.float64(2.0**-11)
    values = np.array([base + 2.0**-40, base - 2.0**-40, 1.0 + 3 * 2.0**-11 + 2.0**-40])
    out = np.zeros(3, np.float16)
    tir.interpret(build((3,), lambda x: x.astype("float16"), "float64"), values, out)
    np.testing.assert_array_equal(out.view(np.uint16), values.astype(np.float16).view(np.uint16))


def test_int32_arithmetic_wraps():
    a = np.array([2**31 - 1, -2**31, 123456789, -7], np.int32)
    b = np.array([1, -1, 1000, 3], np.int32)
    out = np.zeros(4, np.int32)
    tir.interpret(build((4,), lambda x, y: x * y + y, "int32", n_inputs=2), a, b, out)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, a * b + b)


def test_floordiv_and_floormod_follow_python():
    a = np.array([-7, 7, -7, 7, 0, -1], np.int32)
    b = np.array([2, -2, -2, 2, 5, 3], np.int32)
    div = np.zeros(6, np.int32)
    mod = np.zeros(6, np.int32)
    tir.interpret(build((6,), lambda x, y: x // y, "int32", n_inputs=2), a, b, div)
    tir.interpret(build((6,), lambda x, y: x % y, "int32", n_inputs=2), a, b, mod)
    np.testing.assert_array_equal(div, a // b)
    np.testing.assert_array_equal(mod, a % b)


def test_float_to_int_truncates_toward_zero():
    values = np.array([2.9, -2.9, 0.5, -0.5, 100.0], np.float32)
    out = np.zeros(5, np.int32)
    tir.interpret(build((5,), lambda x: x.astype("int32")), values, out)
    np.testing.assert_array_equal(out, [2, -2, 0, 0, 100])


def test_math_builtins_match_numpy():
    x = rng.uniform(0.1, 3.0, 64).astype(np.float32)
    out = np.zeros(64, np.float32)
    tir.interpret(build((64,), lambda v: te.exp(v) + te.tanh(v) * te.log(v)), x, out)
    expected = np.exp(x) + np.tanh(x) * np.log(x)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    rounded = np.zeros(6, np.float32)
    halves = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 3.7], np.float32)
    tir.interpret(build((6,), lambda v: te.round(v)), halves, rounded)
    np.testing.assert_array_equal(rounded, np.round(halves))


def test_bool_arrays():
    a = np.array([True, False, True, False])
    b = np.array([True, True, False, False])
    out = np.zeros(4, bool)
    A = te.placeholder((4,), "bool", name="A")
    B = te.placeholder((4,), "bool", name="B")
    C = te.compute((4,), lambda i: A[i] & ~B[i], name="C")
    tir.interpret(te.create_prim_func([A, B, C]), a, b, out)
    np.testing.assert_array_equal(out, a & ~b)


def test_unsigned_integers():
    a = np.array([0, 1, 255, 128], np.uint8)
    b = np.array([1, 2, 1, 128], np.uint8)
    out = np.zeros(4, np.uint8)
    tir.interpret(build((4,), lambda x, y: x - y, "uint8", n_inputs=2), a, b, out)
    np.testing.assert_array_equal(out, a - b)


# Scheduled functions: predicates of non-divisible splits, and loops of every kind, run
# sequentially with the same results as the unscheduled function.

def scheduled_matmul(schedule_steps):
    M, N, K = 20, 12, 9
    A = te.placeholder((M, K), "float32", name="A")
    B = te.placeholder((K, N), "float32", name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    schedule_steps(sch, sch.get_block("C"))
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = np.full((M, N), np.nan, np.float32)
    tir.interpret(sch.mod, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_non_divisible_split_is_guarded_by_the_block_predicate():
    def steps(sch, block):
        i, j, k = sch.get_loops(block)
        io, ii = sch.split(i, factors=[None, 6])  # 20 = 4 * 6 - 4: the predicate skips 4
        ko, ki = sch.split(k, factors=[4, None])
        sch.reorder(io, j, ko, ii, ki)
    scheduled_matmul(steps)


def test_loops_of_every_kind_run_sequentially():
    def steps(sch, block):
        i, j, k = sch.get_loops(block)
        fused = sch.fuse(i, j)
        outer, inner = sch.split(fused, factors=[None, 8])
        sch.parallel(outer)
        sch.unroll(k)
        sch.bind(inner, "threadIdx.x")
    scheduled_matmul(steps)


@pytest.mark.parametrize("target", ["int8", "uint8", "int16", "uint16", "uint32", "int64"])
def test_integer_casts_wrap_like_numpy(target):
    values = rng.integers(-2**31, 2**31, size=200, dtype=np.int64).astype(np.int32)
    out = np.zeros(200, target)
    tir.interpret(build((200,), lambda x: x.astype(target), "int32"), values, out)
    np.testing.assert_array_equal(out, values.astype(target))


def test_isnan_and_abs():
    x = np.array([1.5, np.nan, -2.0, -np.inf], np.float32)
    nan = np.zeros(4, bool)
    absolute = np.zeros(4, np.float32)
    tir.interpret(build((4,), lambda v: te.isnan(v)), x, nan)
    tir.interpret(build((4,), lambda v: te.abs(v)), x, absolute)
    np.testing.assert_array_equal(nan, np.isnan(x))
    np.testing.assert_array_equal(absolute, np.abs(x))
