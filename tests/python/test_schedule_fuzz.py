"""Random-schedule fuzzer: random sequences of schedule primitives with sampled or random
arguments, applied to a corpus of workloads. Every step either raises a ScheduleError and
leaves the schedule exactly as it was, or succeeds; the final function must compute what the
unscheduled one computes (on the reference interpreter; some sequences also after lowering, and
some after building with LLVM), and its trace must replay to the same module.

KILN_SCHEDULE_FUZZ=N runs N sequences (default 6000); KILN_SCHEDULE_FUZZ_SEED picks the seed.
"""
import json
import os
import random
import traceback

import numpy as np
import pytest

import kiln
from kiln import tir

from schedule_helpers import WORKLOADS, random_args

SEQUENCES = int(os.environ.get("KILN_SCHEDULE_FUZZ", "6000"))
SEED = int(os.environ.get("KILN_SCHEDULE_FUZZ_SEED", "20261121"))
SCOPES = ["global", "local", "shared"]


def block_names(func):
    """Names of the blocks of a function, root excluded, in program order."""
    names = []

    def walk(stmt):
        if stmt is None:
            return
        if isinstance(stmt, tir.BlockRealize):
            if stmt.block.name_hint != "root":
                names.append(stmt.block.name_hint)
            walk(stmt.block.init)
            walk(stmt.block.body)
        elif isinstance(stmt, tir.For):
            walk(stmt.body)
        elif isinstance(stmt, tir.SeqStmt):
            for s in stmt.seq:
                walk(s)
        elif isinstance(stmt, tir.IfThenElse):
            walk(stmt.then_case)
            walk(stmt.else_case)
        elif isinstance(stmt, (tir.LetStmt, tir.Allocate, tir.AssertStmt)):
            walk(stmt.body)

    walk(func.body)
    return names


class Fuzzer:
    """Draws one random step at a time; `steps` counts outcomes for the summary."""

    def __init__(self, rng):
        self.rng = rng

    def pick_block(self, sch):
        names = block_names(sch.mod["main"])
        return sch.get_block(self.rng.choice(names)) if names else None

    def pick_loop(self, sch, block=None):
        block = block or self.pick_block(sch)
        if block is None:
            return None, None
        loops = sch.get_loops(block)
        return block, (self.rng.choice(loops) if loops else None)

    def factors(self, sch, loop):
        rng = self.rng
        if rng.random() < 0.6:
            return sch.sample_perfect_tile(loop, n=rng.choice([2, 2, 3]),
                                           max_innermost_factor=rng.choice([4, 8, 16]))
        n = rng.choice([2, 3])
        factors = [rng.choice([1, 2, 3, 4, 5, 8]) for _ in range(n)]
        factors[rng.randrange(n)] = None
        if rng.random() < 0.1:
            factors = [rng.choice([0, 2, None]), rng.choice([None, 3])]  # often invalid
        return factors

    # Each step returns a callable that applies the primitive (after the getters it needed),
    # or None when there is nothing to apply it to.
    def step(self, sch):
        rng = self.rng
        kind = rng.choice([
            "split", "split", "split", "fuse", "reorder", "reorder", "parallel", "vectorize",
            "unroll", "annotate", "compute_at", "compute_at", "reverse_compute_at",
            "compute_inline", "reverse_compute_inline", "cache_read", "cache_write", "rfactor",
            "decompose_reduction", "storage_align", "set_scope", "blockize",
            "sample_compute_location",
        ])
        block, loop = self.pick_loop(sch)
        if block is None:
            return kind, None
        if kind == "split":
            if loop is None:
                return kind, None
            return kind, lambda: sch.split(loop, factors=self.factors(sch, loop))
        if kind == "fuse":
            loops = sch.get_loops(block)
            if len(loops) < 2:
                return kind, None
            start = rng.randrange(len(loops) - 1)
            chosen = loops[start:start + rng.choice([2, 2, 3])]
            if rng.random() < 0.1:
                chosen = [loops[0], loops[-1]]
            return kind, lambda: sch.fuse(*chosen)
        if kind == "reorder":
            loops = sch.get_loops(block)
            if len(loops) < 2:
                return kind, None
            chosen = rng.sample(loops, rng.randint(2, len(loops)))
            return kind, lambda: sch.reorder(*chosen)
        if kind in ("parallel", "vectorize", "unroll"):
            if loop is None:
                return kind, None
            return kind, lambda: getattr(sch, kind)(loop)
        if kind == "annotate":
            target = loop if (loop is not None and rng.random() < 0.5) else block
            return kind, lambda: sch.annotate(target, "pragma_auto_unroll_max_step",
                                              rng.choice([0, 16, 64]))
        if kind in ("compute_at", "reverse_compute_at"):
            other, other_loop = self.pick_loop(sch)
            if other_loop is None:
                return kind, None
            keep = rng.random() < 0.5
            return kind, lambda: getattr(sch, kind)(block, other_loop, preserve_unit_loops=keep)
        if kind == "sample_compute_location":
            def apply():
                where = sch.sample_compute_location(block)
                sch.compute_at(block, where)
            return kind, apply
        if kind in ("compute_inline", "reverse_compute_inline"):
            return kind, lambda: getattr(sch, kind)(block)
        if kind == "cache_read":
            index = rng.randrange(3)
            scope = rng.choice(SCOPES)
            if rng.random() < 0.3:  # only this block reads the copy
                return kind, lambda: sch.cache_read(block, index, scope, consumer_blocks=[block])
            return kind, lambda: sch.cache_read(block, index, scope)
        if kind == "cache_write":
            index = rng.randrange(2)
            scope = rng.choice(SCOPES)
            return kind, lambda: sch.cache_write(block, index, scope)
        if kind == "set_scope":
            index = rng.randrange(2)
            scope = rng.choice(["global", "local"])
            return kind, lambda: sch.set_scope(block, index, scope)
        if kind == "storage_align":
            args = (rng.randrange(2), rng.randrange(3), rng.choice([4, 8, 16]), rng.randrange(4))
            return kind, lambda: sch.storage_align(block, *args)
        if kind == "rfactor":
            if loop is None:
                return kind, None
            axis = rng.randrange(2)
            return kind, lambda: sch.rfactor(loop, axis)
        if kind == "decompose_reduction":
            if loop is None:
                return kind, None
            return kind, lambda: sch.decompose_reduction(block, loop)
        if kind == "blockize":
            if loop is None:
                return kind, None
            return kind, lambda: sch.blockize(loop)
        return kind, None


