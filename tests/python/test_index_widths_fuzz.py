"""A fuzz test of index widths: random operators over shapes with symbolic dimensions (int32
and int64 variables) and large constant ones, scheduled at random (fuse, split, reorder,
vectorize, parallel), are built, and every integer subexpression of every buffer index of the
lowered function is checked not to wrap: at the largest value of the int32 dimensions the
module accepts (2^31 - 1, or its manifest's "sym_var_max" when the index arithmetic needs less,
e.g. a loop tiled past n), each int32 one must provably stay in int32 given the loops' ranges.
Small instances also run, compiled, against the reference interpreter.

KILN_INDEX_FUZZ sets the number of programs (default 150), KILN_INDEX_FUZZ_SEED the seed.
"""
import json
import os

import numpy as np
import pytest

import kiln
from kiln import arith, te, tir

INT32_MAX = 2 ** 31 - 1
COUNT = int(os.environ.get("KILN_INDEX_FUZZ", "150"))
SEED = int(os.environ.get("KILN_INDEX_FUZZ_SEED", "7"))

# Largest value an int64 dimension takes in the check (a tensor of 2^40 int8 is 1 TiB).
INT64_DIM_MAX = 2 ** 40


class Program:
    """A random operator: its PrimFunc, its symbolic variables and a small size for each."""

    def __init__(self, rng):
        self.rng = rng
        self.vars = []
        self.small = {}
        self.big_constant = bool(rng.integers(0, 2))
        n = self.symbolic("n", "int32")
        m = self.symbolic("m", "int64" if rng.integers(0, 4) == 0 else "int32")
        pool = [n, m, 4, 7]
        if self.big_constant:
            pool += [65536, 100003]
        rank = int(rng.integers(2, 4))
        shape = [pool[int(rng.integers(0, len(pool)))] for _ in range(rank)]
        if not any(isinstance(d, tir.Var) for d in shape):
            shape[0] = n
        self.dtype = ["int8", "float32"][int(rng.integers(0, 2))]
        self.kind = ["copy", "reverse", "transpose", "broadcast", "reduce", "offset"][
            int(rng.integers(0, 6))]
        self.func = self.build(shape)

    def symbolic(self, name, dtype):
        v = te.var(name, dtype)
        self.vars.append(v)
        self.small[name] = int(self.rng.integers(1, 6))
        return v

    def small_value(self, dim):
        return self.small[dim.name] if isinstance(dim, tir.Var) else int(dim)

    def build(self, shape):
        dtype, kind = self.dtype, self.kind
        one = te.const(1, dtype)
        if kind == "offset":
            # A has its own first dimension p >= shape[0] + 3 (argument specs take variables).
            p = self.symbolic("p", "int32")
            self.small["p"] = self.small_value(shape[0]) + 3
            A = te.placeholder([p] + shape[1:], dtype, name="A")
            B = te.compute(shape, lambda i, *rest: A[(i + 3,) + rest] + one, name="B")
            return te.create_prim_func([A, B])
        A = te.placeholder(shape, dtype, name="A")
        if kind == "copy":
            B = te.compute(shape, lambda *i: A[i] + one, name="B")
        elif kind == "reverse":
            B = te.compute(shape, lambda i, *rest: A[(shape[0] - 1 - i,) + rest] * one, name="B")
        elif kind == "transpose":
            out = [shape[1], shape[0]] + shape[2:]
            B = te.compute(out, lambda i, j, *rest: A[(j, i) + rest] + one, name="B")
        elif kind == "broadcast":
            V = te.placeholder([shape[-1]], dtype, name="V")
            B = te.compute(shape, lambda *i: A[i] + V[i[-1]], name="B")
            return te.create_prim_func([A, V, B])
        else:
            k = te.reduce_axis((0, shape[-1]), name="k")
            B = te.compute(shape[:-1], lambda *i: te.sum(A[i + (k,)], axis=k), name="B")
        return te.create_prim_func([A, B])

    def schedule(self):
        """A random schedule of the output block; failed steps are skipped."""
        rng = self.rng
        sch = tir.Schedule(self.func)
        block = sch.get_block("B")
        loops = sch.get_loops(block)
        spatial = loops[:-1] if self.kind == "reduce" else loops

        def attempt(step):
            try:
                return step()
            except tir.ScheduleError:
                return None

        if len(spatial) > 1 and rng.integers(0, 2):
            count = int(rng.integers(2, len(spatial) + 1))
            fused = attempt(lambda: sch.fuse(*spatial[:count]))
            if fused is not None:
                spatial = [fused] + list(spatial[count:])
        if rng.integers(0, 2):
            factor = [4, 8, 64, 1000][int(rng.integers(0, 4))]
            parts = attempt(lambda: sch.split(spatial[-1], factors=[None, factor]))
            if parts is not None:
                spatial = list(spatial[:-1]) + list(parts)
                if self.kind != "reduce" and factor <= 64 and rng.integers(0, 2):
                    attempt(lambda: sch.vectorize(parts[1]))
        if len(spatial) > 1 and rng.integers(0, 2):
            attempt(lambda: sch.reorder(spatial[1], spatial[0]))
        if rng.integers(0, 2):
            attempt(lambda: sch.parallel(sch.get_loops(block)[0]))
        return sch


