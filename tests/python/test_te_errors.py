"""Error cases of kiln.te: each raises a kiln.KilnError subclass whose message names the API, the
object, what was expected and what was found."""
import pytest

import kiln
from kiln import te, tir


def placeholder2d():
    return te.placeholder((4, 8), name="A")


def test_wrong_index_arity():
    A = placeholder2d()
    i = te.var("i")
    with pytest.raises(kiln.KilnIndexError,
                       match=r"Tensor.__getitem__: tensor A has 2 dimensions but 1 index was given"):
        te.compute((4,), lambda i: A[i], name="B")
    with pytest.raises(kiln.KilnIndexError, match=r"3 indices were given"):
        A[i, i, i]


def test_chained_indexing_is_explained():
    A = placeholder2d()
    with pytest.raises(kiln.KilnIndexError, match=r"index every dimension at once, as in A\[i, j\]"):
        A[0][1]


def test_float_index():
    A = placeholder2d()
    with pytest.raises(kiln.KilnTypeError,
                       match=r"index 1 of tensor A must be an integer, found the Python float 0.5"):
        A[0, 0.5]
    x = te.var("x", "float32")
    with pytest.raises(kiln.KilnTypeError,
                       match=r"index 0 of tensor A must be an integer expression, found dtype "
                             r"float32"):
        A[x, 0]


def test_slice_index():
    A = placeholder2d()
    with pytest.raises(kiln.KilnTypeError, match=r"index 0 of tensor A is a slice"):
        A[0:2, 1]


def test_tensor_is_not_iterable():
    A = te.placeholder((4,), name="A")
    with pytest.raises(kiln.KilnTypeError, match=r"te.Tensor: tensor A is not iterable"):
        list(A)


def test_reduce_axis_used_outside_a_reducer():
    A = placeholder2d()
    k = te.reduce_axis((0, 8), name="k")
    with pytest.raises(kiln.KilnValueError,
                       match=r"te.compute: compute B uses reduce axis k outside a reduction"):
        te.compute((4,), lambda i: A[i, k], name="B")


def test_reduce_axis_not_in_the_reduction_axis_list():
    A = placeholder2d()
    k = te.reduce_axis((0, 8), name="k")
    r = te.reduce_axis((0, 4), name="r")
    with pytest.raises(kiln.KilnValueError,
                       match=r"compute B uses reduce axis r in a reduction that is not over it"):
        te.compute((1,), lambda i: te.sum(A[r, k], axis=k), name="B")


def test_reduction_nested_in_arithmetic():
    A = placeholder2d()
    k = te.reduce_axis((0, 8), name="k")
    with pytest.raises(kiln.KilnValueError,
                       match=r"te.compute: compute B has a reduction inside an expression \(the "
                             r"body's top node is Mul\); a reduction must be the whole body"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) * 2.0, name="B")


def test_reduction_nested_in_a_reduction():
    A = placeholder2d()
    k = te.reduce_axis((0, 8), name="k")
    r = te.reduce_axis((0, 4), name="r")
    with pytest.raises(kiln.KilnValueError,
                       match=r"te.sum: the reduced expression contains another reduction"):
        te.sum(te.max(A[r, k], axis=k), axis=r)


def test_sum_of_bools():
    A = te.placeholder((8,), "bool", name="A")
    k = te.reduce_axis((0, 8), name="k")
    with pytest.raises(kiln.KilnTypeError,
                       match=r"te.sum: cannot reduce a bool expression arithmetically; convert "
                             r"it first"):
        te.sum(A[k], axis=k)


def test_if_then_else_arms_that_cannot_be_promoted():
    a = te.var("a", "float16")
    b = te.var("b", "bfloat16")
    with pytest.raises(kiln.KilnTypeError,
                       match=r"if_then_else: operands of dtype float16 and bfloat16 cannot be "
                             r"combined"):
        te.if_then_else(a > 0, a, b)


def test_where_must_be_a_bool():
    A = placeholder2d()
    k = te.reduce_axis((0, 8), name="k")
    with pytest.raises(kiln.KilnTypeError,
                       match=r"te.sum: where must be a bool condition, found an expression of "
                             r"dtype float32"):
        te.sum(A[0, k], axis=k, where=A[1, k])


