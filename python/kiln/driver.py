"""kiln.build: lowers a scheduled function (or every function of a module), compiles it for a
target and returns the kiln.runtime.Module that runs it."""
import warnings

from ._kiln import driver as _driver
from .error import KilnTypeError, VectorizeFallbackWarning
from .runtime import Module
from .target import Target


def build(func_or_mod, target="llvm", name=None, dump_ir=None):
    """Compiles a PrimFunc, an IRModule or a tir.Schedule (its module) for ``target``.

    The function is lowered (kiln.tir.lower), compiled with LLVM and loaded in this process.

    Args:
        func_or_mod (PrimFunc, IRModule or tir.Schedule): what to build. A PrimFunc is built
            as the function ``name`` (default: its global_symbol, else "main"); an IRModule
            builds each function under its name.
        target (str or kiln.target.Target): a target string, e.g. "llvm" (this machine's CPU),
            "llvm -mcpu=znver4", "llvm -opt-level=2", "llvm -fp-contract=off".
        name (str, optional): the function's name, for a PrimFunc only.
        dump_ir (str or os.PathLike, optional): a directory that receives the IR after each
            lowering pass (the environment variable KILN_DUMP_IR does the same); with several
            functions, one subdirectory per function.

    Returns:
        kiln.runtime.Module: ``rt["main"](a, b, c)`` or ``rt(a, b, c)``. When the target
        cannot run on this CPU the module can still be exported (export_library) and shown
        (get_source), and calling it raises KilnRuntimeError.

    Warns:
        kiln.error.VectorizeFallbackWarning: once for each vectorized loop that lowering had to
            leave serial (e.g. a tail whose bound check varies across lanes), naming the
            function, the loop and the reason; ``rt.warnings`` lists them.

    Raises:
        KilnTypeError: func_or_mod is not a PrimFunc, an IRModule or a Schedule, or target is
            not a str or a Target.
        KilnValueError: an unknown target kind or option, a module without functions, name
            given with an IRModule, or a function that cannot be lowered or compiled (e.g. a
            loop bound to a GPU thread).

    Example:
        rt = kiln.build(sch, target="llvm")
        rt(a, b, c)
    """
    if target is None:
        target = "llvm"
    if isinstance(target, Target):
        target = str(target)
    if not isinstance(target, str):
        raise KilnTypeError(f"kiln.build: the target must be a string such as \"llvm\" or a "
                            f"kiln.target.Target, found an object of type "
                            f"{type(target).__name__}")
    module = Module(_driver.build(func_or_mod, target, name, dump_ir))
    for message in module.warnings:
        warnings.warn(message, VectorizeFallbackWarning, stacklevel=2)
    return module
