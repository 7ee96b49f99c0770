// Interval sets of integer expressions: the set of values an index takes while some variables
// range over their sets. Schedule primitives and buffer compaction use eval_region to find the
// part of a buffer that a loop nest touches.
//
// Example: with i in [0, 8) and j in [0, 4),
//   eval_set(i * 4 + j, dom, &ana)  is [0, 31]
//   eval_region({floordiv(x, 4)}, {x: [0, 32)}, &ana)  is {Range [0, 8)}
#pragma once

#include <unordered_map>
#include <vector>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/expr.h"

namespace kiln::arith {

// A set of integers: an interval [min, max] whose ends are expressions (a missing end is
// infinite), or nothing. "Everything" is the interval with both ends infinite. Ends may be
// symbolic (`[n * 4, n * 4 + 3]`); they are expressions of variables outside the domain.
class IntSet {
 public:
  // The set of every integer.
  IntSet() = default;
  static IntSet everything() { return IntSet(); }
  // The empty set.
  static IntSet nothing();
  // [min, max], inclusive; a null end is infinite on its side.
  static IntSet interval(ir::Expr min, ir::Expr max);
  // {value}.
  static IntSet single_point(ir::Expr value);
  // [range.min, range.min + range.extent - 1].
  static IntSet from_range(const ir::Range& range);
  // The constant interval of a ConstIntBound, with constants of `dtype`; infinite sentinels
  // become infinite ends.
  static IntSet from_bound(const ConstIntBound& bound, ir::DataType dtype);

  bool is_nothing() const { return empty_; }
  bool is_everything() const { return !empty_ && !min_.defined() && !max_.defined(); }
  bool has_lower_bound() const { return !empty_ && min_.defined(); }
  bool has_upper_bound() const { return !empty_ && max_.defined(); }
  // Both ends present and the very same expression (structurally, variables by identity).
  bool is_single_point() const;
  // The ends; null when infinite (or for the empty set).
  const ir::Expr& min() const { return min_; }
  const ir::Expr& max() const { return max_; }

  // The Range [min, max + 1) with its extent simplified. A kValue error when an end is
  // infinite; the empty set gives extent 0.
  ir::Range cover_range(Analyzer* analyzer) const;
  // As above, but an infinite end is replaced by the corresponding end of `bounds`.
  ir::Range cover_range(const ir::Range& bounds, Analyzer* analyzer) const;

 private:
  ir::Expr min_, max_;
  bool empty_ = false;
};

// Variables to the sets they range over. The caller keeps the variables alive.
using IntSetMap = std::unordered_map<const ir::Var*, IntSet>;

// The sets of loop ranges, for eval_set and eval_region.
IntSetMap int_set_map(const std::unordered_map<const ir::Var*, ir::Range>& ranges);

// The set of values `e` takes when every variable of `dom_map` ranges over its set (other
// variables are fixed symbols). Interval arithmetic on the expression as written: Add, Sub,
// Mul (by a point or a set of known sign), FloorDiv/FloorMod and Div/Mod of non-negative
// operands by positive points, Min, Max, Select (union of both arms), Cast between integers,
// Let, Ramp and Broadcast (over all lanes). Anything else that uses a domain variable falls back
// to const_int_bound under the domain's constant bounds. Ends are simplified. A variable that
// appears twice is treated as two independent ones, so simplify first when that matters
// (eval_region does).
IntSet eval_set(const ir::Expr& e, const IntSetMap& dom_map, Analyzer* analyzer);

// The smallest interval holding both / every set.
IntSet union_sets(const std::vector<IntSet>& sets, Analyzer* analyzer);
// The interval of points in both / every set (nothing when provably empty).
IntSet intersect_sets(const std::vector<IntSet>& sets, Analyzer* analyzer);
// Whether every point of `a` is provably in `b`.
bool can_prove_subset(const IntSet& a, const IntSet& b, Analyzer* analyzer);

// The region a buffer access covers while the variables of `dom_map` range over their sets: one
// Range per dimension. Each index (or range of a BufferRegion) is simplified and then evaluated
// with eval_set, so affine indices of loop variables give exact ranges (`i*4 + j` with i in
// [0, 8), j in [0, 4) covers [0, 32)) and splits give tight ones (`floordiv(x, 4)` with x in
// [0, 32) covers [0, 8)). A dimension whose set is unbounded takes [0, shape[d]) when `shape` is
// given, and is a kValue error otherwise.
std::vector<ir::Range> eval_region(const std::vector<ir::Range>& region, const IntSetMap& dom_map,
                                   Analyzer* analyzer, const std::vector<ir::Expr>& shape = {});
std::vector<ir::Range> eval_region(const std::vector<ir::Expr>& indices, const IntSetMap& dom_map,
                                   Analyzer* analyzer, const std::vector<ir::Expr>& shape = {});

// Prints "[min, max]" with -inf / +inf for infinite ends, or "{}" for the empty set.
std::ostream& operator<<(std::ostream& os, const IntSet& set);

}  // namespace kiln::arith
