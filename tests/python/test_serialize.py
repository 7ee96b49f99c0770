"""IR serialization from Python: kiln.ir.save_json / load_json and pickling of PrimFunc and
IRModule. The contract, checked on the test corpora before and after scheduling (by hand and by
random schedules), after lowering and with the packed entry point: the loaded function is
structurally equal to the saved one with the same structural hash, in this process and in
another; a loaded function computes what the original computes (on the interpreter and built
with LLVM); bad documents raise KilnValueError naming the path of what is wrong."""
import copy
import json
import multiprocessing
import os
import pickle
import random
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import kiln
from kiln import ir, te, tir
from kiln.tir import transform

import lower_helpers
import schedule_helpers
from schedule_helpers import WORKLOADS, assert_same_results, random_args
from test_schedule_fuzz import Fuzzer

VNNI = "x86.avx512.vnni.dot_16x4_u8s8s32"


def assert_round_trip(node, map_free_vars=False):
    """load_json(save_json(node)) is structurally equal to node with the same hash, and saving
    it again gives the same text. Returns the loaded node."""
    text = ir.save_json(node)
    loaded = ir.load_json(text)
    ir.assert_structural_equal(loaded, node, map_free_vars=map_free_vars)
    assert ir.structural_hash(loaded) == ir.structural_hash(node)
    assert ir.structural_hash(loaded, True) == ir.structural_hash(node, True)
    assert ir.save_json(loaded) == text
    return loaded


# ---------------------------------------------------------------------------------------------
# The corpus: te-made functions (symbolic shapes, reductions, if_then_else, tuple reductions),
# scheduled by hand, tensorized, lowered, and with the packed entry point.

def te_functions():
    """Functions of the te tests' kinds that the schedule and lowering corpora do not have."""
    funcs = {}
    n = te.var("n")
    m = te.var("m")
    A = te.placeholder((n, m), "float32", name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.max(A[i, k], axis=k, where=A[i, k] > 0.0), name="B")
    funcs["symbolic_masked_max"] = te.create_prim_func([A, B])

    Bias = te.placeholder((6,), "float32", name="bias")
    T = te.placeholder((6, 6), "float32", name="T")
    k1 = te.reduce_axis((0, 6), name="k1")
    tri = te.compute((6,), lambda i: te.sum(T[i, k1], axis=k1, where=k1 <= i, init=Bias[i]),
                     name="tri")
    funcs["triangular_sum_with_init"] = te.create_prim_func([T, Bias, tri])

    def argmax_combine(x, y):
        keep = x[1] >= y[1]
        return tir.Select(keep, x[0], y[0]), tir.Select(keep, x[1], y[1])

    argmax = te.comm_reducer(argmax_combine,
                             lambda t0, t1: (te.const(-1, t0), te.min_value(t1)), name="argmax")
    X = te.placeholder((6, 9), "float32", name="X")
    r = te.reduce_axis((0, 9), name="r")
    idx, val = te.compute((6,), lambda i: argmax((r.var, X[i, r]), axis=r), name="T")
    funcs["argmax_tuple_reduction"] = te.create_prim_func([X, idx, val])

    U = te.placeholder((16,), "uint64", name="U")
    V = te.compute((16,), lambda i: U[i] + te.max_value("uint64"), name="V")
    funcs["uint64_wrap"] = te.create_prim_func([U, V])

    F = te.placeholder((8,), "float64", name="F")
    G = te.compute((8,), lambda i: te.if_then_else(te.isnan(F[i]), -0.0, F[i] * 1e-300),
                   name="G")
    funcs["float64_special"] = te.create_prim_func([F, G])
    return funcs


