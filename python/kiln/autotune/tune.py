"""Tuning, with MetaSchedule's names: ``tune_tir`` tunes one function (or the functions of a
module), ``tune_tasks`` several under one budget, and ``compile_tir`` replays the best record of a
function as a schedule.

Example::

    from kiln import autotune as ms
    db = ms.tune_tir(func, target="llvm", work_dir="tune_gemm", max_trials_global=256)
    sch = ms.compile_tir(db, func, target="llvm")     # the best schedule found, or None
    rt = kiln.build(func, target="llvm", database=db)  # the same, built

A tuning run keeps its state in ``work_dir``: the database ``tuning.db`` (every measured
candidate, committed batch by batch), the cost model ``cost_model/`` (the next run starts from
it), the log ``tune.log`` and ``object_cache/``, the compiled candidates: a candidate built again
(for the final rounds, or by a resumed run) is loaded without running LLVM. Running the same
command again resumes: the trials already in the database count, so only the rest of the budget
is spent. Records keep the thread count they were measured with, and only those of the run's own
count are resumed: tuning a function for 1 thread and then for 2 in one database tunes both, and
a build applies the record of its thread count.

The first round of each task also measures a baseline schedule, by default
topi.default_schedule's, as an ordinary record (its stage is "baseline"; tune.log says
"baseline (topi.default_schedule): X ms"), so that the best record a build applies is never
slower than the schedule that needs no tuning.

Every candidate's results are checked against reference results before its time counts. They
come from the function as written, or, for a function of more than 1e10 operations (whose
plain loops would take minutes), from topi.default_schedule's schedule of it
(TuneConfig.reference; tune.log says which).
"""
import dataclasses
import json
import os
import sys
import warnings

from .. import ir, tir, topi
from .._kiln import autotune as _core
from ..error import (KilnTypeError, KilnValueError, TuningNoScheduleWarning,
                     TuningRecordMissingWarning)
from ..target import Target
from ..tir import Schedule, Trace
from .cost_model import CostModel
from .database import Database, TargetKey, _lookup_threads, _warn_other_threads
from .runner import LocalRunner, RunnerConfig
from .space import DEFAULT_SPACE, _check_space, _user_sketches


