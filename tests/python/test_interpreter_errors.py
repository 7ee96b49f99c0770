"""Errors of kiln.tir.interpret: each raises a kiln exception whose message names
tir.interpret, the argument or object, what was expected and what was found."""
import numpy as np
import pytest

import kiln
from kiln import te, tir


def copy_func(shape=(4,), dtype="float32"):
    A = te.placeholder(shape, dtype, name="A")
    B = te.compute(shape, lambda *i: A[i], name="B")
    return te.create_prim_func([A, B])


def test_wrong_argument_count():
    with pytest.raises(kiln.KilnIndexError,
                       match=r"tir.interpret: function main takes 2 arguments \(A, B\), found 1"):
        tir.interpret(copy_func(), np.zeros(4, np.float32))


def test_wrong_dtype():
    with pytest.raises(kiln.KilnTypeError,
                       match=r"tir.interpret: argument 1 \(buffer B\): expected an array of dtype "
                             r"float32, found dtype float64"):
        tir.interpret(copy_func(), np.zeros(4, np.float32), np.zeros(4))


def test_wrong_ndim():
    with pytest.raises(kiln.KilnValueError,
                       match=r"argument 0 \(buffer A\): expected 1 dimension, found 2 "
                             r"\(shape \(2, 2\)\)"):
        tir.interpret(copy_func(), np.zeros((2, 2), np.float32), np.zeros(4, np.float32))


def test_wrong_shape():
    with pytest.raises(kiln.KilnValueError,
                       match=r"argument 1 \(buffer B\): expected shape \(4\), so dimension 0 = 4, "
                             r"found shape \(5,\)"):
        tir.interpret(copy_func(), np.zeros(4, np.float32), np.zeros(5, np.float32))


def test_inconsistent_symbolic_dimension():
    n = te.var("n")
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i], name="B")
    with pytest.raises(kiln.KilnValueError,
                       match=r"argument 1 \(buffer B\): dimension 0 of buffer B is n = 3 \(bound by "
                             r"dimension 0 of buffer A\), found 4"):
        tir.interpret(te.create_prim_func([A, B]), np.zeros(3, np.float32),
                      np.zeros(4, np.float32))


def test_non_contiguous_array():
    a = np.zeros(8, np.float32)[::2]
    with pytest.raises(kiln.KilnValueError,
                       match=r"argument 0 \(buffer A\): expected a C-contiguous array \(the buffer "
                             r"has no strides\), found strides \(2,\)"):
        tir.interpret(copy_func(), a, np.zeros(4, np.float32))


def test_negative_strides():
    a = np.zeros(4, np.float32)[::-1]
    with pytest.raises(kiln.KilnValueError, match=r"arrays with negative strides are not supported"):
        tir.interpret(copy_func(), a, np.zeros(4, np.float32))


def test_read_only_output():
    b = np.zeros(4, np.float32)
    b.setflags(write=False)
    with pytest.raises(kiln.KilnValueError,
                       match=r"argument 1 \(buffer B\): the function stores into this buffer but "
                             r"the array is read-only"):
        tir.interpret(copy_func(), np.zeros(4, np.float32), b)


def test_read_only_input_is_accepted():
    a = np.arange(4, dtype=np.float32)
    a.setflags(write=False)
    b = np.zeros(4, np.float32)
    tir.interpret(copy_func(), a, b)
    np.testing.assert_array_equal(a, b)


def test_argument_that_is_not_an_array():
    with pytest.raises(kiln.KilnTypeError,
                       match=r"tir.interpret: argument 0 \(buffer A\): expected a NumPy array or a "
                             r"number, found an object of type list"):
        tir.interpret(copy_func(), [0.0] * 4, np.zeros(4, np.float32))


def test_unsupported_array_dtype():
    with pytest.raises(kiln.KilnTypeError,
                       match=r"argument 0 \(buffer A\): arrays of dtype complex64 are not supported"):
        tir.interpret(copy_func(), np.zeros(4, np.complex64), np.zeros(4, np.float32))


def test_scalar_where_an_array_is_expected():
    with pytest.raises(kiln.KilnTypeError,
                       match=r"argument 0 \(buffer A\): expected an array of dtype float32, found a "
                             r"scalar"):
        tir.interpret(copy_func(), 1.0, np.zeros(4, np.float32))


def test_scalar_parameter_checks():
    s = te.var("s", "int8")
    A = te.placeholder((2,), "int8", name="A")
    B = te.compute((2,), lambda i: A[i] + s, name="B")
    func = te.create_prim_func([A, B, s])
    a, b = np.zeros(2, np.int8), np.zeros(2, np.int8)
    with pytest.raises(kiln.KilnValueError,
                       match=r"argument 2 \(scalar s\): the value 300 does not fit in dtype int8"):
        tir.interpret(func, a, b, 300)
    with pytest.raises(kiln.KilnTypeError,
                       match=r"argument 2 \(scalar s\): expected an integer of dtype int8, found "
                             r"the float 1.5"):
        tir.interpret(func, a, b, 1.5)


def test_not_a_function():
    with pytest.raises(kiln.KilnTypeError,
                       match=r"tir.interpret: func must be a PrimFunc, an IRModule or a "
                             r"tir.Schedule, found an object of type int"):
        tir.interpret(3)


def test_out_of_bounds_load():
    A = te.placeholder((4,), "float32", name="A")
    B = te.compute((4,), lambda i: A[i + 1], name="B")
    with pytest.raises(kiln.KilnIndexError,
                       match=r"tir.interpret: out-of-bounds load from buffer A: index \[4\] is "
                             r"element 4 of its storage, which has 4 elements"):
        tir.interpret(te.create_prim_func([A, B]), np.zeros(4, np.float32),
                      np.zeros(4, np.float32))


def test_integer_division_by_zero():
    A = te.placeholder((2,), "int32", name="A")
    B = te.compute((2,), lambda i: A[i] // A[1 - i], name="B")
    a = np.array([6, 0], np.int32)
    with pytest.raises(kiln.error.KilnRuntimeError,
                       match=r"tir.interpret: integer division by zero in A\[v_i\] // A\[1 - v_i\]"):
        tir.interpret(te.create_prim_func([A, B]), a, np.zeros(2, np.int32))


def test_big_endian_array():
    a = np.zeros(4, ">f4")
    with pytest.raises(kiln.KilnTypeError,
                       match=r"argument 0 \(buffer A\): arrays in big-endian byte order \(float32\) "
                             r"are not supported"):
        tir.interpret(copy_func(), a, np.zeros(4, np.float32))


def test_stride_that_is_not_a_whole_number_of_elements():
    raw = np.zeros(32, np.uint8)
    a = np.lib.stride_tricks.as_strided(raw.view(np.float32), shape=(4,), strides=(6,))
    with pytest.raises(kiln.KilnValueError,
                       match=r"argument 0 \(buffer A\): stride 6 bytes of dimension 0 is not a "
                             r"multiple of the element size 4"):
        tir.interpret(copy_func(), a, np.zeros(4, np.float32))


def test_integer_scalar_beyond_64_bits():
    s = te.var("s", "int64")
    A = te.placeholder((2,), "int64", name="A")
    B = te.compute((2,), lambda i: A[i] + s, name="B")
    with pytest.raises(kiln.KilnValueError,
                       match=r"argument 2 \(scalar s\): the integer 1180591620717411303424 does "
                             r"not fit in 64 bits"):
        tir.interpret(te.create_prim_func([A, B, s]), np.zeros(2, np.int64),
                      np.zeros(2, np.int64), 2**70)
