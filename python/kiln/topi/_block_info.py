"""What the default schedules need to know about a block of a PrimFunc: its spatial and
reduction iterators and their constant extents, the loads of its body with the iterators each
depends on and the packed panels it reads, whether it writes an argument of the function,
whether its body calls transcendental functions (costly to recompute) or guards a load
(padding), whether it is a sum of products with reuse (a matrix product or a convolution,
register-tiled), and whether it is a reduction whose partial results GPU threads can combine
(one value, or several such as argmax's index and value)."""
import dataclasses

from .. import tir
from ._util import const_int

# Calls whose recomputation costs more than a load: not inlined where they would run again.
EXPENSIVE_CALLS = ("exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
                   "sin", "cos", "tan", "tanh", "sigmoid", "erf", "pow", "atan", "asin", "acos")


@dataclasses.dataclass
class Load:
    """One load of a block's body: the buffer and the block iterators its indices use."""

    buffer: object
    uses: frozenset  # positions in BlockInfo.iter_vars
    # Iterator position -> c for each index ``floormod(v, c)`` of a single iterator v: the load
    # reads a packed layout whose innermost c values of v are contiguous (dense_pack's
    # weight[j // bn, k, j % bn] has {j: bn}).
    panels: dict = dataclasses.field(default_factory=dict)
    last_uses: frozenset = frozenset()  # those its last (innermost) index uses
    indices: tuple = ()  # the index expressions


@dataclasses.dataclass
class BlockInfo:
    """A block of the root scope, as analyzed by analyze_block."""

    name: str
    iter_vars: list
    is_reduce: list  # per iterator
    extents: list  # per iterator: an int, or None when symbolic
    has_init: bool
    writes_output: bool
    write_buffers: list
    loads: list  # of Load, the block's own buffer (a reduction's update) excluded
    expensive: bool
    guarded_read: bool
    dtype: str

    @property
    def spatial(self):
        return [k for k, r in enumerate(self.is_reduce) if not r]

    @property
    def reduce(self):
        return [k for k, r in enumerate(self.is_reduce) if r]

    @property
    def iterations(self):
        """The product of the constant extents, or None when one is symbolic."""
        total = 1
        for extent in self.extents:
            if extent is None:
                return None
            total *= extent
        return total


def _children(expr):
    for name in ("a", "b", "value", "condition", "true_value", "false_value", "body"):
        child = getattr(expr, name, None)
        if isinstance(child, tir.PrimExpr):
            yield child
    for name in ("args", "indices"):
        for child in getattr(expr, name, None) or ():
            if isinstance(child, tir.PrimExpr):
                yield child


def walk_expr(expr, visit):
    """Calls visit on expr and every subexpression, parents first."""
    stack = [expr]
    while stack:
        node = stack.pop()
        visit(node)
        stack.extend(_children(node))


def uses_var(expr, var):
    """Whether the expression expr reads the variable var."""
    found = []
    walk_expr(expr, lambda node: found.append(1) if isinstance(node, tir.Var) and
              node.same_as(var) else None)
    return bool(found)


def _uses(exprs, iter_vars):
    used = set()

    def visit(node):
        if isinstance(node, tir.Var):
            for k, iv in enumerate(iter_vars):
                if node.same_as(iv.var):
                    used.add(k)

    for expr in exprs:
        walk_expr(expr, visit)
    return frozenset(used)


def _panels(indices, iter_vars):
    found = {}

    def visit(node):
        if isinstance(node, tir.FloorMod) and isinstance(node.b, tir.IntImm):
            uses = _uses([node.a], iter_vars)
            if len(uses) == 1:
                found[next(iter(uses))] = node.b.value

    for index in indices:
        walk_expr(index, visit)
    return found


def _is_call(node, names):
    if not isinstance(node, tir.Call):
        return False
    op = str(node.op)
    return op.rsplit(".", 1)[-1] in names


def _has_load(expr):
    found = []
    walk_expr(expr, lambda node: found.append(1) if isinstance(node, tir.BufferLoad) else None)
    return bool(found)


def update_store(block):
    """The store of a block's body: the body itself, or the one store that an if statement
    without else guards (the update of a reduction with a ``where`` condition, such as a causal
    mask's products); None for any other body."""
    body = block.body
    if isinstance(body, tir.IfThenElse) and body.else_case is None:
        body = body.then_case
    return body if isinstance(body, tir.BufferStore) else None


