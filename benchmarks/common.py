"""Timing helpers shared by the benchmarks: medians of repeated runs, the machine's load and
table printing."""
import os
import statistics
import time


def median_seconds(fn, repeat=7, number=1, warmup=1):
    """Median wall time of `number` calls of fn, over `repeat` repetitions."""
    for _ in range(warmup):
        fn()
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - start) / number)
    return statistics.median(runs)


def kiln_seconds(rt, args, repeat=7, number=3):
    """Median seconds per call of a kiln module's main function (GIL released, in C++), on
    kiln.nd copies of NumPy arguments (64-byte aligned, as the runtime allocates)."""
    import kiln
    import numpy as np
    args = [kiln.nd.array(a) if isinstance(a, np.ndarray) else a for a in args]
    return rt.time_evaluator(rt.entry_name, kiln.cpu(0), number=number, repeat=repeat)(*args).median


def load_average():
    """The 1-minute load average as text ("0.42"), or "n/a" where the system has none. A load
    near or above the number of CPUs means other work shares the cores being measured."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "n/a"


def print_table(title, header, rows):
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    line = "  ".join("{:>%d}" % w for w in widths)
    print(f"\n{title}")
    print(line.format(*header))
    print(line.format(*["-" * w for w in widths]))
    for row in rows:
        print(line.format(*row))
