"""kiln.build: lowers a scheduled function (or every function of a module), compiles it for a
target and returns the kiln.runtime.Module that runs it."""
import os
import warnings

from ._kiln import driver as _driver
from .error import KilnTypeError, VectorizeFallbackWarning
from .runtime import Module
from .target import Target
from .tir import Schedule


def build(func_or_mod, target="llvm", name=None, dump_ir=None):
    """Builds a PrimFunc, an IRModule or a tir.Schedule (its module) for ``target``.

    target: a target string, e.g. "llvm", "llvm -mcpu=znver4", "llvm -opt-level=2", or a
    kiln.target.Target; an unknown kind or option raises KilnValueError. A PrimFunc is built as
    the function ``name`` (default: its global_symbol, else "main"); an IRModule builds each
    function under its name.
    dump_ir: a directory that receives the IR after each lowering pass (the environment variable
    KILN_DUMP_IR does the same); with several functions, one subdirectory per function.

    Returns a kiln.runtime.Module: ``rt["main"](a, b, c)``, ``rt(a, b, c)``. When the target
    cannot run on this CPU the module can still be exported (export_library) and shown
    (get_source), and calling it raises KilnRuntimeError.

    Each vectorized loop that lowering had to leave serial (e.g. a tail whose bound check varies
    across lanes) issues a kiln.error.VectorizeFallbackWarning naming the function, the loop and
    the reason; the module lists them in ``rt.warnings``.
    """
    mod = func_or_mod.mod if isinstance(func_or_mod, Schedule) else func_or_mod
    if target is None:
        target = "llvm"
    if isinstance(target, Target):
        target = str(target)
    if not isinstance(target, str):
        raise KilnTypeError(f"kiln.build: the target must be a string such as \"llvm\" or a "
                            f"kiln.target.Target, found an object of type "
                            f"{type(target).__name__}")
    if dump_ir is not None:
        dump_ir = os.fspath(dump_ir)
    module = Module(_driver.build(mod, target, name, dump_ir))
    for message in module.warnings:
        warnings.warn(message, VectorizeFallbackWarning, stacklevel=2)
    return module
