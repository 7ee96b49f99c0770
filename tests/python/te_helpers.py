"""Helpers shared by the te tests: walk a PrimFunc made by te.create_prim_func."""
from kiln import tir


def root_block(func):
    realize = func.body
    assert isinstance(realize, tir.BlockRealize)
    assert realize.block.name_hint == "root"
    return realize.block


def loop_nests(func):
    """(loops, block) for each nest under the root block, in order."""
    body = root_block(func).body
    stmts = list(body.seq) if isinstance(body, tir.SeqStmt) else [body]
    nests = []
    for stmt in stmts:
        loops = []
        while isinstance(stmt, tir.For):
            loops.append(stmt)
            stmt = stmt.body
        assert isinstance(stmt, tir.BlockRealize)
        nests.append((loops, stmt.block))
    return nests


def blocks(func):
    return {block.name_hint: block for _, block in loop_nests(func)}


def block_names(func):
    return [block.name_hint for _, block in loop_nests(func)]


def iter_kinds(block):
    """The block's iterator kinds as a string, e.g. "SSR" (as TVMScript's T.axis.remap)."""
    return "".join({"spatial": "S", "reduce": "R"}[iv.iter_type] for iv in block.iter_vars)


def region_buffers(regions):
    return [r.buffer.name for r in regions]


def const_value(expr):
    """The value of an IntImm / FloatImm, else None."""
    if isinstance(expr, (tir.IntImm, tir.FloatImm)):
        return expr.value
    return None


def extents(loops):
    return [const_value(loop.extent) for loop in loops]