def hand_schedules():
    """Scheduled functions that use most primitives: tiling, caches, compute_at, inlining,
    rfactor, decompose_reduction, annotations and loop kinds."""
    funcs = {}
    sch = tir.Schedule(schedule_helpers.matmul(64, 64, 32))
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    io, ii = sch.split(i, factors=[None, 8])
    jo, ji = sch.split(j, factors=[None, 16])
    ko, ki = sch.split(k, factors=[None, 4])
    sch.reorder(io, jo, ko, ii, ki, ji)
    sch.cache_write(block, 0, "local")
    sch.parallel(io)
    sch.vectorize(ji)
    sch.unroll(ki)
    sch.annotate(ko, "pragma_auto_unroll_max_step", 16)
    sch.decompose_reduction(block, ko)
    funcs["matmul_tiled"] = sch.mod

    sch = tir.Schedule(schedule_helpers.conv2d())
    sch.compute_inline(sch.get_block("pad"))
    conv = sch.get_block("conv")
    b, o, y, x, rc, ry, rx = sch.get_loops(conv)
    sch.cache_read(conv, 1, "local")
    yo, yi = sch.split(y, factors=[None, 4])
    sch.reorder(yo, rc, ry, rx, yi)
    funcs["conv2d_inlined_cached"] = sch.mod

    sch = tir.Schedule(schedule_helpers.softmax())
    sch.compute_inline(sch.get_block("exp"))
    _, k2 = sch.get_loops(sch.get_block("row_sum"))
    k2o, _ = sch.split(k2, factors=[None, 5])
    sch.rfactor(k2o, 0)
    funcs["softmax_rfactor"] = sch.mod

    sch = tir.Schedule(schedule_helpers.symbolic_row_sum())
    i, k = sch.get_loops(sch.get_block("B"))
    io, _ = sch.split(i, factors=[None, 4])  # a predicate: n need not divide by 4
    _, ki = sch.split(k, factors=[None, 4])
    sch.parallel(io)
    sch.unroll(ki)
    funcs["symbolic_row_sum_split"] = sch.mod

    func = schedule_helpers.matmul_u8s8s32()
    sch = tir.Schedule(func)
    _, j, k = sch.get_loops(sch.get_block("C"))
    j0, j1 = sch.split(j, factors=[None, 16])
    k0, k1 = sch.split(k, factors=[None, 4])
    sch.reorder(j0, k0, j1, k1)
    sch.tensorize(j1, VNNI)  # structural: needs no VNNI hardware until it is built
    funcs["matmul_u8s8s32_vnni_tensorized"] = sch.mod
    return funcs


def corpus():
    """name -> PrimFunc or IRModule: every workload of the schedule and lowering corpora, the te
    functions, the hand schedules, the registered tensor intrinsics, and the lowered and
    packed forms of each of those that lower."""
    funcs = {}
    for name, make in WORKLOADS.items():
        funcs["workload:" + name] = make()
    funcs["workload:matmul_u8s8s32"] = schedule_helpers.matmul_u8s8s32()
    funcs["workload:matmul_bf16"] = schedule_helpers.matmul_bf16()
    for name, make in lower_helpers.OPERATORS.items():
        funcs["operator:" + name] = make()[0]
    for name, func in te_functions().items():
        funcs["te:" + name] = func
    for name, mod in hand_schedules().items():
        funcs["scheduled:" + name] = mod
    intrin = tir.TensorIntrin.get(VNNI)
    funcs["intrin:vnni_desc"] = intrin.desc
    funcs["intrin:vnni_impl"] = intrin.impl
    for name in list(funcs):
        if name.startswith("intrin:"):
            continue
        lowered = tir.lower(funcs[name])
        funcs["lowered:" + name] = lowered
        main = lowered["main"] if isinstance(lowered, kiln.IRModule) else lowered
        funcs["packed:" + name] = transform.make_packed_api(main, "f")
    return funcs


CORPUS = corpus()


def is_flat(name):
    """Whether the corpus entry is lowered: its one-dimensional views of the parameters'
    buffers are defined nowhere, so structural equality takes them as free buffers, equal only
    to themselves unless map_free_vars (as two lowerings of one function are)."""
    return name.startswith(("lowered:", "packed:"))


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_round_trips(name):
    assert_round_trip(CORPUS[name], map_free_vars=is_flat(name))


