"""Default CPU schedules for the operators of kiln.topi: a reasonable schedule without tuning.

topi.default_schedule runs cpu_schedule for "llvm" targets. It works on the blocks of a PrimFunc,
whatever operators built it:

1. Element-wise producers are inlined into their consumers (compute_inline), except where that
   would recompute a transcendental function (an exp read by two reductions) or put a padding
   guard into a reduction's inner loop.
2. A sum of products with reuse (matmul, dense, batch_matmul, conv2d, the two products of
   attention) gets a register tile derived from kiln.target.gemm_blocking: MR rows x NR
   vectorized columns accumulated in registers (cache_write to "local"), the rows unrolled, the
   init split off, and element-wise consumers folded into the write-back of the tile
   (reverse_compute_inline).
3. A spatial block that reads row statistics (the max and sum of a softmax, the mean square of
   an RMSNorm) computes them per row under its own outer loop (compute_at), so that a row is
   read while it is in cache.
4. Every block runs its outer spatial loops in parallel, fused until there is work for the
   runtime's threads, when it has enough work; its innermost spatial loop is vectorized by the
   target's vector lanes when the extent allows.

A step whose preconditions fail is skipped, so the schedule never fails where the unscheduled
function builds; a vectorized loop that lowering would run serially is not vectorized.
"""
import json

from .. import tir
from ..error import KilnError, KilnValueError, ScheduleError
from ..target import gemm_blocking
from ._block_info import is_sum_of_products
from ._schedule_steps import (block_info, block_names, fold_epilogues, inline_elementwise,
                              row_statistics)

# A block with fewer iterations than this runs on one thread: a parallel loop costs a few
# microseconds to start, the time of some 10^4 simple iterations.
MIN_PARALLEL_ITERATIONS = 1 << 14
# Parallel loops are fused until they have this many iterations per thread, for balance.
PARALLEL_ITERATIONS_PER_THREAD = 4


def cpu_schedule(func, target, threads):
    """The schedule of the PrimFunc func for the CPU target (a kiln.target.Target of kind
    "llvm") with threads runtime threads; topi.default_schedule documents it."""
    no_vector = set()
    while True:
        scheduler = _Scheduler(func, target, threads, no_vector)
        scheduler.run()
        fallbacks = _vectorize_fallbacks(scheduler.sch)
        failed = {block for block, loops in scheduler.vectorized.items() if loops & fallbacks}
        if not failed or failed <= no_vector:
            return scheduler.sch
        no_vector |= failed


def _vectorize_fallbacks(sch):
    """The names of the vectorized loops that lowering would run serially."""
    try:
        lowered = tir.lower(sch.mod)
    except KilnError:
        return set()
    names = set()
    for _, func in lowered.functions.items() if hasattr(lowered, "functions") else []:
        text = (func.attrs or {}).get("kiln.vectorize_fallbacks")
        if text:
            names |= {entry["loop"] for entry in json.loads(str(text))}
    return names


