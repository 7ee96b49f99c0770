"""The ``kiln`` command line.

    kiln tune FILE.py:NAME [--target llvm] [--trials 512] [--per-iter 32] [--db tuning.db]
                           [--work-dir DIR] [--seed 1] [--threads N] [--no-progress]
                           [--no-baseline] [--reference auto|untuned|default]
                           [--time-budget SECONDS] [--space FILE.py:FN]
        Tunes what NAME() returns in FILE.py (a PrimFunc, an IRModule, or a list of them) with a
        progress bar per task, then prints a table. Ctrl-C stops cleanly: every measured batch
        is in the database, and running the same command again resumes. The first round of
        each task measures topi.default_schedule's schedule too, unless --no-baseline. The
        candidates' results are checked against those of --reference (TuneConfig.reference).
        --time-budget stops starting rounds after that many seconds (TuneConfig.time_budget_s).
        --space names a schedule function that samples the design space instead of kiln's
        rules (TuneConfig.space).
    kiln db list  DB                 the workloads, their record counts and thread counts
    kiln db show  DB [--top K]       the best records of every workload, target, device and
                                     thread count, and where each schedule came from (kiln's
                                     rules, a baseline, a user design space)
    kiln db export DB FILE.jsonl     every workload and record as JSON lines
    kiln db merge DB OTHER           adds the records of another database or export
"""
import argparse
import importlib.util
import os
import sys


def _load(spec, api="kiln tune", call=True):
    """What NAME() returns in FILE.py, for "FILE.py:NAME" (with call=False: NAME itself)."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise SystemExit(f"{api}: expected FILE.py:NAME, found '{spec}'")
    if not os.path.isfile(path):
        raise SystemExit(f"{api}: no file '{path}'")
    module_spec = importlib.util.spec_from_file_location("kiln_tune_input", path)
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        module_spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    if not hasattr(module, name):
        raise SystemExit(f"{api}: {path} defines no '{name}'")
    value = getattr(module, name)
    return value() if call and callable(value) else value


def _table(rows, header):
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
    print(line)
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)))


def _threads(num_threads):
    """A record's thread count as the tables show it."""
    return str(num_threads) if num_threads > 0 else "unknown"


def _origin(record):
    """Where a record's schedule came from: a baseline's name, a user design space's name, or
    kiln's rules."""
    return (record.search.get("baseline") or record.search.get("space", "").split("#")[0]
            or "rules")


def _tune(args):
    from . import autotune as ms
    functions = _load(args.spec)
    work_dir = args.work_dir or os.path.splitext(args.db)[0] + "_work"
    os.makedirs(work_dir, exist_ok=True)
    db = ms.Database(args.db)
    fields = {"max_trials_global": args.trials, "num_trials_per_iter": args.per_iter,
              "seed": args.seed, "num_threads": args.threads}
    if args.no_baseline:
        fields["baseline"] = None
    fields["reference"] = args.reference
    if args.per_task:
        fields["max_trials_per_task"] = args.per_task
    if args.time_budget is not None:
        fields["time_budget_s"] = args.time_budget
    if args.space:
        fields["space"] = _load(args.space, "kiln tune --space", call=False)
    # One task: a function, a module, or a (name, func[, weight]) tuple; else a list of them.
    one = not isinstance(functions, (list, tuple)) or (
        isinstance(functions, tuple) and bool(functions) and isinstance(functions[0], str))
    try:
        results = ms.tune_tasks([functions] if one else functions,
                                target=args.target, work_dir=work_dir, database=db,
                                progress=not args.no_progress, **fields)
    except KeyboardInterrupt:
        print("\nkiln tune: stopped; every measured batch is in " + args.db +
              " (run the same command again to resume)", file=sys.stderr)
        return 130
    rows = [[r.task, r.trials, r.trials_this_run, f"{r.best_seconds * 1e3:.4f}",
             f"{r.best_gflops:.1f}", f"{r.seconds_to_90_percent:.1f}",
             sum(r.failures.values())] for r in results]
    _table(rows, ["task", "trials", "this run", "best ms", "GFLOP/s", "s to 90%", "failed"])
    return 0