def test_reducer_axis_must_be_a_reduce_axis():
    A = placeholder2d()
    with pytest.raises(kiln.KilnTypeError,
                       match=r"te.sum: axis must be a reduce axis \(te.reduce_axis\) or a list of "
                             r"them, found an object of type int"):
        te.sum(A[0, 0], axis=3)
    B = te.compute((4,), lambda i: A[i, 0], name="B")
    with pytest.raises(kiln.KilnValueError,
                       match=r"te.sum: axis i is a spatial axis; reduce over axes made by "
                             r"te.reduce_axis"):
        te.sum(A[0, 0], axis=B.op.axis[0])


@pytest.mark.parametrize("shape", [(4, 0), (-2,)])
def test_non_positive_placeholder_extent(shape):
    with pytest.raises(kiln.KilnValueError,
                       match=r"te.placeholder: dimension \d of A has extent -?\d+; extents must be "
                             r"positive"):
        te.placeholder(shape, name="A")


def test_non_positive_compute_extent():
    with pytest.raises(kiln.KilnValueError,
                       match=r"te.compute: dimension 0 of B has extent 0; extents must be positive"):
        te.compute((0,), lambda i: i, name="B")


def test_empty_reduce_axis_range():
    with pytest.raises(kiln.KilnValueError,
                       match=r"te.reduce_axis: axis k has the empty range \[3, 3\) \(extent 0\)"):
        te.reduce_axis((3, 3), name="k")
    with pytest.raises(kiln.KilnValueError, match=r"axis r has the empty range \[0, -2\)"):
        te.reduce_axis(tir.Range(0, -2), name="r")


def test_reduce_axis_dom_type():
    with pytest.raises(kiln.KilnTypeError,
                       match=r"te.reduce_axis: dom must be a \(begin, end\) tuple or a tir.Range, "
                             r"found an object of type int"):
        te.reduce_axis(8, name="k")


def test_float_shape():
    with pytest.raises(kiln.KilnTypeError,
                       match=r"te.placeholder: dimension 0 of the shape must be an integer, found "
                             r"dtype float32"):
        te.placeholder((2.5,), name="A")


def test_wrong_fcompute_arity():
    A = placeholder2d()
    with pytest.raises(kiln.KilnIndexError,
                       match=r"te.compute: fcompute of compute B takes 1 argument \(i\) but the "
                             r"shape has 2 dimensions"):
        te.compute((4, 8), lambda i: A[i, 0], name="B")


def test_fcompute_must_be_callable():
    with pytest.raises(kiln.KilnTypeError,
                       match=r"te.compute: fcompute of compute B must be callable"):
        te.compute((4,), 3, name="B")


def test_fcompute_returning_a_tensor():
    A = te.placeholder((4,), name="A")
    with pytest.raises(kiln.KilnTypeError,
                       match=r"te.compute: the value returned by fcompute must be an expression or "
                             r"a number, found an object of type Tensor"):
        te.compute((4,), lambda i: A, name="B")


def test_create_prim_func_with_a_non_tensor():
    A = te.placeholder((4,), name="A")
    with pytest.raises(kiln.KilnTypeError,
                       match=r"te.create_prim_func: argument 1 must be a te.Tensor \(or a tir.Var "
                             r"for a scalar parameter\), found an object of type int"):
        te.create_prim_func([A, 3])
    with pytest.raises(kiln.KilnTypeError,
                       match=r"te.create_prim_func: expected a list of tensors, found an object of "
                             r"type Tensor"):
        te.create_prim_func(A)


def test_create_prim_func_with_a_missing_input():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(kiln.KilnValueError,
                       match=r"te.create_prim_func: tensor A is an input of compute B but is not in "
                             r"the argument list"):
        te.create_prim_func([B])


def test_create_prim_func_with_an_unbound_variable():
    A = te.placeholder((4,), name="A")
    alpha = te.var("alpha", "float32")
    B = te.compute((4,), lambda i: A[i] * alpha, name="B")
    with pytest.raises(kiln.KilnValueError,
                       match=r"te.create_prim_func: variable alpha used in compute B is not bound"):
        te.create_prim_func([A, B])


def test_create_prim_func_with_a_repeated_tensor():
    A = te.placeholder((4,), name="A")
    with pytest.raises(kiln.KilnValueError,
                       match=r"te.create_prim_func: tensor A is given twice \(argument 1\)"):
        te.create_prim_func([A, A])


