"""kiln.nd arrays and devices: creation, copies in and out, DLPack export, and errors."""
import numpy as np
import pytest

import kiln


def test_devices():
    assert kiln.cpu(0) == kiln.device("cpu", 0) == kiln.device("llvm")
    assert kiln.cpu(1) != kiln.cpu(0)
    assert repr(kiln.cpu(0)) == "cpu(0)"
    assert kiln.cpu().device_type == 1 and kiln.cpu(3).device_id == 3
    assert kiln.device("cuda", 1).name == "cuda"
    with pytest.raises(kiln.KilnValueError, match="kiln.device: unknown device 'tpu'"):
        kiln.device("tpu")


def test_array_round_trip():
    a = np.arange(12, dtype="float32").reshape(3, 4)
    nd = kiln.nd.array(a, device=kiln.cpu(0))
    assert nd.shape == (3, 4)
    assert nd.dtype == "float32"
    assert nd.device == kiln.cpu(0)
    assert nd.ndim == 2 and nd.nbytes == 48
    out = nd.numpy()
    np.testing.assert_array_equal(out, a)
    out[0, 0] = 99  # numpy() is a copy
    assert nd.numpy()[0, 0] == 0
    np.testing.assert_array_equal(np.asarray(nd), a)


def test_array_of_a_non_contiguous_source_and_with_a_dtype():
    a = np.arange(12, dtype="float64").reshape(3, 4).T
    nd = kiln.nd.array(a, dtype="float32")
    assert nd.dtype == "float32" and nd.shape == (4, 3)
    np.testing.assert_array_equal(nd.numpy(), a.astype("float32"))
    np.testing.assert_array_equal(kiln.nd.array(nd).numpy(), nd.numpy())


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "int64", "float16", "float64",
                                   "bool"])
def test_dtypes(dtype):
    a = (np.arange(10) % 3).astype(dtype)
    nd = kiln.nd.array(a)
    assert nd.dtype == dtype
    np.testing.assert_array_equal(nd.numpy(), a)
    assert nd.numpy().dtype == a.dtype


def test_bfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.array([1.5, -2.0, 0.25], dtype=ml_dtypes.bfloat16)
    nd = kiln.nd.array(a)
    assert nd.dtype == "bfloat16"
    np.testing.assert_array_equal(nd.numpy(), a)
    assert kiln.nd.empty((2,), "bfloat16").numpy().dtype == ml_dtypes.bfloat16


def test_empty_and_copyfrom():
    nd = kiln.nd.empty((2, 3), "int32")
    assert nd.shape == (2, 3) and nd.dtype == "int32"
    assert nd.copyfrom(np.array([[1, 2, 3], [4, 5, 6]])) is not None
    np.testing.assert_array_equal(nd.numpy(), [[1, 2, 3], [4, 5, 6]])
    assert kiln.nd.empty(5).shape == (5,)
    assert kiln.nd.empty((0, 4)).numpy().shape == (0, 4)
    assert kiln.nd.empty((2,), np.float64).dtype == "float64"


def test_from_dlpack_shares_memory():
    nd = kiln.nd.array(np.zeros(8, "float32"))
    view = np.from_dlpack(nd)
    view[3] = 7.0
    assert nd.numpy()[3] == 7.0
    assert nd.__dlpack_device__() == (1, 0)
    del nd  # the view keeps the memory alive
    assert view[3] == 7.0


def test_dlpack_capsule_kinds():
    nd = kiln.nd.array(np.zeros(4, "float32"))
    assert '"dltensor"' in repr(nd.__dlpack__())
    assert '"dltensor_versioned"' in repr(nd.__dlpack__(max_version=(1, 0)))
    with pytest.raises(BufferError, match="cannot be exported to another device"):
        nd.__dlpack__(dl_device=(2, 0))


def test_dlpack_copy_request():
    nd = kiln.nd.array(np.zeros(4, "float32"))
    copied = np.from_dlpack(nd, copy=True)
    copied[0] = 1.0
    assert nd.numpy()[0] == 0.0


def test_data_is_64_byte_aligned():
    for n in (1, 3, 17, 1000):
        view = np.from_dlpack(kiln.nd.empty((n,), "float32"))
        assert view.ctypes.data % 64 == 0


def test_errors():
    with pytest.raises(kiln.KilnValueError,
                       match=r"NDArray.copyfrom: the source has shape \(3,\) but the array has "
                             r"shape \(2, 3\)"):
        kiln.nd.empty((2, 3)).copyfrom(np.zeros(3))
    with pytest.raises(kiln.KilnValueError, match="kiln.nd: arrays live on cpu, cuda and opencl "
                                                  r"devices; found device vulkan\(0\)"):
        kiln.nd.empty((2,), device=kiln.device("vulkan", 0))
    with pytest.raises(kiln.KilnValueError, match="negative extent -1"):
        kiln.nd.empty((2, -1))
    with pytest.raises(kiln.KilnTypeError, match="float33' is not a dtype"):
        kiln.nd.empty((2,), "float33")
    with pytest.raises(kiln.KilnTypeError, match="complex64 are not supported"):
        kiln.nd.array(np.zeros(2, "complex64"))


def test_repr():
    text = repr(kiln.nd.array(np.arange(3, dtype="int32")))
    assert text.startswith("<kiln.nd.NDArray shape=(3,), dtype=int32, cpu(0)>")
    assert "array([0, 1, 2]" in text
