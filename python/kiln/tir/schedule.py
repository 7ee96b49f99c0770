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

# The failure modes: what each class means. The primitives' docstrings say which they raise.
_ERROR_DOCS = {
    "StaleHandleError": "A handle names a block or loop that a primitive removed.",
    "BlockNotFoundError": "No block of the function has the given name.",
    "NonConstantExtentError": "Sampling needs a loop of constant extent.",
    "InvalidSampleError": "The arguments of a sampling primitive describe no distribution.",
    "InvalidDecisionError": "A given or replayed decision is not one the sampler could make.",
    "InvalidSplitFactorsError": "The factors of split do not tile the loop.",
    "InvalidLoopsError": "No loop was given, or a loop was given twice.",
    "LoopsNotNestedError": "The loops are not a chain of directly nested loops.",
    "LoopIterTypeError": "A loop binds both spatial and reduction iterators of a block.",
    "LoopDependenceError": "A loop's extent depends on a loop that would move inside it.",
    "WrongBlockIterTypeError": "A loop binds an iterator of a kind the loop kind cannot run "
                               "(a reduction in a parallel or vectorized loop).",
    "InvalidThreadTagError": "The thread axis is not blockIdx, threadIdx or vthread .x/.y/.z.",
    "InvalidAnnotationError": "An annotation value is not a constant int, float, bool or str.",
    "AnnotationNotFoundError": "The block or loop has no annotation of that key.",
    "NotInSameScopeError": "The block and the loop are not in one scope, or the loop is above "
                           "the block.",
    "NotStagePipelineError": "The scope's blocks do not form a stage pipeline (each buffer "
                             "written before it is read).",
    "NotCompleteOrReductionBlockError": "The block is neither a complete block nor a reduction "
                                        "block.",
    "NotCompactDataflowError": "A block of the loop nest is neither complete nor a reduction.",
    "OutputBlockError": "The block writes a parameter of the function (an output).",
    "NotAllRequiredBlocksAreVisitedError": "Not every consumer (or producer) of the block is "
                                           "under the loop.",
    "RegionNotCoverableError": "One iteration of the loop cannot compute (or consume) exactly "
                               "the region needed there.",
    "PartialReductionError": "The move would split a reduction across iterations of the loop.",
    "ConsumerBeforeLoopError": "A consumer of the block outside the loop comes before it.",
    "NotCompleteBlockError": "The block is not a complete block (it reduces, or its iterators "
                             "do not cover what it writes).",
    "BodyAnalysisError": "The block's body is not of the form the primitive needs (one store "
                         "indexed by its iterators).",
    "OpaqueAccessError": "The buffer is accessed other than by loads and stores.",
    "VectorAccessError": "A load of the buffer has vector indices (a tensorized block's "
                         "operand).",
    "NonSingleProducerError": "The block does not have exactly one producer, used only by it.",
    "NotBijectiveAffineIndexError": "The indices of a load are not a bijective affine map of "
                                    "the block's iterators.",
    "ConsumerPredicateError": "The consumer's predicate does not hold wherever its iterators "
                              "are in their domains.",
    "BufferIndexOutOfRangeError": "The block reads or writes fewer buffers than the index.",
    "InvalidStorageScopeError": "The storage scope is not global, shared or local.",
    "ReadWriteBufferError": "The block both reads and writes the buffer.",
    "NotSingleWriteBlockError": "More than one block writes the buffer.",
    "CacheLocationError": "There is no place for the copy between the producer and the first "
                          "consumer.",
    "FunctionParamBufferError": "The buffer is a parameter of the function, not an allocation.",
    "InvalidStorageAlignError": "The axis, factor or offset of storage_align is out of range.",
    "BufferNotFoundError": "The block accesses no buffer (or several) of that name.",
    "InvalidIndexMapError": "The index map does not take one index per dimension.",
    "NonBijectiveIndexMapError": "The index map is not a bijection onto its range.",
    "NotSingleChildBlockError": "Not exactly one block is under the loop.",
    "NotReductionBlockError": "The block is not a reduction (an init and an update of one "
                              "element).",
    "NoMatchedReducerError": "The update and the init form none of sum, product, max, min.",
    "NotAffineBindingError": "The block's bindings are not affine in its loops.",
    "LoopPropertyError": "The loop binds a spatial iterator, or a loop binds both kinds.",
    "FactorAxisOutOfRangeError": "rfactor's factor_axis is out of range for the output.",
    "LoopPositionError": "The loop is not above the block.",
    "LoopHeightError": "A loop above the given one binds a reduction iterator.",
    "SubspaceNotDivisibleError": "The bindings do not divide into parts over the loops outside "
                                 "and inside the given loop.",
    "TensorizeMismatchError": "The block's body does not compute what the intrinsic's "
                              "description computes.",
    "TensorizeLayoutError": "A region the intrinsic reads as one vector is not contiguous.",
    "TensorizeTargetError": "The target lacks a feature the tensor intrinsic needs.",
    "PredicateNotSupportedError": "The block's predicate is of a form the primitive cannot "
                                  "carry over.",
    "NotAConsumerError": "A block given as a consumer does not read the buffer.",
    "BlockPredicateError": "The block's predicate is not implied by its iterators' domains.",
    "RootBlockError": "The primitive does not apply to the root block.",
}

_error_classes = {}


def _error_class(name):
    """The ScheduleError subclass called ``name`` (made on first use)."""
    cls = _error_classes.get(name)
    if cls is None:
        doc = _ERROR_DOCS.get(name, "A schedule primitive's precondition failed (see the "
                                    "message); the schedule is unchanged.")
        cls = type(name, (ScheduleError,), {"__module__": __name__, "__doc__": doc})
        _error_classes[name] = cls
        globals()[name] = cls
    return cls


# The failure modes, declared up front so that they can be caught by name before any is raised.
for _name in _ERROR_DOCS:
    _error_class(_name)


def _show(self):
    """Prints the scheduled module as TVMScript-like text (``print(sch.mod.script())``)."""
    print(self.mod.script())


Schedule.show = _show

__all__ = ["Schedule", "Trace", "BlockRV", "LoopRV", "ExprRV", "ScheduleError", "IndexMap",
           "TensorIntrin"]
