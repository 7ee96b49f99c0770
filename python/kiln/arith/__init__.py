"""Arithmetic analysis of integer index expressions, with TVM's names (tvm.arith).

``Analyzer`` simplifies expressions, bounds them (``const_int_bound``, ``modular_set``,
``int_set``), proves comparisons and holds facts about variables (``bind``, ``update``,
``constraint_scope``). ``detect_iter_map`` recognizes index expressions made of splits and fusions
of loop iterators and checks that the map is bijective or surjective; ``iter_map_simplify``
rewrites indices into that normalized form and ``inverse_affine_iter_map`` solves a bijective map
for the loop variables.

An ``IntSet`` end that is infinite is ``None``; ``ConstIntBound.POS_INF`` and ``NEG_INF`` are the
sentinels of unbounded constant bounds.
"""
from .._kiln import arith as _arith

Analyzer = _arith.Analyzer
ConstraintScope = _arith.ConstraintScope
ConstIntBound = _arith.ConstIntBound
ModularSet = _arith.ModularSet
IntSet = _arith.IntSet
IntervalSet = _arith.IntervalSet
union_sets = _arith.union_sets
intersect_sets = _arith.intersect_sets
eval_region = _arith.eval_region

IterMapLevel = _arith.IterMapLevel
IterMapResult = _arith.IterMapResult
detect_iter_map = _arith.detect_iter_map
iter_map_simplify = _arith.iter_map_simplify
inverse_affine_iter_map = _arith.inverse_affine_iter_map

__all__ = [
    "Analyzer", "ConstraintScope", "ConstIntBound", "ModularSet", "IntSet", "IntervalSet",
    "union_sets", "intersect_sets", "eval_region", "IterMapLevel", "IterMapResult",
    "detect_iter_map", "iter_map_simplify", "inverse_affine_iter_map",
]
