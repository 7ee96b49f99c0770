"""kiln.build: lowers a scheduled function (or every function of a module), compiles it for a
target and returns the kiln.runtime.Module that runs it."""
import os

from ._kiln import driver as _driver
from .error import KilnTypeError
from .runtime import Module
from .tir import Schedule


def build(func_or_mod, target="llvm", name=None, dump_ir=None):
    """Builds a PrimFunc, an IRModule or a tir.Schedule (its module) for ``target``.

    target: a target string, e.g. "llvm", "llvm -mcpu=znver4", "llvm -opt-level=2"; an unknown
    kind or option raises KilnValueError. A PrimFunc is built as the function ``name`` (default:
    its global_symbol, else "main"); an IRModule builds each function under its name.
    dump_ir: a directory that receives the IR after each lowering pass (the environment variable
    KILN_DUMP_IR does the same); with several functions, one subdirectory per function.

    Returns a kiln.runtime.Module: ``rt["main"](a, b, c)``, ``rt(a, b, c)``. When the target
    cannot run on this CPU the module can still be exported (export_library) and shown
    (get_source), and calling it raises KilnRuntimeError.
    """
    mod = func_or_mod.mod if isinstance(func_or_mod, Schedule) else func_or_mod
    if target is None:
        target = "llvm"
    if not isinstance(target, str):
        raise KilnTypeError(f"kiln.build: the target must be a string such as \"llvm\", found "
                            f"an object of type {type(target).__name__}")
    if dump_ir is not None:
        dump_ir = os.fspath(dump_ir)
    return Module(_driver.build(mod, target, name, dump_ir))
