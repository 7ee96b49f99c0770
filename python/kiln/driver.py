"""kiln.build: lowers a scheduled function (or every function of a module), compiles it for a
target and returns the kiln.runtime.Module that runs it."""
import os
import warnings

from ._kiln import driver as _driver
from .error import (KilnTypeError, KilnValueError, TuningRecordMissingWarning,
                    VectorizeFallbackWarning)
from .runtime import Module
from .target import Target


def build(func_or_mod, target="llvm", name=None, dump_ir=None, database=None, object_cache=None):
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
        database (kiln.autotune.Database or path, optional): a tuning database; each function
            is built with the best schedule the database holds for it on this target and this
            CPU model (kiln.autotune.compile_tir), measured with the thread count it will run
            on (kiln.runtime.get_num_threads() at build time). Without such a record the best of
            another thread count is used, with a TuningRecordThreadsWarning; a function without
            any record is built as given, with a TuningRecordMissingWarning (and so are all
            functions when there is no file at the path given: a build does not create one).
        object_cache (str or os.PathLike, optional): a directory of compiled objects: a
            function whose LLVM IR was compiled before for the same target is loaded from it
            without running LLVM's optimizer and code generator, and a new one is stored there
            (``rt.build_timings["from_cache"]`` says which). Default: with a database, the
            ``object_cache`` its tuning left when there is one (that of the database's
            directory, a tune_tir work_dir, or of DB_work, ``kiln tune --db DB``'s), where the
            tuner compiled the best record; else none; "" for none.

    Returns:
        kiln.runtime.Module: ``rt["main"](a, b, c)`` or ``rt(a, b, c)``. When the target
        cannot run on this CPU the module can still be exported (export_library) and shown
        (get_source), and calling it raises KilnRuntimeError.

    Warns:
        kiln.error.VectorizeFallbackWarning: once for each vectorized loop that lowering had to
            leave serial (e.g. a tail whose bound check varies across lanes, or on a GPU an
            extent that is no lane count of the language's vector types), and on a GPU once for
            each vector load or store made lane by lane (e.g. not provably aligned), naming the
            function or kernel, the loop or buffer and the reason; ``rt.warnings`` lists them.
        kiln.error.TuningRecordMissingWarning: a database without a record of a function on
            the target (once per function and target in a process), or no file at the
            database path.
        kiln.error.TuningRecordThreadsWarning: the record applied to a function was measured
            with another thread count than kiln.runtime.get_num_threads(); the message says
            which (once per function, target and thread counts in a process).

    Raises:
        KilnTypeError: func_or_mod is not a PrimFunc, an IRModule or a Schedule, or target is
            not a str or a Target.
        KilnValueError: an unknown target kind or option, a module without functions, name
            given with an IRModule, a function that cannot be lowered or compiled (e.g. a
            loop bound to a GPU thread), a database given with a tir.Schedule (give the
            unscheduled function), or a stored schedule that does not replay.

    Example:
        rt = kiln.build(sch, target="llvm")
        rt(a, b, c)
        rt = kiln.build(func, target="llvm", database="tune_gemm/tuning.db")  # tuned
    """
    if target is None:
        target = "llvm"
    if isinstance(target, Target):
        target = str(target)
    if not isinstance(target, str):
        raise KilnTypeError(f"kiln.build: the target must be a string such as \"llvm\" or a "
                            f"kiln.target.Target, found an object of type "
                            f"{type(target).__name__}")
    if database is not None:
        func_or_mod, caches = _apply_database(func_or_mod, target, database)
        # The canonical string, as the tuner's workers built the records: the same LLVM IR, so
        # the object they compiled is found in the cache.
        target = str(Target(target))
        if object_cache is None:
            object_cache = next((d for d in caches if os.path.isdir(d)), None)
    module = Module(_driver.build(func_or_mod, target, name, dump_ir, object_cache))
    for message in module.warnings:
        warnings.warn(message, VectorizeFallbackWarning, stacklevel=2)
    return module


# (structural hash, target) of the functions already warned about, so that a loop of builds
# warns once.
_warned_missing = set()


def _apply_database(func_or_mod, target, database):
    """func_or_mod with each function replaced by its best stored schedule, and where the tuner
    may have left its compiled candidates: the object_cache of the database's directory (a
    tune_tir work_dir) or of DB_work (``kiln tune --db DB``)."""
    from . import autotune, ir, tir
    from ._kiln import autotune as _core
    from .autotune.database import TargetKey, _device_text
    from .autotune.tune import _best_schedule, _database_to_read
    if isinstance(func_or_mod, tir.Schedule):
        raise KilnValueError("kiln.build: a database applies to unscheduled functions; give the "
                             "PrimFunc or IRModule that was tuned, not a tir.Schedule")
    if isinstance(func_or_mod, tir.PrimFunc):
        functions, single = {"main": func_or_mod}, True
    elif isinstance(func_or_mod, ir.IRModule):
        functions, single = dict(func_or_mod.functions), False
    else:
        return func_or_mod, []  # _driver.build names the wrong type
    db = _database_to_read(database, "kiln.build", "the functions are built as given",
                           stacklevel=3)
    if db is None:
        return func_or_mod, []
    tuned = {}
    for fname, func in functions.items():
        sch = _best_schedule(db, func, target, None, "kiln.build", f"function '{fname}'",
                             stacklevel=3)
        if sch is None:
            key = (ir.structural_hash(func), target)
            if key not in _warned_missing:
                _warned_missing.add(key)
                device = _device_text(TargetKey(*_core.local_target_key(target, 0, "kiln.build")))
                warnings.warn(f"kiln.build: the database {db.path} holds no record of function "
                              f"'{fname}' on target '{target}' and {device}; it is built as "
                              "given", TuningRecordMissingWarning, stacklevel=3)
            tuned[fname] = func
        else:
            tuned[fname] = next(iter(sch.mod.functions.values()))
    path = os.path.abspath(db.path)
    caches = [os.path.join(os.path.dirname(path), "object_cache"),
              os.path.join(os.path.splitext(path)[0] + "_work", "object_cache")]
    return (tuned["main"] if single else ir.IRModule(tuned)), caches
