"""Default GPU schedules ("cuda", "opencl") for the operators of kiln.topi: a reasonable
schedule without tuning, as TVM's topi CUDA schedules give.

topi.default_schedule runs gpu_schedule for GPU targets. It works on the blocks of a PrimFunc,
whatever operators built it. A thread block has at most min(target.max_threads_per_block, 256)
threads, and a product's shared tiles fit target.max_shared_memory_per_block.

1. Element-wise producers are inlined into their consumers with the CPU's rules (a
   transcendental function is not computed again for elements its consumer reuses), except
   that a transcendental function read once by each of several consumers (a softmax's exp, by
   its sum and its division) is computed by each, where the CPU keeps it as a stage (on a GPU,
   a kernel of its own writing to global memory), and a padding guard goes into a product's
   shared-memory fetch (step 2) rather than into the product itself.
2. Products (a sum of products with reuse: matmul, dense, batch_matmul, conv2d, the two
   products of attention) with at least 4 rows are tiled. Their tile's columns j are the
   last spatial axis, its rows i the last one that an operand indexed by j does not use. Each
   thread accumulates a register tile of up to 4 x 4 outputs in "local" scope (cache_write),
   the tile loops unrolled; up to 16 threads along i (threadIdx.y) and the rest of the block's
   threads along j (threadIdx.x) make a block tile, typically 64 x 64, bound to blockIdx.x
   together with the other spatial axes (batch, heads, a convolution's rows). Element-wise
   consumers (bias, activation) are folded into the tile's write-back. The longest reduction
   loop is split into steps; at each step the block's threads copy the operands' tiles into
   "shared" memory together (cache_read, the copy's loops fused and bound to the same
   threads: cooperative fetching), rows padded against bank conflicts (by four elements
   where a row is a multiple of four long, so that rows stay 16-byte aligned and a thread
   reads neighbouring elements as one vector; to an odd stride where it is not, or where
   neighbouring threads read down the rows, as B[j, k] of A @ B.T), the step as long as the
   tiles fit the target's shared memory. The reduction step's loop is unrolled with the
   register tile. Tile sizes divide the extents where a good divisor exists. Otherwise, and
   for symbolic extents, a thread computes one output along that axis and the last tile is
   guarded; a symbolic reduction is not staged in shared memory (a guarded step would be
   split by lowering into copies of the loop nest).
3. Row reductions: a spatial block that reads statistics per row (the max and sum of a
   softmax, the mean and variance of a norm) gets one row per thread block, or several along
   threadIdx.y when rows are short; its columns are split over threadIdx.x, and each statistic
   is computed under the row in shared memory, its reduction split over the same threads (a
   cross-thread reduction: partial results per thread, combined with warp shuffles or in
   shared memory).
4. Other reductions: one over the innermost axes of what it reads (sum, max or mean over the
   last axes, global pooling, a matrix-vector product such as dense for one row) is a
   cross-thread reduction as in step 3 (an element-wise consumer, a mean's division or a
   bias, reads it as a statistic per row: step 3 computes both in one thread block); so is
   argmax or argmin over the last axis, whose threads combine (index, value) pairs. The
   others (over outer axes, pooling windows) give each thread one output, accumulated in a
   register. A reduction to one value (every axis reduced, sum(x), max(x), mean(x),
   argmax(x), with or without keepdims) runs in two kernels, as TVM users write it: its
   reduction loop is split into (steps, thread blocks, threads) and
   rfactor over the thread blocks gives each block a slice that its threads reduce across
   threads (each thread striding over the slice, so that neighbouring threads read
   neighbouring elements) into a partial result; then one thread block reduces the partial
   results across its threads. The blocks are as many as give each thread
   MIN_PARTIAL_STEPS elements, at most the threads of a block, so a short input (up to
   threads * MIN_PARTIAL_STEPS elements) gets one thread block striding over it and one
   kernel. The last slice is guarded where the length is not a multiple (or is symbolic).
5. Every other block (element-wise, broadcast, transforms): its loops fused, split by the
   thread count and bound to blockIdx.x and threadIdx.x. Where every access of the block
   reads or writes 32-bit values contiguously along its last axis (or does not depend on it,
   a broadcast value) and the lanes divide the extents, each thread computes VECTOR_LANES
   neighbouring outputs with one vector load per operand and one vector store (float4); a
   transpose's strided reads keep one output per thread.

Only step 5 vectorizes: the other steps' threads read with a stride of the thread count
(coalesced across a warp), which vectors would not improve.

The schedule is lowered for the target before it is returned. A block whose schedule the
lowering refuses (a reduction its threads cannot combine, shared memory over the limit) gets
the simpler schedule of a later step, down to one thread per output. A 0-d element-wise block
(a mean's division) gets one thread (add_unit_loop gives it loops to bind). A reduction to one
value that threads cannot combine (an update guarded by a where condition, a combiner that
lower_cross_thread_reduction does not recognize) has no GPU schedule: KilnValueError names it.
"""
import re

