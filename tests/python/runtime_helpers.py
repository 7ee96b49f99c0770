"""Helpers of the build and runtime tests: small operators, NumPy arrays with a chosen alignment,
and a DLPack producer written with ctypes whose tensor fields (data, device) the test picks and
whose deleter counts its calls."""
import ctypes

import numpy as np

from kiln import te


def add_one(n=64, dtype="float32"):
    """B = A + 1 over n elements."""
    A = te.placeholder((n,), dtype, name="A")
    B = te.compute((n,), lambda i: A[i] + te.const(1, dtype), name="B")
    return te.create_prim_func([A, B])


def matmul(m=32, n=24, k=16):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def vector_add(n=None):
    """C = A + B; n symbolic when None."""
    n = te.var("n") if n is None else n
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    return te.create_prim_func([A, B, C])


def aligned_empty(shape, dtype="float32", alignment=64, offset=0):
    """An uninitialized array whose data is at `offset` bytes past an `alignment` boundary."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + alignment + offset, dtype=np.uint8)
    start = (-raw.ctypes.data) % alignment + offset
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def aligned_copy(array, alignment=64, offset=0):
    out = aligned_empty(array.shape, array.dtype, alignment, offset)
    out[...] = array
    return out


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", _DELETER)]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class CountingProducer:
    """An object with __dlpack__ over a float32 NumPy array (or no data at all), on the device
    type it is given. `deleted` counts the calls of its DLManagedTensor's deleter."""

    def __init__(self, array=None, shape=None, device_type=1):
        self.array = array
        shape = array.shape if array is not None else shape
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self.deleted = 0
        self._deleter = _DELETER(self._delete)
        self._managed = DLManagedTensor()
        tensor = self._managed.dl_tensor
        tensor.data = None if array is None else array.ctypes.data
        tensor.device = DLDevice(device_type, 0)
        tensor.ndim = len(shape)
        tensor.dtype = DLDataType(2, 32, 1)
        tensor.shape = self._shape
        tensor.strides = None
        tensor.byte_offset = 0
        self._managed.deleter = self._deleter

    def _delete(self, managed):
        self.deleted += 1

    def __dlpack__(self, stream=None):
        return _capsule_new(ctypes.addressof(self._managed), b"dltensor", None)

    def __dlpack_device__(self):
        return (self._managed.dl_tensor.device.device_type, 0)


class NumpyDLPackWrapper:
    """Hides a NumPy array behind its own __dlpack__, so that only the DLPack path can see it."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()