def expressions(node):
    """The expression children of an expression node."""
    for name in ("a", "b", "value", "condition", "true_value", "false_value", "base", "stride"):
        child = getattr(node, name, None)
        if isinstance(child, tir.PrimExpr):
            yield child
    for name in ("args", "indices"):
        for child in getattr(node, name, None) or []:
            if isinstance(child, tir.PrimExpr):
                yield child


def widened(e):
    """An int32 expression's arithmetic redone in int64 (as far as it is arithmetic)."""
    ops = {tir.Add: lambda a, b: a + b, tir.Sub: lambda a, b: a - b,
           tir.Mul: lambda a, b: a * b, tir.FloorDiv: lambda a, b: a // b,
           tir.FloorMod: lambda a, b: a % b}
    for kind, op in ops.items():
        if isinstance(e, kind):
            return op(widened(e.a), widened(e.b))
    if isinstance(e, tir.IntImm):
        return te.const(int(e), "int64")
    return e.astype("int64") if e.dtype == "int32" else e


def wrap_failures(func, program, limits=None):
    """The index expressions of `func` that may leave int32 with the int32 dimensions at their
    largest supported value. Where that many elements do not fit even int64 (n * n * 7 for n
    near 2^31: no such tensor exists, and the runtime refuses its shape), the dimensions are
    halved until they do."""
    scale = 1
    while True:
        try:
            return WrapChecker(func, program, limits, scale).failures
        except kiln.KilnValueError as error:
            if "does not fit int64" not in str(error):
                raise
            scale *= 2


