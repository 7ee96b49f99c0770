"""Default CPU schedules for the operators of kiln.topi: a reasonable schedule without tuning.

topi.default_schedule runs cpu_schedule for "llvm" targets. It works on the blocks of a PrimFunc,
whatever operators built it:

1. Element-wise producers are inlined into their consumers (compute_inline), except where that
   would recompute a transcendental function (an exp read by two reductions) or put a padding
   guard into a reduction's inner loop.
2. A sum of products with reuse (matmul, dense, dense_pack, dense_int8, batch_matmul, conv2d,
   the two products of attention) gets a register tile derived from kiln.target.gemm_blocking:
   MR rows x NR vectorized columns accumulated in registers (cache_write to "local", the
   product computed per tile under the write-back's loops, so that a symbolic number of rows
   is tiled too), the rows unrolled, the init split off, and element-wise consumers folded
   into the write-back of the tile (reverse_compute_inline). Where no vector divides the
   columns (1001), NR is whole registers all the same and the last tile partial (lowering
   peels it off and masks its columns past the end); one row of columns that lie far apart
   in their operand (one token's x W^T) is scheduled as a reduction instead (vector partial
   sums along the operand's rows, as in step 5). Where
   the column loads read packed panels (dense_pack's weight), NR divides the panel width;
   elsewhere the argument they read
   is packed into panels of NR columns under the outer loops that read it (the batch and
   column strip: inside the parallel loop, reused by every row tile). Where the target has
   the features of a tensor intrinsic whose dot product the block computes over contiguous
   data (AVX-512 VNNI on dense_int8's NC16n4c weight, AVX-VNNI on its NC8n4c weight), the
   tile's dot products are tensorized with it, the first of the list that applies.
   A convolution whose input slides a window along the columns at unit stride (NCHW, 3x3,
   5x5, dilated) is tiled for its own reuse instead (schedule_window_product): a register tile
   of image rows x vectorized columns, the reduction over blocks of channels outside the
   filters of a parallel task, so that a block's input rows stay in L1 while every filter
   reads them, and the padding computed per channel block where it is read. One whose rows
   do not fill whole vectors, or whose window is strided, is vectorized along its filters
   (schedule_filter_vector): the weight packed so that the filters of one tap are contiguous,
   a register tile of two vectors of filters x a few output columns whose input values are
   broadcast, a local tile per output row, the padding a pass of its own.
   Two such products joined by row-wise stages (attention's scores, softmax and weighted
   sum) are first computed together, row block by row block, under one parallel loop
   (cpu_fused_rows.py), with the key and value packed into panels of NR columns.
3. A spatial block that reads row statistics (the max and sum of a softmax, the mean square of
   an RMSNorm) computes them per row under its own outer loop (compute_at), so that a row is
   read while it is in cache, and with them, in turn, what they read: the other statistics,
   their vector partial results (step 5) and the row-wise stages between them (a softmax's
   exp), each computing its row once. A softmax is then one parallel pass over its rows whose
   intermediate rows stay in cache (4096 x 4096, 2 threads: 25.6 -> 15.1 ms; LayerNorm 16.5 ->
   9.0, RMSNorm 10.6 -> 8.0).
4. Every block runs its outer spatial loops in parallel, fused until there is work for the
   runtime's threads, when it has enough work; its innermost spatial loop is vectorized by the
   target's widest vectors whose lanes divide its extent (a whole register, or on AVX-512 its
   256-bit half: 8 float32 lanes for 24 or 56 columns), when one does.
5. (Done first.) A reduction along contiguous rows that is not a product (the max and sum of
   a softmax, the sum of squares of a norm, a row sum, argmax's (index, value) pairs)
   accumulates vectors: its reduction loop is split by a multiple of the lanes of the widest
   vector that divides it (as in step 4) and the inner part becomes a vector of partial results
   (rfactor), reduced to one value per row at the end. Partial results that step 3 does not
   move under a consumer get a parallel nest of their own (finish_partials).
6. Where the function's buffers hold more bytes than the target's last-level cache (when the
   target says), the outermost loop of each nest that writes an output is annotated
   "pragma_nontemporal": its vector stores of outputs it does not read go past the caches
   (no read for ownership; a smaller output would still be in cache for the next kernel).

A step whose preconditions fail is skipped, so the schedule never fails where the unscheduled
function builds; a vectorized loop that lowering would run serially is not vectorized.
"""
import dataclasses
import json
import math

from .. import tir
from ..error import KilnError, KilnTypeError, KilnValueError, ScheduleError
from ..target import ASSUMED_L2_BYTES, gemm_blocking
from ._block_info import is_sum_of_products
from .cpu_fused_rows import RowFusion, _loops_of, pack_columns
from ._schedule_steps import (block_info, block_names, fold_epilogues, inline_elementwise,
                              product_of, row_statistics)
from ._util import const_int, dtype_bytes

# A block with fewer iterations than this runs on one thread: a parallel loop costs a few
# microseconds to start, the time of some 10^4 simple iterations.
MIN_PARALLEL_ITERATIONS = 1 << 14
# Parallel loops are fused until they have this many iterations per thread, for balance.
PARALLEL_ITERATIONS_PER_THREAD = 4
# A convolution's register tile has at most this many image rows (8 accumulators cover the
# latency of two FMA pipes), and its loops up to this many unrolled steps (measured on the
# 3x3 ResNet convolution: 16 is 1.15x slower, 256 no faster).
WINDOW_ROWS = 8
WINDOW_UNROLL_STEPS = 64
# The fewest outputs per filter (per image) for which schedule_filter_vector packs the weight.
FILTER_VECTOR_MIN_PIXELS = 128
# The L1 data cache assumed where the target does not say (not the host).
ASSUMED_L1_BYTES = 32 * 1024
# The shipped tensor intrinsics tried, in this order, on sums of products where the target has
# their features (the tuner's rule tensorize tries the same ones): the 512-bit VNNI form before
# the 256-bit one, which a target with only AVX-VNNI (alderlake) has.
TENSOR_INTRINSICS = ("x86.avx512.vnni.dot_16x4_u8s8s32", "x86.avxvnni.dot_8x4_u8s8s32",
                     "x86.avx512.bf16.dot_16x2_bf16bf16f32")