def compare(expected_args, func, args_seed, rtol=1e-4, atol=1e-5, runner=None):
    actual = random_args(func, args_seed)
    if runner is None:
        tir.interpret(func, *actual)
    else:
        runner(*actual)
    for e, a in zip(expected_args, actual):
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def run_sequence(index, rng, references, stats):
    name = rng.choice(sorted(WORKLOADS))
    original, expected = references[name]
    sch = tir.Schedule(original, seed=rng.randrange(1 << 30))
    try:
        apply_and_check(index, rng, sch, original, expected, stats)
    except Exception as error:
        raise AssertionError(f"workload {name}, schedule:\n{sch.trace.as_python()}") from error


def apply_and_check(index, rng, sch, original, expected, stats):
    fuzzer = Fuzzer(rng)
    for _ in range(rng.randint(1, 8)):
        kind, apply = fuzzer.step(sch)
        if apply is None:
            continue
        before_mod, before_len = sch.mod, len(sch.trace)
        try:
            apply()
            stats["ok"] += 1
        except tir.ScheduleError:
            # A failed primitive leaves everything as it was. A step may sample (a tile, a
            # location) before its primitive fails; those samples are the only allowed change.
            assert sch.mod.same_as(before_mod), f"{kind} changed the module and then failed"
            added = sch.trace.as_json()["instructions"][before_len:]
            assert all(inst["kind"].startswith("sample_") for inst in added), (
                f"{kind} changed the trace and then failed")
            stats["schedule_error"] += 1
    func = sch.mod["main"]
    compare(expected, func, 0)
    if index % 5 == 0:
        replayed = tir.Schedule(original)
        tir.Trace.apply_json_to_schedule(json.loads(json.dumps(sch.trace.as_json())), replayed)
        kiln.ir.assert_structural_equal(replayed.mod, sch.mod)
    if index % 4 == 1:
        compare(expected, tir.lower(func), 0)
        stats["lowered"] += 1
    if index % 25 == 2:
        try:
            rt = kiln.build(sch.mod, target="llvm")
        except kiln.KilnValueError as error:
            # What the CPU backend refuses by design: nested parallel loops and GPU shared
            # memory.
            message = str(error)
            assert ("is nested inside parallel loop" in message
                    or 'is allocated in GPU shared memory (scope "shared")' in message), message
            return
        compare(expected, func, 0, runner=rt)
        stats["built"] += 1


def test_random_schedules():
    rng = random.Random(SEED)
    references = {}
    for name, make in WORKLOADS.items():
        func = make()
        args = random_args(func, 0)
        tir.interpret(func, *args)
        references[name] = (func, args)
    stats = {"ok": 0, "schedule_error": 0, "lowered": 0, "built": 0}
    for index in range(SEQUENCES):
        seq_seed = rng.randrange(1 << 62)
        try:
            run_sequence(index, random.Random(seq_seed), references, stats)
        except Exception:  # noqa: BLE001 - report the reproducer, then fail
            pytest.fail(f"sequence {index} (seed {seq_seed}, fuzz seed {SEED}) failed:\n"
                        f"{traceback.format_exc()}")
    print(f"\n{SEQUENCES} sequences: {stats['ok']} steps applied, "
          f"{stats['schedule_error']} ScheduleErrors, {stats['lowered']} lowered, "
          f"{stats['built']} built")
    assert stats["ok"] > SEQUENCES  # the fuzzer must mostly produce valid schedules
