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

__all__ = ["IRModule", "Node", "PrimExpr", "structural_equal", "structural_hash",
           "assert_structural_equal"]