@dataclasses.dataclass
class TuneConfig:
    """How the search spends its trials (see kiln/autotune/search.h for the loop).

    Attributes:
        max_trials_global: trials of all tasks together.
        max_trials_per_task: trials of each task in total (records already in the database
            count); None: max_trials_global.
        num_trials_per_iter: candidates measured per round (one database batch).
        population: candidates kept between rounds.
        random_per_round: fresh random samples per round.
        children_per_round: mutated candidates per round.
        seeds_from_database: best records that seed the first round.
        epsilon: share of a batch picked at random.
        screen_repeat: timed repeats of a first measurement.
        final_pool_k: candidates re-measured together at the end (the pool), with the baseline
            schedule and the fastest single measurement: the top ones by their samples so far.
        final_pool_rounds: interleaved rounds of the pool (0: no pool; the final rounds take
            the top final_top_k by their samples so far).
        final_top_k: the pool's best by those rounds, re-measured together again.
        final_rounds: interleaved rounds of that re-measurement, whose best is the result.
        local_search_trials: neighbours of the best measured at the end.
        drift_check_every: rounds between two timings of a fixed reference candidate (0:
            none); a change above ``drift_threshold`` (a share of its first time) is logged.
        drift_threshold: see drift_check_every.
        seed: of the search's random choices.
        search_threads: threads that mutate, replay and analyze candidates between
            measurements (0: the cores this process may use); a run draws and keeps the same
            candidates with any number of them.
        time_budget_s: wall seconds after which no round and no local search starts (None:
            no limit), counted from the start of the run: it spends its trials or this time,
            whichever ends first, then the final rounds (a few seconds more) pick the best of
            what was measured. A resumed run gets the time again.
        num_threads: threads the kernels run on (0: the runtime's); the records store the
            count in effect, and the trials already in the database count only when they were
            measured with the same count.
        tensor_intrinsics: the tensor intrinsics the design space (and the default baseline)
            may tensorize with; None: the shipped x86 ones and the tensor cores'
            cuda.mma_f16f16f32, cuda.mma_bf16bf16f32, cuda.mma_s8s8s32 and cuda.mma_u8s8s32.
        baseline: a schedule measured as the first candidate of each task's first round, like
            any candidate (it counts as a trial), so that the best record is never slower than
            it: "default" (topi.default_schedule for the target and num_threads), None (none),
            or a callable that takes the PrimFunc and returns a tir.Schedule of it. A schedule
            the database holds already is not measured again; one that cannot be made (the
            callable raises) or whose trace does not replay on the function is skipped, with
            the reason in tune.log.
        reference: what computes the results every candidate is checked against, on this CPU:
            "untuned" (the function as written: plain loops), "default"
            (topi.default_schedule for this CPU), "auto" (the default schedule for a function
            of more than 1e10 operations, whose plain loops would take minutes, else the
            function as written), or a callable that takes the PrimFunc and returns a
            tir.Schedule of it. A wrong reference schedule cannot pass unseen: every candidate
            would disagree with it. One that cannot be made (it raises, or returns no schedule
            of one function) falls back to the function as written, with the reason in
            tune.log; the choice is logged too.
        space: the design space: "post-order-apply" (kiln's rules) or a schedule function
            that takes a tir.Schedule of each function and schedules it with sampling
            instructions (see kiln.autotune.space), called once per function; the search draws,
            mutates and refines its decisions. A dict gives each task its own by the task's
            name (the name tune_tasks shows; tasks it does not name get the rules). A run
            seeds its search only with records of the same space (the records say which); the
            final rounds and builds take the best record of any.
    """

    max_trials_global: int = 512
    max_trials_per_task: int = None
    num_trials_per_iter: int = 32
    population: int = 128
    random_per_round: int = 24
    children_per_round: int = 96
    seeds_from_database: int = 16
    epsilon: float = 0.1
    screen_repeat: int = 3
    final_pool_k: int = 16
    final_pool_rounds: int = 3
    final_top_k: int = 4
    final_rounds: int = 10
    local_search_trials: int = 16
    drift_check_every: int = 4
    drift_threshold: float = 0.03
    seed: int = 1
    search_threads: int = 0
    time_budget_s: float = None
    num_threads: int = 0
    tensor_intrinsics: list = None
    baseline: object = "default"
    reference: object = "auto"
    space: object = DEFAULT_SPACE


@dataclasses.dataclass(frozen=True)
class TaskResult:
    """What tuning one task found.

    Attributes:
        task: the task's name.
        trials: distinct candidates of the function measured on the target (earlier runs
            included).
        trials_this_run: candidates this run measured.
        best_seconds: the median time of the best candidate (0 when none ran right).
        best_gflops: its GFLOP/s (operations of one call / best_seconds).
        best_trace: the best candidate's trace as JSON (dict; Trace.apply_json_to_schedule
            replays it), or None.
        best_so_far: (trial, best seconds) after each batch.
        seconds_to_90_percent: wall time of this run until 90% of the final speed.
        rejections: candidates the design space refused, by reason.
        failures: measured candidates that failed, by status.
        drift: (trial, time of the reference candidate / its first time) of each drift check.
        drift_flags: drift checks past the threshold (the machine's speed moved).
        out_of_time: TuneConfig.time_budget_s ended the run's rounds before its trials.
    """

    task: str
    trials: int
    trials_this_run: int
    best_seconds: float
    best_gflops: float
    best_trace: object
    best_so_far: tuple
    seconds_to_90_percent: float
    rejections: dict
    failures: dict
    drift: tuple = ()
    drift_flags: int = 0
    out_of_time: bool = False


for _cls in (TuneConfig, TaskResult):
    _cls.__init__.__doc__ = (f"Creates a {_cls.__name__} from its fields, in the order and with "
                             "the defaults listed in the class's docstring.")


def _functions(mod_or_func, api):
    """(name, PrimFunc) pairs of a PrimFunc, an IRModule, a Schedule or a list of them."""
    if isinstance(mod_or_func, Schedule):
        mod_or_func = mod_or_func.mod
    if isinstance(mod_or_func, tir.PrimFunc):
        symbol = mod_or_func.attrs.get("global_symbol") if mod_or_func.attrs else None
        return [(str(symbol) if symbol else None, mod_or_func)]
    if isinstance(mod_or_func, ir.IRModule):
        return list(mod_or_func.functions.items())
    if isinstance(mod_or_func, (list, tuple)):
        pairs = []
        for item in mod_or_func:
            pairs.extend(_functions(item, api))
        return pairs
    raise KilnTypeError(f"{api}: expected a PrimFunc, an IRModule, a tir.Schedule or a list of "
                        f"them, found an object of type {type(mod_or_func).__name__}")


