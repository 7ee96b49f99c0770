"""kiln's exceptions and warnings. Every error raised by kiln derives from KilnError; the
subclasses also derive from the matching Python built-in (TypeError, ValueError, IndexError) so
that ordinary ``except TypeError`` clauses work. Every warning derives from KilnWarning."""


class KilnError(Exception):
    """Base class of every error kiln raises."""


class KilnTypeError(KilnError, TypeError):
    """A dtype or an object kind is not what the API accepts."""


class KilnValueError(KilnError, ValueError):
    """A value is out of its allowed range or inconsistent with another."""


class KilnIndexError(KilnError, IndexError):
    """An index or an arity is wrong."""


class KilnRuntimeError(KilnError, RuntimeError):
    """A failure while running compiled code or loading a module."""


class ScheduleError(KilnError):
    """A schedule primitive's precondition failed; the schedule is left unchanged."""


class InternalError(KilnError):
    """A bug in kiln itself."""


class KilnWarning(UserWarning):
    """Base class of every warning kiln issues: the result is correct, but not what was asked."""


class VectorizeFallbackWarning(KilnWarning):
    """A loop the schedule vectorized runs serially; the message names the function, the loop
    and the reason (kiln.build issues one per loop; Module.warnings lists them)."""


class StreamingAlignmentWarning(KilnWarning):
    """A function that stores an output past the caches (streaming stores, the loop annotation
    "pragma_nontemporal") was called with that output less aligned than the streaming stores
    need: the plain stores ran, correct but slower on data larger than the caches. NumPy's large
    arrays are typically 16 bytes past a cache line; kiln.nd arrays are aligned. Issued once per
    function."""


class TuningRecordMissingWarning(KilnWarning):
    """kiln.build was given a tuning database that holds no record of a function on this target
    and this CPU model; the function is built as it was given (once per function and target)."""


class TuningNoScheduleWarning(KilnWarning):
    """A tuning run ended with no schedule of a task measured right: the design space refused
    every candidate, or every measured one failed. The message gives the reasons with their
    counts; kiln.build with the database builds the function as it was given."""


class TuningRecordThreadsWarning(KilnWarning):
    """A tuning database holds no record of a function measured with the thread count a build (or
    a lookup) runs with; the best record of another thread count is applied, and the message
    says which count it was tuned for (once per function, target and thread counts)."""
