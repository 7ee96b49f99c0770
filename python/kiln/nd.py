"""kiln.nd: arrays allocated by kiln's runtime (compact row-major) in CPU memory (64-byte
aligned) or in GPU memory (``device=kiln.cuda(0)`` or ``kiln.opencl(0)``), which compiled
functions read and write in place. ``.numpy()`` copies one out (waiting for the device's work);
``np.from_dlpack(nd)`` shares a CPU array without a copy."""
import numpy as np

from ._kiln import runtime as _rt
from .runtime import cpu

NDArray = _rt.NDArray


def _numpy_dtype(dtype):
    if isinstance(dtype, str) and dtype == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)


def _dtype_name(dtype):
    if isinstance(dtype, str):
        return dtype
    return np.dtype(dtype).name


def array(source, device=None, dtype=None):
    """A new array holding a copy of ``source`` (a NumPy array, a kiln.nd.NDArray or anything
    np.asarray takes), converted to ``dtype`` when given, on ``device`` (kiln.cpu(0) when None;
    kiln.cuda(n) or kiln.opencl(n) for GPU memory).

    Raises:
        KilnTypeError: a dtype kiln has no element type for (e.g. complex, big-endian).
        KilnValueError: a device other than cpu, cuda and opencl.
        KilnRuntimeError: the device's driver library is missing (the message names it), the
            device does not exist, or the memory cannot be allocated or copied.
    """
    if isinstance(source, NDArray):
        source = source.numpy()
    data = np.asarray(source, dtype=None if dtype is None else _numpy_dtype(dtype))
    return _rt.nd_array(data, cpu(0) if device is None else device)


def empty(shape, dtype="float32", device=None):
    """A new uninitialized array of ``shape`` (an int or a sequence of ints) and ``dtype`` (a
    kiln dtype name or a NumPy dtype) on ``device`` (kiln.cpu(0) when None; kiln.cuda(n) or
    kiln.opencl(n) for GPU memory).

    Raises:
        KilnTypeError: a shape that is not ints, or an unknown dtype.
        KilnValueError: a negative extent, a shape whose size in bytes overflows 64 bits, or a
            device other than cpu, cuda and opencl.
        KilnRuntimeError: the device's driver library is missing (the message names it), the
            device does not exist, or the memory cannot be allocated.
    """
    return _rt.nd_empty(shape, _dtype_name(dtype), cpu(0) if device is None else device)


__all__ = ["NDArray", "array", "empty"]