# TuneConfig.baseline's name of topi.default_schedule.
_DEFAULT = "default"


def _check_baseline(baseline, api):
    if baseline is None or callable(baseline):
        return
    if isinstance(baseline, str) and baseline == _DEFAULT:
        return
    expected = '"default", None or a callable func -> tir.Schedule'
    if isinstance(baseline, str):
        raise KilnValueError(f"{api}: baseline must be {expected}, found {baseline!r}")
    raise KilnTypeError(f"{api}: baseline must be {expected}, found an object of type "
                        f"{type(baseline).__name__}")


def _made_schedule(choice, func, target, config):
    """A schedule of ``func`` that a TuneConfig field names: a name (topi.default_schedule for
    ``target``, num_threads and tensor_intrinsics) or a callable func -> tir.Schedule. Returns
    (its name, the Schedule, None) or (its name, None, why there is none): whatever the callable
    raises is a reason, never fatal."""
    if isinstance(choice, str):
        name = "topi.default_schedule"
        # The search refuses a bad num_threads with its own message; here it is the runtime's.
        threads = config.num_threads if _positive_int(config.num_threads) else None

        def make(f):
            return topi.default_schedule(f, target=target, num_threads=threads,
                                         tensor_intrinsics=config.tensor_intrinsics)
    else:
        name = getattr(choice, "__qualname__", None) or type(choice).__name__
        make = choice
    try:
        sch = make(func)
    except Exception as error:  # a user's schedule may raise anything: a reason to skip it
        return name, None, f"it raised {type(error).__name__}: {error}"
    if not isinstance(sch, Schedule):
        return name, None, (f"it returned an object of type {type(sch).__name__}, not a "
                            "tir.Schedule")
    if len(sch.mod.functions) != 1:
        return name, None, f"its schedule holds {len(sch.mod.functions)} functions, not one"
    return name, sch, None


def _baseline_trace(baseline, func, target, config):
    """The baseline schedule of ``func``: (its name, its trace as JSON text, None), or (its name,
    None, why there is none). A baseline that fails is skipped, never fatal."""
    name, sch, reason = _made_schedule(baseline, func, target, config)
    if sch is None:
        return name, None, reason
    scheduled = list(sch.mod.functions.values())
    # Records keep traces as JSON, and builds replay them on the function: check both here.
    try:
        text = json.dumps(sch.trace.as_json())
        replayed = Schedule(func)
        Trace.apply_json_to_schedule(json.loads(text), replayed)
    except Exception as error:  # the same: skipped, never fatal
        return name, None, (f"its trace does not replay on the function: "
                            f"{type(error).__name__}: {error}")
    if not ir.structural_equal(replayed.mod.functions["main"], scheduled[0]):
        return name, None, ("its trace replays on the function to another function than the "
                            "schedule's (was it made for another function?)")
    return name, text, None


# TuneConfig.reference's names.
_REFERENCES = ("auto", "untuned", "default")
# The operations past which "auto" computes the reference results with the default schedule:
# plain loops run at a fraction of a GFLOP/s on large operands (a 1024^3 matmul: ~7 s), so
# 1e10 operations take about half a minute, called twice.
_REFERENCE_SCHEDULE_FLOPS = 1e10


def _check_reference(reference, api):
    if callable(reference) or (isinstance(reference, str) and reference in _REFERENCES):
        return
    expected = '"auto", "untuned", "default" or a callable func -> tir.Schedule'
    if isinstance(reference, str):
        raise KilnValueError(f"{api}: reference must be {expected}, found {reference!r}")
    raise KilnTypeError(f"{api}: reference must be {expected}, found an object of type "
                        f"{type(reference).__name__}")


