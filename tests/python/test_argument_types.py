"""A wrong argument type raises kiln.KilnTypeError (a TypeError) whose message names the API,
the parameter and the types it accepts, never pybind11's generic "incompatible function
arguments": for every schedule primitive, the main te and tir entry points, and, by a sweep,
every public function and method of the walked modules."""
import inspect
import re

import numpy as np
import pytest

import kiln
from kiln import arith, te, tir

from api_helpers import is_excluded, members, public_classes_and_callables
from schedule_helpers import matmul


def elementwise():
    A = te.placeholder((64, 32), "float32", name="A")
    B = te.compute((64, 32), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((64, 32), lambda i, j: B[i, j] + 1.0, name="C")
    return te.create_prim_func([A, C])


def assert_type_error(call, api, *fragments):
    """call() raises KilnTypeError naming `api` first, with every fragment in its message."""
    with pytest.raises(kiln.KilnTypeError) as info:
        call()
    message = str(info.value)
    assert isinstance(info.value, TypeError)
    assert message.startswith(api + ":"), message
    assert "incompatible function arguments" not in message
    for fragment in fragments:
        assert fragment in message, message


@pytest.fixture
def sch():
    return tir.Schedule(matmul())


def handles(sch):
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    return block, i, j, k


# (primitive, call with one wrong argument, the parameter named, what the message expects).
PRIMITIVE_CASES = [
    ("get_block", lambda s, b, i, j, k: s.get_block(3), "name", "must be a str"),
    ("get_block", lambda s, b, i, j, k: s.get_block("C", func_name=0), "func_name",
     "must be a str"),
    ("get_loops", lambda s, b, i, j, k: s.get_loops(42), "block",
     "must be a BlockRV or a block name (str), found an object of type int"),
    ("get_loops", lambda s, b, i, j, k: s.get_loops(i), "block", "found an object of type LoopRV"),
    ("get_child_blocks", lambda s, b, i, j, k: s.get_child_blocks(1.5), "block_or_loop",
     "must be a BlockRV, a LoopRV or a block name (str)"),
    ("get_producers", lambda s, b, i, j, k: s.get_producers(i), "block", "BlockRV"),
    ("get_consumers", lambda s, b, i, j, k: s.get_consumers(None), "block", "found None"),
    ("get", lambda s, b, i, j, k: s.get("C"), "rv", "a BlockRV, a LoopRV or an ExprRV"),
    ("split", lambda s, b, i, j, k: s.split(b, factors=[None, 4]), "loop",
     "must be a LoopRV, found an object of type BlockRV"),
    ("split", lambda s, b, i, j, k: s.split(i, factors=4), "factors", "a list of ints"),
    ("split", lambda s, b, i, j, k: s.split(i, factors=[None, 2.5]), "factors[1]",
     "an int, an ExprRV or None, found an object of type float"),
    ("split", lambda s, b, i, j, k: s.split(i, [None, 4], preserve_unit_iters="yes"),
     "preserve_unit_iters", "must be a bool"),
    ("fuse", lambda s, b, i, j, k: s.fuse(i, b), "loops[1]", "must be a LoopRV"),
    ("add_unit_loop", lambda s, b, i, j, k: s.add_unit_loop(3), "block_or_loop",
     "must be a BlockRV, a LoopRV or a block name (str), found an object of type int"),
    ("reorder", lambda s, b, i, j, k: s.reorder("a"), "ordered_loops[0]",
     "must be a LoopRV, found an object of type str"),
    ("parallel", lambda s, b, i, j, k: s.parallel(b), "loop", "must be a LoopRV"),
    ("vectorize", lambda s, b, i, j, k: s.vectorize(3), "loop", "must be a LoopRV"),
    ("unroll", lambda s, b, i, j, k: s.unroll("C"), "loop", "must be a LoopRV"),
    ("bind", lambda s, b, i, j, k: s.bind(i, 0), "thread_axis", "must be a str"),
    ("annotate", lambda s, b, i, j, k: s.annotate(i, 7, 1), "ann_key", "must be a str"),
    ("unannotate", lambda s, b, i, j, k: s.unannotate(42, "k"), "block_or_loop",
     "must be a BlockRV, a LoopRV or a block name (str)"),
    ("cache_read", lambda s, b, i, j, k: s.cache_read(b, "0", "local"), "read_buffer_index",
     "must be an int, found an object of type str"),
    ("cache_read", lambda s, b, i, j, k: s.cache_read(b, 0, "local", consumer_blocks=b),
     "consumer_blocks", "a list of BlockRVs or block names"),
    ("cache_write", lambda s, b, i, j, k: s.cache_write(b, 0, 5), "storage_scope",
     "must be a str"),
    ("set_scope", lambda s, b, i, j, k: s.set_scope(i, 0, "local"), "block", "BlockRV"),
    ("storage_align", lambda s, b, i, j, k: s.storage_align(b, 0, 0.5, 8, 1), "axis",
     "must be an int, found an object of type float"),
    ("transform_layout", lambda s, b, i, j, k: s.transform_layout(b, 3, lambda x, y: [y, x]),
     "buffer", '("read" or "write", index) or a buffer name'),
    ("transform_layout", lambda s, b, i, j, k: s.transform_layout(b, ("read", 0), 3),
     "index_map", "an IndexMap, a function"),
    ("compute_at", lambda s, b, i, j, k: s.compute_at(b, b), "loop", "must be a LoopRV"),
    ("reverse_compute_at", lambda s, b, i, j, k: s.reverse_compute_at(7, i), "block",
     "BlockRV or a block name"),
    ("compute_inline", lambda s, b, i, j, k: s.compute_inline(i), "block", "BlockRV"),
    ("reverse_compute_inline", lambda s, b, i, j, k: s.reverse_compute_inline(1), "block",
     "BlockRV"),
    ("sample_compute_location", lambda s, b, i, j, k: s.sample_compute_location(b, "x"),
     "decision", "must be an int"),
    ("rfactor", lambda s, b, i, j, k: s.rfactor(k, "0"), "factor_axis", "must be an int"),
    ("decompose_reduction", lambda s, b, i, j, k: s.decompose_reduction(b, b), "loop",
     "must be a LoopRV, found an object of type BlockRV"),
    ("blockize", lambda s, b, i, j, k: s.blockize(b), "loop", "must be a LoopRV"),
    ("tensorize", lambda s, b, i, j, k: s.tensorize(b, None), "tensor_intrin",
     "must be a str, found None"),
    ("sample_perfect_tile", lambda s, b, i, j, k: s.sample_perfect_tile(i, n="2"), "n",
     "must be an int"),
    ("sample_perfect_tile", lambda s, b, i, j, k: s.sample_perfect_tile(i, 2, decision=[4, "4"]),
     "decision[1]", "must be an int"),
    ("sample_categorical", lambda s, b, i, j, k: s.sample_categorical([1, 2], "ab"), "probs",
     "a list of numbers"),
    ("seed", lambda s, b, i, j, k: s.seed("x"), "seed", "must be an int"),
]


@pytest.mark.parametrize("primitive, call, param, expected", PRIMITIVE_CASES,
                         ids=[f"{c[0]}-{c[2]}" for c in PRIMITIVE_CASES])
def test_schedule_primitive_wrong_type(sch, primitive, call, param, expected):
    block, i, j, k = handles(sch)
    mod, length = sch.mod, len(sch.trace)
    assert_type_error(lambda: call(sch, block, i, j, k), f"Schedule.{primitive}", param, expected)
    kiln.ir.assert_structural_equal(sch.mod, mod)
    assert len(sch.trace) == length


def test_every_schedule_primitive_has_a_case():
    covered = {case[0] for case in PRIMITIVE_CASES}
    methods = {name for name, _, _ in members(tir.Schedule) if not name.startswith("_")}
    without_arguments = {"mod", "trace", "copy", "show"}
    assert methods - without_arguments - covered == set()


@pytest.mark.parametrize("call, api, fragments", [
    (lambda: tir.Schedule(42), "tir.Schedule",
     ["mod must be a PrimFunc or an IRModule, found an object of type int"]),
    (lambda: tir.Schedule(matmul(), seed="x"), "tir.Schedule", ["seed must be an int"]),
    (lambda: te.compute("x", lambda i: i), "te.compute", ["found an object of type str"]),
    (lambda: te.compute((4,), 3), "te.compute", ["fcompute", "must be callable"]),
    (lambda: te.compute((4,), lambda i: i, name=5), "te.compute", ["name must be a str"]),
    (lambda: te.compute((4,), lambda i: i, tag=[]), "te.compute", ["tag must be a str"]),
    (lambda: te.placeholder(shape=3.5), "te.placeholder", ["integer", "float32"]),
    (lambda: te.placeholder((4,), "float32", name=1), "te.placeholder", ["name must be a str"]),
    (lambda: te.placeholder((4,), dtype=3), "te.placeholder", ["dtype must be a string"]),
    (lambda: te.reduce_axis((0, 4), name=3), "te.reduce_axis", ["name must be a str"]),
    (lambda: te.var(3), "tir.Var", ["name must be a str"]),
    (lambda: te.create_prim_func(3), "te.create_prim_func", ["expected a list of tensors"]),
    (lambda: te.comm_reducer(1, 2), "te.comm_reducer", ["fcombine must be callable"]),
    (lambda: te.exp("x"), "te.exp", ["must be an expression or a number"]),
    (lambda: tir.likely(3.5), "tir.likely", ["the condition must be a bool, found dtype float32"]),
    (lambda: tir.lower(3), "tir.lower",
     ["func must be a PrimFunc, an IRModule or a tir.Schedule, found an object of type int"]),
    (lambda: tir.lower(matmul(), dump_ir=3), "tir.lower", ["dump_ir must be a path"]),
    (lambda: tir.lower(matmul(), verify="yes"), "tir.lower", ["verify must be a bool"]),
    (lambda: tir.interpret("main"), "tir.interpret", ["func must be a PrimFunc"]),
    (lambda: tir.transform.flatten_buffers(3), "tir.transform.flatten_buffers",
     ["func must be a PrimFunc"]),
    (lambda: tir.transform.make_packed_api(matmul(), 3), "tir.transform.make_packed_api",
     ["name must be a str"]),
    (lambda: tir.IndexMap([1, 2], [0]), "IndexMap",
     ["initial_indices[0] must be a tir.Var, found an object of type int"]),
    (lambda: tir.IndexMap([tir.Var("i")], ["x"]), "IndexMap",
     ["final_indices[0] must be an expression or a number"]),
    (lambda: tir.IndexMap(3, []), "IndexMap", ["initial_indices must be a list of tir.Var"]),
    (lambda: tir.IndexMap.from_func(3), "IndexMap.from_func", ["func must be a function"]),
    (lambda: tir.TensorIntrin.get(3), "TensorIntrin.get", ["name must be a str"]),
    (lambda: tir.IntImm("int32", "3"), "tir.IntImm", ["value must be an int"]),
    (lambda: kiln.IRModule({"main": 3}), "IRModule", ["must be a PrimFunc"]),
    (lambda: kiln.build(3), "kiln.build", ["func must be a PrimFunc"]),
    (lambda: kiln.build(matmul(), name=3), "kiln.build", ["name must be a str"]),
    (lambda: kiln.ir.structural_hash(matmul(), map_free_vars="x"), "structural_hash",
     ["map_free_vars must be a bool"]),
    (lambda: arith.Analyzer().simplify(tir.Var("x"), steps="4"), "Analyzer.simplify",
     ["steps must be an int"]),
    (lambda: arith.detect_iter_map(3, {}), "detect_iter_map", ["indices must be a list"]),
    (lambda: arith.union_sets([3]), "union_sets", ["must be an IntSet"]),
])
def test_entry_point_wrong_type(call, api, fragments):
    assert_type_error(call, api, *fragments)


# --- A sweep: every public callable, called with an object of an unrelated type in every
# --- required position, raises a kiln error (or accepts it), never pybind11's TypeError.

class Unrelated:
    """An object of a type no kiln API accepts."""


def required_positional_count(func, name):
    """How many positional arguments `func` needs (a *args parameter counts as one), read from
    inspect.signature or, for a binding, from the signature line pybind11 generates."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        params = None
    if params is not None:
        count = 0
        if params and params[0].name == "self":
            params = params[1:]  # the __init__ of a Python class, unbound
        for p in params:
            if p.kind == p.VAR_POSITIONAL:
                count += 1
            elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
                count += 1
        return count
    first_line = (func.__doc__ or "").splitlines()[0]
    match = re.match(r"^" + re.escape(name) + r"\((.*)\)( -> .*)?$", first_line)
    assert match, f"{name}: no signature line in {first_line!r}"
    count, depth, current, parts = 0, 0, "", []
    for ch in match.group(1):  # split at the commas outside brackets and quotes
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    for part in (p.strip() for p in parts if p.strip()):
        if part.startswith("self") or part.startswith("**"):
            continue
        if part.startswith("*") or "=" not in part:
            count += 1
    return count


def instances():
    """One object of each class whose methods the sweep calls."""
    sch = tir.Schedule(elementwise())
    sch.get_loops("C")
    func = matmul()
    A = te.placeholder((4,), "float32", name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    analyzer = arith.Analyzer()
    i = tir.Var("i")
    return [sch, sch.trace, tir.IndexMap.from_func(lambda x, y: [y, x]), func,
            kiln.IRModule({"main": func}), func.buffer_map[func.params[0]], B, B.op, A.op,
            i + 1, i, tir.IntImm("int32", 3), analyzer, arith.IntSet.single_point(3),
            arith.detect_iter_map([i // 4, i % 4], {i: 16}), tir.Range(0, 4)]


def sweep_calls():
    """(name, bound callable) of every public function, constructor, static method and method
    of an instance above."""
    calls = []
    for qualname, obj in public_classes_and_callables():
        if not isinstance(obj, type):
            calls.append((qualname, obj, getattr(obj, "__name__", qualname)))
            continue
        for name, raw, looked_up in members(obj):
            if isinstance(raw, property):
                continue
            if name == "__init__":
                calls.append((qualname, obj, "__init__"))
            elif isinstance(raw, staticmethod) or inspect.isbuiltin(looked_up):
                calls.append((f"{qualname}.{name}", looked_up, name))
    for instance in instances():
        cls = type(instance)
        for name, raw, _ in members(cls):
            if isinstance(raw, (property, staticmethod)) or name == "__init__":
                continue
            calls.append((f"{cls.__name__}().{name}", getattr(instance, name), name))
    return calls


def test_sweep_never_raises_pybind11_argument_errors(capsys):
    failures = []
    for qualname, func, name in sweep_calls():
        signature_source = func.__init__ if isinstance(func, type) else func
        count = required_positional_count(signature_source, name)
        if count == 0:
            continue
        try:
            func(*[Unrelated()] * count)
        except kiln.KilnError:
            continue
        except Exception as error:  # noqa: BLE001 (any other class is the failure reported)
            failures.append(f"{qualname}: {type(error).__name__}: {str(error)[:120]}")
    capsys.readouterr()
    assert not failures, "\n".join(failures)


def test_sweep_covers_the_schedule_and_the_entry_points():
    names = {qualname for qualname, _, _ in sweep_calls()}
    for expected in ("Schedule().split", "Schedule().compute_at", "kiln.tir.Schedule",
                     "kiln.te.compute", "kiln.tir.lower", "kiln.tir.interpret", "kiln.build",
                     "kiln.tir.IndexMap", "kiln.tir.IndexMap.from_func", "Analyzer().bind"):
        assert expected in names, expected
    assert not any(is_excluded(func) for _, func, _ in sweep_calls())


def test_numpy_and_ir_integers_convert_where_ints_are_taken(sch):
    block, i, j, k = handles(sch)
    _, ii = sch.split(i, factors=[None, np.int64(4)])
    assert sch.get(ii).extent.value == 4
    _, ji = sch.split(j, factors=[None, tir.IntImm("int64", 3)])
    assert sch.get(ji).extent.value == 3
    sch.cache_write("C", np.int32(0), "local")
    assert len(sch.get_loops(block)) == 5


def test_bool_is_not_taken_for_an_int(sch):
    block, i, j, k = handles(sch)
    assert_type_error(lambda: sch.cache_read(block, True, "local"), "Schedule.cache_read",
                      "read_buffer_index must be an int, found an object of type bool")
