"""kiln's runtime from Python: compiled modules and their functions, devices, and the size of
the thread pool that runs parallel loops."""
from .._kiln import runtime as _rt
from .module import Module, Function, BenchmarkResult, load_module

Device = _rt.Device


def device(name, index=0):
    """A device by name: "cpu" (or "llvm"), "cuda", "opencl", ... and an index."""
    return Device(name, index)


def cpu(index=0):
    """The CPU device, kiln.cpu(0)."""
    return Device("cpu", index)


def set_num_threads(n):
    """Sets the number of threads that run parallel loops (the caller counts as one); n <= 0
    restores the default: KILN_NUM_THREADS when set, else the number of usable cores."""
    _rt.set_num_threads(int(n))


def get_num_threads():
    """The number of threads that run parallel loops."""
    return _rt.get_num_threads()


__all__ = ["Module", "Function", "BenchmarkResult", "load_module", "Device", "device", "cpu",
           "set_num_threads", "get_num_threads"]
