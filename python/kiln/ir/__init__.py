"""IR objects shared by every layer: modules and the node base class."""
from .._kiln import ir as _ir

IRModule = _ir.IRModule
Node = _ir.Node
PrimExpr = _ir.PrimExpr

# Structural comparison: names of variables and buffers are ignored, block names are not; the
# hash is stable across processes (see kiln/ir/structural.h).
structural_equal = _ir.structural_equal
structural_hash = _ir.structural_hash
assert_structural_equal = _ir.assert_structural_equal


# Serialization (see kiln/ir/serialize.h for the format). These are Python functions rather than
# the bindings themselves so that a pickle of a PrimFunc or an IRModule, which is rebuilt by
# load_json, names a plain importable function.

def save_json(node):
    """Serializes an IR object to JSON text that load_json reads back, in this process or any
    other: ``structural_equal(load_json(save_json(f)), f)`` holds and the structural hash is
    the same.

    Variables and buffers are written once and referred to by index, so a variable used in many
    places, or a buffer named by loads, stores and a function's buffer_map, is one object again
    after loading. Constants are exact (int64, uint64, and floats including inf, nan and -0.0),
    and strings keep every byte.

    Args:
        node (Node or None): an expression, statement, buffer, PrimFunc or IRModule.

    Returns:
        str: the JSON document, with a "kiln_ir_format" version.

    Raises:
        KilnTypeError: node is not an IR object or None.
        KilnValueError: the tree cannot be written faithfully (a null where the IR needs a
            node, or nesting deeper than the loader accepts).

    Example:
        text = kiln.ir.save_json(func)
        same = kiln.ir.load_json(text)
        assert kiln.ir.structural_hash(same) == kiln.ir.structural_hash(func)
    """
    return _ir.save_json(node)


def load_json(text):
    """Loads the IR object that a save_json document holds, with fresh variables and buffers
    shared as in the saved object. PrimFunc and IRModule pickle through this function.

    Args:
        text (str): a document written by save_json.

    Returns:
        Node or None: the object (a PrimFunc, an IRModule, an expression, a statement or a
        Buffer), or None when None was saved.

    Raises:
        KilnTypeError: text is not a str.
        KilnValueError: the text is not JSON, is a document of another format version, or is
            malformed; the message gives the path of the offending value, e.g.
            ``$.root.body.block.iter_vars[0].dom``, and what was expected and found.

    Example:
        func = kiln.ir.load_json(open("func.json").read())
    """
    return _ir.load_json(text)


__all__ = ["IRModule", "Node", "PrimExpr", "structural_equal", "structural_hash",
           "assert_structural_equal", "save_json", "load_json"]
