"""Steps of the default schedules that do not depend on the target, shared by the CPU
(cpu_schedule.py) and GPU (gpu_schedule.py) schedulers: looking blocks up, inlining
element-wise producers, folding element-wise consumers into a write-back, and finding the row
statistics a block reads."""
from .. import te, tir
from ..error import KilnError, KilnTypeError, ScheduleError
from ._block_info import analyze_block


def as_prim_func(func, api):
    """func as a PrimFunc: a PrimFunc itself, or the tensor list te.create_prim_func takes."""
    if isinstance(func, tir.PrimFunc):
        return func
    if isinstance(func, (list, tuple)) and func and all(
            isinstance(t, (te.Tensor, tir.Var)) for t in func):
        return te.create_prim_func(list(func))
    raise KilnTypeError(f"{api}: func must be a tir.PrimFunc or the list of te tensors (and "
                        f"te.var scalars) that te.create_prim_func takes, found an object of "
                        f"type {type(func).__name__}")


def block_names(sch):
    """The names of the blocks of the root scope, in program order."""
    return [sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_block("root"))]


def block_info(sch, name):
    """The BlockInfo of the block called name."""
    return analyze_block(sch, sch.get_block(name), sch.mod["main"])


def can_inline(sch, name, keeps_guard, recompute_per_consumer=False):
    """Whether the block is an element-wise producer worth inlining into its consumers.

    Not inlined: reductions, blocks that write an argument of the function, a transcendental
    function whose consumers would compute it again (several consumers, a reduction, or more
    iterations than the producer; with recompute_per_consumer, only the last: a softmax's exp,
    read once by its sum and once by its division, is computed by each), and a padding guard (a
    guarded load) into a consumer for which keeps_guard(sch, consumer's BlockInfo) is true."""
    info = block_info(sch, name)
    if info.has_init or info.reduce or info.writes_output:
        return False
    consumers = [block_info(sch, sch.get(c).name_hint)
                 for c in sch.get_consumers(sch.get_block(name))]
    if not consumers:
        return False
    if info.guarded_read and any(keeps_guard(sch, c) for c in consumers):
        return False
    if info.expensive:
        if not recompute_per_consumer and (len(consumers) > 1 or consumers[0].reduce):
            return False
        if info.iterations is None or any(c.iterations != info.iterations for c in consumers):
            return False
    return True


def inline_elementwise(sch, keeps_guard, recompute_per_consumer=False):
    """Inlines the producers that can_inline accepts into their consumers until nothing
    changes; returns the schedule (sch itself or a copy). A producer whose inlining fails
    stays."""
    changed = True
    while changed:
        changed = False
        for name in block_names(sch):
            if not can_inline(sch, name, keeps_guard, recompute_per_consumer):
                continue
            trial = sch.copy()
            try:
                trial.compute_inline(name)
            except (ScheduleError, KilnError):
                continue
            sch, changed = trial, True
    return sch


def fold_epilogues(sch, writer):
    """Makes the element-wise consumers of block writer (a tile's write-back) part of it, one
    after another while there is exactly one (reverse_compute_inline); returns their names."""
    folded = []
    while True:
        consumers = sch.get_consumers(writer)
        if len(consumers) != 1:
            return folded
        consumer = sch.get(consumers[0]).name_hint
        trial = sch.copy()
        try:
            trial.reverse_compute_inline(consumer)
        except (ScheduleError, KilnError):
            return folded
        sch.reverse_compute_inline(consumer)
        folded.append(consumer)


def row_statistics(sch, name, info, skip):
    """(r, names): the reductions not in skip that block name (whose BlockInfo is info) reads
    at indices of its first r iterators only, latest first."""
    found, depth = [], 0
    for producer in sch.get_producers(name):
        pname = sch.get(producer).name_hint
        pinfo = block_info(sch, pname)
        if not pinfo.has_init or pname in skip:
            continue
        uses = set()
        for load in info.loads:
            if any(load.buffer.same_as(w) for w in pinfo.write_buffers):
                uses |= load.uses
        if not uses:
            continue
        found.append(pname)
        depth = max(depth, max(uses) + 1)
    return depth, found[::-1]


def product_of(extents):
    """The product of extents, None when one of them is None (symbolic)."""
    total = 1
    for extent in extents:
        if extent is None:
            return None
        total *= extent
    return total