def test_corpus_covers_the_lowered_and_packed_forms():
    kinds = set()

    def walk(j):
        if isinstance(j, dict):
            kinds.add(j.get("kind"))
            for v in j.values():
                walk(v)
        elif isinstance(j, list):
            for v in j:
                walk(v)
    for func in CORPUS.values():
        walk(json.loads(ir.save_json(func)))
    for kind in ("Allocate", "LetStmt", "Ramp", "Broadcast", "Call", "IRModule", "Block",
                 "BlockRealize", "IfThenElse", "Select", "Cast", "FloorDiv", "FloorMod", "Max",
                 "Min", "SeqStmt"):
        assert kind in kinds, kind
    packed = ir.save_json(CORPUS["packed:scheduled:matmul_tiled"])
    assert '"op":"packed_arg_data"' in packed and '"for_kind":"parallel"' in packed
    assert '"for_kind":"vectorized"' in ir.save_json(CORPUS["scheduled:matmul_tiled"])
    assert "llvm.x86.avx512.vpdpbusd.512" in ir.save_json(
        CORPUS["scheduled:matmul_u8s8s32_vnni_tensorized"])


def test_random_schedules_round_trip():
    """Random schedules of every workload (the schedule fuzzer's steps), scheduled and
    lowered, round-trip; the loaded scheduled function computes what the original does."""
    rng = random.Random(20240611)
    checked = 0
    for index in range(120):
        name = sorted(WORKLOADS)[index % len(WORKLOADS)]
        original = WORKLOADS[name]()
        sch = tir.Schedule(original, seed=rng.randrange(1 << 30))
        fuzzer = Fuzzer(rng)
        for _ in range(rng.randint(1, 6)):
            _, apply = fuzzer.step(sch)
            if apply is None:
                continue
            try:
                apply()
            except tir.ScheduleError:
                pass
        loaded = assert_round_trip(sch.mod)
        assert_round_trip(tir.lower(sch.mod), map_free_vars=True)
        if index % 6 == 0:
            assert_same_results(original, loaded)
        checked += 1
    assert checked == 120


# ---------------------------------------------------------------------------------------------
# Sharing and exact values

def test_loaded_buffers_and_variables_are_shared():
    func = ir.load_json(ir.save_json(schedule_helpers.matmul()))
    c_param = func.params[2]
    c = func.buffer_map[c_param]
    loop_i = func.body.block.body
    realize = loop_i.body.body.body
    assert realize.block.writes[0].buffer.same_as(c)
    assert realize.block.body.buffer.same_as(c)
    assert realize.iter_values[0].same_as(loop_i.loop_var)
    vi = realize.block.iter_vars[0].var
    assert realize.block.body.indices[0].same_as(vi)


def test_constants_and_strings_are_exact():
    values = [float("inf"), float("-inf"), -0.0, 5e-324, 1.7976931348623157e308, 0.1]
    for v in values:
        loaded = ir.load_json(ir.save_json(tir.FloatImm("float64", v)))
        assert np.float64(loaded.value).tobytes() == np.float64(v).tobytes(), v
    assert np.isnan(ir.load_json(ir.save_json(tir.FloatImm("float32", float("nan")))).value)
    for imm in [te.max_value("uint64"), tir.IntImm("uint64", 2**63 - 1),
                tir.IntImm("int64", -2**63), te.max_value("int64"), tir.IntImm("int8", -128)]:
        loaded = ir.load_json(ir.save_json(imm))
        assert (loaded.dtype, loaded.value) == (imm.dtype, imm.value)
    assert '"value":18446744073709551615' in ir.save_json(te.max_value("uint64"))
    text = "naïve €\x00\n\"\\ 😀"
    func = schedule_helpers.matmul().with_attr("note", text)
    loaded = assert_round_trip(func)
    assert loaded.attrs["note"] == text
    assert ir.load_json(ir.save_json(tir.StringImm(text))).value == text