class _Scheduler:
    """The steps of default_schedule on one tir.Schedule."""

    def __init__(self, func, target, threads, no_vector):
        self.sch = tir.Schedule(func)
        self.target = target
        self.threads = threads
        self.no_vector = no_vector
        self.vectorized = {}  # block name -> names of the loops vectorized for it
        self.placed = set()  # blocks moved under a consumer's loop or folded into a tile
        self.tiled = set()  # products given a register tile

    # --- Helpers -------------------------------------------------------------------------

    def blocks(self):
        return block_names(self.sch)

    def info(self, name, sch=None):
        return block_info(sch or self.sch, name)

    def attempt(self, step, *args):
        """Runs step(sch copy, *args); keeps the copy when it succeeds. Returns its result, or
        None when a precondition failed (the schedule is then as before)."""
        trial = self.sch.copy()
        vectorized = {k: set(v) for k, v in self.vectorized.items()}
        try:
            result = step(trial, *args)
        except (ScheduleError, KilnError):
            self.vectorized = vectorized
            return None
        self.sch = trial
        return True if result is None else result

    def lanes(self, dtype):
        try:
            return self.target.vector_lanes(dtype)
        except KilnError:
            return 1

    def vectorize_innermost(self, sch, name, loop, extent, dtype):
        """Vectorizes loop by the target's lanes when its extent is a multiple of them; returns
        the loop left outside (loop itself, or None when the whole loop is vectorized)."""
        lanes = self.lanes(dtype)
        if name in self.no_vector or extent is None or lanes < 2 or extent % lanes:
            return loop
        if extent == lanes:
            outer, inner = None, loop
        else:
            outer, inner = sch.split(loop, factors=[None, lanes])
        sch.vectorize(inner)
        self.vectorized.setdefault(name, set()).add(sch.get(inner).loop_var.name)
        return outer

    def parallelize(self, sch, loops, extents, iterations):
        """Fuses the leading loops until each thread has work, and runs them in parallel."""
        if not loops or self.threads < 2:
            return
        if iterations is not None and iterations < MIN_PARALLEL_ITERATIONS:
            return
        wanted = self.threads * PARALLEL_ITERATIONS_PER_THREAD
        count, fused = 0, 1
        for extent in extents:
            count += 1
            if extent is None:
                break
            fused *= extent
            if fused >= wanted:
                break
        if extents[0] is not None and fused < 2:
            return
        loop = sch.fuse(*loops[:count]) if count > 1 else loops[0]
        sch.parallel(loop)

    # --- The steps -------------------------------------------------------------------------

    def run(self):
        self.inline()
        names = self.blocks()
        for name in names:
            if name not in self.blocks():  # folded into a tile's write-back
                continue
            if is_sum_of_products(self.sch, self.sch.get_block(name)) and \
                    self.attempt(self.schedule_product, name):
                self.tiled.add(name)
        for name in reversed(names):
            if name in self.tiled or name in self.placed or name not in self.blocks():
                continue
            if self.sch.get(self.sch.get_block(name)).init is None:
                self.attempt(self.schedule_spatial, name)
            else:
                self.attempt(self.schedule_reduction, name)

    def inline(self):
        """Step 1: element-wise producers into their consumers, a padding guard not into a
        reduction (it would stop the reduction's inner loop from vectorizing)."""
        self.sch = inline_elementwise(self.sch,
                                      keeps_guard=lambda sch, consumer: bool(consumer.reduce))

    def schedule_product(self, sch, name):
        """Step 2: the register tile of a sum of products."""
        info = self.info(name, sch)
        loops = sch.get_loops(name)
        spatial, reduce = info.spatial, info.reduce
        if len(loops) != len(info.iter_vars) or spatial != list(range(len(spatial))) or \
                len(spatial) < 2 or not reduce:
            raise KilnValueError("not a product of trivially bound loops")
        j = spatial[-1]
        columns = info.extents[j]
        vector_loads = [load for load in info.loads if j in load.uses]
        if columns is None or not vector_loads or len(vector_loads) == len(info.loads):
            raise KilnValueError("no reuse along the columns")
        rows = [p for p in spatial[:-1] if any(p not in load.uses for load in vector_loads)]
        i = rows[-1] if rows else None
        depth = 1
        for p in reduce:
            depth = None if depth is None or info.extents[p] is None else depth * info.extents[p]
        try:
            mr, nr, panels = gemm_blocking(self.target, info.dtype, n=columns, k=depth,
                                           threads=self.threads)
        except KilnError:
            lanes = self.lanes(info.dtype)
            if lanes < 2 or columns % lanes:
                raise
            mr, nr, panels = 4, lanes, 1
        if i is None:
            mr = 1
        elif info.extents[i] is not None:
            mr = min(mr, info.extents[i])  # a last partial tile is peeled off by lowering

        # The loop order: other spatial loops, column strips, row tiles, the strips of one
        # pass, the reduction, then the register tile (rows unrolled, columns vectorized).
        others = [loops[p] for p in spatial if p not in (i, j)]
        other_extents = [info.extents[p] for p in spatial if p not in (i, j)]
        if panels > 1:
            jo, jp, ji = sch.split(loops[j], factors=[None, panels, nr])
        else:
            (jo, ji), jp = sch.split(loops[j], factors=[None, nr]), None
        outer = others + [jo]
        outer_extents = other_extents + [columns // (nr * panels)]
        ii = None
        if i is not None and mr > 1:
            io, ii = sch.split(loops[i], factors=[None, mr])
            outer.append(io)
            rows_extent = info.extents[i]
            outer_extents.append(None if rows_extent is None else -(-rows_extent // mr))
        elif i is not None:
            outer.append(loops[i])
            outer_extents.append(info.extents[i])
        tile_loop = jp if jp is not None else outer[-1]
        reduce_loops = [loops[p] for p in reduce]
        sch.reorder(*(outer + ([jp] if jp is not None else []) + reduce_loops
                      + ([ii] if ii is not None else []) + [ji]))
        local = sch.cache_write(name, 0, "local")
        local_name = sch.get(local).name_hint
        sch.reverse_compute_at(local, tile_loop)
        if name not in self.no_vector and nr > 1:
            # NR / lanes whole vectors: LLVM splits the wide vector into registers.
            for loop in (ji, sch.get_loops(local)[-1]):
                sch.vectorize(loop)
                self.vectorized.setdefault(name, set()).add(sch.get(loop).loop_var.name)
        if ii is not None:
            sch.unroll(ii)
        sch.decompose_reduction(name, reduce_loops[0])
        self.placed.update(fold_epilogues(sch, local_name))
        self.parallelize(sch, outer, outer_extents, info.iterations)

    def schedule_spatial(self, sch, name):
        """Steps 3 and 4 for a block without reduction."""
        info = self.info(name, sch)
        loops = sch.get_loops(name)
        if len(loops) != len(info.iter_vars):
            raise KilnValueError("loops do not match the iterators")
        extents = list(info.extents)
        row_depth, statistics = row_statistics(sch, name, info, self.placed | self.tiled)
        if statistics and 0 < row_depth < len(loops):
            row = sch.fuse(*loops[:row_depth]) if row_depth > 1 else loops[0]
            placed = [s for s in statistics if self.place(sch, s, row)]
            if placed:
                inner = sch.get_loops(name)[-1]
                self.vectorize_innermost(sch, name, inner, extents[-1], info.dtype)
                row_extent = _product(extents[:row_depth])
                iterations = info.iterations
                if iterations is not None:
                    iterations *= 1 + len(placed)  # the statistics read the row again
                self.parallelize(sch, [row], [row_extent], iterations)
                return
            loops = sch.get_loops(name)
            extents = [_product(extents[:row_depth])] + extents[row_depth:]
        outer = self.vectorize_innermost(sch, name, loops[-1], extents[-1], info.dtype)
        if outer is None:  # the whole loop is one vector
            loops, extents = loops[:-1], extents[:-1]
        elif outer != loops[-1]:  # split: the outer part of the vector loop
            loops = loops[:-1] + [outer]
            extents = extents[:-1] + [extents[-1] // self.lanes(info.dtype)]
        self.parallelize(sch, loops, extents, info.iterations)

    def place(self, sch, producer, loop):
        """compute_at of a row reduction (and of the row reductions it reads, in turn) under
        loop, unless that would compute more than one row per iteration."""
        trial = sch.copy()
        try:
            trial.compute_at(producer, loop)
            pinfo = self.info(producer, trial)
            # Under the loop, one row leaves no spatial loop (unit loops are dropped): any
            # would compute several rows per iteration, and every iteration again.
            under = len(trial.get_loops(producer)) - 1  # loop is the consumer's outermost
            if under > len(pinfo.reduce):
                return False
        except (ScheduleError, KilnError):
            return False
        sch.compute_at(producer, loop)
        self.placed.add(producer)
        for inner in sch.get_producers(producer):
            iname = sch.get(inner).name_hint
            if sch.get(inner).init is not None and iname not in self.placed:
                self.place(sch, iname, loop)
        return True

    def schedule_reduction(self, sch, name):
        """Step 4 for a reduction that is not a product: its spatial loops in parallel."""
        info = self.info(name, sch)
        loops = sch.get_loops(name)
        spatial = info.spatial
        if len(loops) != len(info.iter_vars) or spatial != list(range(len(spatial))):
            raise KilnValueError("loops do not match the iterators")
        self.parallelize(sch, loops[:len(spatial)], info.extents[:len(spatial)],
                         info.iterations)


def _product(extents):
    total = 1
    for extent in extents:
        if extent is None:
            return None
        total *= extent
    return total