def _reference_schedule(reference, func, target, config):
    """What computes the reference results of ``func``: (name, the scheduled PrimFunc, None),
    (None, None, None) for the function as written, or (name, None, why it falls back to the
    function as written)."""
    if reference == "untuned" or (reference == "auto" and
                                  _core.count_flops(func) <= _REFERENCE_SCHEDULE_FLOPS):
        return None, None, None
    # The reference runs on this CPU, also for a GPU task.
    cpu_target = target if Target(target).kind == "llvm" else "llvm"
    name, sch, reason = _made_schedule(reference, func, cpu_target, config)
    return name, None if sch is None else list(sch.mod.functions.values())[0], reason


def _references(entries, reference, target, config, log_path):
    """Per task, None or the (name, scheduled PrimFunc) that computes its reference results;
    the choice (and a fallback's reason) is logged."""
    out = []
    for task_name, func, _ in entries:
        name, scheduled, reason = _reference_schedule(reference, func, target, config)
        if name is None:
            line = "the function as written"
        elif scheduled is None:
            line = f"the function as written ({name} falls back: {reason})"
        else:
            line = name
        if log_path:
            with open(log_path, "a") as log:
                log.write(f"[{task_name}] reference results: {line}\n")
        out.append(None if scheduled is None else (name, scheduled))
    return out


def _positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _baselines(entries, baseline, target, config, log_path):
    """Per task, None or the (name, trace JSON text) of its baseline schedule; each one skipped
    is logged with its reason."""
    if baseline is None:
        return [None] * len(entries)
    out = []
    for task_name, func, _ in entries:
        name, text, reason = _baseline_trace(baseline, func, target, config)
        if text is None:
            if log_path:
                with open(log_path, "a") as log:
                    log.write(f"[{task_name}] baseline ({name}) skipped: {reason}\n")
            out.append(None)
        else:
            out.append((name, text))
    return out


def _spaces(entries, space, api):
    """Per task, None (kiln's rules) or the (name, [trace JSON text]) of its user design space's
    sketches; ``space`` may give each task's by its name (a dict; the others: the rules). A
    schedule function that fails raises (see _user_sketches): the run would tune another space
    than the one asked for."""
    names = [task_name for task_name, _, _ in entries]
    if isinstance(space, dict):
        unknown = [key for key in space if key not in names]
        if unknown:
            raise KilnValueError(f"{api}: space names tasks {unknown!r} that are not among the "
                                 f"tasks {names!r}")
    out = []
    for task_name, func, _ in entries:
        own = space.get(task_name, DEFAULT_SPACE) if isinstance(space, dict) else space
        out.append(_user_sketches(own, func, f"{api} (task {task_name})"))
    return out


def _log_spaces(entries, spaces, log_path):
    """One tune.log line per task with a user design space."""
    if not log_path:
        return
    with open(log_path, "a") as log:
        for (task_name, _, _), user in zip(entries, spaces):
            if user is not None:
                log.write(f"[{task_name}] design space: {user[0]}, {len(user[1])} sketch"
                          f"{'es' if len(user[1]) != 1 else ''}\n")


def _warn_no_schedule(api, result):
    """The TuningNoScheduleWarning of a task that has no schedule measured right, with the
    design space's refusals and the measurements' failures, the most frequent first."""
    reasons = sorted(list(result["rejections"].items()) + list(result["failures"].items()),
                     key=lambda item: -item[1])
    why = ("; ".join(f"{reason}: {count}" for reason, count in reasons[:4])
           if reasons else "the run's trials or time ended before any reached it")
    warnings.warn(f"{api}: task {result['task']} has no schedule measured right after "
                  f"{result['trials']} trials ({why}); a build with the database builds the "
                  "function as it was given", TuningNoScheduleWarning, stacklevel=3)


def _database(database, work_dir, api):
    if database is None:
        if work_dir is None:
            raise KilnValueError(f"{api}: give a work_dir (where tuning.db is kept) or a database")
        return Database(os.path.join(os.fspath(work_dir), "tuning.db"))
    if isinstance(database, Database):
        return database
    if isinstance(database, (str, os.PathLike)):
        return Database(os.fspath(database))
    raise KilnTypeError(f"{api}: database must be a kiln.autotune.Database or a path, found "
                        f"an object of type {type(database).__name__}")