def test_te_reductions_round_trip():
    A = te.placeholder((4, 8), "float32", name="A")
    k = te.reduce_axis((0, 8), name="k")
    i = tir.Var("i")
    total = te.sum(A[i, k] * 2.0, axis=k, where=k < 6)
    assert isinstance(total, tir.Reduce)
    loaded = ir.load_json(ir.save_json(total))
    assert isinstance(loaded, tir.Reduce) and isinstance(loaded.combiner, tir.CommReducer)
    # i and the placeholder's buffer are free here; the loaded ones are new objects.
    ir.assert_structural_equal(loaded, total, map_free_vars=True)
    assert ir.structural_hash(loaded, True) == ir.structural_hash(total, True)


def test_none_round_trips():
    assert ir.load_json(ir.save_json(None)) is None


def test_free_variables_are_new_objects_after_loading():
    x = tir.Var("x")
    e = x * 2 + x
    loaded = ir.load_json(ir.save_json(e))
    assert not ir.structural_equal(loaded, e)
    assert ir.structural_equal(loaded, e, map_free_vars=True)
    assert loaded.a.a.same_as(loaded.b)


# ---------------------------------------------------------------------------------------------
# Pickle and other processes

def test_pickle_prim_func_and_module():
    func = CORPUS["scheduled:matmul_tiled"]["main"]
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        loaded = pickle.loads(pickle.dumps(func, protocol=protocol))
        assert isinstance(loaded, tir.PrimFunc)
        ir.assert_structural_equal(loaded, func)
    mod = CORPUS["scheduled:softmax_rfactor"]
    loaded = pickle.loads(pickle.dumps(mod))
    assert isinstance(loaded, kiln.IRModule)
    ir.assert_structural_equal(loaded, mod)
    assert ir.structural_hash(copy.deepcopy(mod)) == ir.structural_hash(mod)
    # The pickle names kiln.ir.load_json and holds the JSON text.
    assert b"kiln.ir" in pickle.dumps(func) and b"load_json" in pickle.dumps(func)


def test_hashes_match_in_another_process(tmp_path):
    names = sorted(CORPUS)
    for index, name in enumerate(names):
        (tmp_path / f"{index}.json").write_text(ir.save_json(CORPUS[name]))
    script = (
        "import sys\n"
        "from kiln import ir\n"
        "for i in range(int(sys.argv[2])):\n"
        "    text = open(f'{sys.argv[1]}/{i}.json').read()\n"
        "    node = ir.load_json(text)\n"
        "    print(ir.structural_hash(node), ir.save_json(node) == text)\n")
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path), str(len(names))],
                            capture_output=True, text=True, check=True, env=dict(os.environ))
    lines = result.stdout.splitlines()
    assert len(lines) == len(names)
    for name, line in zip(names, lines):
        assert line == f"{ir.structural_hash(CORPUS[name])} True", name


def test_functions_travel_to_worker_processes():
    funcs = [CORPUS[name] for name in ("scheduled:matmul_tiled", "workload:conv2d",
                                       "lowered:te:symbolic_masked_max")]
    funcs = [f["main"] if isinstance(f, kiln.IRModule) else f for f in funcs]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        hashes = list(pool.map(ir.structural_hash, funcs))
    assert hashes == [ir.structural_hash(f) for f in funcs]


# ---------------------------------------------------------------------------------------------
# A loaded function runs

def test_loaded_scheduled_function_builds_and_computes_the_same():
    mod = CORPUS["scheduled:matmul_tiled"]
    loaded = pickle.loads(pickle.dumps(mod))
    a, b, _ = random_args(mod["main"], seed=3)
    c_original = np.zeros((64, 64), "float32")
    c_loaded = np.ones((64, 64), "float32")
    kiln.build(mod, target="llvm")(a, b, c_original)
    kiln.build(loaded, target="llvm")(a, b, c_loaded)
    np.testing.assert_array_equal(c_loaded, c_original)
    np.testing.assert_allclose(c_loaded, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["scheduled:conv2d_inlined_cached", "scheduled:softmax_rfactor",
                                  "te:argmax_tuple_reduction", "te:symbolic_masked_max"])
