"""The kind of a runtime error decides its Python class, from the C runtime API's error code (not
from the message): value -> KilnValueError, type -> KilnTypeError, index -> KilnIndexError, a
module file or a module that cannot run -> KilnRuntimeError. Also the range check of symbolic
dimensions against their dtype and of shapes whose size overflows, shown with views of huge
extent over a few bytes (nothing large is allocated)."""
import numpy as np
import pytest

import kiln
from kiln import te

from runtime_helpers import CountingProducer, add_one, vector_add


@pytest.fixture(scope="module")
def rt_add():
    return kiln.build(add_one(64))


def test_argument_count_is_a_type_error(rt_add):
    with pytest.raises(kiln.KilnTypeError, match="main: expected 2 arguments, found 1"):
        rt_add(np.zeros(64, "float32"))


def test_dtype_is_a_type_error(rt_add):
    with pytest.raises(kiln.KilnTypeError,
                       match="main: argument A: expected dtype float32, found float64"):
        rt_add(np.zeros(64), np.zeros(64, "float32"))


def test_scalar_for_a_tensor_is_a_type_error(rt_add):
    with pytest.raises(kiln.KilnTypeError, match="main: argument A: expected a tensor"):
        rt_add(1.5, np.zeros(64, "float32"))


def test_shape_is_a_value_error(rt_add):
    with pytest.raises(kiln.KilnValueError,
                       match="main: argument A: dimension 0: expected 64, found 63"):
        rt_add(np.zeros(63, "float32"), np.zeros(64, "float32"))


def test_layout_is_a_value_error(rt_add):
    with pytest.raises(kiln.KilnValueError, match="expected a compact row-major tensor"):
        rt_add(np.zeros(128, "float32")[::2], np.zeros(64, "float32"))


def test_missing_function_is_an_index_error(rt_add):
    with pytest.raises(kiln.KilnIndexError, match="no function 'nope'"):
        rt_add["nope"]


def test_module_files_that_cannot_load_are_runtime_errors(tmp_path):
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"\x7fELF but not really")
    with pytest.raises(kiln.KilnRuntimeError, match="junk.so: truncated"):
        kiln.runtime.load_module(junk)
    with pytest.raises(kiln.KilnRuntimeError, match="missing.so: cannot open: No such file"):
        kiln.runtime.load_module(tmp_path / "missing.so")


def test_classes_do_not_depend_on_the_message(rt_add):
    # A dimension error whose message mentions "expected dtype" stays a value error: the class
    # comes from the runtime's error code.
    n = te.var("expected dtype")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    rt = kiln.build(te.create_prim_func([A, B]))
    with pytest.raises(kiln.KilnValueError, match="expected dtype = 3"):
        rt(np.zeros(3, "float32"), np.zeros(4, "float32"))


def huge_view(extent, dtype="int8"):
    """A writable view of `extent` elements over one element (stride 0): its shape is huge, its
    memory one element."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), shape=(extent,), strides=(0,),
                                           writeable=True)


def test_symbolic_dimension_beyond_int32_is_refused():
    # n is an int32 variable: with 3e9 elements the kernel's indices would wrap.
    n = te.var("n", "int32")
    A = te.placeholder((n,), "int8", name="A")
    B = te.compute((n,), lambda i: A[i] + te.const(1, "int8"), name="B")
    rt = kiln.build(te.create_prim_func([A, B]))
    spec = rt["main"].spec
    assert spec["sym_vars"] == ["n"] and spec["sym_var_dtypes"] == ["int32"]
    a = np.broadcast_to(np.zeros(1, "int8"), (3_000_000_000,))
    with pytest.raises(kiln.KilnValueError,
                       match="main: symbolic dimension n = 3000000000 of argument A does not fit "
                             "int32 \\(the function computes with n as int32, whose values are "
                             "-2147483648 to 2147483647\\)"):
        rt(a, huge_view(3_000_000_000))
    # The process goes on; a small call works.
    out = np.zeros(5, "int8")
    rt(np.arange(5, dtype="int8"), out)
    np.testing.assert_array_equal(out, np.arange(5) + 1)


def test_symbolic_dimension_at_the_end_of_int32_passes_the_range_check():
    # 2^31 - 1 fits: the call gets past the range check and is refused only for the layout of
    # the stride-0 view (no kernel runs on it).
    rt = kiln.build(vector_add())
    view = np.broadcast_to(np.zeros(1, "float32"), (2**31 - 1,))
    with pytest.raises(kiln.KilnValueError, match="expected a compact row-major tensor"):
        rt(view, view, huge_view(2**31 - 1, "float32"))


def test_shape_whose_size_overflows_is_refused():
    # A tensor of shape (2^31, 2^31, 2^31), described by a DLPack producer without data (NumPy
    # refuses to make such a view): more than 2^63 elements.
    A = te.placeholder((te.var("a", "int64"), te.var("b", "int64"), te.var("c", "int64")),
                       name="A")
    B = te.compute(A.shape, lambda i, j, k: A[i, j, k], name="B")
    rt = kiln.build(te.create_prim_func([A, B]))
    big = 2**31
    producer = CountingProducer(shape=(big, big, big))
    with pytest.raises(kiln.KilnValueError,
                       match="main: argument A: the shape \\(2147483648, 2147483648, 2147483648\\) "
                             "has more than 2\\^63 - 1 elements"):
        rt(producer, CountingProducer(shape=(big, big, big)))
    assert producer.deleted == 1


def test_nd_array_whose_size_overflows_is_refused():
    with pytest.raises(kiln.KilnValueError, match="would have more than 2\\^64 bytes"):
        kiln.nd.empty((2**40, 2**40), "float32")