def _database_to_read(database, api, consequence, stacklevel):
    """The database a lookup reads (``_database``'s rules), or None, with a
    TuningRecordMissingWarning that ends in ``consequence``, for a path where there is no file:
    a lookup does not create one (a mistyped path would leave an empty database behind)."""
    if isinstance(database, (str, os.PathLike)) and not os.path.exists(os.fspath(database)):
        warnings.warn(f"{api}: there is no tuning database at {os.fspath(database)}; "
                      f"{consequence}", TuningRecordMissingWarning, stacklevel=stacklevel + 1)
        return None
    return _database(database, None, api)


def _task_labels(entries):
    """The labels of progress bars, log lines and the summary, one per (name, function name,
    func, weight) entry, each its own: the name given, else the function's name; functions
    that share their name (te.create_prim_func names every function "main") go by the name
    of their last parameter's buffer (the output of a te function: "C" for a matmul), and
    whatever still repeats gets "#2", "#3"."""
    def own(fname, func):
        if func.params and func.params[-1] in func.buffer_map:
            return func.buffer_map[func.params[-1]].name
        return fname
    counts = {}
    for name, fname, _, _ in entries:
        if name is None:
            counts[fname] = counts.get(fname, 0) + 1
    labels = []
    for index, (name, fname, func, _) in enumerate(entries):
        label = name or fname
        if name is None and (fname is None or counts[fname] > 1):
            label = own(fname, func) or f"task{index}"
        unique, suffix = label, 1
        while unique in labels:
            suffix += 1
            unique = f"{label}#{suffix}"
        labels.append(unique)
    return labels


class _ProgressBars:
    """One tqdm progress bar per task (trials, best GFLOP/s, time left), or nothing. The search
    reports each task as it starts, so the bars are there from the start; the trials the
    database held before are a bar's initial count, outside its rate."""

    def __init__(self, enabled):
        self._bars = {}
        self._tqdm = None
        if enabled:
            try:
                from tqdm.auto import tqdm
                self._tqdm = tqdm
            except ImportError:
                self._tqdm = None

    def update(self, progress):
        if self._tqdm is None:
            return
        bar = self._bars.get(progress.task)
        total = max(progress.max_trials, 1)
        if bar is None:
            bar = self._bars[progress.task] = self._tqdm(
                total=total, initial=min(progress.trials - progress.trials_this_run, total),
                desc=progress.task, unit="trial", leave=True, file=sys.stderr)
        bar.n = min(progress.trials, total)
        bar.set_postfix_str(f"best {progress.best_gflops:.1f} GFLOP/s", refresh=False)
        bar.refresh()

    def close(self):
        for bar in self._bars.values():
            bar.close()


