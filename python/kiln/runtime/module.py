"""kiln.runtime.Module: the compiled functions of a module, called like Python functions with
NumPy arrays, kiln.nd arrays, ``__dlpack__`` objects and numbers, timed with time_evaluator,
exported as a shared library and loaded back with load_module."""
import json
import math
import os

from .._kiln import runtime as _rt
from ..error import KilnValueError

Function = _rt.Function
Device = _rt.Device


class BenchmarkResult:
    """What a time_evaluator measured: ``results`` holds seconds per call, one per repeat, and
    ``mean``, ``median``, ``min``, ``max`` and ``std`` summarize them (in seconds)."""

    def __init__(self, results):
        """Summarizes ``results``, a non-empty sequence of seconds per call."""
        self.results = tuple(float(r) for r in results)
        ordered = sorted(self.results)
        n = len(ordered)
        self.mean = sum(ordered) / n
        middle = n // 2
        self.median = ordered[middle] if n % 2 else (ordered[middle - 1] + ordered[middle]) / 2
        self.min = ordered[0]
        self.max = ordered[-1]
        self.std = math.sqrt(sum((r - self.mean) ** 2 for r in ordered) / n)

    def __repr__(self):
        """The summary in milliseconds."""
        return (f"BenchmarkResult(mean={self.mean * 1e3:.4f} ms, median={self.median * 1e3:.4f} "
                f"ms, min={self.min * 1e3:.4f} ms, max={self.max * 1e3:.4f} ms, "
                f"std={self.std * 1e3:.4f} ms, repeats={len(self.results)})")