def analyze_block(sch, block_rv, func):
    """The BlockInfo of a block of sch (func is sch.mod["main"])."""
    block = sch.get(block_rv)
    params = list(func.buffer_map.values())
    writes = [region.buffer for region in block.writes]
    iter_vars = list(block.iter_vars)
    loads, flags = [], {"expensive": False, "guarded": False}

    def visit(node):
        if isinstance(node, tir.BufferLoad):
            if not any(node.buffer.same_as(w) for w in writes):
                indices = list(node.indices)
                loads.append(Load(node.buffer, _uses(indices, iter_vars),
                                  _panels(indices, iter_vars), _uses(indices[-1:], iter_vars),
                                  tuple(indices)))
        elif _is_call(node, EXPENSIVE_CALLS):
            flags["expensive"] = True
        elif _is_call(node, ("if_then_else",)):
            if any(_has_load(arg) for arg in node.args[1:]):
                flags["guarded"] = True
        elif isinstance(node, tir.Select):
            if _has_load(node.true_value) or _has_load(node.false_value):
                flags["guarded"] = True

    body = update_store(block)
    if body is not None:
        walk_expr(body.value, visit)
        if isinstance(block.body, tir.IfThenElse):  # the condition's loads too
            walk_expr(block.body.condition, visit)
        dtype = body.buffer.dtype
    else:  # several values (argmax's index and value): the loads of their updates, no tiling
        for value in _tuple_update(block) or ():
            walk_expr(value, visit)
        flags["guarded"] = True
        dtype = writes[0].dtype if writes else "float32"
    return BlockInfo(
        name=block.name_hint, iter_vars=iter_vars,
        is_reduce=[iv.iter_type == "reduce" for iv in iter_vars],
        extents=[const_int(iv.dom.extent) for iv in iter_vars],
        has_init=block.init is not None,
        writes_output=any(w.same_as(p) for w in writes for p in params),
        write_buffers=writes, loads=loads, expensive=flags["expensive"],
        guarded_read=flags["guarded"], dtype=dtype)


def is_sum_of_products(sch, block_rv):
    """Whether the block's update is ``C[...] = C[...] + a * b`` (casts and constant factors
    allowed), or such an update under a condition (update_store): the reduction of a matrix
    product or a convolution."""
    block = sch.get(block_rv)
    body = update_store(block)
    if block.init is None or body is None:
        return False
    value = body.value
    if not isinstance(value, tir.Add):
        return False
    acc, update = value.a, value.b
    if not (isinstance(acc, tir.BufferLoad) and acc.buffer.same_as(body.buffer)):
        return False
    loads = []

    def visit(node):
        if isinstance(node, tir.BufferLoad):
            loads.append(node)
        elif isinstance(node, (tir.Call, tir.Select, tir.Div, tir.Sub)):
            loads.append(None)  # anything but products of loads and casts

    walk_expr(update, visit)
    return len(loads) >= 2 and None not in loads and isinstance(update, tir.Mul)


def is_simple_reduction(sch, block_rv):
    """Whether the block's update is ``C[idx] = f(C[idx], x)`` with f one of +, *, max and min
    and one store: a reduction whose partial results threads can combine (argmax's two stores
    and a causal mask's guarded update are not)."""
    block = sch.get(block_rv)
    body = block.body
    if block.init is None or not isinstance(body, tir.BufferStore):
        return False
    value = body.value
    if not isinstance(value, (tir.Add, tir.Mul, tir.Max, tir.Min)):
        return False

    def is_self_load(expr):
        return isinstance(expr, tir.BufferLoad) and expr.buffer.same_as(body.buffer)

    return is_self_load(value.a) or is_self_load(value.b)


def _tuple_update(block):
    """The values of a reduction of several values, as te.create_prim_func writes one (each
    value bound to a LetStmt, then the stores of the bound variables); None for another body."""
    values, body = [], block.body
    while isinstance(body, tir.LetStmt):
        values.append(body.value)
        body = body.body
    stores = list(body.seq) if isinstance(body, tir.SeqStmt) else []
    if len(values) < 2 or len(stores) != len(values) or \
            not all(isinstance(s, tir.BufferStore) for s in stores):
        return None
    return values


def is_combinable_reduction(sch, block_rv):
    """Whether GPU threads can combine the block's partial results: is_simple_reduction's one
    value, or several values updated together (argmax's index and value, each a select between
    the stored value and the new one). lower_cross_thread_reduction has the final word."""
    if is_simple_reduction(sch, block_rv):
        return True
    block = sch.get(block_rv)
    return block.init is not None and _tuple_update(block) is not None
