"""transform_layout and kiln.tir.IndexMap: golden before/after IR, numeric checks against the
unscheduled function on the reference interpreter (a transformed parameter is fed the NumPy input
in the new layout), trace round trips with the index map in the trace, and one error case per
precondition that also checks the schedule is left as it was."""
import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.error import KilnValueError
from kiln.tir import schedule as tir_schedule

from schedule_helpers import (assert_same_results, assert_trace_roundtrip, elementwise_chain,
                              matmul, random_args, symbolic_row_sum)


def script(sch):
    return sch.mod["main"].script()


def assert_fails(sch, error_class, call, *fragments):
    """Runs `call`, which must raise `error_class` with every fragment in its message, and checks
    that the schedule's module and trace are unchanged."""
    mod_before = sch.mod
    trace_length = len(sch.trace)
    with pytest.raises(getattr(tir_schedule, error_class)) as info:
        call()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message
    kiln.ir.assert_structural_equal(sch.mod, mod_before)
    assert len(sch.trace) == trace_length


def relayout(array, index_map, new_shape):
    """`array` stored in the layout of `index_map` (a Python function of NumPy index grids)."""
    out = np.zeros(new_shape, dtype=array.dtype)
    out[tuple(index_map(*np.indices(array.shape)))] = array
    return out


MATMUL_PACKED_B = '''\
# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((4, 2), "float32"), B: T.Buffer((2, 2, 4), "float32"), C: T.Buffer((4, 8), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    for i, j, k in T.grid(4, 8, 2):
        with T.block("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            T.reads(A[v_i, v_k], B[v_j // 4, v_k, v_j % 4])
            T.writes(C[v_i, v_j])
            with T.init():
                C[v_i, v_j] = T.float32(0)
            C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_j // 4, v_k, v_j % 4]'''

PACKED_CACHE = '''\
# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((4, 2), "float32"), B: T.Buffer((2, 8), "float32"), C: T.Buffer((4, 8), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    B_global = T.alloc_buffer((2, 2, 4), "float32")
    for ax0, ax1 in T.grid(2, 8):
        with T.block("B_global"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(B[v0, v1])
            T.writes(B_global[v1 // 4, v0, v1 % 4])
            B_global[v1 // 4, v0, v1 % 4] = B[v0, v1]
    for i, j, k in T.grid(4, 8, 2):
        with T.block("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            T.reads(A[v_i, v_k], B_global[v_j // 4, v_k, v_j % 4])
            T.writes(C[v_i, v_j])
            with T.init():
                C[v_i, v_j] = T.float32(0)
            C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B_global[v_j // 4, v_k, v_j % 4]'''

BLOCKIZED = '''\
    B = T.alloc_buffer((2, 4, 4), "float32")
    C = T.alloc_buffer((8, 4), "float32")
    for i, j in T.grid(8, 4):
        with T.block("B"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(A[v_i, v_j])
            T.writes(B[v_i // 4, v_j, v_i % 4])
            B[v_i // 4, v_j, v_i % 4] = A[v_i, v_j] * T.float32(2)
    for i_0 in range(2):
        with T.block("C_o"):
            v_i_o = T.axis.remap("S", [i_0])
            T.reads(B[v_i_o, 0:4, 0:4])
            T.writes(C[v_i_o * 4:v_i_o * 4 + 4, 0:4])
            for i_1, j_1 in T.grid(4, 4):
                with T.block("C"):
                    v_i_i, v_j_1 = T.axis.remap("SS", [i_1, j_1])
                    T.reads(B[v_i_o, v_j_1, v_i_i])
                    T.writes(C[v_i_o * 4 + v_i_i, v_j_1])
                    C[v_i_o * 4 + v_i_i, v_j_1] = B[v_i_o, v_j_1, v_i_i] + T.float32(1)'''


# ---------------------------------------------------------------------------------------------
# IndexMap

