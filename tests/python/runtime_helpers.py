"""Helpers of the build and runtime tests: small operators, NumPy arrays with a chosen alignment,
a DLPack producer written with ctypes whose tensor fields (data, device) the test picks and
whose deleter counts its calls, and the checksum trailer of module files written by hand."""
import ctypes
import struct

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


def fnv1a_64(data):
    """The FNV-1a 64-bit hash of `data` (bytes), as the module file trailer records it."""
    value = 0xcbf29ce484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return value


def seal_module_file(path):
    """Appends the 24-byte checksum trailer that the runtime verifies (covered length and
    FNV-1a-64, little-endian, then b"KILNSUM1"), as export_library does after linking; written
    here from the documented format, for libraries the tests link by hand."""
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "ab") as f:
        f.write(struct.pack("<QQ", len(data), fnv1a_64(data)) + b"KILNSUM1")


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


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


_VERSIONED_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                                     ("deleter", _VERSIONED_DELETER), ("flags", ctypes.c_uint64),
                                     ("dl_tensor", DLTensor)]

DLPACK_FLAG_BITMASK_READ_ONLY = 1


class VersionedProducer:
    """An object with a DLPack 1.0 __dlpack__ over a compact float32 NumPy array: a consumer that
    asks for max_version >= (1, 0) gets a "dltensor_versioned" capsule, with the read-only flag
    when `read_only` and the version `major`; any other gets the unversioned capsule. `asked`
    records the max_version of the last request, `deleted` the calls of the deleter."""

    def __init__(self, array, read_only=False, major=1):
        self.array = array
        self._shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        self.asked = "never"
        self.deleted = 0
        self._deleter = _VERSIONED_DELETER(self._delete)
        self._legacy_deleter = _DELETER(self._delete)
        self._versioned = DLManagedTensorVersioned()
        self._versioned.version = DLPackVersion(major, 0)
        self._versioned.deleter = self._deleter
        self._versioned.flags = DLPACK_FLAG_BITMASK_READ_ONLY if read_only else 0
        self._legacy = DLManagedTensor()
        self._legacy.deleter = self._legacy_deleter
        for tensor in (self._versioned.dl_tensor, self._legacy.dl_tensor):
            tensor.data = array.ctypes.data
            tensor.device = DLDevice(1, 0)
            tensor.ndim = array.ndim
            tensor.dtype = DLDataType(2, 32, 1)
            tensor.shape = self._shape
            tensor.strides = None
            tensor.byte_offset = 0

    def _delete(self, managed):
        self.deleted += 1

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        self.asked = max_version
        if max_version is not None and max_version[0] >= 1:
            return _capsule_new(ctypes.addressof(self._versioned), b"dltensor_versioned", None)
        return _capsule_new(ctypes.addressof(self._legacy), b"dltensor", None)

    def __dlpack_device__(self):
        return (1, 0)