def _db(args):
    from . import autotune as ms
    from .error import KilnValueError
    # Reading commands do not create a database; merge may (into a new file).
    if args.db_command != "merge" and not os.path.exists(args.db):
        raise KilnValueError(f"there is no tuning database at {args.db}")
    db = ms.Database(args.db)
    if args.db_command == "list":
        rows = []
        for w in db.workloads():
            records = db.records(w)
            threads = ", ".join(_threads(n) for n in sorted({r.num_threads for r in records}))
            rows.append([w.id, f"{w.structural_hash:016x}", len(records), threads or "-",
                         w.created])
        _table(rows, ["id", "hash", "records", "threads", "created"])
    elif args.db_command == "show":
        rows = []
        for w in db.workloads():
            # The keys with ok records only, so that best never falls back to another count.
            keys = {r.target_key for r in db.records(w, status="ok")}
            for key in sorted(keys, key=lambda k: (k.target, k.device_model, k.device_features,
                                                   k.num_threads)):
                for r in db.best(w, key, k=args.top):
                    rows.append([w.id, key.target, key.device_model, _threads(key.num_threads),
                                 r.candidate_hash, f"{r.median * 1e3:.4f}", len(r.run_secs),
                                 _origin(r)])
        _table(rows, ["workload", "target", "device", "threads", "candidate", "median ms",
                      "samples", "from"])
    elif args.db_command == "export":
        count = db.export_jsonl(args.file)
        print(f"kiln db export: {count} records written to {args.file}")
    elif args.db_command == "merge":
        summary = db.merge(args.other)
        print(f"kiln db merge: {summary.records_added} records and {summary.workloads_added} "
              f"workloads added, {summary.duplicates} duplicates, {summary.incompatible} of "
              f"other versions, {summary.unreadable} unreadable")
    return 0


def main(argv=None):
    """Runs the command line (``kiln tune …``, ``kiln db …``); returns the exit status."""
    parser = argparse.ArgumentParser(prog="kiln", description="kiln's tuner and its database")
    commands = parser.add_subparsers(dest="command", required=True)
    tune = commands.add_parser("tune", help="tune functions defined in a Python file")
    tune.add_argument("spec", help="FILE.py:NAME; NAME returns a PrimFunc, an IRModule, a (name, "
                      "func) pair or a list of them")
    tune.add_argument("--target", default="llvm",
                      help='the target to tune for and measure on (default "llvm": this CPU)')
    tune.add_argument("--trials", type=int, default=512, help="trials of all tasks together")
    tune.add_argument("--per-task", type=int, default=0, help="trials of each task at most")
    tune.add_argument("--per-iter", type=int, default=32, help="candidates measured per round")
    tune.add_argument("--db", default="tuning.db",
                      help="the SQLite database to tune into (created when missing)")
    tune.add_argument("--work-dir", default=None,
                      help="cost model, log and compiled candidates (default DB_work)")
    tune.add_argument("--seed", type=int, default=1, help="the seed of the search's draws")
    tune.add_argument("--threads", type=int, default=0,
                      help="threads the kernels run on (default 0: the runtime's count, "
                      "KILN_NUM_THREADS or all cores)")
    tune.add_argument("--no-progress", action="store_true", help="no progress bars")
    tune.add_argument("--no-baseline", action="store_true",
                      help="do not measure topi.default_schedule's schedule as a baseline")
    tune.add_argument("--reference", choices=("auto", "untuned", "default"), default="auto",
                      help="what computes the results the candidates are checked against: the "
                      "function as written, topi.default_schedule, or the latter for functions "
                      "of more than 1e10 operations (auto)")
    tune.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                      help="no round starts after this many seconds; the final rounds then "
                      "pick the best of what was measured (default: the trials alone)")
    tune.add_argument("--space", default=None,
                      help="FILE.py:FN, a schedule function that samples the design space "
                      "(TuneConfig.space; default: kiln's rules)")
    db = commands.add_parser("db", help="inspect or combine tuning databases")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    listing = db_commands.add_parser("list", help="the workloads")
    listing.add_argument("db", help="a tuning database")
    show = db_commands.add_parser("show", help="the best records")
    show.add_argument("db", help="a tuning database")
    show.add_argument("--top", type=int, default=3,
                      help="records per workload, target and thread count")
    export = db_commands.add_parser("export", help="write JSON lines")
    export.add_argument("db", help="a tuning database")
    export.add_argument("file", help="the JSON lines file to write")
    merge = db_commands.add_parser("merge", help="add another database's records")
    merge.add_argument("db", help="the database that receives the records (created when missing)")
    merge.add_argument("other", help="a database or a JSON lines export")
    args = parser.parse_args(argv)
    from .error import KilnError
    try:
        return _tune(args) if args.command == "tune" else _db(args)
    except KilnError as error:
        print(f"kiln {args.command}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
