"""GPU devices and device arrays from Python: kiln.opencl / kiln.cuda, their attributes, and
kiln.nd arrays in device memory (round trips, copyfrom, errors). The OpenCL tests run on any
OpenCL platform (PoCL on the CPU where no GPU exists); the CUDA tests check the clear error of a
missing driver, or run where a CUDA GPU is present."""
import ctypes

import numpy as np
import pytest

import kiln


def _opencl_missing():
    try:
        return None if kiln.opencl(0).exist else "no OpenCL device found"
    except kiln.KilnError as error:  # exist never raises; kept for a clear skip reason
        return str(error)


def _cuda_driver_present():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


requires_opencl = pytest.mark.skipif(
    _opencl_missing() is not None,
    reason=f"no OpenCL platform (install pocl-opencl-icd): {_opencl_missing()}")
without_cuda_driver = pytest.mark.skipif(
    _cuda_driver_present(), reason="libcuda.so.1 is installed; these tests check its absence")
requires_cuda = pytest.mark.skipif(not kiln.cuda(0).exist, reason="no CUDA device")

DEVICES = [pytest.param("opencl", marks=requires_opencl),
           pytest.param("cuda", marks=requires_cuda)]


def _device(kind):
    return kiln.opencl(0) if kind == "opencl" else kiln.cuda(0)


def test_device_constructors():
    assert kiln.opencl() == kiln.device("opencl", 0) and kiln.opencl(1).device_id == 1
    assert kiln.cuda(2) == kiln.device("cuda", 2) and kiln.cuda().device_type == 2
    assert repr(kiln.opencl(0)) == "opencl(0)" and kiln.opencl(0).name == "opencl"
    assert kiln.cpu(0).exist and not kiln.opencl(999).exist
    assert kiln.cpu(0).compute_version is None


@pytest.mark.parametrize("kind", DEVICES)
@pytest.mark.parametrize("dtype,shape", [("float32", (3, 4)), ("int8", (7,)), ("int64", (2, 1, 3)),
                                         ("float64", ()), ("uint16", (5, 0)), ("bool", (9,)),
                                         ("float16", (4,))])
def test_round_trip(kind, dtype, shape):
    a = (np.arange(int(np.prod(shape))) % 5).astype(dtype).reshape(shape)
    nd = kiln.nd.array(a, device=_device(kind))
    assert nd.device == _device(kind) and nd.shape == shape and nd.dtype == dtype
    assert nd.__dlpack_device__() == (_device(kind).device_type, 0)
    out = nd.numpy()
    assert out.dtype == a.dtype
    np.testing.assert_array_equal(out, a)


@pytest.mark.parametrize("kind", DEVICES)
def test_empty_copyfrom_and_device_to_device(kind):
    dev = _device(kind)
    nd = kiln.nd.empty((2, 3), "float32", device=dev)
    a = np.arange(6, dtype="float32").reshape(2, 3)
    assert nd.copyfrom(a) is not None
    np.testing.assert_array_equal(nd.numpy(), a)
    other = kiln.nd.empty((2, 3), "float32", device=dev).copyfrom(nd)
    np.testing.assert_array_equal(other.numpy(), a)
    host = kiln.nd.empty((2, 3), "float32").copyfrom(other)
    np.testing.assert_array_equal(host.numpy(), a)
    np.testing.assert_array_equal(kiln.nd.array(other).numpy(), a)
    copied = kiln.nd.empty((2, 3), "float32", device=dev).copyfrom(a.astype("float64") + 1)
    np.testing.assert_array_equal(np.asarray(copied), a + 1)
    dev.sync()


@pytest.mark.parametrize("kind", DEVICES)
def test_copyfrom_shape_mismatch(kind):
    nd = kiln.nd.empty((2, 3), "float32", device=_device(kind))
    with pytest.raises(kiln.KilnValueError, match=r"NDArray.copyfrom: the source has shape "
                                                  r"\(3,\) but the array has shape \(2, 3\)"):
        nd.copyfrom(np.zeros(3, "float32"))
    with pytest.raises(kiln.KilnValueError, match=r"the source has shape \(6,\)"):
        nd.copyfrom(kiln.nd.empty((6,), "float32", device=_device(kind)))


@pytest.mark.parametrize("kind", DEVICES)
def test_device_attributes(kind):
    dev = _device(kind)
    assert dev.exist
    assert isinstance(dev.device_name, str) and dev.device_name
    assert isinstance(dev.driver_version, str) and dev.driver_version
    assert dev.max_threads_per_block >= 1
    assert dev.max_shared_memory_per_block > 0
    assert dev.warp_size >= 1
    assert dev.multi_processor_count >= 1
    if kind == "cuda":
        major, minor = dev.compute_version.split(".")
        assert int(major) >= 3 and minor.isdigit()
    else:
        assert dev.compute_version is None


@requires_opencl
def test_missing_opencl_device():
    count = next(i for i in range(64) if not kiln.opencl(i).exist)
    with pytest.raises(kiln.KilnRuntimeError, match=rf"no device opencl\({count}\): {count} OpenCL "
                                                    r"devices? found"):
        kiln.nd.empty((2,), device=kiln.opencl(count))


@requires_opencl
def test_dlpack_of_a_device_array():
    nd = kiln.nd.array(np.arange(4, dtype="int32"), device=kiln.opencl(0))
    with pytest.raises(BufferError, match=r"lives on opencl\(0\) and cannot be exported"):
        nd.__dlpack__(dl_device=(1, 0))
    with pytest.raises((BufferError, RuntimeError, TypeError, ValueError)):
        np.from_dlpack(nd)  # NumPy reads CPU memory only


@without_cuda_driver
def test_cuda_without_driver_names_the_library():
    assert not kiln.cuda(0).exist
    with pytest.raises(kiln.KilnRuntimeError,
                       match=r"CUDA: cannot load the driver library libcuda.so.1 \(.*\): no CUDA "
                             r"driver is installed"):
        kiln.nd.array(np.zeros(3, "float32"), device=kiln.cuda(0))
    with pytest.raises(kiln.KilnRuntimeError, match="cannot load the driver library libcuda.so.1"):
        kiln.cuda(0).max_threads_per_block
    with pytest.raises(kiln.KilnRuntimeError, match="cannot load the driver library libcuda.so.1"):
        kiln.cuda(0).sync()
    with pytest.raises(kiln.KilnRuntimeError, match="cannot load the driver library libcuda.so.1"):
        kiln.cuda(0).driver_version
