"""The tuner's design space: the sketches of a function (schedules whose traces sample their
decisions), random candidates drawn from them, replays with given decisions, and mutations.

Example::

    space = kiln.autotune.SpaceGenerator(func, "llvm")
    candidate = space.sample(0, seed=1)       # or None when refused (see space.rejections)
    rt = kiln.build(candidate.mod)
    print(candidate.trace.as_python())        # the schedule that was built
    neighbour = space.mutate(candidate.decisions, seed=2)
"""
from .._kiln.autotune import Candidate, SpaceGenerator

__all__ = ["Candidate", "SpaceGenerator"]