def test_loaded_functions_interpret_the_same(name):
    func = CORPUS[name]
    func = func["main"] if isinstance(func, kiln.IRModule) else func
    loaded = ir.load_json(ir.save_json(func))
    sizes = {"n": 5, "m": 7}
    expected = random_args(func, seed=1, sizes=sizes)
    actual = [x.copy() for x in expected]
    tir.interpret(func, *expected)
    tir.interpret(loaded, *actual)
    for e, a in zip(expected, actual):
        np.testing.assert_array_equal(a, e)


def test_loaded_lowered_function_interprets_the_same():
    func, shapes = lower_helpers.conv2d_padded()
    lowered = tir.lower(func)
    lower_helpers.assert_same_results(func, ir.load_json(ir.save_json(lowered)), shapes)


# ---------------------------------------------------------------------------------------------
# Errors

def matmul_doc():
    return json.loads(ir.save_json(schedule_helpers.matmul()))


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(kiln_ir_format=2),
     "load_json: at $.kiln_ir_format: the document is in kiln IR format version 2, but this kiln "
     "reads version 1 (the document was written by a newer kiln)"),
    (lambda d: d.pop("kiln_ir_format"),
     "load_json: at $: missing field \"kiln_ir_format\"; this JSON is not a kiln IR document "
     "(save_json writes one)"),
    (lambda d: d["root"]["body"]["block"]["body"].update(kind="Loop"),
     "load_json: at $.root.body.block.body.kind: expected the name of a node kind, such as "
     "\"Add\", found the string \"Loop\""),
    (lambda d: d["root"]["body"]["block"]["body"].pop("extent"),
     "load_json: at $.root.body.block.body: missing field \"extent\""),
    (lambda d: d["root"]["body"]["block"]["body"].update(extent="8"),
     "load_json: at $.root.body.block.body.extent: expected an expression (an object with "
     "\"kind\"), found the string \"8\""),
    (lambda d: d["root"]["params"].__setitem__(0, 99),
     "load_json: at $.root.params[0]: expected an index into \"vars\" (0 to "),
    (lambda d: d["root"]["body"]["block"]["body"].update(body={"kind": "Add"}),
     "load_json: at $.root.body.block.body.body.kind: expected a statement, found a Add"),
])
def test_malformed_documents_name_the_path(edit, message):
    doc = matmul_doc()
    edit(doc)
    with pytest.raises(kiln.KilnValueError) as info:
        ir.load_json(json.dumps(doc))
    assert str(info.value).startswith(message), str(info.value)


def test_text_that_is_not_json():
    with pytest.raises(kiln.KilnValueError,
                       match=r"^load_json: the text is not valid JSON: expected a value at the "
                             r"end of the text$"):
        ir.load_json("")
    with pytest.raises(kiln.KilnValueError, match=r"unexpected text after the document at line "
                                                  r"1, column 4"):
        ir.load_json("{} x")


def test_wrong_argument_types():
    with pytest.raises(kiln.KilnTypeError, match=r"^load_json: text must be a str, found an "
                                                 r"object of type bytes"):
        ir.load_json(b"{}")
    with pytest.raises(kiln.KilnTypeError, match=r"^save_json: node must be an IR node"):
        ir.save_json("main")


def test_names_that_are_not_utf8_are_quoted_in_messages():
    doc = matmul_doc()
    name = doc["root"]["attrs"][0][1]
    doc["root"]["attrs"] = [[{"hex": "ff41"}, name], [{"hex": "ff41"}, name]]
    with pytest.raises(kiln.KilnValueError,
                       match=r'^load_json: at \$\.root\.attrs\[1\]: the name "\\xffA" appears twice$'):
        ir.load_json(json.dumps(doc))


def test_unpickling_a_damaged_pickle_raises_a_kiln_error():
    data = pickle.dumps(schedule_helpers.matmul())
    damaged = data.replace(b'"kind":"For"', b'"kind":"Fur"')
    with pytest.raises(kiln.KilnValueError, match="expected the name of a node kind"):
        pickle.loads(damaged)