from .. import tir
from ..error import KilnError, KilnValueError, ScheduleError
from ._block_info import (is_combinable_reduction, is_simple_reduction, is_sum_of_products,
                          uses_var)
from ._schedule_steps import (block_info, block_names, fold_epilogues, inline_elementwise,
                              product_of, row_statistics)
from ._util import const_int, dtype_bytes

API = "topi.default_schedule"
# Threads per block, at most: several blocks of 256 threads fit on a multiprocessor, so one
# block waiting at a barrier does not leave it idle.
MAX_BLOCK_THREADS = 256
# A product's threads along each axis of its tile, and the outputs per thread along each.
MAX_TILE_THREADS = 16
MAX_THREAD_TILE = 4
# The longest reduction step of a product between two fetches into shared memory.
MAX_REDUCTION_STEP = 16
# A shorter reduction (a pooling window) runs in one thread rather than across threads.
MIN_CROSS_THREAD_EXTENT = 16
# A product with fewer rows (a matrix-vector product, a decoding step's) is not tiled: its few
# block tiles would leave most of the GPU idle. It is a reduction like others (step 4), each
# output reduced across threads when the operands are read along the reduction.
MIN_TILE_ROWS = 4
# A reduction to one value gets as many thread blocks as give each thread this many elements
# (at most the threads of the one block that reduces their partial results): fewer blocks
# would leave a GPU's multiprocessors idle, more would make threads that do little but wait
# at the barriers of the cross-thread reduction.
MIN_PARTIAL_STEPS = 16
# Step 5's vector width: four 32-bit values, one 16-byte access (CUDA's float4, OpenCL's
# float4), the widest a thread's load can be.
VECTOR_LANES = 4


def gpu_schedule(func, target):
    """The schedule of the PrimFunc func for the GPU target (a kiln.target.Target of kind
    "cuda" or "opencl"); topi.default_schedule documents it."""
    avoid = set()
    while True:
        scheduler = _Scheduler(func, target, avoid)
        scheduler.run()
        error = _lowering_error(scheduler.sch, target)
        if error is None:
            return scheduler.sch
        named = {owner for block, owner in scheduler.owners.items() if _names(error, block)}
        demote = (named or set(scheduler.owners.values())) - avoid
        if not demote:
            raise KilnValueError(f"{API}: the GPU schedule for {target} does not lower, even "
                                 f"with one thread per output: {error}")
        avoid |= demote


def _lowering_error(sch, target):
    try:
        tir.lower(sch.mod, target=str(target))
    except KilnError as error:
        return str(error)
    return None


def _names(text, block):
    return re.search(r"\b" + re.escape(block) + r"\b", text) is not None


