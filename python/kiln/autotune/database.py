"""The tuning database from Python: workloads, the measured records of their candidate
schedules, and the lookups a tuning run and a build make, kept in one SQLite file that several
tuning processes may share.

Records are looked up for one workload on one target key: the full target string AND the device
it was measured on (model and features), so that a record never crosses targets or machines.
A record also keeps the number of threads its kernel ran on: the tuner's lookups (``count``,
``measured_hashes``, ``is_measured``) match it, and :meth:`Database.best` prefers it, falling back
to another thread count with a :class:`kiln.error.TuningRecordThreadsWarning`.
Rows written by a kiln of another workload key or IR format version, and rows damaged by hand,
are skipped with a :class:`DatabaseWarning`; they never stop a query.
"""
import dataclasses
import json
import warnings
from typing import Optional as _Optional, Tuple as _Tuple, Union as _Union

from .._kiln import autotune as _core
from ..error import KilnTypeError, KilnValueError, TuningRecordThreadsWarning

WORKLOAD_KEY_VERSION = _core.WORKLOAD_KEY_VERSION
IR_FORMAT_VERSION = _core.IR_FORMAT_VERSION
SCHEMA_VERSION = _core.SCHEMA_VERSION
STATUSES = ("ok", "build_error", "run_error", "wrong_result", "timeout", "crash")


