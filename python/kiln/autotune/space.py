"""The tuner's design space: the sketches of a function (schedules whose traces sample their
decisions), random candidates drawn from them, replays with given decisions, and mutations.

The sketches come from kiln's rules ("post-order-apply", the default), or from a schedule
function of the user's (MetaSchedule's ScheduleFn): it takes a ``tir.Schedule`` of the function
and schedules it with sampling instructions (``sample_perfect_tile``, ``sample_categorical``,
``sample_compute_location``), whose decisions the search draws, mutates and refines. It changes
the schedule it is given (and returns None), or returns a schedule, or a list of schedules (one
sketch each). Its candidates are finished by the same postprocessors as the rules' (reduction
inits decomposed, candidates that recompute a reduction refused). Like the rules, it may leave
the parallel loops, vectors and unrolling to the postprocessor parallel_vectorize_unroll by
annotating the root block (``sch.get_block("root")``), as MetaSchedule's ``meta_schedule.*``
annotations do: ``kiln.parallel_max`` (the outer spatial loops fused and made parallel up to
this extent), ``kiln.vectorize_max`` (each block's innermost spatial loop vectorized, split
first when longer), ``kiln.unroll_max_step`` (the depth of automatic unrolling) and
``kiln.nontemporal`` (1: each nest's outermost loop is annotated ``pragma_nontemporal``, so that
its stores to outputs go past the caches); a sampled value, ``sch.sample_categorical``, is
tuned. Kiln's rules offer ``kiln.nontemporal`` to functions whose buffers outgrow the target's
last-level cache.

Example::

    space = kiln.autotune.SpaceGenerator(func, "llvm")
    candidate = space.sample(0, seed=1)       # or None when refused (see space.rejections)
    rt = kiln.build(candidate.mod)
    print(candidate.trace.as_python())        # the schedule that was built
    neighbour = space.mutate(candidate.decisions, seed=2)

    def tiled(sch):                           # a user design space
        i, j, k = sch.get_loops("C")
        i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=16))
        j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=64))
        sch.reorder(i0, j0, k, i1, j1)
        sch.vectorize(j1)

    space = kiln.autotune.SpaceGenerator(func, "llvm", space=tiled)
"""
import json

from .. import ir, tir
from .._kiln.autotune import Candidate
from .._kiln.autotune import SpaceGenerator as _SpaceGenerator
from ..error import KilnTypeError, KilnValueError
from ..tir import Schedule, Trace

__all__ = ["Candidate", "SpaceGenerator", "DEFAULT_SPACE"]

# The name of the design space of kiln's rules (MetaSchedule's name of its default).
DEFAULT_SPACE = "post-order-apply"


def _check_space(space, api, per_task=False):
    """Refuses a ``space`` that is neither DEFAULT_SPACE nor a callable (with ``per_task``, nor
    a dict of them by task name)."""
    if per_task and isinstance(space, dict):
        for value in space.values():
            _check_space(value, api)
        return
    if callable(space) or (isinstance(space, str) and space == DEFAULT_SPACE):
        return
    expected = f'"{DEFAULT_SPACE}" (kiln\'s rules) or a callable that schedules a tir.Schedule'
    if per_task:
        expected += ", or a dict of them by task name"
    if isinstance(space, str):
        raise KilnValueError(f"{api}: space must be {expected}, found {space!r}")
    raise KilnTypeError(f"{api}: space must be {expected}, found an object of type "
                        f"{type(space).__name__}")


def _user_sketches(space, func, api):
    """None for kiln's rules, or (name, [trace JSON text]) of the sketches that the schedule
    function ``space`` makes of ``func``. Raises KilnValueError naming ``api`` and the space when
    the function raises or its schedule does not replay on ``func``, KilnTypeError when it
    returns something other than None, a tir.Schedule or a list of them."""
    _check_space(space, api)
    if isinstance(space, str):
        return None
    if not isinstance(func, tir.PrimFunc):
        raise KilnTypeError(f"{api}: func must be a PrimFunc, found an object of type "
                            f"{type(func).__name__}")
    name = getattr(space, "__qualname__", None) or type(space).__name__
    given = Schedule(func)
    try:
        returned = space(given)
    except Exception as error:  # the user's code: its error, named, is the reason
        raise KilnValueError(f"{api}: the design space {name} raised {type(error).__name__}: "
                             f"{error}") from error
    if returned is None:
        schedules = [given]
    elif isinstance(returned, Schedule):
        schedules = [returned]
    elif (isinstance(returned, (list, tuple)) and returned
          and all(isinstance(s, Schedule) for s in returned)):
        schedules = list(returned)
    else:
        found = (f"a list of {[type(s).__name__ for s in returned]}"
                 if isinstance(returned, (list, tuple)) else
                 f"an object of type {type(returned).__name__}")
        raise KilnTypeError(f"{api}: the design space {name} must change the tir.Schedule it is "
                            f"given (and return None), or return a tir.Schedule or a non-empty "
                            f"list of them; it returned {found}")
    texts = []
    for index, sch in enumerate(schedules):
        functions = list(sch.mod.functions.values())
        text = json.dumps(sch.trace.as_json())
        # The search replays the sketch on the function: a schedule of another function (one
        # the space made itself) would tune that one.
        replayed = Schedule(func)
        try:
            Trace.apply_json_to_schedule(json.loads(text), replayed)
            same = len(functions) == 1 and ir.structural_equal(replayed.mod.functions["main"],
                                                               functions[0])
        except Exception as error:  # a ScheduleError of the replay: the same reason
            raise KilnValueError(f"{api}: sketch {index} of the design space {name} does not "
                                 f"replay on the function: {type(error).__name__}: "
                                 f"{error}") from error
        if not same:
            raise KilnValueError(f"{api}: sketch {index} of the design space {name} is a "
                                 "schedule of another function (make it from the tir.Schedule "
                                 "the space is given)")
        texts.append(text)
    return name, texts


class SpaceGenerator(_SpaceGenerator):
    """The design space of one function on one target.

    Args:
        func (PrimFunc): the function.
        target (str): the target string.
        num_threads (int): the threads the kernels will run on (0: the runtime's).
        tensor_intrinsics (list of str): the tensor intrinsics the space tries (None: the
            shipped x86 ones and the tensor cores' updates cuda.mma_f16f16f32,
            cuda.mma_bf16bf16f32, cuda.mma_s8s8s32 and cuda.mma_u8s8s32); it uses those whose
            required features the target has.
        space: "post-order-apply" (kiln's rules) or a schedule function (see the module's
            docstring).

    Raises:
        KilnValueError: the schedule function raised, or made a schedule that does not replay
            on ``func``; an unknown space name.
        KilnTypeError: a space other than a name or a callable, or a schedule function that
            returned something other than None, a tir.Schedule or a list of them.
    """

    def __init__(self, func, target="llvm", num_threads=0, tensor_intrinsics=None,
                 space=DEFAULT_SPACE):
        """Builds the sketches of ``func`` for ``target``: the rules', or those the schedule
        function ``space`` makes (the class's docstring lists the arguments and errors)."""
        user = _user_sketches(space, func, "kiln.autotune.SpaceGenerator")
        if user is None:
            super().__init__(func, target, num_threads, tensor_intrinsics)
        else:
            super().__init__(func, target, num_threads, tensor_intrinsics, user[1], user[0])