def tune_tasks(tasks, target="llvm", work_dir=None, database=None, config=None, runner=None,
               cost_model=None, progress=True, weights=None, **config_fields):
    """Tunes several functions under one budget: the task scheduler gives each round to the task
    whose weighted time promises the largest gain.

    Args:
        tasks: a list of PrimFuncs, or of (name, PrimFunc) or (name, PrimFunc, weight) tuples;
            the weight is how often a function runs per run of the whole model.
        target (str): the target string ("llvm": this machine's CPU; "opencl" or "cuda": the
            first such device here, on which the candidates are measured).
        work_dir (str or os.PathLike): where tuning.db, the cost model, tune.log and the
            compiled candidates (object_cache/) live (created when missing).
        database (Database or path): the database to tune into (default work_dir/tuning.db).
        config (TuneConfig): the search's settings; keyword arguments override its fields
            (e.g. ``baseline=None``: no baseline schedule is measured).
        runner (LocalRunner): measures the candidates (default: a LocalRunner with
            ``screen_repeat`` repeats, and work_dir/object_cache as its object cache).
        cost_model (CostModel): the model (default: the one saved in work_dir, else a new one).
        progress (bool): show a progress bar per task (tqdm).
        weights (list of float): one weight per entry of ``tasks`` (instead of weights in the
            tuples); a weight must be positive.

    Returns:
        list of TaskResult, in the order of ``tasks``.

    Raises:
        KilnValueError: a function with symbolic dimensions, an unknown target, or neither
            work_dir nor database.
        KilnRuntimeError: a GPU target without its device on this machine.
        KilnTypeError: an argument of the wrong type.
        KilnValueError, KilnTypeError: a baseline other than "default", None or a callable; a
            reference other than "auto", "untuned", "default" or a callable; a space other than
            "post-order-apply", a callable or a dict of them by task name (that names only
            tasks), or a schedule function that raises, returns something other than schedules
            of the function, or makes one that does not replay.
        KeyboardInterrupt: Ctrl-C; every batch measured before it is in the database.
    """
    api = "kiln.autotune.tune_tasks"
    if not isinstance(tasks, (list, tuple)):
        raise KilnTypeError(f"{api}: tasks must be a list of PrimFuncs or (name, func[, weight]) "
                            f"tuples, found an object of type {type(tasks).__name__}")
    config = config if config is not None else TuneConfig()
    if not isinstance(config, TuneConfig):
        raise KilnTypeError(f"{api}: config must be a TuneConfig, found {type(config).__name__}")
    known = {f.name for f in dataclasses.fields(TuneConfig)}
    for name in config_fields:
        if name not in known:
            raise KilnTypeError(f"{api}: unknown TuneConfig field '{name}'; the fields are "
                                f"{', '.join(sorted(known))}")
    config = dataclasses.replace(config, **config_fields)
    _check_baseline(config.baseline, api)
    _check_reference(config.reference, api)
    _check_space(config.space, api, per_task=True)
    if weights is not None and (not isinstance(weights, (list, tuple))
                                or len(weights) != len(tasks)):
        raise KilnValueError(f"{api}: weights must be a list with one weight per task "
                             f"({len(tasks)}), found {weights!r}")
    entries = []
    for index, task in enumerate(tasks):
        name, weight = None, 1.0
        if isinstance(task, tuple):
            if len(task) == 2:
                name, task = task
            elif len(task) == 3:
                name, task, weight = task
            else:
                raise KilnValueError(f"{api}: task {index} must be a PrimFunc or a (name, func) "
                                     f"or (name, func, weight) tuple")
        if weights is not None:
            weight = weights[index]
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight > 0:
            raise KilnValueError(f"{api}: the weight of task {index} must be a positive number, "
                                 f"found {weight!r}")
        for fname, func in _functions(task, api):
            entries.append((name, fname, func, float(weight)))
    if not entries:
        raise KilnValueError(f"{api}: no functions to tune")
    entries = [(label, func, weight)
               for label, (_, _, func, weight) in zip(_task_labels(entries), entries)]
    # The spaces' sketches before anything is created: a schedule function that fails stops here.
    spaces = _spaces(entries, config.space, api)
    if work_dir is not None:
        os.makedirs(os.fspath(work_dir), exist_ok=True)
    db = _database(database, work_dir, api)
    if runner is None:
        object_cache = (os.path.join(os.fspath(work_dir), "object_cache")
                        if work_dir is not None else None)
        runner = LocalRunner(RunnerConfig(repeat=config.screen_repeat,
                                          num_threads=config.num_threads,
                                          object_cache_dir=object_cache))
    model_dir = os.path.join(os.fspath(work_dir), "cost_model") if work_dir is not None else None
    if cost_model is None:
        cost_model = CostModel()
        if model_dir is not None and os.path.isdir(model_dir):
            cost_model.load(model_dir)
    log_path = os.path.join(os.fspath(work_dir), "tune.log") if work_dir is not None else ""
    _log_spaces(entries, spaces, log_path)
    baselines = _baselines(entries, config.baseline, target, config, log_path)
    references = _references(entries, config.reference, target, config, log_path)
    # The baseline, the reference and the space are callables or names: not the search's
    # settings (asdict would copy them).
    settings = dataclasses.asdict(dataclasses.replace(config, baseline=None, reference=None,
                                                      space=None))
    bars = _ProgressBars(progress)
    try:
        raw = _core.tune_tasks([e[1] for e in entries], [e[0] for e in entries],
                               [e[2] for e in entries], baselines, references, spaces, target,
                               db._core, runner._core, cost_model._core, settings, log_path,
                               bars.update)
    finally:
        bars.close()
        if model_dir is not None:
            cost_model.save(model_dir)
    results = []
    for r in raw:
        if r["best_seconds"] <= 0:
            _warn_no_schedule(api, r)
        trace = json.loads(r["best_trace_json"]) if r["best_trace_json"] else None
        results.append(TaskResult(task=r["task"], trials=r["trials"],
                                  trials_this_run=r["trials_this_run"],
                                  best_seconds=r["best_seconds"], best_gflops=r["best_gflops"],
                                  best_trace=trace, best_so_far=tuple(r["best_so_far"]),
                                  seconds_to_90_percent=r["seconds_to_90_percent"],
                                  rejections=dict(r["rejections"]), failures=dict(r["failures"]),
                                  drift=tuple(r["drift"]), drift_flags=r["drift_flags"],
                                  out_of_time=r["out_of_time"]))
    return results