@dataclasses.dataclass(frozen=True)
class _DotProduct:
    """A tensor intrinsic of the form C[lanes] += A[depth] * B[lanes, depth]."""

    name: str
    lanes: int
    depth: int
    dtypes: tuple  # of A, B and C


def _dot_products(names, target, api):
    """The intrinsics among names that have the dot-product form and whose required features
    the target has (the target is asked, not this machine)."""
    if names is None:
        names = TENSOR_INTRINSICS
    elif not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise KilnTypeError(f"{api}: tensor_intrinsics must be a list of str (names registered "
                            f"with tir.TensorIntrin.register), found {names!r}")
    found = []
    for name in names:
        if name not in tir.TensorIntrin.names():
            raise KilnValueError(f"{api}: tensor_intrinsics names {name!r}, which is not a "
                                 f"registered tensor intrinsic (registered: "
                                 f"{', '.join(tir.TensorIntrin.names())})")
        intrin = tir.TensorIntrin.get(name)
        if not all(target.has_feature(f) for f in intrin.required_features):
            continue
        buffers = [intrin.desc.buffer_map[p] for p in intrin.desc.params]
        shapes = [[const_int(d) for d in buffer.shape] for buffer in buffers]
        if len(shapes) != 3 or [len(shape) for shape in shapes] != [1, 2, 1] or \
                shapes[1] != [shapes[2][0], shapes[0][0]]:
            continue
        found.append(_DotProduct(name, shapes[2][0], shapes[0][0],
                                 tuple(buffer.dtype for buffer in buffers)))
    return found


