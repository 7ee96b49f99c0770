"""Step 2 of the default CPU schedule for two products joined by row-wise stages: attention's
scores (query x key), the softmax of each row (max, exp, sum) and the weighted sum of the values
(weights x value) are computed row block by row block, so that the score and weight rows of
one block stay in the L2 cache instead of being written out whole (B x H x L x S values).

The chain is found by its shape, whatever operators built it: a sum of products P whose inputs
that are not arguments are produced, through blocks that each compute whole rows, by exactly
one other sum of products S, and an element-wise consumer H of P with P's shape (attention's
normalization). H's leading loops down to the rows, the rows split into blocks of R, run in
parallel; under them come S, the row reductions, the row-wise stages and P, each for the R
rows of the block (compute_at). S and P get register tiles of MR rows by NR vectorized columns
where they are (their column strips outside their row tiles, so that a panel of the column
operand is reused by the R / MR row tiles from the L1 cache), and the arguments they read as
columns (the key, read across its rows, and the value) are packed once, before the loop, into
panels of NR contiguous columns (cache_read and transform_layout). The row reductions
accumulate vectors of partial results (rfactor), as step 5 does for a lone reduction.

R is a multiple of MR that divides the rows, as large as lets the score and weight rows of a
block fit in the L2 cache while leaving work for every thread; MR divides the rows too (the
block's tiles then need no guard).

A causal mask costs the schedule nothing: attention's products then reduce over the visible
keys only (a where condition) and its weights select where the mask holds (likely), so that
lowering's loop_partition bounds the key loops of each row block by the last key its rows see,
from the row block's variable. The order of the loops above makes that work: S's column strips
are outside its row tiles (the strips past the block's diagonal are left out, the ones before
it have no check), P's row tiles are outside its reduction over the keys (each stops at the
tile's diagonal), and the register tile across the diagonal blends its vector updates with
the old values (vectorize_loops)."""
from .. import tir
from ..error import KilnValueError
from ..target import gemm_blocking
from ._block_info import is_sum_of_products, update_store, uses_var, walk_expr
from ._schedule_steps import block_info, block_names
from ._util import dtype_bytes

# Row tiles per row block at most: the reuse of a column panel from L1 grows with it, and the
# rows of the block grow out of L2 with it.
MAX_TILES_PER_BLOCK = 8


def _producers(sch, name):
    return [sch.get(b).name_hint for b in sch.get_producers(name)]


def _consumers(sch, name):
    return [sch.get(b).name_hint for b in sch.get_consumers(name)]


def find_chain(sch):
    """(S, P, H, chain) of the last row-fusable chain of sch (chain: the names of the blocks
    H depends on but P, S included, in program order), or None."""
    names = block_names(sch)
    products = [n for n in names if is_sum_of_products(sch, sch.get_block(n))]
    for p in reversed(products):
        consumers = _consumers(sch, p)
        if len(consumers) != 1:
            continue
        host = consumers[0]
        hinfo, pinfo = block_info(sch, host), block_info(sch, p)
        if hinfo.has_init or hinfo.reduce or \
                hinfo.extents != [pinfo.extents[k] for k in pinfo.spatial]:
            continue
        # Every block the host depends on, but P.
        chain, todo = set(), _producers(sch, host)
        while todo:
            name = todo.pop()
            if name not in chain:
                chain.add(name)
                todo.extend(_producers(sch, name))
        chain.discard(p)
        inner = [n for n in products if n in chain]
        if len(inner) != 1:
            continue
        if any(block_info(sch, n).writes_output for n in chain):
            continue
        return inner[0], p, host, [n for n in names if n in chain]
    return None