def tune_tir(mod_or_func, target="llvm", work_dir=None, max_trials_global=512,
             num_trials_per_iter=32, database=None, **options):
    """Tunes a function (or every function of a module) for ``target`` and returns the database
    that holds what was measured.

    Args:
        mod_or_func: a PrimFunc, an IRModule, a tir.Schedule (its module) or a list of them.
        target (str): the target string.
        work_dir (str or os.PathLike): where tuning.db, the cost model and tune.log live.
        max_trials_global (int): trials in total (records already in the database count).
        num_trials_per_iter (int): candidates measured per round.
        database (Database or path): the database (default work_dir/tuning.db).
        **options: tune_tasks's other arguments and TuneConfig fields.

    Returns:
        Database: the tuning database.

    Example:
        db = ms.tune_tir(func, target="llvm", work_dir="tune_gemm", max_trials_global=128)
    """
    api = "kiln.autotune.tune_tir"
    _functions(mod_or_func, api)  # a wrong type is refused before anything is created
    db = _database(database, work_dir, api) if work_dir is None or database is not None else None
    if work_dir is not None:
        os.makedirs(os.fspath(work_dir), exist_ok=True)
        if db is None:
            db = Database(os.path.join(os.fspath(work_dir), "tuning.db"))
    tune_tasks([mod_or_func], target=target,
               work_dir=work_dir, database=db, max_trials_global=max_trials_global,
               num_trials_per_iter=num_trials_per_iter, **options)
    return db


def compile_tir(database, mod_or_func, target="llvm", num_threads=None):
    """The best schedule the database holds for a function on ``target`` (this machine's CPU
    model, or for a GPU target this machine's device of that kind), replayed on the function: a
    tir.Schedule, or None when there is no record (or no file at a path given: it is not
    created, and a kiln.error.TuningRecordMissingWarning says so).

    The record is one measured with ``num_threads`` threads when there is one; otherwise the best
    record of another thread count (or of an unknown one) is used, with a
    kiln.error.TuningRecordThreadsWarning (once) that says which count it was tuned for.

    Args:
        database (Database or path): the tuning database.
        mod_or_func: a PrimFunc, or an IRModule of one function.
        target (str): the target string.
        num_threads (int, optional): the threads the function will run on (None or 0:
            kiln.runtime.get_num_threads()).

    Raises:
        KilnValueError: a stored trace that does not replay on the function (it is another
            function's, or the database is damaged), a negative num_threads.
    """
    api = "kiln.autotune.compile_tir"
    pairs = _functions(mod_or_func, api)
    if len(pairs) != 1:
        raise KilnValueError(f"{api}: expected one function, found {len(pairs)}; compile each "
                             "function of the module on its own")
    db = _database_to_read(database, api, "there is no schedule to compile", stacklevel=2)
    if db is None:
        return None
    return _best_schedule(db, pairs[0][1], target, num_threads, api,
                          f"function '{pairs[0][0] or 'main'}'", stacklevel=2)


def _best_schedule(db, func, target, num_threads, api, what, stacklevel):
    """The best stored schedule of ``func`` (``what`` in the warning) on ``target`` for
    ``num_threads`` threads, or None; warns once when it was tuned for another thread count."""
    threads = _lookup_threads(num_threads, api)
    best = _core.best_record(db._core, func, target, threads, api)
    if best is None:
        return None
    text, tuned_threads, threads = best
    if tuned_threads != threads:
        key = TargetKey(*_core.local_target_key(target, threads, api))
        _warn_other_threads(api, db.path, what, key, tuned_threads, stacklevel=stacklevel + 1,
                            identity=ir.structural_hash(func))
    sch = Schedule(func)
    Trace.apply_json_to_schedule(json.loads(text), sch)
    return sch