def _value_class(cls):
    """Makes ``cls`` a frozen dataclass whose constructor says where its fields are described."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    cls.__init__.__doc__ = (f"Creates a {cls.__name__} from its fields, in the order and with "
                            "the meaning that the class docstring gives.")
    return cls


class DatabaseWarning(UserWarning):
    """A tuning database skipped something it cannot use: rows of another workload key or IR
    format version, a row or export line that cannot be read. The message names the file and the
    row or line."""


@_value_class
class TargetKey:
    """Where a record was measured. Every lookup matches ``target``, ``device_model`` and
    ``device_features`` exactly; ``num_threads`` is matched exactly by the tuner's lookups and
    preferred by :meth:`Database.best`.

    Attributes:
        target: the canonical target string, e.g. ``"llvm -mtriple=x86_64-pc-linux-gnu
            -mcpu=znver3 -mattr=+avx2,+fma"``; its first word is the target kind.
        device_model: the CPU model name (``"AMD EPYC 7B13"``), or the GPU's name as its driver
            reports it (``"NVIDIA H100 80GB HBM3"``).
        device_features: the device's features as the runner reports them: a CPU's ISA
            features (may be empty), a CUDA GPU's compute capability (``"sm_90"``), an OpenCL
            device's driver version (``"driver=3.1+debian"``).
        num_threads: the threads the kernel ran on; 0: unknown (the records of a database of
            schema version 2 or older); 1 for a GPU target (one host thread launches the
            kernels).
    """

    target: str
    device_model: str
    device_features: str = ""
    num_threads: int = 0


@_value_class
class Workload:
    """A tuned function as stored: its key (key version and structural hash) and the serialized
    function that confirms a hash match.

    Attributes:
        id: the workload's id in its database file.
        key_version: how ``structural_hash`` was computed.
        structural_hash: the function's structural hash (an int in [0, 2**64)).
        func_json: the serialized function, as given to :meth:`Database.commit_workload`.
        created: when it was added, ISO 8601 UTC.
    """

    id: int
    key_version: int
    structural_hash: int
    func_json: str
    created: str


@_value_class
class Measurement:
    """What the runner measured for one candidate schedule: what
    :meth:`Database.commit_records` stores.

    Attributes:
        workload: the :class:`Workload` (or its id) the candidate schedules.
        target: the :class:`TargetKey` it was measured on.
        trace: the candidate's trace, as JSON text or as a dict.
        candidate_hash: structural hash of the scheduled function: a candidate with the same
            hash is never measured again.
        run_secs: every repeat, in seconds (required when ``status`` is ``"ok"``).
        status: one of :data:`STATUSES`.
        error: why the candidate failed.
        kiln_version: the kiln that measured it.
        ir_format_version: the IR format version of the trace.
        search: what the search knew of the candidate (a dict, e.g. generation and predicted
            score), or None.
    """

    workload: _Union[Workload, int]
    target: TargetKey
    trace: _Union[str, dict]
    candidate_hash: int
    run_secs: _Tuple[float, ...] = ()
    status: str = "ok"
    error: str = ""
    kiln_version: str = ""
    ir_format_version: int = IR_FORMAT_VERSION
    search: _Optional[dict] = None


@_value_class
class TuningRecord:
    """A stored record: a measurement and what the database derived from it.

    Attributes:
        id: the record's id in its database file.
        workload_id: the id of its workload.
        target, device_model, device_features, num_threads: its target key (see
            :attr:`target_key`); ``num_threads`` is 0 when the thread count is unknown.
        target_kind: the first word of the target: ``"llvm"``, ``"cuda"`` ...
        trace: the candidate's trace as compact JSON text.
        candidate_hash: structural hash of the scheduled function.
        run_secs: every repeat, in seconds, as a tuple.
        median: the median of ``run_secs``, or None when there are none.
        spread: ``(max - min) / median`` of ``run_secs``, or None.
        status: one of :data:`STATUSES`.
        error: why the candidate failed.
        kiln_version: the kiln that measured it.
        ir_format_version: the IR format version of the trace.
        search: the search's metadata of the candidate, a dict.
        created: when it was stored, ISO 8601 UTC.
    """

    id: int
    workload_id: int
    target: str
    target_kind: str
    device_model: str
    device_features: str
    num_threads: int
    trace: str
    candidate_hash: int
    run_secs: _Tuple[float, ...]
    median: _Optional[float]
    spread: _Optional[float]
    status: str
    error: str
    kiln_version: str
    ir_format_version: int
    search: dict
    created: str

    @property
    def target_key(self):
        """The :class:`TargetKey` the record was measured on."""
        return TargetKey(self.target, self.device_model, self.device_features, self.num_threads)


@_value_class
class MergeSummary:
    """What :meth:`Database.merge` did.

    Attributes:
        workloads_added: workloads that were new here.
        records_added: records that were new here.
        duplicates: records already present (same workload, target key with its thread count,
            candidate hash and measurement time).
        incompatible: records of another workload key or IR format version, not merged.
        unreadable: rows or lines that could not be read (each with a warning).
    """

    workloads_added: int
    records_added: int
    duplicates: int
    incompatible: int
    unreadable: int


def _type_error(api, param, expected, obj):
    found = "None" if obj is None else f"an object of type {type(obj).__name__}"
    return KilnTypeError(f"{api}: {param} must be {expected}, found {found}")


def _workload_id(workload, api, param="workload"):
    if isinstance(workload, Workload):
        return workload.id
    if isinstance(workload, int) and not isinstance(workload, bool):
        return workload
    raise _type_error(api, param, "a kiln.autotune.Workload or its id (an int)", workload)


def _target_key(target, api):
    if isinstance(target, TargetKey):
        return target
    raise _type_error(api, "target", "a kiln.autotune.TargetKey (the target string and the "
                      "device it was measured on)", target)


def _json_text(value, api, param, expected):
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    raise _type_error(api, param, expected, value)


def _measurement_fields(index, m, api):
    """The tuple the binding reads for measurement ``index``."""
    if not isinstance(m, Measurement):
        raise _type_error(api, f"measurements[{index}]", "a kiln.autotune.Measurement", m)
    name = f"measurements[{index}]."
    search = {} if m.search is None else m.search
    return (_workload_id(m.workload, api, name + "workload"), _target_key(m.target, api),
            _json_text(m.trace, api, name + "trace", "JSON text (str) or a dict"),
            m.candidate_hash, m.run_secs, m.status, m.error, m.kiln_version,
            m.ir_format_version, _json_text(search, api, name + "search", "a dict or None"))


def _record(fields):
    fields = dict(fields)
    fields["search"] = json.loads(fields["search"])
    return TuningRecord(**fields)


def _lookup_threads(num_threads, api):
    """The thread count a lookup prefers: ``num_threads``, or the runtime's for None or 0 (the
    count a function built now runs on)."""
    from .. import runtime
    if num_threads is None or num_threads == 0:
        return runtime.get_num_threads()
    if isinstance(num_threads, bool) or not isinstance(num_threads, int):
        raise _type_error(api, "num_threads", "an int (None or 0: kiln.runtime.get_num_threads())",
                          num_threads)
    if num_threads < 0:
        raise KilnValueError(f"{api}: num_threads must be the number of threads the function will "
                             f"run on (None or 0: kiln.runtime.get_num_threads()), found "
                             f"{num_threads}")
    return num_threads


def _threads_text(num_threads):
    if num_threads == 0:
        return "an unknown number of threads (a record of schema version 2 or older)"
    return f"{num_threads} thread" + ("" if num_threads == 1 else "s")


def _device_text(key):
    """The device of a target key as messages name it: "CPU model 'X'", "device 'Y' (features)"
    for a GPU target, or "no device of its kind" for a GPU target without one here."""
    if key.target.split(" ", 1)[0] == "llvm":
        return f"CPU model '{key.device_model}'"
    if not key.device_model:
        return "no device of its kind on this machine"
    return f"device '{key.device_model}' ({key.device_features})"


# (database path, what, target key, thread count of the record used) already warned about, so
# that a loop of lookups warns once.
_warned_threads = set()


def _warn_other_threads(api, path, what, key, found, stacklevel, identity=None):
    """Warns once per ``identity`` (default: ``what``) that the record used for ``what`` on
    ``key`` was measured with ``found`` threads rather than ``key.num_threads``."""
    seen = (path, identity if identity is not None else what, key, found)
    if seen in _warned_threads:
        return
    _warned_threads.add(seen)
    advice = (f"; tune with num_threads={key.num_threads} to have a record for this thread count"
              if key.num_threads > 0 else "")
    warnings.warn(f"{api}: {path} holds no record of {what} on target '{key.target}' and "
                  f"{_device_text(key)} measured with {_threads_text(key.num_threads)}; the best "
                  f"record, tuned for {_threads_text(found)}, is used{advice}",
                  TuningRecordThreadsWarning, stacklevel=stacklevel + 1)


def _query_function(mod, workload_name, api):
    """(name, PrimFunc) of ``mod``: its one function, or the one named ``workload_name``."""
    from .tune import _functions
    pairs = _functions(mod, api)
    if len(pairs) == 1:
        return pairs[0]
    for name, func in pairs:
        if workload_name is not None and name == workload_name:
            return name, func
    names = ", ".join(repr(name) for name, _ in pairs) or "none"
    wanted = ("one function" if workload_name is None
              else f"one function or a function named {workload_name!r} (workload_name)")
    raise KilnValueError(f"{api}: expected {wanted}, found a module of {len(pairs)} functions "
                         f"({names})")


class Database:
    """A tuning database: one SQLite file, created when missing and migrated when older.

    ``kiln.autotune.Database(path)`` opens the file; use it as a context manager or call
    :meth:`close`. One Database is used by one thread at a time; several processes (each with
    its own Database) may tune into one file at once. Every method that finds rows it cannot use
    issues a :class:`DatabaseWarning` for each, once.

    Example:
        >>> with kiln.autotune.Database("tuning.db") as db:
        ...     wl = db.commit_workload(kiln.ir.structural_hash(func), func_json)
        ...     key = TargetKey("llvm -mcpu=znver3", "AMD EPYC 7B13", "avx2,fma")
        ...     db.commit_records([Measurement(wl, key, trace, h, (1.2e-3, 1.1e-3))])
        ...     fastest = db.best(wl, key, k=1)
    """

    def __init__(self, path, *, busy_timeout=10.0, key_version=WORKLOAD_KEY_VERSION,
                 ir_format_version=IR_FORMAT_VERSION):
        """Opens the tuning database at ``path`` (a str or os.PathLike), creating it when the file
        is missing or empty and migrating a file of an older schema version.

        ``busy_timeout`` is how long (seconds) a write waits for another process's transaction.
        ``key_version`` and ``ir_format_version`` are the versions read and written; rows of
        other versions are ignored with a warning (change them only to read old data).

        Raises:
            KilnRuntimeError: the file cannot be opened, is not a SQLite database, is corrupt,
                belongs to another program or has a newer schema version.
            KilnTypeError: an argument of the wrong type.
        """
        self._core = None
        self._core = _core.DatabaseCore.open(path, key_version, ir_format_version, busy_timeout)
        self._path = self._core.path
        self._warn()

    def _warn(self):
        for message in self._core.take_warnings():
            warnings.warn(message, DatabaseWarning, stacklevel=3)

    def _check_open(self, api):
        if self._core is None:
            raise KilnValueError(f"{api}: the tuning database '{self._path}' is closed; open it "
                                 "again")

    def _call(self, method, *args):
        self._check_open(f"kiln.autotune.Database.{method}")
        try:
            return getattr(self._core, method)(*args)
        finally:
            self._warn()

    @property
    def path(self):
        """The path of the database file, as given."""
        return self._path

    def close(self):
        """Closes the file; later calls raise KilnValueError. Closing twice is allowed."""
        if self._core is not None:
            self._core.close()
            self._core = None

    def __enter__(self):
        """Returns the database itself, closed when the ``with`` block ends."""
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __len__(self):
        return self._call("size")

    def __repr__(self):
        state = "closed" if self._core is None else f"{len(self)} records"
        return f"kiln.autotune.Database({self.path!r}, {state})"

    def commit_workload(self, structural_hash, func_json, equal=None):
        """The workload with ``structural_hash`` whose stored function equals ``func_json``,
        added when there is none; returns a :class:`Workload`. Atomic: two processes committing
        the same function store it once.

        ``equal(stored_json, func_json) -> bool`` decides equality (e.g. deserialize both and
        compare structurally); by default the texts must be equal.

        Raises:
            KilnTypeError: an argument of the wrong type, or ``equal`` returned a non-bool.
            KilnValueError: ``structural_hash`` outside [0, 2**64), an empty ``func_json``.
        """
        return Workload(**self._call("commit_workload", structural_hash, func_json, equal))

    def find_workload(self, structural_hash, func_json, equal=None):
        """The :class:`Workload` with ``structural_hash`` whose stored function equals
        ``func_json`` (see :meth:`commit_workload`), or None; adds nothing.

        Raises:
            KilnTypeError: an argument of the wrong type.
        """
        found = self._call("find_workload", structural_hash, func_json, equal)
        return None if found is None else Workload(**found)

    def workloads(self):
        """Every :class:`Workload` of this key version, oldest first."""
        return [Workload(**w) for w in self._call("workloads")]

    def commit_records(self, measurements):
        """Stores a measured batch (a list of :class:`Measurement`) in one transaction and
        returns the new record ids. Every measurement is checked first; any error stores nothing
        of the batch, and a process killed while committing loses only this batch.

        Raises:
            KilnValueError: a measurement names an unknown workload, has an empty target string or
                device model, a trace that is not a JSON object, run times that are not positive
                finite seconds, no run times with status "ok", or an unknown status.
            KilnTypeError: a field of the wrong type.
        """
        api = "kiln.autotune.Database.commit_records"
        if not isinstance(measurements, (list, tuple)):
            raise _type_error(api, "measurements", "a list of kiln.autotune.Measurement",
                              measurements)
        fields = [_measurement_fields(i, m, api) for i, m in enumerate(measurements)]
        return self._call("commit_records", fields)

    def records(self, workload=None, target=None, status=None):
        """The :class:`TuningRecord` s of ``workload`` (a Workload or id; every workload when
        None) on ``target`` (a :class:`TargetKey`, thread count included; every target when
        None) with ``status``
        (every status when None), oldest first. A tuning lookup names both a workload and a
        target; listing may leave them out.

        Raises:
            KilnTypeError: an argument of the wrong type.
            KilnValueError: an unknown status.
        """
        api = "kiln.autotune.Database.records"
        workload_id = None if workload is None else _workload_id(workload, api)
        key = None if target is None else _target_key(target, api)
        return [_record(r) for r in self._call("records", workload_id, key, status)]

    def best(self, workload, target, k=1, num_threads=None):
        """The ``k`` fastest ok :class:`TuningRecord` s of ``workload`` on ``target``, by median
        run time (ties: the older first), among the records measured with the thread count
        looked up. When there are none, the fastest of the other thread counts (unknown
        included) are returned, with a :class:`kiln.error.TuningRecordThreadsWarning` (once)
        that names the count they were tuned for; each record's ``num_threads`` says it too.

        ``workload`` is a :class:`Workload`, its id, or a PrimFunc (its workload, found by
        structural hash and equality; no records when it was never tuned). ``target`` is a
        :class:`TargetKey` (its ``num_threads`` is the count looked up), or a target string or
        kiln.target.Target, which means that target on this machine's CPU model with
        ``num_threads`` threads (where kiln.build would apply the records; None or 0:
        kiln.runtime.get_num_threads())::

            db.best(func, "llvm")[0].median   # seconds of the best schedule here

        Raises:
            KilnTypeError: an argument of the wrong type.
            KilnValueError: ``k < 0``, an unknown target, a negative ``num_threads``, or
                ``num_threads`` given with a TargetKey (which carries its own).
        """
        return self._best(workload, target, k, num_threads, "kiln.autotune.Database.best")

    def has_workload(self, mod):
        """Whether the function of ``mod`` (a PrimFunc, or an IRModule of one function) has a
        workload here: it was tuned (or committed) before, on any target.

        Raises:
            KilnTypeError: ``mod`` is neither a PrimFunc nor an IRModule.
            KilnValueError: a module of several functions.
        """
        api = "kiln.autotune.Database.has_workload"
        _, func = _query_function(mod, None, api)
        self._check_open(api)
        # The workload key does not depend on the target: any target string finds it.
        return _core.task_key(self._core, func, "llvm", 0, api)[0] is not None

    def query_tuning_record(self, mod, target, workload_name="main", num_threads=None):
        """The best :class:`TuningRecord` of a function on ``target``, or None (MetaSchedule's
        ``Database.query_tuning_record``): :meth:`best` with ``k=1``, and the same fallback to
        another thread count.

        ``mod`` is a PrimFunc or an IRModule; of a module of several functions, the one named
        ``workload_name``. ``target`` and ``num_threads`` are as for :meth:`best`.

        Raises:
            KilnTypeError: an argument of the wrong type.
            KilnValueError: a module without a function named ``workload_name``, or a bad
                target or thread count (see :meth:`best`).
        """
        api = "kiln.autotune.Database.query_tuning_record"
        _, func = _query_function(mod, workload_name, api)
        best = self._best(func, target, 1, num_threads, api)
        return best[0] if best else None

    def query_schedule(self, mod, target, workload_name="main", num_threads=None):
        """The best schedule of a function on ``target`` (see :meth:`query_tuning_record`)
        replayed on it: a tir.Schedule, or None when there is no record (MetaSchedule's
        ``Database.query_schedule``; :func:`kiln.autotune.compile_tir` with this database).

        Raises:
            KilnTypeError, KilnValueError: as :meth:`query_tuning_record`, and a KilnValueError
                for a stored trace that does not replay on the function.
        """
        return self._query_schedule(mod, target, workload_name, num_threads,
                                    "kiln.autotune.Database.query_schedule")

    def query_ir_module(self, mod, target, workload_name="main", num_threads=None):
        """The module of :meth:`query_schedule`'s schedule (the function with the best schedule
        applied), or None (MetaSchedule's ``Database.query_ir_module``).

        Raises:
            KilnTypeError, KilnValueError: as :meth:`query_schedule`.
        """
        sch = self._query_schedule(mod, target, workload_name, num_threads,
                                   "kiln.autotune.Database.query_ir_module")
        return None if sch is None else sch.mod

    def _query_schedule(self, mod, target, workload_name, num_threads, api):
        from .tune import _best_schedule
        name, func = _query_function(mod, workload_name, api)
        self._check_open(api)
        return _best_schedule(self, func, target, num_threads, api,
                              f"function '{name or 'main'}'", stacklevel=3)

    def _best(self, workload, target, k, num_threads, api):
        workload, target = self._resolve(workload, target, num_threads, api)
        if workload is None:
            return []
        records = [_record(r) for r in self._call("best", _workload_id(workload, api),
                                                   _target_key(target, api), k)]
        if records and records[0].num_threads != target.num_threads:
            _warn_other_threads(api, self.path, f"workload {records[0].workload_id}", target,
                                records[0].num_threads, stacklevel=3)
        return records

    def _resolve(self, workload, target, num_threads, api):
        """(workload id or None, TargetKey) for a PrimFunc and a target string as well."""
        from .. import tir
        from ..target import Target
        if isinstance(target, Target):
            target = str(target)
        if isinstance(target, TargetKey):
            if num_threads is not None:
                raise KilnValueError(f"{api}: num_threads is given with a TargetKey, which "
                                     f"carries its own thread count ({target.num_threads}); "
                                     "leave num_threads out")
        else:
            num_threads = _lookup_threads(num_threads, api)
        if not isinstance(workload, tir.PrimFunc):
            if isinstance(target, str):
                target = TargetKey(*_core.local_target_key(target, num_threads, api))
            return workload, target
        self._check_open(api)
        text = target.target if isinstance(target, TargetKey) else target
        found, *key = _core.task_key(self._core, workload, text, num_threads or 0, api)
        return found, target if isinstance(target, TargetKey) else TargetKey(*key)

    def is_measured(self, workload, target, candidate_hash):
        """Whether a candidate with ``candidate_hash`` was measured (with any status) for
        ``workload`` on ``target`` with its thread count.

        Raises:
            KilnTypeError: an argument of the wrong type.
        """
        api = "kiln.autotune.Database.is_measured"
        return self._call("is_measured", _workload_id(workload, api), _target_key(target, api),
                          candidate_hash)

    def measured_hashes(self, workload, target):
        """The set of candidate hashes measured for ``workload`` on ``target`` with its thread
        count: a resumed run skips them.

        Raises:
            KilnTypeError: an argument of the wrong type.
        """
        api = "kiln.autotune.Database.measured_hashes"
        return set(self._call("measured_hashes", _workload_id(workload, api),
                              _target_key(target, api)))

    def count(self, workload, target):
        """How many trials (records of any status) were spent on ``workload`` on ``target`` with
        its thread count: a resumed run spends only the rest of its budget.

        Raises:
            KilnTypeError: an argument of the wrong type.
        """
        api = "kiln.autotune.Database.count"
        return self._call("count", _workload_id(workload, api), _target_key(target, api))

    def export_jsonl(self, path):
        """Writes every readable workload and record (of every version) to a JSON-lines file at
        ``path`` and returns the number of records written.

        Raises:
            KilnRuntimeError: the file cannot be written.
        """
        return self._call("export_jsonl", path)

    def merge(self, path, equal=None):
        """Adds the workloads and records of another tuning database file or JSON-lines export
        at ``path``, in one transaction, skipping records already present (same workload, target
        key, candidate hash and measurement time) and records of other versions; returns a :class:`MergeSummary`.
        Workloads match by key version, hash and ``equal(stored_json, func_json)`` (text equality
        by default). The source file is never changed.

        Raises:
            KilnRuntimeError: the file cannot be read, or is neither a tuning database (of this
                or an older schema version) nor an export.
        """
        return MergeSummary(**self._call("merge", path, equal))
