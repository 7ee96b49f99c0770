"""The IR printer seen from Python: str/repr of nodes, PrimFunc.script()/show(),
IRModule.script(), and the exact text of a matmul made by te.create_prim_func."""
import kiln
from kiln import te, tir

MATMUL_SCRIPT = '''# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    for i, j, k in T.grid(128, 128, 128):
        with T.block("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            T.reads(A[v_i, v_k], B[v_k, v_j])
            T.writes(C[v_i, v_j])
            with T.init():
                C[v_i, v_j] = T.float32(0)
            C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]'''


def matmul_func(n=128):
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def test_str_of_a_function_is_its_script():
    func = matmul_func()
    assert str(func) == MATMUL_SCRIPT
    assert func.script() == MATMUL_SCRIPT
    assert repr(func) == MATMUL_SCRIPT


def test_script_takes_a_function_name():
    assert matmul_func().script(name="mm").splitlines()[2].startswith("def mm(A: T.Buffer(")


def test_show_prints_the_script(capsys):
    func = matmul_func()
    func.show()
    assert capsys.readouterr().out == MATMUL_SCRIPT + "\n"


def test_symbolic_dimension_is_declared_at_the_top():
    n = te.var("n")
    X = te.placeholder((n,), "float32", name="X")
    Y = te.compute((n,), lambda i: te.exp(X[i]) / 2.0, name="Y")
    lines = te.create_prim_func([X, Y]).script().splitlines()
    assert lines[2] == 'def main(X: T.Buffer((n,), "float32"), Y: T.Buffer((n,), "float32")):'
    assert lines[4] == "    n = T.int32()"
    assert lines[-1] == "            Y[v_i] = T.exp(X[v_i]) / T.float32(2)"


def test_expression_repr_is_short_inline_text():
    x = tir.Var("x")
    y = tir.Var("y", "int64")
    assert repr(x * 2 + 1) == "x * 2 + 1"
    assert str((x + 1) * 3) == "(x + 1) * 3"
    assert repr(x < 3) == "x < 3"
    assert repr(x // 4 - x % 4) == "x // 4 - x % 4"
    assert repr(y + 1) == "y + T.int64(1)"
    assert repr(tir.FloatImm("float32", 0.1)) == "T.float32(0.1)"
    assert repr(tir.StringImm('a "b"')) == '"a \\"b\\""'


def test_statements_and_buffers_print_as_script():
    func = matmul_func(4)
    assert str(func.body).splitlines()[0] == 'with T.block("root"):'
    buffer = func.buffer_map[func.params[0]]
    assert str(buffer) == 'A: T.Buffer((4, 4), "float32")'


def test_module_script_lists_functions_by_name(capsys):
    mod = kiln.IRModule({"second": matmul_func(4), "first": matmul_func(8)})
    text = mod.script()
    assert text.splitlines()[:5] == [
        "# from kiln.script import ir as I",
        "# from kiln.script import tir as T",
        "@I.ir_module",
        "class Module:",
        "    @T.prim_func",
    ]
    assert text.index("def first(") < text.index("def second(")
    assert str(mod) == text
    mod.show()
    assert capsys.readouterr().out == text + "\n"


def test_duplicate_names_are_made_unique_in_the_text_only():
    A1 = te.placeholder((4,), "float32", name="A")
    A2 = te.placeholder((4,), "float32", name="A")
    B = te.compute((4,), lambda i: A1[i] + A2[i], name="B")
    func = te.create_prim_func([A1, A2, B])
    text = func.script()
    assert 'def main(A: T.Buffer((4,), "float32"), A_1: T.Buffer((4,), "float32"),' in text
    assert "B[v_i] = A[v_i] + A_1[v_i]" in text
    assert [b.name for b in func.buffer_map.values()] == ["A", "A", "B"]