def _iter_loops(sch, name):
    """For each loop of block name, outermost first, the positions of the block's iterators
    whose binding uses the loop's variable."""
    loops = sch.get_loops(name)
    stmt = sch.get(loops[-1]).body
    realize = None
    while realize is None:
        if isinstance(stmt, tir.BlockRealize) and stmt.block.name_hint == name:
            realize = stmt
        elif isinstance(stmt, tir.For):
            stmt = stmt.body
        elif isinstance(stmt, tir.IfThenElse):
            stmt = stmt.then_case
        elif isinstance(stmt, tir.SeqStmt) and len(stmt.seq) == 1:
            stmt = stmt.seq[0]
        else:
            raise KilnValueError(f"the body of the loops of {name} is not the block")
    found = []
    for loop in loops:
        var = sch.get(loop).loop_var
        found.append({k for k, value in enumerate(realize.iter_values) if uses_var(value, var)})
    return loops, found


def _column_loads(sch, name, column):
    """(read index, buffer, dimension, first, rank) for each load of block name (its update's
    own load aside) with a dimension indexed by iterator position column alone; first is the
    first dimension whose index uses the column or a reduction iterator."""
    block = sch.get(sch.get_block(name))
    var = block.iter_vars[column].var
    inner = [iv.var for k, iv in enumerate(block.iter_vars)
             if k == column or iv.iter_type == "reduce"]
    found = []

    def visit(node):
        if isinstance(node, tir.BufferLoad):
            indices = list(node.indices)
            for dim, index in enumerate(indices):
                if isinstance(index, tir.Var) and index.same_as(var):
                    first = next(d for d, i in enumerate(indices)
                                 if any(uses_var(i, w) for w in inner))
                    found.append((node.buffer, dim, first, len(indices)))

    walk_expr(update_store(block).value, visit)
    result = []
    for buffer, dim, first, rank in found:
        if any(region.buffer.same_as(buffer) for region in block.writes):
            continue  # the update's own load
        index = next(k for k, region in enumerate(block.reads) if region.buffer.same_as(buffer))
        result.append((index, buffer, dim, first, rank))
    return result


def pack_columns(sch, name, column, nr, params):
    """Packs the arguments block name reads across iterator position column into panels of
    nr contiguous columns: the panel index comes before the dimensions the column and the
    reduction index, the position in the panel last (key[b, h, j, k] read with column j is
    [b, h, j // nr, k, j % nr]; value[b, h, k, d] read with column d is
    [b, h, d // nr, k, d % nr]). Returns the names of the copy blocks. cpu_schedule packs the
    column operand of a plain product with it too."""
    copies = set()
    for index, buffer, dim, first, rank in _column_loads(sch, name, column):
        if not any(buffer.same_as(p) for p in params):
            continue
        copy = sch.cache_read(name, index, "global")
        names = [f"i{k}" for k in range(rank)]
        rest = [n for k, n in enumerate(names[first:], first) if k != dim]
        finals = names[:first] + [f"{names[dim]} // {nr}"] + rest + [f"{names[dim]} % {nr}"]
        sch.transform_layout(copy, ("write", 0), f"lambda {', '.join(names)}: "
                                                 f"[{', '.join(finals)}]")
        copies.add(sch.get(copy).name_hint)
    return copies


