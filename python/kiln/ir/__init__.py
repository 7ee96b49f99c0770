"""IR objects shared by every layer: modules and the node base class."""
from .._kiln import ir as _ir

IRModule = _ir.IRModule
Node = _ir.Node
PrimExpr = _ir.PrimExpr

__all__ = ["IRModule", "Node", "PrimExpr"]
