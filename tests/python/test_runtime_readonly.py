"""Read-only arrays: an argument the function writes must be writable. A NumPy array with
flags.writeable False (a memmap opened with mode "r", a broadcast view, an array made read-only)
or a DLPack tensor its producer marks read-only is refused with KilnValueError before the kernel
runs, and left untouched; read-only arrays are accepted where the function only reads."""
import numpy as np
import pytest

import kiln
from kiln import te

from runtime_helpers import VersionedProducer, add_one

READ_ONLY = ("main: argument B is written by the function, but the NumPy array passed for it is "
             "read-only")


@pytest.fixture(scope="module")
def rt_add():
    return kiln.build(add_one(64))


def test_memmap_opened_for_reading_is_refused_as_output(rt_add, tmp_path):
    path = tmp_path / "y.bin"
    np.arange(64, dtype="float32").tofile(path)
    y = np.memmap(path, "float32", mode="r", shape=(64,))
    with pytest.raises(kiln.KilnValueError, match=READ_ONLY + r" \(flags.writeable is False"):
        rt_add(np.zeros(64, "float32"), y)
    np.testing.assert_array_equal(np.fromfile(path, "float32"), np.arange(64))
    # The process goes on, and the same memmap is a valid input.
    out = np.zeros(64, "float32")
    rt_add(y, out)
    np.testing.assert_array_equal(out, np.arange(64) + 1)
    del y


def test_array_made_read_only_is_refused_as_output(rt_add):
    b = np.full(64, 7, "float32")
    b.flags.writeable = False
    with pytest.raises(kiln.KilnValueError, match=READ_ONLY):
        rt_add(np.zeros(64, "float32"), b)
    np.testing.assert_array_equal(b, 7)


def test_read_only_input_is_accepted(rt_add):
    a = np.arange(64, dtype="float32")
    a.flags.writeable = False
    b = np.zeros(64, "float32")
    rt_add(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_broadcast_views_are_inputs_not_outputs():
    A = te.placeholder((4, 16), name="A")
    B = te.compute((4, 16), lambda i, j: A[i, j] * 2.0, name="B")
    rt = kiln.build(te.create_prim_func([A, B]))
    row = np.arange(16, dtype="float32")
    # A (1, 16) row broadcast to one row is compact (the extent-1 dimension's stride is free).
    A1 = te.placeholder((1, 16), name="A")
    B1 = te.compute((1, 16), lambda i, j: A1[i, j] * 2.0, name="B")
    rt1 = kiln.build(te.create_prim_func([A1, B1]))
    view = np.broadcast_to(row, (1, 16))
    assert not view.flags.writeable
    out = np.zeros((1, 16), "float32")
    rt1(view, out)
    np.testing.assert_array_equal(out[0], row * 2)
    with pytest.raises(kiln.KilnValueError, match=READ_ONLY):
        rt1(out, np.broadcast_to(np.zeros(16, "float32"), (1, 16)))
    # A broadcast over several rows is read-only and not compact: refused as an output for being
    # read-only, before its layout is looked at.
    with pytest.raises(kiln.KilnValueError, match=READ_ONLY):
        rt(np.zeros((4, 16), "float32"), np.broadcast_to(row, (4, 16)))


def test_read_only_dlpack_tensor_is_refused_as_output(rt_add):
    out = np.full(64, 3, "float32")
    producer = VersionedProducer(out, read_only=True)
    with pytest.raises(kiln.KilnValueError,
                       match="main: argument B is written by the function, but the "
                             "VersionedProducer tensor passed for it is read-only \\(its DLPack "
                             "producer marks it DLPACK_FLAG_BITMASK_READ_ONLY\\)"):
        rt_add(np.zeros(64, "float32"), producer)
    assert producer.asked == (1, 0)
    assert producer.deleted == 1  # the consumed tensor is released on refusal too
    np.testing.assert_array_equal(out, 3)


def test_read_only_dlpack_tensor_is_accepted_as_input(rt_add):
    a = np.arange(64, dtype="float32")
    producer = VersionedProducer(a, read_only=True)
    b = np.zeros(64, "float32")
    rt_add(producer, b)
    np.testing.assert_array_equal(b, a + 1)
    assert producer.deleted == 1


def test_writable_versioned_dlpack_tensor_is_written_in_place(rt_add):
    out = np.zeros(64, "float32")
    producer = VersionedProducer(out)
    rt_add(np.arange(64, dtype="float32"), producer)
    np.testing.assert_array_equal(out, np.arange(64) + 1)
    assert producer.deleted == 1


def test_dlpack_tensor_of_an_unknown_major_version_is_refused(rt_add):
    producer = VersionedProducer(np.zeros(64, "float32"), major=2)
    with pytest.raises(kiln.KilnTypeError,
                       match="main: argument A: VersionedProducer.__dlpack__\\(\\) returned a "
                             "tensor of DLPack version 2.0; kiln reads DLPack 1.x"):
        rt_add(producer, np.zeros(64, "float32"))
    assert producer.deleted == 1


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.1.0",
                    reason="NumPy exports read-only arrays through DLPack 1.0 from version 2.1")
def test_read_only_numpy_array_through_dlpack_is_refused_as_output(rt_add):
    class Wrapper:
        """Lets only the DLPack path see the array, forwarding the consumer's max_version."""

        def __init__(self, array):
            self._array = array

        def __dlpack__(self, **kwargs):
            return self._array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self._array.__dlpack_device__()

    b = np.full(64, 5, "float32")
    b.flags.writeable = False
    with pytest.raises(kiln.KilnValueError, match="Wrapper tensor passed for it is read-only"):
        rt_add(np.zeros(64, "float32"), Wrapper(b))
    np.testing.assert_array_equal(b, 5)
    out = np.zeros(64, "float32")
    rt_add(Wrapper(b), out)
    np.testing.assert_array_equal(out, 6)