def cpu_schedule(func, target, threads, tensor_intrinsics=None):
    """The schedule of the PrimFunc func for the CPU target (a kiln.target.Target of kind
    "llvm") with threads runtime threads, its sums of products tensorized with those of
    tensor_intrinsics (None: the shipped x86 ones) whose features the target has;
    topi.default_schedule documents it."""
    intrinsics = _dot_products(tensor_intrinsics, target, "topi.default_schedule")
    no_vector = set()
    while True:
        scheduler = _Scheduler(func, target, threads, no_vector, intrinsics)
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

    def __init__(self, func, target, threads, no_vector, intrinsics=()):
        self.sch = tir.Schedule(func)
        self.target = target
        self.intrinsics = intrinsics
        self.threads = threads
        self.no_vector = no_vector
        self.vectorized = {}  # block name -> names of the loops vectorized for it
        self.placed = set()  # blocks moved under a consumer's loop or folded into a tile
        # Step 5's partial-result blocks still at the root (their init not yet split off), by
        # name: the rows of the reduction and its BlockInfo, for finish_partials.
        self.partials = {}
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
        placed, partials = set(self.placed), dict(self.partials)
        try:
            result = step(trial, *args)
        except (ScheduleError, KilnError):
            self.vectorized, self.placed, self.partials = vectorized, placed, partials
            return None
        self.sch = trial
        return True if result is None else result

    def lanes(self, dtype):
        """The lanes of dtype in one of the target's vector registers (1 where it has none)."""
        try:
            return self.target.vector_lanes(dtype)
        except KilnError:
            return 1

    def lanes_dividing(self, dtype, extent):
        """The lanes of the target's widest vector of dtype whose lanes divide extent: a whole
        register, or half of one of 256 bits or more (Target.vector_lanes_dividing); 1 where
        none divides or extent is symbolic (None)."""
        if extent is None:
            return 1
        try:
            return self.target.vector_lanes_dividing(dtype, extent)
        except KilnError:
            return 1

    def vectorize_innermost(self, sch, name, loop, extent, dtype):
        """Vectorizes loop by the lanes of the target's widest vector that divides its extent
        (lanes_dividing), where one does; returns the loop left outside (loop itself, or None
        when the whole loop is vectorized)."""
        lanes = self.lanes_dividing(dtype, extent)
        if name in self.no_vector or extent is None or lanes < 2 or extent % lanes:
            return loop
        if extent == lanes:
            outer, inner = None, loop
        else:
            outer, inner = sch.split(loop, factors=[None, lanes])
        sch.vectorize(inner)
        self.vectorized.setdefault(name, set()).add(sch.get(inner).loop_var.name)
        return outer

    def vectorize_loop(self, sch, name, loop):
        """Vectorizes a loop of block name unless lowering ran a vector loop of it serially
        before (an epilogue folded into a write-back can put a guard into it)."""
        if name in self.no_vector:
            return
        sch.vectorize(loop)
        self.vectorized.setdefault(name, set()).add(sch.get(loop).loop_var.name)

    def parallelize(self, sch, loops, extents, iterations):
        """Fuses the leading loops until each thread has work, and runs them in parallel."""
        if not loops or self.threads < 2:
            return
        if iterations is not None and iterations < MIN_PARALLEL_ITERATIONS:
            return
        wanted = self.threads * PARALLEL_ITERATIONS_PER_THREAD
        count, fused = 0, 1
        for extent in extents:
            if extent is None:
                # Fused, a symbolic loop's index would be divided and taken modulo, which hides
                # its last partial tile from lowering: it joins only when the threads need it.
                if count == 0 or fused < self.threads:
                    count += 1
                break
            count += 1
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
        fused = self.attempt(lambda sch: RowFusion(
            self, sch, self.threads * PARALLEL_ITERATIONS_PER_THREAD).run())
        if fused:
            tiled, placed = fused
            self.tiled |= tiled
            self.placed |= placed
        for name in self.blocks():
            if name in self.placed:
                continue
            if self.sch.get(self.sch.get_block(name)).init is not None:
                self.attempt(self.vectorize_reduction, name)
        names = self.blocks()
        for name in names:
            if name not in self.blocks():  # folded into a tile's write-back
                continue
            if not is_sum_of_products(self.sch, self.sch.get_block(name)):
                continue
            if any(self.attempt(self.schedule_tensorized_product, name, intrin)
                   for intrin in self.intrinsics) or \
                    self.attempt(self.schedule_filter_vector, name) or \
                    self.attempt(self.schedule_window_product, name) or \
                    self.attempt(self.schedule_product, name, True) or \
                    self.attempt(self.schedule_product, name, False):
                self.tiled.add(name)
        for name in reversed(names):
            if name in self.tiled or name in self.placed or name not in self.blocks():
                continue
            if self.sch.get(self.sch.get_block(name)).init is None:
                self.attempt(self.schedule_spatial, name)
            else:
                self.attempt(self.schedule_reduction, name)
        for name in list(self.partials):
            self.attempt(self.finish_partials, name)
        self.attempt(self.stream_outputs)

    def stream_outputs(self, sch):
        """Step 6: outputs stored past the caches where the buffers outgrow the last level."""
        last_level = self.target.l3_cache_bytes
        sizes = [(product_of([const_int(e) for e in buffer.shape]), dtype_bytes(buffer.dtype))
                 for buffer in sch.mod["main"].buffer_map.values()]
        if last_level is None or any(n is None for n, _ in sizes) or \
                sum(n * b for n, b in sizes) <= last_level:
            return
        for name in block_names(sch):
            if self.info(name, sch).writes_output and sch.get_loops(name):
                sch.annotate(sch.get_loops(name)[0], "pragma_nontemporal", 1)

    def inline(self):
        """Step 1: element-wise producers into their consumers, a padding guard not into a
        reduction (it would stop the reduction's inner loop from vectorizing)."""
        self.sch = inline_elementwise(self.sch,
                                      keeps_guard=lambda sch, consumer: bool(consumer.reduce))

    def product_axes(self, info):
        """(i, j, panel) of a sum of products: the positions of the iterators of the register
        tile's rows (None when there is none) and vectorized columns, and the width of the
        packed panels the column loads read (None when they read no packed layout)."""
        spatial, reduce = info.spatial, info.reduce
        if spatial != list(range(len(spatial))) or len(spatial) < 2 or not reduce:
            raise KilnValueError("not a product of trivially bound loops")
        j = spatial[-1]
        vector_loads = [load for load in info.loads if j in load.uses]
        if info.extents[j] is None or not vector_loads or len(vector_loads) == len(info.loads):
            raise KilnValueError("no reuse along the columns")
        rows = [p for p in spatial[:-1] if any(p not in load.uses for load in vector_loads)]
        widths = [load.panels[j] for load in vector_loads if j in load.panels]
        return (rows[-1] if rows else None), j, (math.gcd(*widths) if widths else None)

    def tile(self, sch, name, info, i, j, mr, nr, panels=1):
        """The loop nest of a register tile: the product writes a "local" copy of its output
        (cache_write), whose write-back runs over column strips, row tiles of mr rows, the
        panels of one pass, then the tile (mr x nr); the product is computed per tile under
        the write-back's loops (compute_at, which also takes a symbolic number of rows), its
        reduction loops outside the tile's rows and columns.

        Returns (outer, outer_extents, rows, columns, reduce_loops, write_back_columns,
        local_name): the loops to run in parallel and their extents (None when symbolic), the
        product's tile loops (rows None when mr is 1) and reduction loops, the write-back's
        column loop and the name of the write-back block."""
        local = sch.cache_write(name, 0, "local")
        local_name = sch.get(local).name_hint
        loops = sch.get_loops(local)
        if len(loops) != len(info.spatial):
            raise KilnValueError("the write-back's loops are not the product's spatial loops")
        others = [loops[p] for p in info.spatial if p not in (i, j)]
        outer_extents = [info.extents[p] for p in info.spatial if p not in (i, j)]
        if panels > 1:
            jo, jp, jn = sch.split(loops[j], factors=[None, panels, nr])
        else:
            (jo, jn), jp = sch.split(loops[j], factors=[None, nr]), None
        outer = others + [jo]
        outer_extents.append(-(-info.extents[j] // (nr * panels)))  # a last strip may be partial
        ii = None
        if i is not None and mr > 1:
            io, ii = sch.split(loops[i], factors=[None, mr])
            outer.append(io)
            rows_extent = info.extents[i]
            outer_extents.append(None if rows_extent is None else -(-rows_extent // mr))
        elif i is not None:
            outer.append(loops[i])
            outer_extents.append(info.extents[i])
        sch.reorder(*(outer + [loop for loop in (jp, ii) if loop is not None] + [jn]))
        tile_loop = jp if jp is not None else outer[-1]
        depth = len(outer) + (jp is not None)  # the loops down to tile_loop
        sch.compute_at(name, tile_loop)
        # The new loops: the tile's rows (unless mr is 1), its columns and the reduction loops
        # other than those of extent 1.
        inner = sch.get_loops(name)[depth:]
        reduce_count = sum(1 for p in info.reduce if info.extents[p] != 1)
        if len(inner) != (ii is not None) + 1 + reduce_count:
            raise KilnValueError("unexpected loops under the tile")
        rows = inner[0] if ii is not None else None
        columns, reduce_loops = inner[(ii is not None)], inner[(ii is not None) + 1:]
        sch.reorder(*(reduce_loops + ([rows] if rows is not None else []) + [columns]))
        return outer, outer_extents, rows, columns, reduce_loops, jn, local_name

    def schedule_product(self, sch, name, pack):
        """Step 2: the register tile of a sum of products, its columns vectorized. Where the
        column loads read packed panels (dense_pack's weight), NR divides the panel width, so
        that a vector of the tile reads contiguous columns of one panel; elsewhere, with pack,
        the argument the columns are loaded from is packed into such panels where the tile's
        outer loops allow it (pack_column_operand)."""
        info = self.info(name, sch)
        i, j, panel = self.product_axes(info)
        if (i is None or info.extents[i] == 1) and panel is None and any(
                j not in load.last_uses for load in info.loads if j in load.uses):
            # One row of columns that lie far apart in their operand (x W^T, a GEMV): a register
            # tile would gather them or copy the whole operand per call (1 x 768 x 50256 took
            # 117 ms); schedule_reduction's vector partial sums read it in place (5.9 ms).
            raise KilnValueError("a single row of columns read across their operand")
        columns = info.extents[j]
        depth = product_of([info.extents[p] for p in info.reduce])
        try:
            mr, nr, panels = gemm_blocking(self.target, info.dtype, n=columns, k=depth,
                                           threads=self.threads)
            if panel is not None and panel % nr:
                mr, nr, _ = gemm_blocking(self.target, info.dtype, n=panel)
                panels = 1
        except KilnError:
            lanes = self.lanes_dividing(info.dtype, math.gcd(columns, panel or columns))
            if lanes >= 2:
                mr, nr, panels = 4, lanes, 1
            elif panel is None and columns is not None and columns > self.lanes(info.dtype) > 1:
                # No vector divides the columns (1001): whole registers all the same, the last
                # tile partial (lowering peels it off; its columns past the end are masked).
                mr, nr, panels = gemm_blocking(self.target, info.dtype, k=depth,
                                               threads=self.threads)
            else:
                raise
        if i is None:
            mr = 1
        elif info.extents[i] is not None:
            mr = min(mr, info.extents[i])  # a last partial tile is peeled off by lowering
        if pack and panel is None:
            panels = self.panels_for_threads(info, i, j, nr, panels, depth)
        outer, outer_extents, rows, cols, reduce_loops, write_back, local_name = self.tile(
            sch, name, info, i, j, mr, nr, panels)
        if nr > 1:
            # NR / lanes whole vectors: LLVM splits the wide vector into registers.
            self.vectorize_loop(sch, name, cols)
            self.vectorize_loop(sch, local_name, write_back)
        if not reduce_loops:  # a reduction of one step (an outer product): a spatial block's step
            raise KilnValueError("the product has no reduction loop to tile")
        if rows is not None:
            sch.unroll(rows)
        sch.decompose_reduction(name, reduce_loops[0])
        self.placed.update(fold_epilogues(sch, local_name))
        if pack and panel is None:
            self.pack_column_operand(sch, name, info, i, j, nr, outer, outer_extents)
        self.parallelize(sch, outer, outer_extents, info.iterations)

    def window_axes(self, info):
        """(f, h, j, column_reduce, row_reduce, channel) of a convolution-like sum of products
        (out[n, f, y, x] += in[n, c, y + r, x + s] * w[f, c, r, s]): the columns j (the last
        spatial iterator), read by a load whose last index is j plus a reduction iterator at
        unit stride (the window, s); the rows h, the innermost other spatial iterator that
        load reads through a window (y + r); f, the innermost spatial iterator that load does
        not read (the filters, whose weights are broadcast). column_reduce and row_reduce are
        the reduction iterators of those two windows, channel the innermost other reduction
        iterator. Raises where the block is not such a product."""
        spatial, reduce = info.spatial, info.reduce
        if spatial != list(range(len(spatial))) or len(spatial) < 3 or len(reduce) < 3 or \
                any(e is None for e in info.extents):
            raise KilnValueError("not a convolution of constant shape")
        j = spatial[-1]

        def term(expr):
            """(position, coefficient) of an iterator times a constant, else None."""
            scale = 1
            if isinstance(expr, tir.Mul):
                for var, factor in ((expr.a, expr.b), (expr.b, expr.a)):
                    if isinstance(factor, tir.IntImm):
                        expr, scale = var, factor.value
                        break
            position = next((k for k, iv in enumerate(info.iter_vars) if expr.same_as(iv.var)),
                            None)
            return None if position is None else (position, scale)

        def window(index, unit=False):
            """(spatial, reduce) positions of an index that is one plus the other (the spatial
            one at unit stride if unit), else None."""
            if not isinstance(index, tir.Add):
                return None
            terms = [term(index.a), term(index.b)]
            if None in terms or info.is_reduce[terms[0][0]] == info.is_reduce[terms[1][0]]:
                return None
            spatial_term, reduce_term = terms if info.is_reduce[terms[1][0]] else terms[::-1]
            if unit and spatial_term[1] != 1:
                return None
            return spatial_term[0], reduce_term[0]

        loads = [load for load in info.loads if load.indices and
                 (window(load.indices[-1], unit=True) or (None,))[0] == j]
        if len(loads) != 1:
            raise KilnValueError("no load slides a window along the columns")
        (load,) = loads
        column_reduce = window(load.indices[-1], unit=True)[1]
        if info.extents[column_reduce] < 2:
            raise KilnValueError("a window of one column (a 1x1 convolution): a plain product")
        rows = [window(index) for index in load.indices[:-1]]
        rows = [w for w in rows if w is not None and w[0] != j]
        filters = [p for p in spatial[:-1] if p not in load.uses]
        channels = [r for r in reduce if r in load.uses and r != column_reduce and
                    all(r != w[1] for w in rows)]
        if not rows or not filters or not channels:
            raise KilnValueError("not a convolution with filters and channels")
        h, row_reduce = rows[-1]
        return filters[-1], h, j, column_reduce, row_reduce, channels[-1]

    def schedule_window_product(self, sch, name):
        """Step 2 for a convolution (window_axes): a register tile of MR image rows x NR
        columns, whose MR input vectors meet one broadcast weight each step; per parallel task
        (a block of FB filters x MR rows), the reduction runs over blocks of CB channels and
        the column window outside the filters and column tiles, so that a block's input rows
        stay in the L1 cache while every filter of the task reads them; the row window and the
        block's channels run inside. The task's FB x MR x W accumulators live in a "local"
        buffer (at most twice the L1 cache), the producer of the input (the padding) is
        computed per channel block, where it is read. On a 3x3 ResNet convolution (56 x 56,
        64 -> 64) this runs 1.7x as fast as the register tile of a matrix product over the
        whole reduction (schedule_product), which reads the input from L2 again for each
        filter."""
        info = self.info(name, sch)
        f, h, j, column_reduce, row_reduce, channel = self.window_axes(info)
        extents = info.extents
        # Columns: the target's widest vectors that divide the width (lanes_dividing), else
        # vectors of a divisor of the width between half a register's lanes and its lanes (28
        # columns: vectors of 7 floats in 8-lane AVX2 registers).
        lanes = self.lanes_dividing(info.dtype, extents[j])
        if lanes < 2:
            full = self.lanes(info.dtype)
            lanes = max((d for d in range(full // 2, full + 1) if d > 1 and extents[j] % d == 0),
                        default=0)
        if lanes < 2:
            raise KilnValueError("the columns are not whole vectors")
        l1 = self.target.l1d_cache_bytes or ASSUMED_L1_BYTES
        itemsize = dtype_bytes(info.dtype)
        registers = self.target.num_vector_registers
        mr = _largest_divisor(extents[h], min(WINDOW_ROWS, registers // 2))
        width = extents[j]
        fb = _largest_divisor(extents[f], max(1, 2 * l1 // (itemsize * mr * width)))
        slab = (mr + extents[row_reduce] - 1) * (width + extents[column_reduce] - 1) * itemsize
        cb = _largest_divisor(extents[channel], max(1, int(0.6 * l1) // slab))
        block = sch.get_block(name)
        loops = sch.get_loops(block)
        f0, f1 = sch.split(loops[f], factors=[None, fb])
        h0, h1 = sch.split(loops[h], factors=[None, mr])
        w0, w1 = sch.split(loops[j], factors=[None, lanes])
        c0, c1 = sch.split(loops[channel], factors=[None, cb])
        outer = [loops[p] for p in info.spatial if p not in (f, h, j)]
        others = [loops[r] for r in info.reduce if r not in (column_reduce, row_reduce, channel)]
        sch.reorder(*(outer + [f0, h0, c0] + others + [loops[column_reduce], f1, w0, c1,
                                                        loops[row_reduce], h1, w1]))
        local = sch.cache_write(name, 0, "local")
        local_name = sch.get(local).name_hint
        sch.reverse_compute_at(local, h0)
        producers = [sch.get(b).name_hint for b in sch.get_producers(block)]
        task = outer + [f0, h0]
        extents_out = [extents[p] for p in info.spatial if p not in (f, h, j)] + \
            [extents[f] // fb, extents[h] // mr]
        sch.unroll(h1)
        self.vectorize_loop(sch, name, w1)
        sch.decompose_reduction(name, c0)
        write_back = sch.get_loops(local_name)[-1]
        _, write_lanes = sch.split(write_back, factors=[None, lanes])
        self.vectorize_loop(sch, local_name, write_lanes)
        self.placed.update(fold_epilogues(sch, local_name))
        for producer in producers:  # the padding of the input, where it is read
            try:
                sch.compute_at(producer, c0)
                self.placed.add(producer)
            except (ScheduleError, KilnError):
                pass
        self.parallelize(sch, task, extents_out, info.iterations)
        _unroll_nest(sch, name)

    def filter_axes(self, info):
        """(f, j, weight, f_dim) of a convolution-like sum of products whose filters make the
        vectors (out[n, f, y, x] += in[n, c, y * S + r, x * S + s] * w[f, c, r, s], any stride
        and dilation): the filters f, the innermost spatial iterator the input does not read;
        the columns j (the last spatial iterator), which only the input reads; the weight's
        load, which reads f as one of its dimensions (f_dim), and no other spatial iterator.
        Raises where the block is not such a product."""
        spatial, reduce = info.spatial, info.reduce
        if spatial != list(range(len(spatial))) or len(spatial) < 3 or len(reduce) < 2 or \
                any(e is None for e in info.extents) or len(info.loads) != 2:
            raise KilnValueError("not a convolution of constant shape")
        j = spatial[-1]
        inputs = [load for load in info.loads if j in load.uses]
        weights = [load for load in info.loads if j not in load.uses]
        if len(inputs) != 1 or len(weights) != 1:
            raise KilnValueError("no input read along the columns and weight beside it")
        filters = [p for p in spatial[:-1] if p not in inputs[0].uses and p in weights[0].uses]
        if not filters or any(p in weights[0].uses for p in spatial if p != filters[-1]):
            raise KilnValueError("no filters that only the weight reads")
        f = filters[-1]
        dims = [d for d, index in enumerate(weights[0].indices)
                if isinstance(index, tir.Var) and index.same_as(info.iter_vars[f].var)]
        if len(dims) != 1:
            raise KilnValueError("the weight does not read the filters as a dimension")
        return f, j, weights[0], dims[0]

    def schedule_filter_vector(self, sch, name):
        """Step 2 for a convolution whose image rows do not make whole vectors (28 or 14
        columns: no vector of the target divides them) or whose window is strided: the vectors
        run along the filters instead (filter_axes), those of the widest vector that divides
        the filters (lanes_dividing: 8 float32 lanes for 24 filters on AVX-512). The weight is
        packed per call so that FV filters (two vectors where they divide the filters) of one
        tap are contiguous, [f // FV, .., f % FV]; the register tile is FV filters x P output
        columns of one row, P input values broadcast per tap (their stride does not matter),
        the whole reduction inside the tile; per parallel task (FV filters of one output row)
        the row's accumulators live in a "local" buffer, filters innermost. The
        input's producer (the padding) stays a pass of its own: computed per task it was
        copied again for every row and filter block (1.5x as slow on the 7 x 7 / 2 stem and a
        5 x 5 layer, the same on 3 x 3 ones). Raises where the window
        schedule vectorizes whole rows of unit stride, and where there are fewer than
        FILTER_VECTOR_MIN_PIXELS outputs per filter (the weight is packed once per call: each
        packed value must be used that many times at least). On ResNet 3x3 layers of 28 x 28
        and 14 x 14 outputs this ran 2.0x and 1.8x as fast as the window schedule, on the
        7 x 7 / 2 stem and a 3 x 3 / 2 layer of 128 channels 4.7x and 20x as fast as the
        product tile."""
        info = self.info(name, sch)
        f, j, weight, f_dim = self.filter_axes(info)
        extents = info.extents
        lanes = self.lanes_dividing(info.dtype, extents[f])
        if lanes < 2:
            raise KilnValueError("the filters are not whole vectors")
        try:
            self.window_axes(info)
            whole_rows = self.lanes_dividing(info.dtype, extents[j]) > 1
        except KilnValueError:
            whole_rows = False
        if whole_rows:
            raise KilnValueError("the window schedule vectorizes whole rows")
        if product_of([extents[q] for q in info.spatial if q != f]) < FILTER_VECTOR_MIN_PIXELS:
            raise KilnValueError("too few outputs per filter to pack the weight for")
        vectors = 2 if extents[f] % (2 * lanes) == 0 else 1
        fv = vectors * lanes
        registers = self.target.num_vector_registers
        p = max(1, min(extents[j], (registers - 2 * vectors - 2) // vectors))
        block = sch.get_block(name)
        reads = sch.get(block).reads
        index = next(k for k, region in enumerate(reads) if region.buffer.same_as(weight.buffer))
        packed = sch.cache_read(block, index, "global")
        rank = len(weight.indices)
        names = [f"d{k}" for k in range(rank)]
        finals = [f"{names[f_dim]} // {fv}"] + [n for k, n in enumerate(names) if k != f_dim] + \
            [f"{names[f_dim]} % {fv}"]
        sch.transform_layout(packed, ("write", 0),
                             f"lambda {', '.join(names)}: [{', '.join(finals)}]")
        packed_name = sch.get(packed).name_hint
        loops = sch.get_loops(block)
        f0, f1 = sch.split(loops[f], factors=[None, fv])
        j0, j1 = sch.split(loops[j], factors=[None, p])
        rows = [loops[q] for q in info.spatial if q not in (f, j)]
        sch.reorder(*([f0] + rows + [j0] + [loops[r] for r in info.reduce] + [j1, f1]))
        local = sch.cache_write(block, 0, "local")
        local_name = sch.get(local).name_hint
        task = [f0] + rows
        sch.reverse_compute_at(local, task[-1])
        out_names = [f"o{k}" for k in range(len(info.spatial))]
        order = [n for k, n in enumerate(out_names) if k != f] + [out_names[f]]
        sch.transform_layout(block, ("write", 0),
                             f"lambda {', '.join(out_names)}: [{', '.join(order)}]")
        sch.unroll(j1)
        self.vectorize_loop(sch, name, f1)
        sch.decompose_reduction(block, j0)
        self.placed.update(fold_epilogues(sch, local_name))
        copy_loops = sch.get_loops(packed_name)
        self.placed.add(packed_name)
        if self.threads > 1:
            sch.parallel(copy_loops[0])
        self.parallelize(sch, task, [extents[f] // fv] + [extents[q] for q in info.spatial
                                                          if q not in (f, j)], info.iterations)
        # The innermost taps unrolled around the tile's columns: 1.2x to 1.8x as fast on
        # 3 x 3 and 5 x 5 layers (the 7 x 7 stem the same).
        _unroll_nest(sch, name)

    def panels_for_threads(self, info, i, j, nr, panels, depth):
        """Fewer panels per pass where the column operand does not fit the L2 cache (so that
        packing it pays) and the passes (column strips, times the batch) would be too few for
        the threads to share without the parallel loop fusing past the packed copy
        (pack_column_operand): AVX-512's 64-column tiles in passes of 4 panels leave 4 strips
        of 1024 columns, and unpacked, a 1024^3 GEMM on 2 threads ran at half NumPy's speed."""
        wanted = self.threads * PARALLEL_ITERATIONS_PER_THREAD if self.threads > 1 else 1
        others = [info.extents[p] for p in info.spatial if p not in (i, j)]
        if info.extents[j] is None or depth is None or any(e is None for e in others):
            return panels
        operand_bytes = depth * info.extents[j] * dtype_bytes(info.dtype)
        if operand_bytes <= (self.target.l2_cache_bytes or ASSUMED_L2_BYTES):
            return panels
        batch = product_of(others)
        while panels > 1 and batch * (info.extents[j] // (nr * panels)) < wanted:
            panels //= 2
        return panels

    def pack_column_operand(self, sch, name, info, i, j, nr, outer, outer_extents):
        """Packs the argument the tile's columns are loaded from (B of C[i, j] += A[i, k] *
        B[k, j], also with batch dimensions) into panels of nr contiguous columns, [.., j //
        nr, k, j % nr], so that each step of k reads the next nr columns instead of a row far
        from the last (rows at a power-of-two distance share a few sets of the L1 cache).
        The copy is made under the outer loops whose iterators the argument uses (the batch,
        the column strips), the innermost of them: each of its iterations packs the panels
        that the row tiles inside it read again and again, while they are in cache. Raises
        where there is nothing to gain: no row tiles under those loops, columns no wider than
        nr, or those loops too few for the threads (the parallel loop would fuse past the
        copy)."""
        positions = [p for p in info.spatial if p not in (i, j)] + [j]
        if len(outer) > len(positions):
            positions.append(i)
        params = list(sch.mod["main"].buffer_map.values())
        loads = [load for load in info.loads if j in load.uses and
                 any(load.buffer.same_as(param) for param in params)]
        if len(loads) != 1 or i is None or i not in positions or info.extents[j] <= nr:
            raise KilnValueError("no argument to pack into panels")
        count = 0
        while count < len(positions) and positions[count] in loads[0].uses:
            count += 1
        if count == 0 or positions[count:] == []:
            raise KilnValueError("no row tiles reuse the panels")
        extents = outer_extents[:count]
        wanted = self.threads * PARALLEL_ITERATIONS_PER_THREAD if self.threads > 1 else 1
        if any(e is None for e in extents) or product_of(extents) < wanted:
            raise KilnValueError("the parallel loop would fuse past the packed copy")
        copies = pack_columns(sch, name, j, nr, params)
        if len(copies) != 1:  # its column index is not a plain dimension (a convolution's)
            raise KilnValueError("no argument to pack into panels")
        (copy_name,) = copies
        sch.compute_at(copy_name, outer[count - 1])
        loops = sch.get_loops(copy_name)
        copy_info = self.info(copy_name, sch)
        self.vectorize_innermost(sch, copy_name, loops[-1], copy_info.extents[-1],
                                 copy_info.dtype)
        self.placed.add(copy_name)

    def schedule_tensorized_product(self, sch, name, intrin):
        """Step 2 with a tensor intrinsic: the register tile of a sum of products whose columns
        are whole groups of the intrinsic's lanes and whose reduction is whole groups of its
        depth, the dot product of each group replaced by the intrinsic (tensorize). Tensorize
        checks that the product computes what the intrinsic describes over contiguous data
        (the NC16n4c or NC8n4c weight of dense_int8 for VNNI); any failure leaves the other
        steps."""
        info = self.info(name, sch)
        if info.dtype != intrin.dtypes[2] or len(info.loads) != 2 or sorted(
                load.buffer.dtype for load in info.loads) != sorted(intrin.dtypes[:2]):
            raise KilnValueError("not the intrinsic's dtypes")
        i, j, _ = self.product_axes(info)
        if len(info.reduce) != 1:
            raise KilnValueError("not a single reduction, as the intrinsic's")
        columns, depth = info.extents[j], info.extents[info.reduce[0]]
        if columns % intrin.lanes or depth is None or depth % intrin.depth:
            raise KilnValueError("not whole groups of the intrinsic")
        try:
            mr, nr, _ = gemm_blocking(self.target, info.dtype, n=columns)
        except KilnError:
            mr, nr = 4, intrin.lanes
        if nr % intrin.lanes:
            nr = intrin.lanes
        if i is None:
            mr = 1
        elif info.extents[i] is not None:
            mr = min(mr, info.extents[i])
        outer, outer_extents, rows, cols, [ko], write_back, local_name = self.tile(
            sch, name, info, i, j, mr, nr)
        jt, ji = sch.split(cols, factors=[None, intrin.lanes])
        ko, ki = sch.split(ko, factors=[None, intrin.depth])
        sch.reorder(*([ko] + ([rows] if rows is not None else []) + [jt, ji, ki]))
        sch.tensorize(ji, intrin.name, target=str(self.target))
        init = sch.decompose_reduction(name + "_o", ko)  # tensorize's block over the tile
        # The init's loop over the lanes: one vector store.
        init_block = sch.get_child_blocks(init)[0]
        self.vectorize_loop(sch, sch.get(init_block).name_hint, sch.get_loops(init_block)[-1])
        for loop in (rows, jt):
            if loop is not None and sch.get(loop).extent.value > 1:
                sch.unroll(loop)
        self.vectorize_loop(sch, local_name, write_back)
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
                row_extent = product_of(extents[:row_depth])
                iterations = info.iterations
                if iterations is not None:
                    iterations *= 1 + len(placed)  # the statistics read the row again
                self.parallelize(sch, [row], [row_extent], iterations)
                return
            loops = sch.get_loops(name)
            extents = [product_of(extents[:row_depth])] + extents[row_depth:]
        outer = self.vectorize_innermost(sch, name, loops[-1], extents[-1], info.dtype)
        if outer is None:  # the whole loop is one vector
            loops, extents = loops[:-1], extents[:-1]
        elif outer != loops[-1]:  # split: the outer part of the vector loop
            loops = loops[:-1] + [outer]
            extents = extents[:-1] + [extents[-1] // self.lanes_dividing(info.dtype,
                                                                         extents[-1])]
        self.parallelize(sch, loops, extents, info.iterations)

    def place(self, sch, producer, loop):
        """compute_at of a row reduction under loop, and in turn of what it reads: the other
        row reductions, their partial results (step 5) and the row-wise stages between them (a
        softmax's exp, which reads the max), unless one would compute more than one row per
        iteration."""
        kind = "partials" if producer in self.partials else \
            "reduction" if sch.get(sch.get_block(producer)).init is not None else "stage"

        def steps(target):
            target.compute_at(producer, loop)
            pinfo = self.info(producer, target)
            # Under the loop, one row of a reduction leaves no spatial loop (unit loops are
            # dropped): any would compute several rows per iteration, and every iteration
            # again. Partial results and stages keep their lanes or columns, run once.
            under = len(target.get_loops(producer)) - 1  # loop is the consumer's outermost
            if kind == "reduction" and under > len(pinfo.reduce):
                raise KilnValueError("more than one row per iteration")
            if kind != "reduction" and not _computes_once(target, producer, pinfo):
                raise KilnValueError("computed again in other iterations")
            if kind == "partials":
                return self.place_partials(target, producer)
            if kind == "stage":
                inner = target.get_loops(producer)[-1]
                self.vectorize_innermost(target, producer, inner,
                                         const_int(target.get(inner).extent), pinfo.dtype)
            return None

        try:
            steps(sch.copy())
        except (ScheduleError, KilnError):
            return False
        init_name = steps(sch)
        self.placed.add(producer)
        if kind == "partials":
            self.placed.add(init_name)
            del self.partials[producer]
        for inner in sch.get_producers(producer):
            iname = sch.get(inner).name_hint
            if (iname not in self.placed and iname not in self.tiled) or iname in self.partials:
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


    @staticmethod
    def streams_rows(info, r):
        """Whether a product streams an operand along its rows: a load of a plain layout (no
        packed panels) that uses every spatial iterator (but those of one value), its last
        index the reduction iterator r itself, while no load's last index uses the output's
        last spatial iterator (a matrix-vector product, a dense layer of one token over a
        weight [out, in]). Its register tile would load that operand across rows; partial
        results along them load it as vectors."""
        if not info.spatial:
            return False
        last = info.spatial[-1]
        if any(last in load.last_uses for load in info.loads):
            return False
        row = info.iter_vars[r].var
        return any(load.indices and load.indices[-1].same_as(row) and not load.panels and
                   all(p in load.uses for p in info.spatial if info.extents[p] != 1)
                   for load in info.loads)

    def vectorize_reduction(self, sch, name):
        """Step 5: the vector partial results of a reduction along contiguous rows, in a nest of
        their own (rfactor needs the reduction alone under its loops, so this comes before the
        row statistics are placed); the final reduction of each row's lanes stays the block
        name, which step 3 places with its consumer. A product with reuse is step 2's, unless
        it streams an operand along its rows (streams_rows)."""
        info = self.info(name, sch)
        if name in self.no_vector or len(info.reduce) != 1:
            raise KilnValueError("not a reduction over one loop")
        r = info.reduce[0]
        extent = info.extents[r]
        lanes = self.lanes_dividing(info.dtype, extent)
        if lanes < 2 or extent < 4 * lanes:
            raise KilnValueError("not a reduction of whole vectors")
        if not any(r in load.last_uses for load in info.loads):
            raise KilnValueError("the reduction does not read along rows")
        if any(p not in load.uses for load in info.loads for p in info.spatial
               if info.extents[p] != 1) and not self.streams_rows(info, r):
            raise KilnValueError("a product with reuse: step 2 tiles it")
        loops = sch.get_loops(name)
        if len(loops) != len(info.iter_vars) or info.spatial != list(range(len(info.spatial))):
            raise KilnValueError("loops do not match the iterators")
        width = next(w for w in (4 * lanes, 2 * lanes, lanes) if extent % w == 0)
        _, inner = sch.split(loops[-1], factors=[None, width])
        partial = sch.rfactor(inner, factor_axis=len(info.write_buffers[0].shape))
        # Step 3 may move the partial results under their consumer's row loop (place); those
        # it leaves get a nest of their own (finish_partials).
        partial_name = sch.get(partial).name_hint
        self.partials[partial_name] = info
        self.placed.add(partial_name)

    def finish_partials(self, sch, name):
        """The end of step 5 for partial results that stayed at the root: their rows in
        parallel, the reduction outside the lanes, the init split off."""
        info = self.partials.pop(name)
        loops = sch.get_loops(name)
        self.vectorize_loop(sch, name, loops[-1])
        init = sch.decompose_reduction(name, loops[-2])
        init_name = sch.get(init).name_hint
        self.vectorize_loop(sch, init_name, sch.get_loops(init)[-1])
        rows = len(info.spatial)
        self.parallelize(sch, sch.get_loops(name)[:rows], info.extents[:rows], info.iterations)
        self.placed.add(init_name)

    def place_partials(self, sch, name):
        """Under the row loop, the loops of step 5's partial results as reduction, lanes (their
        rows are the loop's), the lanes vectorized, the init split off; returns the init's
        name."""
        info = self.info(name, sch)
        lane = info.spatial[0]  # rfactor's factor_axis is last, its iterator first
        lanes = _loops_of(sch, name, {lane}, 1)
        reduce = _loops_of(sch, name, set(info.reduce), 1)
        if len(lanes) != 1 or len(reduce) != 1:
            raise KilnValueError(f"unexpected loops of {name}")
        sch.reorder(reduce[0], lanes[0])
        self.vectorize_loop(sch, name, lanes[0])
        init = sch.decompose_reduction(name, reduce[0])
        init_name = sch.get(init).name_hint
        self.vectorize_loop(sch, init_name, sch.get_loops(init)[-1])
        return init_name


def _computes_once(sch, name, info):
    """Whether the loops around block name run it once per point of its domain (info is its
    BlockInfo): no iteration computes what another one did."""
    runs = product_of([const_int(sch.get(loop).extent) for loop in sch.get_loops(name)])
    return runs is not None and runs == product_of(info.extents)


def _unroll_nest(sch, name):
    """Marks the outermost loop of block name's nest for automatic unrolling of
    WINDOW_UNROLL_STEPS steps, the copies made by kiln (the convolution schedules)."""
    nest = sch.get_loops(name)[0]
    sch.annotate(nest, "pragma_auto_unroll_max_step", WINDOW_UNROLL_STEPS)
    sch.annotate(nest, "pragma_unroll_explicit", 1)


def _largest_divisor(n, limit):
    """The largest divisor of n that is at most limit (1 at least)."""
    return max(d for d in range(1, max(1, min(n, limit)) + 1) if n % d == 0)
