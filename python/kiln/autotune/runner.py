"""Measuring candidate schedules. The local runner builds each candidate, checks its results
against the untuned function's on random arguments, and times it, in a worker process: a
candidate that crashes, aborts, hangs or computes a wrong result is recorded with why, the worker
is replaced, and the rest of the batch is measured. Statuses are those the tuning database
stores (:data:`STATUSES`).

Example::

    runner = ms.LocalRunner(repeat=3)
    runner.set_task(func, target="llvm")
    results = runner.run([sch_a, sch_b.mod])
    best = min((r for r in results if r.status == "ok"), key=lambda r: r.median)
    key = runner.target_key()  # where the records were measured, for the database
"""
import dataclasses
import statistics
from typing import Tuple as _Tuple

from .._kiln import autotune as _core
from ..error import KilnTypeError
from .database import TargetKey, _value_class

FAULTS = ("", "crash", "abort", "hang", "wrong_result")


@dataclasses.dataclass
class RunnerConfig:
    """How the local runner measures.

    Timing: each candidate is called ``warmup`` times untimed, then timed in ``repeat`` repeats
    of ``number`` calls; each repeat gives one time per call. With ``number`` 0 the runner
    picks the calls per repeat so that a repeat lasts at least ``min_repeat_ms``. With
    ``flush_cache`` a buffer twice the size of the last-level cache is written before each
    repeat, and ``number`` 0 means one (cold) call per repeat. :meth:`LocalRunner.run` builds
    and checks a batch first, then times it in rounds: the first repeat of each candidate in
    turn, then the second of each, and so on, so that a moment when the machine is slower
    falls on one repeat of several candidates rather than on every repeat of one.

    Placement: with ``vary_placement`` (the default) every tensor argument moves before each
    repeat to another offset of its buffer (a multiple of 64 bytes below 4 KiB), its values
    restored there, so that a kernel whose speed depends on where its arguments lie relative to
    each other (4K aliasing, cache-set conflicts) is timed over several placements, as a
    caller's arrays would have them. In a round of a batch every candidate runs at the same
    placement. Arguments in a GPU's memory stay where the driver put them.

    Arguments: every tensor argument is filled from ``seed`` (floats uniform in [-1, 1),
    float16/bfloat16 multiples of 1/64, signed integers in [-8, 8], unsigned in [0, 15]), and
    each candidate starts from fresh copies. A function that changes its own results when
    called again (an in-place update, an accumulation) has its arguments restored before every
    timed call, each call timed alone, so that the data cannot drift.

    Correctness: a candidate's first call and its last timed call are compared with the untuned
    function's results, element by element. Integers must be equal; a float passes when
    ``|found - expected| <= atol' * scale + rtol' * |expected|``, with ``scale`` the largest
    ``|expected|`` of that argument (at least 1) and ``atol'``, ``rtol'`` at least 4 machine
    epsilons of the dtype. NaN matches only NaN.

    Attributes:
        warmup: untimed calls before the first repeat (>= 0).
        number: calls per repeat (>= 0); 0 picks them from ``min_repeat_ms``.
        repeat: timed repeats (>= 1) when :meth:`LocalRunner.run` is given none.
        min_repeat_ms: the shortest repeat when ``number`` is 0.
        flush_cache: evict the arguments from the CPU caches before each repeat.
        vary_placement: move the arguments to another placement before each repeat.
        timeout_s: the limit per candidate (check and timing); past it the worker is killed
            and the candidate is ``"timeout"``.
        build_timeout_s: the limit for building one candidate, the same way (a build is slow
            long before a kernel would hang: NVRTC takes seconds for an unrolled CUDA tile).
        reference_timeout_s: the limit for computing the untuned function's results.
        check_correctness: compare each candidate's results with the untuned function's.
        rtol: relative tolerance of the comparison.
        atol: absolute tolerance, scaled by the largest expected magnitude.
        num_threads: kernel threads in the worker; 0 is the runtime's default
            (``KILN_NUM_THREADS`` or the available cores). Records store the count in effect
            (:meth:`LocalRunner.target_key`).
        seed: of the random arguments.
        worker: path of the worker executable; empty uses ``KILN_TUNE_WORKER``, else the
            ``kiln_tune_worker`` next to kiln's extension module.
        fault_plan: a test hook, None for real tuning: ``{n: fault}`` gives the n-th candidate
            that :meth:`LocalRunner.run` measures (from 0, over the runner's life) that fault
            (see :class:`MeasureInput`), so that a search's candidates can crash, hang or
            compute wrong results on purpose.
        build_workers: worker processes that build and check a batch of
            :meth:`LocalRunner.run` side by side before its candidates are timed one at a
            time, each in the worker that built it (nothing is timed while they build); 0 is
            the cores this process may use, at most 4; 1 builds, checks and times each
            candidate before the next. A task whose arguments are too large for that many
            workers in 80% of the memory available (each holds three times their bytes: a
            working and a pristine copy, and the reference results) is staged by as many as
            fit, at least one.
        object_cache_dir: a directory of compiled objects that the workers share (None: no
            cache): a candidate whose LLVM IR was compiled before for the same target, e.g.
            again for the final rounds or by a resumed run, is loaded without running LLVM.
            :func:`tune_tir` and :func:`tune_tasks` use ``work_dir/object_cache``.
    """

    warmup: int = 1
    number: int = 0
    repeat: int = 3
    min_repeat_ms: float = 20.0
    flush_cache: bool = False
    vary_placement: bool = True
    timeout_s: float = 10.0
    build_timeout_s: float = 60.0
    reference_timeout_s: float = 120.0
    check_correctness: bool = True
    rtol: float = 1e-3
    atol: float = 1e-3
    num_threads: int = 0
    seed: int = 0
    worker: str = ""
    fault_plan: dict = None
    build_workers: int = 0
    object_cache_dir: str = None