class WrapChecker:
    """Walks a lowered function with the loops' ranges known and checks every index."""

    def __init__(self, func, program, limits=None, scale=1):
        self.analyzer = arith.Analyzer()
        for v in program.vars:
            if v.dtype == "int32":
                high = (limits or {}).get(v.name, INT32_MAX) // scale
                self.analyzer.update(v, arith.ConstIntBound(high, high), True)
            else:
                self.analyzer.update(v, arith.ConstIntBound(1, INT64_DIM_MAX // scale), True)
        self.failures = []
        self.stmt(func.body)

    def stmt(self, s):
        if s is None:
            return
        if isinstance(s, tir.For):
            # The loop's range computed in int64 (its int32 bound could not say it wraps).
            low = self.analyzer.const_int_bound(widened(s.min)).min_value
            high = self.analyzer.const_int_bound(widened(s.min + s.extent - 1)).max_value
            if high < low:
                return  # the loop never runs
            self.analyzer.update(s.loop_var, arith.ConstIntBound(low, high), True)
            self.stmt(s.body)
        elif isinstance(s, tir.SeqStmt):
            for child in s.seq:
                self.stmt(child)
        elif isinstance(s, tir.LetStmt):
            self.analyzer.bind(s.var, s.value, True)
            self.stmt(s.body)
        elif isinstance(s, tir.IfThenElse):
            self.expr(s.condition, False)
            self.stmt(s.then_case)
            self.stmt(s.else_case)
        elif isinstance(s, tir.BufferStore):
            for index in s.indices:
                self.expr(index, True)
            self.expr(s.value, False)
        elif isinstance(s, (tir.Allocate, tir.AssertStmt)):
            self.stmt(s.body)
        elif isinstance(s, tir.Evaluate):
            self.expr(s.value, False)

    def expr(self, e, in_index):
        if isinstance(e, tir.BufferLoad):
            for index in e.indices:
                self.expr(index, True)
            return
        if in_index and e.dtype == "int32" and not isinstance(e, (tir.IntImm,)):
            # The bound of the same arithmetic done in int64: an int32 expression's own bound
            # never leaves int32.
            bound = self.analyzer.const_int_bound(widened(e))
            if bound.min_value < -2 ** 31 or bound.max_value > INT32_MAX:
                self.failures.append(f"{e} may leave int32: [{bound.min_value}, "
                                     f"{bound.max_value}]")
        for child in expressions(e):
            self.expr(child, in_index)


def supported_limits(rt):
    """The largest value of each symbolic dimension the module accepts below its dtype's."""
    spec = json.loads(rt.manifest)["functions"][0]
    limits = spec.get("sym_var_max") or [None] * len(spec["sym_vars"])
    return {name: limit for name, limit in zip(spec["sym_vars"], limits) if limit is not None}


def small_args(program, func):
    """Arrays for the small instance of `program` (numbers in a small range)."""
    rng = np.random.default_rng(0)
    sizes = {v.name: program.small[v.name] for v in program.vars}
    args = []
    for param in func.params:
        buffer = func.buffer_map.get(param)
        shape = []
        for d in buffer.shape:
            if isinstance(d, tir.IntImm):
                shape.append(int(d))
            else:
                shape.append(int(arith.Analyzer().simplify(
                    tir_substitute(d, program.vars, sizes))))
        if buffer.dtype == "float32":
            args.append(rng.uniform(-2, 2, size=shape).astype("float32"))
        else:
            args.append(rng.integers(-3, 4, size=shape).astype(buffer.dtype))
    return args


def tir_substitute(expr, variables, sizes):
    """The value of a shape expression of the symbolic variables at `sizes`."""
    analyzer = arith.Analyzer()
    for v in variables:
        analyzer.bind(v, sizes[v.name])
    return analyzer.simplify(expr)


def test_random_index_arithmetic_never_wraps():
    rng = np.random.default_rng(SEED)
    checked = ran = 0
    for case in range(COUNT):
        program = Program(rng)
        sch = program.schedule()
        lowered = tir.lower(sch.mod)["main"]
        rt = kiln.build(sch.mod)
        limits = supported_limits(rt)
        failures = wrap_failures(lowered, program, limits)
        assert not failures, (f"case {case} ({program.kind}, {program.dtype}):\n" +
                              "\n".join(failures[:5]) + "\n" + lowered.script() + "\n" +
                              sch.trace.as_python())
        checked += 1
        if program.big_constant:
            continue
        # The small instance, compiled, against the interpreter on the unscheduled function.
        expected = small_args(program, program.func)
        actual = [a.copy() for a in expected]
        tir.interpret(program.func, *expected)
        rt(*actual)
        for want, got in zip(expected, actual):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5,
                                       err_msg=f"case {case}\n{sch.trace.as_python()}")
        ran += 1
    assert checked == COUNT and ran > COUNT // 4


def test_the_check_flags_an_index_that_may_wrap():
    # The check itself: an int32 product the user casts to int64 only afterwards wraps for
    # large n (kiln leaves an explicit cast alone), and is reported.
    program = Program(np.random.default_rng(0))
    n, p = te.var("n"), te.var("p", "int64")
    program.vars = [n, p]
    A = te.placeholder((p,), "float32", name="A")
    B = te.compute((n,), lambda i: A[(i * 100000).astype("int64")], name="B")
    failures = wrap_failures(tir.lower(te.create_prim_func([A, B])), program)
    assert any("i * 100000 may leave int32" in f for f in failures), failures


def test_a_dimension_above_the_supported_limit_is_refused_at_call_time():
    # A loop tiled by 8 past n computes n + 7: n = 2^31 - 7 would wrap, so the module says it
    # supports n up to 2^31 - 8 and refuses more (the array is allocated, never touched).
    n = te.var("n")
    A = te.placeholder((n,), "int8", name="A")
    B = te.compute((n,), lambda i: A[i] + te.const(1, "int8"), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    sch.split(sch.get_loops(sch.get_block("B"))[0], factors=[None, 8])
    rt = kiln.build(sch.mod)
    assert supported_limits(rt) == {"n": INT32_MAX - 7}
    a = np.empty(INT32_MAX - 6, np.int8)
    with pytest.raises(kiln.KilnValueError,
                       match=r"main: symbolic dimension n = 2147483641 of argument A is larger "
                             r"than 2147483640, the largest the function supports"):
        rt(a, a[::-1])
    small = np.arange(13, dtype=np.int8)
    out = np.zeros_like(small)
    rt(small, out)
    np.testing.assert_array_equal(out, small + 1)
