"""tir.Schedule: transform a PrimFunc's loops and blocks with schedule primitives.

A failed primitive raises a subclass of :class:`ScheduleError` named after the failure mode
(``StaleHandleError``, ``BlockNotFoundError``, …) and leaves the schedule as it was.
"""
from .._kiln import schedule as _schedule
from ..error import ScheduleError

Schedule = _schedule.Schedule
Trace = _schedule.Trace
BlockRV = _schedule.BlockRV
LoopRV = _schedule.LoopRV
ExprRV = _schedule.ExprRV
IndexMap = _schedule.IndexMap
TensorIntrin = _schedule.TensorIntrin

_error_classes = {}


def _error_class(name):
    """The ScheduleError subclass called ``name`` (made on first use)."""
    cls = _error_classes.get(name)
    if cls is None:
        cls = type(name, (ScheduleError,), {"__module__": __name__})
        _error_classes[name] = cls
        globals()[name] = cls
    return cls


# The failure modes, declared up front so that they can be caught by name before any is raised.
for _name in ("StaleHandleError", "BlockNotFoundError", "NonConstantExtentError",
              "InvalidSampleError", "InvalidDecisionError",
              "InvalidSplitFactorsError", "InvalidLoopsError", "LoopsNotNestedError",
              "LoopIterTypeError", "LoopDependenceError", "WrongBlockIterTypeError",
              "InvalidThreadTagError", "InvalidAnnotationError", "AnnotationNotFoundError",
              "NotInSameScopeError", "NotStagePipelineError", "NotCompleteOrReductionBlockError",
              "NotCompactDataflowError", "OutputBlockError", "NotAllRequiredBlocksAreVisitedError",
              "RegionNotCoverableError", "PartialReductionError", "ConsumerBeforeLoopError",
              "NotCompleteBlockError", "BodyAnalysisError", "OpaqueAccessError",
              "NonSingleProducerError", "NotBijectiveAffineIndexError", "ConsumerPredicateError",
              "BufferIndexOutOfRangeError", "InvalidStorageScopeError", "ReadWriteBufferError",
              "NotSingleWriteBlockError", "CacheLocationError", "FunctionParamBufferError",
              "InvalidStorageAlignError", "StorageAlignOrderError", "BufferNotFoundError",
              "InvalidIndexMapError", "NonBijectiveIndexMapError",
              "NotSingleChildBlockError", "NotReductionBlockError", "NoMatchedReducerError",
              "NotAffineBindingError", "LoopPropertyError", "FactorAxisOutOfRangeError",
              "LoopPositionError", "LoopHeightError", "SubspaceNotDivisibleError",
              "TensorizeMismatchError", "TensorizeLayoutError", "PredicateNotSupportedError",
              "NotAConsumerError",
              "BlockPredicateError"):
    _error_class(_name)


def _show(self):
    """Prints the scheduled module as TVMScript-like text."""
    print(self.mod.script())


Schedule.show = _show

__all__ = ["Schedule", "Trace", "BlockRV", "LoopRV", "ExprRV", "ScheduleError", "IndexMap",
           "TensorIntrin"]
