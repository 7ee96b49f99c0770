"""Overlapping arguments: a call behaves as if every input were read before any output was
written, as NumPy does with an `out=` array that overlaps an input. The runtime copies the inputs
that overlap an output for the call, and refuses outputs that overlap each other. Each expected
result is computed by NumPy on copies."""
import numpy as np
import pytest

import kiln
from kiln import te


def transpose_add_one(n):
    """B = A^T + 1 over float32[n, n]."""
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[j, i] + 1.0, name="B")
    return te.create_prim_func([A, B])


def neighbour_sum(n):
    """B[i] = A[i] + A[i + 1]: B has n elements, A n + 1."""
    A = te.placeholder((n + 1,), name="A")
    B = te.compute((n,), lambda i: A[i] + A[i + 1], name="B")
    return te.create_prim_func([A, B])


def two_outputs(n):
    """B = A + 1 and C = 2 A."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((n,), lambda i: A[i] * 2.0, name="C")
    return te.create_prim_func([A, B, C])


def unaligned(array):
    """A copy of `array` whose data sits one byte past an element boundary (flags.aligned is
    False), so that the call stages it through an aligned copy."""
    raw = np.zeros(array.nbytes + 1, np.uint8)
    view = raw[1:].view(array.dtype).reshape(array.shape)
    view[...] = array
    assert view.ctypes.data % array.itemsize != 0
    return view


@pytest.fixture(scope="module")
def rt_transpose():
    return kiln.build(transpose_add_one(16))


def test_the_manifest_says_which_arguments_are_written(rt_transpose):
    written = [arg["written"] for arg in rt_transpose["main"].spec["args"]]
    assert written == [False, True]


def test_transpose_in_place(rt_transpose):
    a = np.arange(256, dtype="float32").reshape(16, 16)
    expected = a.T + 1
    rt_transpose(a, a)
    np.testing.assert_array_equal(a, expected)


def test_elementwise_in_place():
    A = te.placeholder((1000,), name="A")
    B = te.compute((1000,), lambda i: A[i] * 2.0 + 1.0, name="B")
    rt = kiln.build(te.create_prim_func([A, B]))
    a = np.linspace(-3, 3, 1000, dtype="float32")
    expected = a * 2 + 1
    rt(a, a)
    np.testing.assert_array_equal(a, expected)


@pytest.mark.parametrize("shift", [0, 1, 2, 7])
def test_overlapping_slices_of_one_array(shift):
    # A = buf[0:65] and B = buf[shift:shift + 64]: NumPy views at different offsets.
    rt = kiln.build(neighbour_sum(64))
    buf = np.arange(80, dtype="float32") ** 2
    a_before = buf[0:65].copy()
    expected = buf.copy()
    expected[shift:shift + 64] = a_before[:-1] + a_before[1:]
    rt(buf[0:65], buf[shift:shift + 64])
    np.testing.assert_array_equal(buf, expected)


def test_output_before_input_in_place():
    # The written argument comes first: B(out), A(in), called with the same array twice.
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[63 - i] * 3.0, name="B")
    rt = kiln.build(te.create_prim_func([B, A]))
    x = np.arange(64, dtype="float32")
    expected = x[::-1] * 3
    rt(x, x)
    np.testing.assert_array_equal(x, expected)


def test_staged_arrays_in_place():
    # Unaligned arrays are staged through aligned copies; in place, the result is still NumPy's,
    # whichever argument comes first.
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[63 - i] + 1.0, name="B")
    for params in ([A, B], [B, A]):
        rt = kiln.build(te.create_prim_func(params))
        x = unaligned(np.arange(64, dtype="float32"))
        expected = x[::-1] + 1
        rt(x, x)
        np.testing.assert_array_equal(x, expected)


def test_inputs_that_overlap_only_each_other_are_fine():
    A = te.placeholder((32,), name="A")
    B = te.placeholder((32,), name="B")
    C = te.compute((32,), lambda i: A[i] - B[i] * 2.0, name="C")
    rt = kiln.build(te.create_prim_func([A, B, C]))
    buf = np.arange(40, dtype="float32")
    out = np.zeros(32, "float32")
    rt(buf[0:32], buf[8:40], out)
    np.testing.assert_array_equal(out, buf[0:32] - buf[8:40] * 2)


def test_overlapping_outputs_are_refused():
    rt = kiln.build(two_outputs(16))
    a = np.arange(16, dtype="float32")
    buf = np.zeros(20, "float32")
    with pytest.raises(kiln.KilnValueError,
                       match="main: arguments B and C overlap in memory and the function writes "
                             "both; pass separate arrays"):
        rt(a, buf[0:16], buf[4:20])
    b = np.zeros(16, "float32")
    with pytest.raises(kiln.KilnValueError, match="arguments B and C overlap"):
        rt(a, b, b)
    np.testing.assert_array_equal(buf, 0)  # refused before anything ran
    # Adjacent outputs do not overlap.
    rt(a, buf[0:16], np.zeros(16, "float32"))
    np.testing.assert_array_equal(buf[0:16], a + 1)


def test_overlapping_staged_outputs_are_refused():
    # Both outputs are staged through separate copies, which the runtime cannot see overlap; the
    # caller's arrays do.
    rt = kiln.build(two_outputs(16))
    raw = np.zeros(4 * 20 + 1, np.uint8)
    buf = raw[1:].view("float32")
    with pytest.raises(kiln.KilnValueError, match="main: arguments B and C overlap in memory"):
        rt(np.arange(16, dtype="float32"), buf[0:16], buf[4:20])
    np.testing.assert_array_equal(buf, 0)


def test_symbolic_shapes_in_place():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[n - 1 - i] - 1.0, name="B")
    rt = kiln.build(te.create_prim_func([A, B]))
    for size in (1, 5, 1000):
        x = np.arange(size, dtype="float32")
        expected = x[::-1] - 1
        rt(x, x)
        np.testing.assert_array_equal(x, expected)