RunnerConfig.__init__.__doc__ = ("Creates a RunnerConfig from its fields, in the order and with "
                                 "the meaning that the class docstring gives.")


@_value_class
class MeasureInput:
    """A candidate to measure, with a fault to inject for tests.

    Attributes:
        mod: the scheduled module (its function ``"main"`` or its only one), a
            :class:`kiln.tir.Schedule` (its module) or a PrimFunc.
        fault: a test hook, ``""`` for real candidates: ``"crash"`` (the worker raises SIGSEGV
            where the kernel would run), ``"abort"``, ``"hang"`` (it sleeps until the timeout)
            or ``"wrong_result"`` (one element of the results is changed before the check).
    """

    mod: object
    fault: str = ""


@_value_class
class MeasureResult:
    """What one candidate came to.

    Attributes:
        status: ``"ok"``, ``"build_error"``, ``"run_error"``, ``"wrong_result"``,
            ``"timeout"`` or ``"crash"``.
        run_secs: seconds per call, one per repeat (or per round of
            :meth:`LocalRunner.run_interleaved`); empty unless ``status`` is ``"ok"``.
        error: why the candidate failed: the build's message, the kernel's error, the signal
            that killed the worker, the limit it passed, or the wrong element (index, expected,
            found).
        build_ms: the candidate's build time in the worker, in milliseconds.
        build_from_cache: its object came from ``RunnerConfig.object_cache_dir`` (LLVM did
            not run).
        number: calls per timed repeat.
    """

    status: str
    run_secs: _Tuple[float, ...] = ()
    error: str = ""
    build_ms: float = 0.0
    build_from_cache: bool = False
    number: int = 0

    @property
    def median(self):
        """The median of :attr:`run_secs` in seconds, or None when there are none."""
        return statistics.median(self.run_secs) if self.run_secs else None


def _pairs(candidates, api):
    """(module, fault) pairs for the core; modules are converted (and checked) by the core."""
    if not isinstance(candidates, (list, tuple)):
        raise KilnTypeError(f"{api}: candidates must be a list of modules, schedules or "
                            f"MeasureInputs, found {type(candidates).__name__}")
    pairs = []
    for candidate in candidates:
        if isinstance(candidate, MeasureInput):
            pairs.append((candidate.mod, candidate.fault))
        else:
            pairs.append((candidate, ""))
    return pairs


def _results(pair):
    """The core's (result dicts, interrupting exception): the results, or the exception raised
    with the results measured before it as its ``results`` attribute."""
    dicts, interrupted = pair
    results = [MeasureResult(**d) for d in dicts]
    if interrupted is not None:
        interrupted.results = results
        raise interrupted
    return results