def test_comm_reducer_with_wrong_component_count():
    A = placeholder2d()
    k = te.reduce_axis((0, 8), name="k")
    bad = te.comm_reducer(lambda x, y: (x + y, x), lambda t: te.const(0, t), name="bad")
    with pytest.raises(kiln.KilnIndexError,
                       match=r"te.comm_reducer bad: fcombine must return 1 value \(one per reduced "
                             r"component\), found 2"):
        bad(A[0, k], axis=k)


def test_comm_reducer_with_a_result_of_another_dtype():
    A = placeholder2d()
    k = te.reduce_axis((0, 8), name="k")
    bad = te.comm_reducer(lambda x, y: (x + y).astype("float64"), lambda t: te.const(0.0, t),
                          name="wide")
    with pytest.raises(kiln.KilnTypeError,
                       match=r"te.comm_reducer wide: component 0 of fcombine's result has dtype "
                             r"float64 but the reduced values have dtype float32"):
        bad(A[0, k], axis=k)


def test_tuple_reduction_returning_one_component():
    A = placeholder2d()
    k = te.reduce_axis((0, 8), name="k")
    pair = te.comm_reducer(lambda x, y: (x[0] + y[0], x[1] + y[1]),
                           lambda t0, t1: (te.const(0, t0), te.const(0, t1)), name="pair")
    with pytest.raises(kiln.KilnValueError,
                       match=r"te.compute: compute B returns 1 reduction of a reducer with 2 "
                             r"components"):
        te.compute((4,), lambda i: pair((A[i, k], A[i, k]), axis=k)[0], name="B")


def test_expression_truth_value():
    i = te.var("i")
    with pytest.raises(kiln.KilnTypeError, match=r"has no Python truth value"):
        te.compute((4,), lambda i: 1.0 if i > 2 else 0.0, name="B")


def test_errors_leave_the_process_usable():
    A = placeholder2d()
    for _ in range(3):
        with pytest.raises(kiln.KilnError):
            A[0]
    assert A[0, 0].buffer.same_as(A.buffer)


def test_integer_literal_that_does_not_fit_its_dtype():
    # 300 does not fit int8: an error, never a wrapped T.int8(44).
    Z = te.placeholder((8,), "int8", name="Z")
    with pytest.raises(kiln.KilnValueError,
                       match=r"the literal 300 does not fit int8, the dtype of the other operand "
                             r"\(its range is \[-128, 127\]\); cast the operand to a wider type"):
        te.compute((8,), lambda x: Z[x] * 300, name="B")
    # What fits stays a constant of the operand's dtype.
    B = te.compute((8,), lambda x: Z[x] * -128, name="B")
    assert "T.int8(-128)" in str(te.create_prim_func([Z, B]))
    U = te.placeholder((8,), "uint8", name="U")
    with pytest.raises(kiln.KilnValueError, match=r"the literal -1 does not fit uint8"):
        te.compute((8,), lambda x: U[x] + -1, name="C")


def test_constants_out_of_range_in_te_and_ir_constructors():
    with pytest.raises(kiln.KilnValueError,
                       match=r"te.const: the value 300 does not fit int8 \(its range is "
                             r"\[-128, 127\]\)"):
        te.const(300, "int8")
    with pytest.raises(kiln.KilnValueError, match=r"te.const: the value -1 does not fit uint64"):
        te.const(-1, "uint64")
    with pytest.raises(kiln.KilnValueError,
                       match=r"tir.IntImm: the value 2147483648 does not fit int32"):
        tir.IntImm("int32", 2 ** 31)
    assert te.const(2 ** 31).dtype == "int64"
    assert te.const(255, "uint8").value == 255


def test_constant_folding_of_index_types_does_not_wrap():
    big = te.const(2 ** 31 - 1, "int32")
    with pytest.raises(kiln.KilnValueError,
                       match=r"constant folding: 2147483647 \+ 1 = 2147483648 does not fit int32 "
                             r"\(its range is \[-2147483648, 2147483647\]\); compute it in int64"):
        big + 1
    # Narrow and unsigned data types wrap, as their arithmetic does at run time.
    assert (te.const(250, "uint8") + 10).value == 4