class RowFusion:
    """The step on a schedule; scheduler is the _Scheduler whose helpers it uses."""

    def __init__(self, scheduler, sch, min_blocks):
        self.scheduler = scheduler
        self.sch = sch
        self.min_blocks = min_blocks  # row blocks wanted for the parallel loop, at least

    def run(self):
        """Schedules the chain; returns (tiled products, other blocks placed) or raises."""
        sch, scheduler = self.sch, self.scheduler
        found = find_chain(sch)
        if found is None:
            raise KilnValueError("no row-fusable chain of products")
        s_name, p_name, host, chain = found
        s_info, p_info = block_info(sch, s_name), block_info(sch, p_name)
        s_row, s_col, _ = scheduler.product_axes(s_info)
        p_row, p_col, _ = scheduler.product_axes(p_info)
        if s_row is None or p_row is None or p_row != p_col - 1:
            raise KilnValueError("the products have no rows to block")
        rows = p_info.extents[p_row]
        s_cols, p_cols = s_info.extents[s_col], p_info.extents[p_col]
        if rows is None or s_cols is None or p_cols is None or \
                s_info.extents[s_row] != rows:
            raise KilnValueError("symbolic rows or columns")
        mr, p_nr, _ = gemm_blocking(scheduler.target, p_info.dtype, n=p_cols)
        _, s_nr, _ = gemm_blocking(scheduler.target, s_info.dtype, n=s_cols)
        mr = max(m for m in range(1, mr + 1) if rows % m == 0)
        leading = p_info.extents[:p_row]
        if any(e is None for e in leading):
            raise KilnValueError("symbolic leading dimensions")
        outer = 1
        for e in leading:
            outer *= e
        block_rows = self.block_rows(rows, mr, s_cols, outer, s_info.dtype)
        params = list(sch.mod["main"].buffer_map.values())
        copies = pack_columns(sch, s_name, s_col, s_nr, params) | \
            pack_columns(sch, p_name, p_col, p_nr, params)
        partials = self.rfactor_reductions(chain, s_name)
        # The row blocks: the host's loops down to its rows, in parallel.
        loops = sch.get_loops(host)
        if len(loops) != len(p_info.spatial):
            raise KilnValueError("the host's loops are not its iterators")
        row_outer, _ = sch.split(loops[p_row], factors=[None, block_rows])
        row_loop = sch.fuse(*(loops[:p_row] + [row_outer]))
        order = [p_name] + [n for n in reversed(block_names(sch))
                            if n in chain or n in partials]
        for name in order:
            sch.compute_at(name, row_loop)
        inits = []
        for name in (s_name, p_name):
            row, column = (s_row, s_col) if name == s_name else (p_row, p_col)
            nr = s_nr if name == s_name else p_nr
            inits.append((name, self.tile_in_place(name, row, column, mr, nr)))
        for name in partials:
            inits.append((name, self.order_partials(name)))
        for name, loop in inits:
            init = sch.decompose_reduction(name, loop)
            if name in partials:
                init_name = sch.get(init).name_hint
                scheduler.vectorize_loop(sch, init_name, sch.get_loops(init)[-1])
        for name in chain:
            info = block_info(sch, name)
            if name != s_name and name not in partials and not info.reduce:
                scheduler.vectorize_innermost(sch, name, sch.get_loops(name)[-1],
                                              info.extents[-1], info.dtype)
        hinfo = block_info(sch, host)
        scheduler.vectorize_innermost(sch, host, sch.get_loops(host)[-1], hinfo.extents[-1],
                                      hinfo.dtype)
        if scheduler.threads > 1 and outer * (rows // block_rows) > 1:
            sch.parallel(row_loop)
        # Every block but the packing copies (scheduled as any spatial block) is in place.
        return {s_name, p_name}, set(block_names(sch)) - copies - {s_name, p_name}

    def block_rows(self, rows, mr, columns, outer, dtype):
        """R: a multiple of mr dividing rows, at most MAX_TILES_PER_BLOCK tiles, whose score
        and weight rows (2 R x columns values) fit in the L2 cache, and that leaves at least
        min_blocks row blocks (for the threads)."""
        target = self.scheduler.target
        l2 = target.l2_cache_bytes or (256 << 10)
        element = dtype_bytes(dtype)
        best = mr
        for tiles in range(1, MAX_TILES_PER_BLOCK + 1):
            r = mr * tiles
            if rows % r:
                continue
            if 2 * r * columns * element > l2 and r > mr:
                break
            if outer * (rows // r) < self.min_blocks and r > mr:
                break
            best = r
        return best

    def rfactor_reductions(self, chain, product):
        """Splits each row reduction of the chain (not the product) into vector lanes of
        partial results, those of the widest vector that divides the reduction (rfactor, at the
        root, where it is alone under its loops); returns the names of the partial-result
        blocks."""
        sch, scheduler = self.sch, self.scheduler
        partials = []
        for name in chain:
            if name == product or not block_info(sch, name).has_init:
                continue
            info = block_info(sch, name)
            if len(info.reduce) != 1:
                continue
            r = info.reduce[0]
            extent = info.extents[r]
            lanes = scheduler.lanes_dividing(info.dtype, extent)
            if lanes < 2 or extent < 4 * lanes or name in scheduler.no_vector:
                continue
            # At least two vectors per lane group, or the reduction loop would vanish.
            width = next(w for w in (4 * lanes, 2 * lanes, lanes)
                         if extent % w == 0 and extent >= 2 * w)
            loops = sch.get_loops(name)
            _, inner = sch.split(loops[-1], factors=[None, width])
            partial = sch.rfactor(inner, factor_axis=len(info.write_buffers[0].shape))
            partials.append(sch.get(partial).name_hint)
        return partials

    def order_partials(self, name):
        """Under the row block, the loops of a partial-result block as rows, reduction, lanes
        (compute_at puts the lanes first), the lanes vectorized; returns the reduction loop."""
        sch = self.sch
        info = block_info(sch, name)
        lane = info.spatial[0]  # rfactor's factor_axis is last, its iterator first
        lanes = _loops_of(sch, name, {lane}, 1)
        reduce = _loops_of(sch, name, set(info.reduce), 1)
        rows = _loops_of(sch, name, set(info.spatial) - {lane}, 1)
        if len(lanes) != 1 or len(reduce) != 1 or len(rows) > 1:
            raise KilnValueError(f"unexpected loops of {name}")
        sch.reorder(*(rows + reduce + lanes))
        self.scheduler.vectorize_loop(sch, name, lanes[0])
        return reduce[0]

    def tile_in_place(self, name, row, column, mr, nr):
        """The register tile of product name where it is (under the row block): its output
        cached in "local" (cache_write), whose write-back runs over column strips, then row
        tiles of mr rows, then the tile; the product computed per tile (compute_at), its
        reduction outside the tile's rows (unrolled) and columns (vectorized). row and column
        are the positions of the product's row and column iterators (a loop of one row is
        absent). Returns the reduction loop (where its init goes)."""
        sch, scheduler = self.sch, self.scheduler
        local = sch.cache_write(name, 0, "local")
        local_name = sch.get(local).name_hint
        # Below the row block's loop, the outermost.
        rows = _loops_of(sch, local_name, {row}, 1)
        columns = _loops_of(sch, local_name, {column}, 1)
        if len(columns) != 1 or len(rows) > 1:
            raise KilnValueError(f"unexpected loops of {local_name}")
        jo, jn = sch.split(columns[0], factors=[None, nr])
        anchor = jo
        if rows:
            it, ir = sch.split(rows[0], factors=[None, mr])
            sch.reorder(jo, it, ir, jn)
            anchor = it
        sch.compute_at(name, anchor)
        info = block_info(sch, name)
        depth = len(sch.get_loops(local_name)) - (2 if rows else 1)  # down to the anchor
        tile_rows = _loops_of(sch, name, {row}, depth)
        tile_columns = _loops_of(sch, name, {column}, depth)
        reduce = _loops_of(sch, name, set(info.reduce), depth)
        if len(tile_columns) != 1 or len(reduce) != 1 or len(tile_rows) > 1:
            raise KilnValueError(f"unexpected loops of {name} under its tile")
        sch.reorder(*(reduce + tile_rows + tile_columns))
        if tile_rows:
            sch.unroll(tile_rows[0])
        scheduler.vectorize_loop(sch, name, tile_columns[0])
        scheduler.vectorize_loop(sch, local_name, jn)
        return reduce[0]


def _loops_of(sch, name, positions, depth):
    """The loops of block name below its depth outermost ones whose variables bind only
    iterators at positions."""
    loops, uses = _iter_loops(sch, name)
    return [loop for loop, u in list(zip(loops, uses))[depth:] if u and u <= positions]