class LocalRunner:
    """Builds, checks and times candidate schedules in a worker process on this machine, one
    candidate at a time (nothing overlaps a measurement).

    No candidate can end a run: one whose build fails is ``"build_error"``, whose kernel
    returns an error ``"run_error"``, that kills the worker (SIGSEGV, SIGILL, SIGBUS, abort)
    ``"crash"`` with the signal's name, that passes ``timeout_s`` ``"timeout"``, whose results
    differ from the untuned function's ``"wrong_result"`` naming the element; a dead worker is
    replaced and the batch goes on.

    Ctrl-C stops a batch: the candidate in flight is dropped (its worker stopped) and the
    KeyboardInterrupt propagates with the results measured before it in its ``results``
    attribute.

    Example::

        with ms.LocalRunner(repeat=3, min_repeat_ms=10) as runner:
            runner.set_task(func, "llvm")
            for r in runner.run([sch.mod, ms.MeasureInput(sch.mod, fault="crash")]):
                print(r.status, r.median, r.error)
    """

    def __init__(self, config=None, **fields):
        """Creates a runner from a :class:`RunnerConfig`, with ``fields`` overriding its
        fields (``LocalRunner(repeat=5)``). The worker starts at :meth:`set_task`.

        Raises:
            KilnTypeError: config is not a RunnerConfig, a field is unknown or of the wrong
                type.
            KilnValueError: a field is out of range.
            KilnRuntimeError: the worker executable cannot be found.
        """
        api = "kiln.autotune.LocalRunner"
        if config is None:
            config = RunnerConfig()
        if not isinstance(config, RunnerConfig):
            raise KilnTypeError(f"{api}: config must be a RunnerConfig, found "
                                f"{type(config).__name__}")
        known = {f.name for f in dataclasses.fields(RunnerConfig)}
        for name in fields:
            if name not in known:
                raise KilnTypeError(f"{api}: unknown RunnerConfig field '{name}'; the fields "
                                    f"are {', '.join(sorted(known))}")
        self._config = dataclasses.replace(config, **fields)
        self._core = _core.LocalRunnerCore(self._config)

    @property
    def config(self):
        """The :class:`RunnerConfig` the runner measures with."""
        return self._config

    def set_task(self, func, target="llvm", name="", reference=None):
        """Sets the function that the next candidates schedule and the target they are built
        for, and computes its reference results in the worker (reused when the same function
        and target come back).

        Args:
            func: the untuned PrimFunc (or a module of one function).
            target (str): the target string, e.g. ``"llvm"``.
            name (str): the task's name in messages.
            reference: None, or a schedule of ``func`` for this CPU (a tir.Schedule, its
                module or its PrimFunc) that computes the reference results instead of the
                untuned function, whose plain loops take minutes on a large workload. It must
                take the function's arguments.

        A GPU target (``"opencl"``, ``"cuda -arch=sm_90"``) is measured on the device it
        stands for, on arguments in the device's memory, each timed span ending when the device
        has finished; the reference results come from the untuned function built for this CPU
        (it binds no loop to GPU threads, so it cannot run on the GPU).

        Raises:
            KilnValueError: a symbolic dimension, an unknown target, an untuned function (or
                reference schedule) that does not build or run, or arguments that a worker
                cannot hold twice (a working and a pristine copy) in the memory available;
                the task set before stays.
            KilnRuntimeError: the worker died or passed ``reference_timeout_s``, or a GPU target
                has no device here (the message names the target and why).
        """
        self._core.set_task(func, target, name,
                            None if reference is None else ("", reference))

    def run(self, candidates, repeat=None):
        """Builds and checks each candidate, then times them in rounds of one repeat each.

        Args:
            candidates: a list of modules, schedules, PrimFuncs or :class:`MeasureInput`.
            repeat (int): timed repeats per candidate; None uses the config's.

        Returns:
            list of MeasureResult: one per candidate, in order.

        Raises:
            KilnValueError: a negative repeat, an unknown fault, or no task set (before
                anything is measured).
            KeyboardInterrupt: on Ctrl-C, with the results so far in its ``results``.
        """
        api = "kiln.autotune.LocalRunner.run"
        pairs = _pairs(candidates, api)
        return _results(self._core.run(pairs, 0 if repeat is None else repeat))

    def run_interleaved(self, candidates, rounds):
        """Builds and checks every candidate, then times them in ``rounds`` interleaved rounds
        (candidate 0, 1, ..., k-1, then again), one repeat each, so that a drift of the
        machine affects all of them alike: for re-measuring the best candidates of a search.

        Args:
            candidates: as for :meth:`run`.
            rounds (int): the rounds (>= 1).

        Returns:
            list of MeasureResult: one per candidate, with one time per round when ok.

        Raises:
            KilnValueError: rounds < 1, an unknown fault, or no task set.
            KeyboardInterrupt: on Ctrl-C, with an empty ``results``.
        """
        api = "kiln.autotune.LocalRunner.run_interleaved"
        return _results(self._core.run_interleaved(_pairs(candidates, api), rounds))

    def target_key(self):
        """Where the measurements are made, for the tuning database: a :class:`TargetKey` of
        the task target's canonical string, the CPU model name, the target's ISA features and
        the threads the kernels run on in the worker (the default resolved: never 0); for a GPU
        target, the device's name, its OpenCL driver version (``"driver=..."``) or CUDA compute
        capability (``"sm_XY"``), and 1 thread.

        Raises:
            KilnValueError: no task was set.
        """
        return TargetKey(*self._core.target_key())

    def close(self):
        """Stops the worker process; the runner cannot be used afterwards."""
        self._core.close()

    def __enter__(self):
        """Returns the runner, which :meth:`close` stops at the end of the ``with`` block."""
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def cpu_model_name():
    """This machine's CPU model name, as runners put it in target keys: ``/proc/cpuinfo``'s
    "model name", or LLVM's name of the host CPU where the file has none."""
    return _core.cpu_model_name()