class _Scheduler:
    """The steps of gpu_schedule on one tir.Schedule, with none of the (block, strategy)
    pairs in avoid."""

    def __init__(self, func, target, avoid):
        self.sch = tir.Schedule(func)
        self.target = target
        self.avoid = avoid
        self.threads = max(1, min(target.max_threads_per_block, MAX_BLOCK_THREADS))
        self.warp = max(1, target.thread_warp_size or 1)
        self.done = set()  # blocks scheduled, placed under another's loop, or folded into it
        # Each block that a strategy beyond the simplest scheduled -> (the block it was
        # chosen for, the strategy): what to avoid when the lowering names the block.
        self.owners = {}

    # --- Helpers -------------------------------------------------------------------------

    def attempt(self, name, strategy, step, *args):
        """Runs step(sch copy, name, *args), which returns the blocks it scheduled; keeps the
        copy when it succeeds. Returns whether it did."""
        if (name, strategy) in self.avoid:
            return False
        trial = self.sch.copy()
        try:
            scheduled = step(trial, name, *args)
        except (ScheduleError, KilnError):
            return False
        self.sch = trial
        self.done.update(scheduled)
        for block in scheduled:
            self.owners[block] = (name, strategy)
        return True

    def apply(self, name, step, *args):
        """Runs step as attempt does, for a block's last resort: its failure is an error."""
        trial = self.sch.copy()
        try:
            scheduled = step(trial, name, *args)
        except (ScheduleError, KilnError) as error:
            raise KilnValueError(f"{API}: no GPU schedule for block '{name}' on target "
                                 f"{self.target}: {error}") from None
        self.sch = trial
        self.done.update(scheduled)

    def flat_threads(self, iterations):
        """The threads per block for iterations independent iterations (None: symbolic)."""
        if iterations is None or iterations >= self.threads:
            return self.threads
        return min(self.threads, -(-iterations // self.warp) * self.warp)

    def bind_flat(self, sch, loops):
        """Fuses loops, splits them by the thread count and binds blockIdx.x and threadIdx.x;
        returns the thread loop."""
        iterations = product_of([const_int(sch.get(loop).extent) for loop in loops])
        fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
        block, thread = sch.split(fused, factors=[None, self.flat_threads(iterations)])
        sch.bind(block, "blockIdx.x")
        sch.bind(thread, "threadIdx.x")
        return thread

    def row_threads(self, length):
        """The threads that share one row of length elements (None: symbolic)."""
        if length is None:
            return self.threads
        return min(self.threads, _power_of_two_at_least(length))

    def bind_rows(self, sch, loops, rows, threads):
        """Fuses the row loops (rows of them, None if symbolic) and binds them to blockIdx.x,
        several rows per block along threadIdx.y when threads leaves room. Returns the loop
        of one row and its depth in the nest (0 or 1)."""
        row = sch.fuse(*loops) if len(loops) > 1 else loops[0]
        per_block = self.threads // threads
        if rows is not None:
            per_block = min(per_block, _power_of_two_at_most(rows))
        if per_block <= 1:
            sch.bind(row, "blockIdx.x")
            return row, 0
        block, thread = sch.split(row, factors=[None, per_block])
        sch.bind(block, "blockIdx.x")
        sch.bind(thread, "threadIdx.y")
        return thread, 1

    @staticmethod
    def bind_columns(sch, loops, threads):
        """Fuses loops (a row's columns or a reduction's loops) and splits them over threads
        threads along threadIdx.x, each thread taking every threads-th element."""
        fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
        _, thread = sch.split(fused, factors=[None, threads])
        sch.bind(thread, "threadIdx.x")

    @staticmethod
    def inline_guards(sch, name):
        """Inlines the padding (guarded element-wise producers without transcendental
        functions) that block name reads."""
        for producer in sch.get_producers(name):
            pname = sch.get(producer).name_hint
            info = block_info(sch, pname)
            if info.has_init or info.writes_output or info.expensive or not info.guarded_read:
                continue
            trial = sch.copy()
            try:
                trial.compute_inline(pname)
            except (ScheduleError, KilnError):
                continue
            sch.compute_inline(pname)

    # --- The steps -------------------------------------------------------------------------

    def run(self):
        self.sch = inline_elementwise(
            self.sch, keeps_guard=lambda sch, consumer: _is_tiled_product(sch, consumer.name),
            recompute_per_consumer=True)
        names = block_names(self.sch)
        for name in names:
            if name in block_names(self.sch) and _is_tiled_product(self.sch, name):
                self.schedule_product(name)
        for name in reversed(names):
            if name in self.done or name not in block_names(self.sch):
                continue
            if block_info(self.sch, name).has_init:
                self.schedule_reduction(name)
            else:
                self.schedule_spatial(name)

    def schedule_product(self, name):
        """Step 2, with shorter reduction steps while the shared tiles do not fit; then
        without shared memory; then (left to step 4) as any reduction."""
        info = block_info(self.sch, name)
        _, _, _, split_at = _product_axes(info)
        for step in _reduction_steps(info.extents[split_at]):
            if self.attempt(name, "shared", self.tile_product, step):
                return
        self.attempt(name, "registers", self.tile_product, None)

    def tile_product(self, sch, name, step):
        """The block and register tiles of a product; its operands staged in shared memory
        step elements of the reduction at a time (no staging when step is None)."""
        info = block_info(sch, name)
        if len(sch.get_loops(name)) != len(info.iter_vars):
            raise KilnValueError("loops do not match the iterators")
        i, j, others, split_at = _product_axes(info)
        ty_count, i_tile = _axis_tile(info.extents[i], min(MAX_TILE_THREADS, self.threads))
        tx_count, j_tile = _axis_tile(info.extents[j], max(1, self.threads // ty_count))

        # The write-back of the register tile, with the element-wise consumers, carries the
        # loop nest; the product goes under each thread, the reduction outside the tile.
        write_back = sch.get(sch.cache_write(name, 0, "local")).name_hint
        folded = fold_epilogues(sch, write_back)
        if len(sch.get_loops(write_back)) != len(info.spatial):
            raise KilnValueError("the write-back does not loop over the output")
        tx = self.bind_output_tiles(sch, write_back, (i, ty_count, i_tile), (j, tx_count, j_tile),
                                    others)
        sch.compute_at(name, tx, preserve_unit_loops=True)
        inner = sch.get_loops(name)[-len(info.iter_vars):]
        tile_loops = [inner[p] for p in info.spatial]
        if step is None:
            self.inline_guards(sch, name)
            reduce_loops = [inner[p] for p in info.reduce]
        else:
            ko, ki = sch.split(inner[split_at], factors=[None, step])
            reduce_loops = [ko, ki] + [inner[p] for p in info.reduce if p != split_at]
        sch.reorder(*reduce_loops, *tile_loops)
        copies = []
        if step is not None:
            copies = self.stage_operands(sch, name, reduce_loops[0], ty_count, tx_count,
                                         _down_the_rows(info, j))
        init = sch.get(sch.decompose_reduction(name, reduce_loops[0])).name_hint
        # Unrolled, the register tile is indexed by constants and stays in registers. Each
        # nest starts with the block loop, threadIdx.y and threadIdx.x.
        steps = [reduce_loops[1]] if step is not None else []
        for loop in steps + tile_loops + sch.get_loops(init)[3:] + sch.get_loops(write_back)[3:]:
            sch.unroll(loop)
        return [name, write_back, init] + folded + copies

    @staticmethod
    def bind_output_tiles(sch, write_back, rows, columns, others):
        """Splits the rows and the columns of the write-back's loops, each (position, threads,
        outputs per thread), into block tiles, threads and each thread's tile. The block tiles
        and the other loops go to blockIdx.x, the threads to threadIdx.y (rows) and
        threadIdx.x (columns). Returns the threadIdx.x loop."""
        loops = sch.get_loops(write_back)
        (i, ty_count, i_tile), (j, tx_count, j_tile) = rows, columns
        bi, ty, ti = sch.split(loops[i], factors=[None, ty_count, i_tile])
        bj, tx, tj = sch.split(loops[j], factors=[None, tx_count, j_tile])
        outer = [loops[p] for p in others]
        sch.reorder(*outer, bi, bj, ty, tx, ti, tj)
        sch.bind(sch.fuse(*outer, bi, bj), "blockIdx.x")
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
        return tx

    def stage_operands(self, sch, name, step_loop, ty_count, tx_count, down_the_rows):
        """Copies each operand's tile of one reduction step into shared memory under
        step_loop, all the block's threads copying together; returns the copy blocks.
        down_the_rows names the operands whose tile rows neighbouring threads (threadIdx.x)
        read."""
        copies, total = [], 0
        reads = len(sch.get(sch.get_block(name)).reads)
        for index in range(reads):
            copy = sch.cache_read(name, index, "shared", consumer_blocks=[name])
            sch.compute_at(copy, step_loop)
            copy_name = sch.get(copy).name_hint
            self.inline_guards(sch, copy_name)
            loops = sch.get_loops(copy)[4:]  # below the block loop, the threads, the step
            extents = [const_int(sch.get(loop).extent) for loop in loops]
            if not loops or None in extents:
                raise KilnValueError(f"the shared tile of {copy_name} is not of constant size")
            elements = product_of(extents)
            if len(sch.get(copy).writes[0].buffer.shape) > 1:
                # A padded row stride puts the rows that neighbouring threads read in
                # different banks of shared memory. A stride of 4 modulo 8 keeps each row
                # 16-byte aligned for vector reads; the rows that the threads of a warp along x
                # read (B[j, k] of A @ B.T) need an odd one: 4 modulo 8 would put every other
                # row in one bank (8-way conflicts, 1.36x slower on a batch matmul).
                operand = sch.get(copy).reads[0].buffer.name
                if extents[-1] % 4 == 0 and operand not in down_the_rows:
                    sch.storage_align(copy, 0, axis=-2, factor=8, offset=4)
                    elements += 4 * (elements // extents[-1])
                else:
                    sch.storage_align(copy, 0, axis=-2, factor=2, offset=1)
                    elements += elements // extents[-1]
            total += elements * dtype_bytes(sch.get(copy).writes[0].buffer.dtype)
            fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
            _, cy, cx = sch.split(fused, factors=[None, ty_count, tx_count])
            sch.bind(cy, "threadIdx.y")
            sch.bind(cx, "threadIdx.x")
            copies.append(copy_name)
        limit = self.target.max_shared_memory_per_block
        if total > limit:
            raise KilnValueError(f"shared tiles of {total} bytes exceed the limit {limit}")
        return copies

    def schedule_reduction(self, name):
        """Step 4: a reduction to one value in two stages, else in one thread block; across
        threads when the reduction reads rows, else one output per thread in a register, else
        one output per thread."""
        if self.reduces_to_one_value(name):
            if self.attempt(name, "two_stages", self.reduce_to_one_value, True):
                return
            if self.attempt(name, "one_block", self.reduce_to_one_value, False):
                return
        if self.reduces_rows(name) and self.attempt(name, "cross_thread", self.reduce_rows):
            return
        if self.attempt(name, "local", self.reduce_per_thread, True):
            return
        self.apply(name, self.reduce_per_thread, False)

    def reduces_rows(self, name):
        """Whether a cross-thread reduction suits the block: its update combines across
        threads, and it reduces the innermost axis of what it reads over enough elements.
        (Not a single value: reduce_to_one_value schedules those.)"""
        if not is_combinable_reduction(self.sch, self.sch.get_block(name)):
            return False
        info = block_info(self.sch, name)
        if not info.spatial:
            return False
        length = product_of([info.extents[p] for p in info.reduce])
        if length is not None and length < MIN_CROSS_THREAD_EXTENT:
            return False
        reduce = set(info.reduce)
        return all(load.last_uses and load.last_uses <= reduce
                   for load in info.loads if load.uses & reduce)

    def reduces_to_one_value(self, name):
        """Whether the block reduces every axis (its spatial loops, if any, have extent 1)
        with an update that threads can combine."""
        if not is_combinable_reduction(self.sch, self.sch.get_block(name)):
            return False
        info = block_info(self.sch, name)
        return bool(info.reduce) and all(info.extents[p] == 1 for p in info.spatial)

    def reduce_to_one_value(self, sch, name, two_stages):
        """A reduction to one value across the threads of thread blocks that each reduce a
        slice into a partial result (rfactor), then across the threads of one block that
        reduces the partial results; across the threads of one block striding over the input
        when two_stages is false or the input is short."""
        self.inline_guards(sch, name)
        info = block_info(sch, name)
        loops = _checked_loops(sch, name, info)
        count = len(info.spatial)
        length = product_of([info.extents[p] for p in info.reduce])
        threads = self.row_threads(length)
        blocks = self.partial_blocks(length, threads) if two_stages else 1
        reduce = loops[count:]
        fused = sch.fuse(*reduce) if len(reduce) > 1 else reduce[0]
        if blocks == 1:
            # Element s * threads + t to thread t: neighbouring threads read neighbours.
            steps, thread = sch.split(fused, factors=[None, threads])
            sch.reorder(thread, steps)
            self.bind_one_block(sch, loops[:count], thread)
            return [name]
        # Element (s * blocks + b) * threads + t to thread t of block b.
        steps, block, thread = sch.split(fused, factors=[None, blocks, threads])
        sch.reorder(block, thread, steps)
        partial = sch.get(sch.rfactor(block, factor_axis=count)).name_hint
        outer = loops[:count] + [block]
        sch.bind(sch.fuse(*outer) if len(outer) > 1 else block, "blockIdx.x")
        sch.bind(thread, "threadIdx.x")
        # The write-back: the (unit) spatial loops, then one loop over the partial results.
        final = sch.get_loops(name)
        self.bind_one_block(sch, final[:-1], final[-1])
        return [name, partial]

    def partial_blocks(self, length, threads):
        """The thread blocks that reduce slices of a reduction of length elements (None:
        symbolic) with threads threads each: MIN_PARTIAL_STEPS elements per thread, at most
        as many blocks as one block has threads."""
        if length is None:
            return self.threads
        return max(1, min(self.threads, -(-length // (threads * MIN_PARTIAL_STEPS))))

    @staticmethod
    def bind_one_block(sch, units, thread):
        """Binds the loops units (of extent 1; none: a new unit loop) to blockIdx.x and the
        loop thread to threadIdx.x: one thread block."""
        if units:
            block = sch.fuse(*units) if len(units) > 1 else units[0]
        else:
            block = sch.add_unit_loop(thread)
        sch.bind(block, "blockIdx.x")
        sch.bind(thread, "threadIdx.x")

    def reduce_rows(self, sch, name):
        """A cross-thread reduction: each row (output element) to a thread block, or a
        threadIdx.y of one, its reduction split over threadIdx.x."""
        self.inline_guards(sch, name)
        info = block_info(sch, name)
        loops = _checked_loops(sch, name, info)
        count = len(info.spatial)
        threads = self.row_threads(product_of([info.extents[p] for p in info.reduce]))
        self.bind_rows(sch, loops[:count], product_of(info.extents[:count]), threads)
        self.bind_columns(sch, loops[count:], threads)
        return [name]

    def reduce_per_thread(self, sch, name, in_register):
        """One output per thread, the reduction serial; accumulated in a register (and the
        element-wise consumers folded into its write-back) when in_register."""
        self.inline_guards(sch, name)
        info = block_info(sch, name)
        loops = _checked_loops(sch, name, info)
        count = len(info.spatial)
        if count == 0:
            raise KilnValueError(
                "it reduces to a single value with an update that GPU threads cannot combine "
                "(they combine a sum, product, max or min, or several values that selects "
                "update together, as argmax's), and one thread would reduce the whole input "
                "alone; keep an axis (reduce rows, then the row results) to give it threads")
        if not in_register:
            self.bind_flat(sch, loops[:count])
            return [name]
        write_back = sch.get(sch.cache_write(name, 0, "local")).name_hint
        folded = fold_epilogues(sch, write_back)
        thread = self.bind_flat(sch, sch.get_loops(write_back))
        sch.compute_at(name, thread)
        return [name, write_back] + folded

    def schedule_spatial(self, name):
        """Step 3 for a block that reads row statistics, else step 5."""
        info = block_info(self.sch, name)
        depth, statistics = row_statistics(self.sch, name, info, self.done)
        if any(is_simple_reduction(self.sch, self.sch.get_block(s)) for s in statistics):
            if self.attempt(name, "rows", self.schedule_rows, depth, statistics):
                return
        self.apply(name, self.schedule_injective)

    def schedule_rows(self, sch, name, depth, statistics):
        """One row (the first depth loops) per thread block or threadIdx.y, its columns over
        threadIdx.x, and the row statistics computed under it across the same threads."""
        info = block_info(sch, name)
        loops = _checked_loops(sch, name, info)
        if depth > len(loops):
            raise KilnValueError("the statistics are not per row")
        columns = loops[depth:]
        if columns:
            length = product_of(info.extents[depth:])
        else:  # one value per row (a mean): the threads share the statistic's reduction
            first = block_info(sch, statistics[0])
            length = product_of([first.extents[p] for p in first.reduce])
        threads = self.row_threads(length)
        row = self.bind_rows(sch, loops[:depth], product_of(info.extents[:depth]), threads)
        if columns:
            self.bind_columns(sch, columns, threads)
        placed = []
        for statistic in statistics:
            self.place(sch, statistic, row, threads, placed)
        if not placed:
            raise KilnValueError("no statistic could be computed per row")
        return [name] + placed

    def place(self, sch, statistic, row, threads, placed):
        """Computes the statistic under the row loop (row: the loop and its depth) in shared
        memory, its reduction across threads threads, and then the statistics it reads in
        turn; appends what it placed to placed. A statistic that does not fit stays."""
        if statistic in placed or statistic in self.done or \
                not is_simple_reduction(sch, sch.get_block(statistic)):
            return
        probe = sch.copy()
        try:
            self.place_one(probe, statistic, row, threads)
        except (ScheduleError, KilnError):
            return
        self.place_one(sch, statistic, row, threads)
        placed.append(statistic)
        for producer in sch.get_producers(statistic):
            pname = sch.get(producer).name_hint
            if sch.get(producer).init is not None:
                self.place(sch, pname, row, threads, placed)

    def place_one(self, sch, statistic, row, threads):
        """place for one statistic; raises when it cannot be computed one row at a time."""
        loop, depth = row
        sch.compute_at(statistic, loop)
        under = sch.get_loops(statistic)[depth + 1:]
        # One row leaves no spatial loop under the row loop (unit loops are dropped).
        if not under or len(under) != len(block_info(sch, statistic).reduce):
            raise KilnValueError("the statistic is not computed one row at a time")
        sch.set_scope(statistic, 0, "shared")
        self.bind_columns(sch, under, threads)

    def schedule_injective(self, sch, name):
        """Step 5: all the loops fused and bound to blockIdx.x and threadIdx.x, each thread
        computing VECTOR_LANES outputs with vector accesses where _vector_lanes allows."""
        loops = sch.get_loops(name)
        if not loops:  # a single value: one thread of one block
            self.bind_one_block(sch, [], sch.add_unit_loop(name))
            return [name]
        lanes = _vector_lanes(sch, name)
        iterations = product_of([const_int(sch.get(loop).extent) for loop in loops])
        threads = self.flat_threads(None if iterations is None else iterations // lanes)
        if lanes > 1 and iterations % (threads * lanes) == 0:
            fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
            block, thread, lane = sch.split(fused, factors=[None, threads, lanes])
            sch.bind(block, "blockIdx.x")
            sch.bind(thread, "threadIdx.x")
            sch.vectorize(lane)
            return [name]
        self.bind_flat(sch, loops)
        return [name]


# --- Tile sizes ----------------------------------------------------------------------------

def _is_tiled_product(sch, name):
    """Whether step 2 applies to the block: a sum of products with reuse in both directions
    and at least MIN_TILE_ROWS rows."""
    if not is_sum_of_products(sch, sch.get_block(name)):
        return False
    info = block_info(sch, name)
    try:
        i = _product_axes(info)[0]
    except KilnValueError:
        return False
    return info.extents[i] is None or info.extents[i] >= MIN_TILE_ROWS


def _product_axes(info):
    """(i, j, others, r): the iterator positions of a product's tile rows and columns, its
    other spatial iterators, and its longest reduction; KilnValueError when it has no reuse to
    tile for."""
    spatial, reduce = info.spatial, info.reduce
    if spatial != list(range(len(spatial))) or len(spatial) < 2 or not reduce:
        raise KilnValueError("not a product of spatial loops, then reduction loops")
    j = spatial[-1]
    column_loads = [load for load in info.loads if j in load.uses]
    if not column_loads or len(column_loads) == len(info.loads):
        raise KilnValueError("no reuse along the columns")
    rows = [p for p in spatial[:-1] if any(p not in load.uses for load in column_loads)]
    if not rows:
        raise KilnValueError("no reuse along the rows")
    i = rows[-1]
    others = [p for p in spatial if p not in (i, j)]
    split_at = max(reduce, key=lambda p: (info.extents[p] is None, info.extents[p] or 0))
    return i, j, others, split_at


def _axis_tile(extent, max_threads):
    """(threads, outputs per thread) along one axis of a product's tile: the largest tile of
    at most max_threads x MAX_THREAD_TILE that divides extent, more threads first. When no
    divisor comes close (a prime extent) or extent is symbolic, one output per thread and the
    last tile guarded: a guard on the thread index, not on a loop inside the thread, which
    lowering would split into copies of the loop."""
    guarded = (max_threads if extent is None else min(max_threads, extent), 1)
    if extent is None:
        return guarded
    best = (1, 1)
    for per_thread in range(MAX_THREAD_TILE, 0, -1):
        for threads in range(min(max_threads, extent // per_thread), 0, -1):
            if extent % (threads * per_thread) == 0:
                if (threads * per_thread, threads) > (best[0] * best[1], best[0]):
                    best = (threads, per_thread)
                break
    tile = best[0] * best[1]
    if tile >= guarded[0] or 2 * tile >= min(extent, max_threads * MAX_THREAD_TILE):
        return best
    return guarded


def _down_the_rows(info, j):
    """The operands of a product that the tile's column iterator j indexes in another index
    than their last: neighbouring threads along j read down their rows."""
    return {load.buffer.name for load in info.loads if j in load.uses and j not in load.last_uses}


def _reduction_steps(extent):
    """The reduction steps of a product to try, longest first, while the shared tiles do not
    fit: divisors of the extent up to MAX_REDUCTION_STEP (the whole reduction when it is that
    short); without a divisor of 4 or more, the whole reduction when it is short, then guarded
    steps. None for a symbolic extent: its operands are not staged (a guarded step would be
    split by lowering into copies of the loop nest for every shape)."""
    if extent is None:
        return []
    divisors = [s for s in range(min(extent, MAX_REDUCTION_STEP), 0, -1) if extent % s == 0]
    if extent <= MAX_REDUCTION_STEP or divisors[0] >= 4:
        return divisors
    steps = [extent] if extent <= 4 * MAX_REDUCTION_STEP else []
    step = MAX_REDUCTION_STEP
    while step >= 1:
        steps.append(step)
        step //= 2
    return steps


def _vector_lanes(sch, name):
    """VECTOR_LANES when step 5 may give block name's threads vector accesses, else 1: every
    load and the store of the block (an element-wise one, unguarded) holds 32-bit values and
    either does not use the block's last iterator (a broadcast value) or uses it only in its
    last index, as that iterator plus a multiple of the lanes, in a compact buffer whose last
    extent the lanes divide; and the lanes divide the last iterator's extent. Each vector is then
    contiguous and aligned to its size in every buffer, so that the code generators make one
    vector access of it (a transpose's strided reads stay scalar)."""
    block = sch.get(sch.get_block(name))
    info = block_info(sch, name)
    if not isinstance(block.body, tir.BufferStore) or info.has_init or not info.iter_vars or \
            info.guarded_read:
        return 1
    last = info.iter_vars[-1].var
    extent = info.extents[-1]
    if extent is None or extent % VECTOR_LANES:
        return 1
    accesses = [(block.body.buffer, list(block.body.indices))]
    accesses += [(load.buffer, list(load.indices)) for load in info.loads]
    for buffer, indices in accesses:
        if dtype_bytes(buffer.dtype) != 4 or not indices:
            return 1
        if not any(uses_var(index, last) for index in indices):
            continue
        row = const_int(buffer.shape[-1])
        if any(uses_var(index, last) for index in indices[:-1]) or row is None or \
                row % VECTOR_LANES or buffer.strides or not _unit_stride(indices[-1], last):
            return 1  # buffer.strides: a strided view, whose rows need not be contiguous
    return VECTOR_LANES


def _unit_stride(index, var):
    """Whether index is var or var plus a constant multiple of VECTOR_LANES."""
    if isinstance(index, tir.Var):
        return index.same_as(var)
    if isinstance(index, tir.Add):
        for a, b in ((index.a, index.b), (index.b, index.a)):
            offset = const_int(b)
            if isinstance(a, tir.Var) and a.same_as(var) and offset is not None:
                return offset % VECTOR_LANES == 0
    return False


def _checked_loops(sch, name, info):
    loops = sch.get_loops(name)
    spatial = info.spatial
    if len(loops) != len(info.iter_vars) or spatial != list(range(len(spatial))):
        raise KilnValueError("its loops are not its spatial iterators, then its reduction's")
    return loops


def _power_of_two_at_least(n):
    power = 1
    while power < n:
        power *= 2
    return power


def _power_of_two_at_most(n):
    power = 1
    while power * 2 <= n:
        power *= 2
    return power
