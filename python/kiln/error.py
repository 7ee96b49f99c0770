"""kiln's exceptions. Every error raised by kiln derives from KilnError; the subclasses also
derive from the matching Python built-in (TypeError, ValueError, IndexError) so that ordinary
``except TypeError`` clauses work."""


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