class Module:
    """A module of compiled functions, from kiln.build or load_module.

    ``rt["main"](a, b, c)`` calls a function; ``rt(a, b, c)`` calls the entry function ("main",
    or the only function). Tensors are passed without a copy: the kernel reads and writes the
    caller's memory. Kernels assume only the element's alignment unless a buffer declares more
    (``data_alignment``); an array lacking a declared alignment is staged through an aligned copy,
    copied back after the call when the function writes it.

    A call behaves as if all inputs were read before any output was written (as NumPy does with
    an overlapping ``out=``): ``rt(a, a)`` computes from the old ``a``; an input that overlaps an
    output is copied for the call, and outputs that overlap each other are refused with
    KilnValueError. An array the function writes must be writable: a read-only NumPy array or
    DLPack tensor is refused with KilnValueError before anything runs. Every call goes through the
    runtime's argument checks (see Function.__call__ for the errors).
    """

    def __init__(self, handle):
        """Wraps a module of kiln._kiln.runtime (from kiln.build or load_module)."""
        self._handle = handle
        self._functions = {}

    @property
    def functions(self):
        """The function names, in manifest order."""
        return list(self._handle.functions)

    @property
    def target(self):
        """The canonical target string the code was compiled for."""
        return self._handle.target

    @property
    def entry_name(self):
        """The function ``rt(...)`` calls: "main", or the module's only function.

        Raises:
            KilnValueError: the module has several functions and none is named "main".
        """
        names = self._handle.functions
        if "main" in names:
            return "main"
        if len(names) == 1:
            return names[0]
        raise KilnValueError(f"Module: the functions are {', '.join(names)} and none is named "
                             "main; call one by name, e.g. rt[\"" + names[0] + "\"](...)")

    @property
    def path(self):
        """The file a loaded module came from; None for a module built in this process."""
        return self._handle.path

    @property
    def manifest(self):
        """The manifest JSON text of a module built in this process; None for a loaded one."""
        return self._handle.manifest

    @property
    def warnings(self):
        """What the build could not do as the schedule asked, one message per item naming the
        function, the loop and the reason (the manifest's "warnings"), e.g. a vectorized loop
        that runs serially; empty when none. None for a loaded module."""
        manifest = self._handle.manifest
        if manifest is None:
            return None
        return list(json.loads(manifest).get("warnings", []))

    @property
    def build_timings(self):
        """Milliseconds per build phase (lower, codegen, optimize, emit, link, total)."""
        return dict(self._handle.build_timings)

    def get_function(self, name):
        """The function ``name`` (a kiln.runtime.Function, which keeps the module alive).

        Raises:
            KilnIndexError: the module has no such function (the message lists the names).
            KilnRuntimeError: a module built here for a target this process cannot run.
        """
        func = self._functions.get(name)
        if func is None:
            func = self._functions[name] = self._handle.get_function(name)
        return func

    def __getitem__(self, name):
        """``rt["name"]``: the function ``name``; raises as get_function."""
        return self.get_function(name)

    def __contains__(self, name):
        """Whether the module has a function called ``name``."""
        return name in self._handle.functions

    def __call__(self, *args):
        """Calls the entry function (see entry_name) with ``args``; raises as the entry_name
        property and as Function.__call__ (KilnTypeError, KilnValueError, KilnRuntimeError)."""
        entry = self._functions.get(None)
        if entry is None:
            entry = self._functions[None] = self.get_function(self.entry_name)
        return entry(*args)

    def get_source(self, fmt="ll"):
        """The code as text: "ll" (optimized LLVM IR) or "asm" (assembly). Modules built in
        this process only.

        Raises:
            KilnValueError: another format, or a module loaded from a file.
        """
        return self._handle.get_source(fmt)

    def export_library(self, path):
        """Writes a shared library to ``path`` (a str or os.PathLike) that
        kiln.runtime.load_module and the C++ runtime (KilnModuleLoadFromFile) load: the machine
        code, the manifest, and a checksum trailer that lets the runtime refuse a truncated or
        corrupted copy. The library exports only the manifest and the table of functions that
        the runtime calls after checking arguments; the functions themselves are not exported.

        Raises:
            KilnRuntimeError: linking or writing the file failed.
        """
        self._handle.export_library(os.fspath(path))

    def time_evaluator(self, func_name, dev, number=10, repeat=1, min_repeat_ms=0):
        """A function that runs ``func_name`` with the arguments it is given and returns a
        BenchmarkResult: after one warm-up call, each of ``repeat`` repeats times ``number``
        calls (``number`` grows until a repeat lasts at least ``min_repeat_ms``); the result of
        a repeat is its time divided by its calls. Timed in C++ with the GIL released; the GPUs
        the arguments live on are synchronized before the clock stops, so that asynchronous
        kernel launches are timed to their end.

        Args:
            func_name: the function to time.
            dev: the device the function computes on (kiln.cpu(0), kiln.cuda(0), kiln.opencl(0)).
            number, repeat, min_repeat_ms: as above.

        Raises:
            KilnValueError: a device that is not a kiln.Device of cpu, cuda or opencl, or number
                or repeat below 1 or a negative min_repeat_ms (when the evaluator is called).
            KilnIndexError: no function ``func_name``.
        The evaluator raises as Function.__call__ for its arguments.
        """
        func = self.get_function(func_name)
        device_type = getattr(dev, "device_type", None)
        if device_type not in (1, 2, 4):
            raise KilnValueError(f"time_evaluator: expected a cpu, cuda or opencl device; found "
                                 f"{dev!r}")

        def evaluator(*args):
            return BenchmarkResult(func._time(args, int(number), int(repeat),
                                              float(min_repeat_ms)))

        return evaluator

    def __repr__(self):
        """The path (for a loaded module), target and function names."""
        where = f" from {self.path}" if self.path else ""
        return (f"<kiln.runtime.Module{where} target={self.target!r} "
                f"functions={self.functions}>")


def load_module(path):
    """Loads the shared library at ``path`` (a str or os.PathLike) written by
    Module.export_library. The file is checked before it is mapped, so a damaged file is refused
    instead of crashing the process.

    Raises:
        KilnRuntimeError: the file is missing, empty, not an ELF shared library for this
            machine, truncated, or fails its checksum (the message names the path and the
            damage); or the module cannot run here (another ABI version or architecture, CPU
            features this machine lacks, device code).
    """
    return Module(_rt.load_module(os.fspath(path)))