def test_index_map_from_func():
    index_map = tir.IndexMap.from_func(lambda i, j: [i // 16, j, i % 16])
    assert str(index_map) == "lambda i, j: [i // 16, j, i % 16]"
    assert repr(index_map) == "IndexMap(lambda i, j: [i // 16, j, i % 16])"
    assert [v.name for v in index_map.initial_indices] == ["i", "j"]
    assert len(index_map.final_indices) == 3


def test_index_map_maps_indices():
    index_map = tir.IndexMap.from_func(lambda i, j: (i // 4, j * 3 - i))
    x = tir.Var("x", "int64")
    mapped = index_map.map_indices([5, x])
    assert mapped[0].value == 1
    assert str(mapped[1]) == "x * T.int64(3) - T.int64(5)"


@pytest.mark.parametrize("text, printed", [
    ("lambda i, j: [i // 8, j, i % 8]", "lambda i, j: [i // 8, j, i % 8]"),
    ("lambda i, j: (j, i)", "lambda i, j: [j, i]"),
    ("lambda i: i * 2 + 1", "lambda i: [i * 2 + 1]"),
    ("lambda i, j: (i + j, )", "lambda i, j: [i + j]"),
    ("lambda i, j: [-i // 2 - -3, (i + j) * 2 % 5, i - (j - 1)]",
     "lambda i, j: [-i // 2 - -3, (i + j) * 2 % 5, i - (j - 1)]"),
])
def test_index_map_text_round_trip(text, printed):
    index_map = tir.IndexMap.parse(text)
    assert str(index_map) == printed
    assert str(tir.IndexMap.parse(printed)) == printed
    # The text is Python: evaluated on integers it gives what the map gives.
    function = eval(printed)  # noqa: S307 - a literal of this test
    mapped = index_map.map_indices(list(range(3, 3 + len(index_map.initial_indices))))
    expected = function(*range(3, 3 + len(index_map.initial_indices)))
    assert [m.value for m in mapped] == list(expected)


@pytest.mark.parametrize("text, message", [
    ("lambda i, j: [i +, j]", "at position 17 of 'lambda i, j: [i +, j]': expected an index "
                              "expression, found ','"),
    ("lambda i, j: [i, k]", "'k' is not one of the map's indices"),
    ("lam i: i", "expected 'lambda'"),
    ("lambda i, i: [i]", "index 'i' is named twice"),
    ("lambda i: [i] extra", "unexpected text"),
])
def test_index_map_parse_errors(text, message):
    with pytest.raises(KilnValueError) as info:
        tir.IndexMap.parse(text)
    assert message in str(info.value)


def test_index_map_rejects_what_it_cannot_write():
    with pytest.raises(KilnValueError) as info:
        tir.IndexMap.from_func(lambda i, j: [i * 0.5, j])
    assert "is not a scalar integer; an index map uses + - * // % of its indices" in \
        str(info.value)
    n = tir.Var("n", "int32")
    with pytest.raises(KilnValueError) as info:
        tir.IndexMap.from_func(lambda i, j: [i + n, j])
    assert "uses variable 'n', which is not one of the map's indices" in str(info.value)
    with pytest.raises(KilnValueError) as info:
        tir.IndexMap.from_func(lambda *indices: indices)
    assert "parameter *indices is not a plain positional parameter" in str(info.value)


# ---------------------------------------------------------------------------------------------
# transform_layout

def test_transform_layout_of_a_parameter_golden():
    func = matmul(4, 8, 2)
    sch = tir.Schedule(func)
    sch.transform_layout(sch.get_block("C"), "B", lambda k, n: [n // 4, k, n % 4])
    assert script(sch) == MATMUL_PACKED_B
    assert 'index_map="lambda k, n: [n // 4, k, n % 4]"' in sch.trace.as_python()
    assert_trace_roundtrip(sch, func)


def test_transform_layout_of_a_parameter_computes_the_same_values():
    func = matmul(6, 8, 5)
    sch = tir.Schedule(func)
    sch.transform_layout(sch.get_block("C"), ("read", 1), lambda k, n: [n // 4, k, n % 4])
    a, b, c = random_args(func)
    expected = c.copy()
    tir.interpret(func, a, b, expected)
    packed = relayout(b, lambda k, n: (n // 4, k, n % 4), (2, 5, 4))
    actual = c.copy()
    tir.interpret(sch.mod["main"], a, packed, actual)
    np.testing.assert_allclose(actual, expected, rtol=1e-5)


def test_transform_layout_of_an_output_parameter():
    func = matmul()
    sch = tir.Schedule(func)
    sch.transform_layout(sch.get_block("C"), ("write", 0), lambda i, j: [j // 4, i, j % 4])
    a, b, c = random_args(func)
    expected = c.copy()
    tir.interpret(func, a, b, expected)
    actual = np.zeros((3, 16, 4), "float32")
    tir.interpret(sch.mod["main"], a, b, actual)
    np.testing.assert_allclose(actual, relayout(expected, lambda i, j: (j // 4, i, j % 4),
                                                (3, 16, 4)), rtol=1e-5)
    assert_trace_roundtrip(sch, func)


def test_transform_layout_of_a_cache_stage_packs_the_matrix():
    func = matmul(4, 8, 2)
    sch = tir.Schedule(func)
    cached = sch.cache_read(sch.get_block("C"), 1, "global")
    sch.transform_layout(cached, ("write", 0), lambda k, n: [n // 4, k, n % 4])
    assert script(sch) == PACKED_CACHE
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_transform_layout_of_an_intermediate():
    func = elementwise_chain()
    sch = tir.Schedule(func)
    sch.transform_layout(sch.get_block("B"), ("write", 0), lambda i, j: [i // 8, j, i % 8])
    text = script(sch)
    assert 'B = T.alloc_buffer((3, 10, 8), "float32")' in text
    assert "C[v_i_1, v_j_1] = B[v_i_1 // 8, v_j_1, v_i_1 % 8] + T.float32(1)" in text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_a_map_that_does_not_divide_an_allocated_buffer_pads_it():
    # A's rows packed by 6 (A micro-kernel's tile) though 6 does not divide 16: the copy is
    # (3, 8, 6), its last two rows of the last slice padding that nothing reads or writes.
    func = matmul(16, 12, 8)
    sch = tir.Schedule(func)
    packed = sch.cache_read(sch.get_block("C"), 0, "global")
    sch.transform_layout(packed, ("write", 0), lambda i, k: [i // 6, k, i % 6])
    text = script(sch)
    assert 'A_global = T.alloc_buffer((3, 8, 6), "float32")' in text
    assert "A_global[v0 // 6, v1, v0 % 6] = A[v0, v1]" in text
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)
    # Tiled by 6 rows too (a guarded last tile), built with LLVM.
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 6])
    ci, ck = sch.get_loops(packed)
    c0, c1 = sch.split(ci, factors=[None, 6])
    sch.reorder(c0, ck, c1)
    a, b = [np.random.default_rng(1).random(s, dtype=np.float32) for s in ((16, 8), (8, 12))]
    c = np.zeros((16, 12), np.float32)
    kiln.build(sch.mod)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_a_parameter_is_never_padded():
    sch = tir.Schedule(matmul(16, 12, 8))
    block = sch.get_block("C")
    assert_fails(sch, "NonBijectiveIndexMapError",
                 lambda: sch.transform_layout(block, "A", lambda i, k: [i // 6, k, i % 6]),
                 "is not a bijection over the shape (16, 8) of buffer A",
                 "the extent 16 of i is not divisible by 6")


def test_transform_layout_maps_regions_of_a_blockized_loop():
    func = elementwise_chain(8, 4)
    sch = tir.Schedule(func)
    i, _ = sch.get_loops(sch.get_block("C"))
    _, inner = sch.split(i, [None, 4])
    sch.blockize(inner)
    sch.transform_layout(sch.get_block("C"), "B", lambda i, j: [i // 4, j, i % 4])
    assert BLOCKIZED in script(sch)
    assert_same_results(func, sch.mod)
    assert_trace_roundtrip(sch, func)


def test_transform_layout_under_split_loops_and_transposes():
    func = matmul()
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    _, j, _ = sch.get_loops(block)
    sch.split(j, [None, 4])
    sch.transform_layout(block, ("write", 0), lambda i, j: [j, i])
    sch.transform_layout(block, ("read", 0), lambda i, k: [i * 8 + k])
    text = script(sch)
    assert 'A: T.Buffer((128,), "float32")' in text
    assert "C[v_j, v_i] = C[v_j, v_i] + A[v_i * 8 + v_k] * B[v_k, v_j]" in text
    a, b, c = random_args(func)
    expected = c.copy()
    tir.interpret(func, a, b, expected)
    actual = np.zeros((12, 16), "float32")
    tir.interpret(sch.mod["main"], a.reshape(128), b, actual)
    np.testing.assert_allclose(actual, expected.T, rtol=1e-5)
    assert_trace_roundtrip(sch, func)


def test_transform_layout_of_a_symbolic_shape():
    func = symbolic_row_sum()
    sch = tir.Schedule(func)
    sch.transform_layout(sch.get_block("B"), "A", lambda i, j: [j // 4, i, j % 4])
    text = script(sch)
    assert 'A: T.Buffer((4, n, 4), "float32")' in text
    assert "B[v_i] = B[v_i] + A[v_k // 4, v_i, v_k % 4]" in text
    a, b = random_args(func)
    expected = b.copy()
    tir.interpret(func, a, expected)
    actual = b.copy()
    tir.interpret(sch.mod["main"], relayout(a, lambda i, j: (j // 4, i, j % 4), (4, 5, 4)),
                  actual)
    np.testing.assert_allclose(actual, expected, rtol=1e-5)
    assert_trace_roundtrip(sch, func)


def test_transform_layout_accepts_an_index_map_or_its_text():
    func = elementwise_chain()
    by_text = tir.Schedule(func)
    by_text.transform_layout(by_text.get_block("B"), ["write", 0], "lambda i, j: [j, i]")
    by_map = tir.Schedule(func)
    by_map.transform_layout(by_map.get_block("B"), ("write", 0),
                            tir.IndexMap.from_func(lambda a, b: (b, a)))
    kiln.ir.assert_structural_equal(by_text.mod, by_map.mod)


def test_transform_layout_errors():
    sch = tir.Schedule(matmul())
    block = sch.get_block("C")
    assert_fails(sch, "BufferIndexOutOfRangeError",
                 lambda: sch.transform_layout(block, ("read", 5), lambda i, j: [j, i]),
                 "transform_layout: read buffer index 5 is out of range: block 'C' reads 2 "
                 "buffer(s) (A, B)")
    assert_fails(sch, "BufferNotFoundError",
                 lambda: sch.transform_layout(block, "Z", lambda i, j: [j, i]),
                 "block 'C' accesses no buffer named 'Z' (it accesses A, B, C)")
    assert_fails(sch, "InvalidIndexMapError",
                 lambda: sch.transform_layout(block, "A", lambda i: [i]),
                 "index map 'lambda i: [i]' takes 1 index, but buffer A has 2 dimension(s)")
    assert_fails(sch, "NonBijectiveIndexMapError",
                 lambda: sch.transform_layout(block, "A", lambda i, j: [i // 2, j]),
                 "index map 'lambda i, j: [i // 2, j]' is not a bijection over the shape (16, 8) "
                 "of buffer A")
    assert_fails(sch, "NonBijectiveIndexMapError",
                 lambda: sch.transform_layout(block, "A", lambda i, j: [i // 5, j, i % 5]),
                 "the extent 16 of i is not divisible by 5")
    assert_fails(sch, "NonBijectiveIndexMapError",
                 lambda: sch.transform_layout(block, "A", lambda i, j: [i + 1, j]),
                 "final index 0 of index map 'lambda i, j: [i + 1, j]' ranges over [1, 16] on "
                 "the shape (16, 8) of buffer A; the new indices must start at 0")


def test_transform_layout_argument_errors():
    sch = tir.Schedule(matmul())
    block = sch.get_block("C")
    with pytest.raises(KilnValueError) as info:
        sch.transform_layout(block, ("foo", 0), lambda i, j: [j, i])
    assert ('Schedule.transform_layout: buffer must be ("read" or "write", index) or a buffer '
            'name (str), found ("foo", …)') in str(info.value)
    with pytest.raises(kiln.error.KilnTypeError) as info:
        sch.transform_layout(block, "A", 3)
    assert "index_map must be an IndexMap, a function such as lambda i, j: [i // 16, j, i % 16]" \
        in str(info.value)
    assert len(sch.trace) == 1
