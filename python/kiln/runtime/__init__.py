"""kiln's runtime from Python: compiled modules and their functions, devices (the CPU, CUDA and
OpenCL GPUs), the size of the thread pool that runs parallel loops, and the external libraries
that extern calls resolve in (load_library)."""
from .._kiln import runtime as _rt
from .module import Module, Function, BenchmarkResult, load_module

Device = _rt.Device


def device(name, index=0):
    """The device ``name`` ("cpu" or "llvm", "cuda", "cuda_host", "opencl", "vulkan", "metal",
    "rocm") with index ``index``, e.g. ``kiln.device("cpu", 0)``.

    Raises:
        KilnValueError: an unknown name or a negative index.
    """
    return Device(name, index)


def cpu(index=0):
    """The CPU device, ``kiln.cpu(0)``.

    Raises:
        KilnValueError: a negative index.
    """
    return Device("cpu", index)


def cuda(dev_id=0):
    """The CUDA device ``dev_id``, ``kiln.cuda(0)``. Creating it needs no driver; ``.exist``
    says whether it is present, and arrays on it (kiln.nd.array(x, device=kiln.cuda(0))) raise
    KilnRuntimeError naming the missing driver library or device.

    Raises:
        KilnValueError: a negative index.
    """
    return Device("cuda", dev_id)


def opencl(dev_id=0):
    """The OpenCL device ``dev_id``, ``kiln.opencl(0)``: the devices of every OpenCL platform,
    GPUs first, then accelerators, then other devices (PoCL runs OpenCL on the CPU). Creating it
    needs no driver; ``.exist`` says whether it is present.

    Raises:
        KilnValueError: a negative index.
    """
    return Device("opencl", dev_id)


def set_num_threads(n):
    """Sets the number of threads that run parallel loops to ``n`` (the caller counts as one);
    ``n <= 0`` restores the default: KILN_NUM_THREADS when set, else the number of cores this
    process may use. Takes effect for the following calls.

    Raises:
        KilnRuntimeError: called from inside a parallel task.
    """
    _rt.set_num_threads(int(n))


def load_library(path):
    """Opens the shared library ``path`` (e.g. "libopenblas.so.0") into the process's global
    scope, so that extern calls (tir.call_extern) of functions built, loaded or interpreted
    afterwards resolve its C functions; an exported module that calls one of them is linked
    against it (like tvm.runtime.load_library).

    Raises:
        KilnValueError: the library cannot be opened (the message has the loader's reason).

    Example:
        kiln.runtime.load_library("libopenblas.so.0")
    """
    _rt.load_library(str(path))


def get_num_threads():
    """The number of threads that run parallel loops (the caller counts as one)."""
    return _rt.get_num_threads()


__all__ = ["Module", "Function", "BenchmarkResult", "load_module", "Device", "device", "cpu",
           "cuda", "opencl", "set_num_threads", "get_num_threads", "load_library"]
