// Affine iterator maps: recognizes index expressions that are splits and fusions of loop
// iterators (what split, fuse and reorder leave in a block's bindings), decides whether such a
// map is bijective or surjective, rewrites indices into their normalized form, and inverts
// bijective maps.
//
// The vocabulary. An iterator mark is a value that ranges over [0, extent): a loop variable
// (minus its min) or a fusion of other iterators. A split takes digits of a mark:
//     split(mark, lower_factor, extent, scale) = floormod(floordiv(mark, lower_factor), extent)
//                                                * scale
// A sum of splits plus a base is an IterSumExpr. A fusion is a mark whose value is a
// mixed-radix sum of splits, `a*extent_b + b` for splits a, b. For example, with loops
// i in [0, 8), j in [0, 4) and f in [0, 256):
//     i*4 + j             ->  split(F, 1, 32, 1)        where F = fuse(i, j) has extent 32
//     floordiv(f, 16)     ->  split(f, 16, 16, 1)
//     floormod(f, 16)     ->  split(f, 1, 16, 1)
//     floordiv(f, 16)*16 + floormod(f, 16)  ->  split(f, 1, 256, 1), that is f
// The splits that the indices (and the fusions) take of each mark tell whether the map is
// bijective: bijective when the splits of every mark tile it exactly, digit after digit, and
// every loop is used.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/stmt.h"

namespace kiln::arith {

struct IterMark;

// floormod(floordiv(source, lower_factor), extent) * scale, a digit of a mark scaled.
struct IterSplitExpr {
  std::shared_ptr<const IterMark> source;
  ir::Expr lower_factor;
  ir::Expr extent;
  ir::Expr scale;
};

// sum of args + base. `base` is an expression of no input iterator.
struct IterSumExpr {
  std::vector<IterSplitExpr> args;
  ir::Expr base;
};

// An iterator that ranges over [0, extent): either an input iterator (`var` set; the mark's
// value is var - var_min) or a fusion (`fused` set; its value is the sum, whose args form a
// mixed-radix number with base 0, ordered from the largest scale to the smallest). A predicate
// `fused < bound` gives a fusion a smaller extent than the product of its digits.
struct IterMark {
  ir::Ref<ir::Var> var;
  ir::Expr var_min;
  std::optional<IterSumExpr> fused;
  ir::Expr extent;
};

// How much detect_iter_map checks about the whole map.
enum class IterMapLevel {
  // Every combination of loop values (where the predicate holds) gives a distinct point, and
  // the points are exactly the product of the indices' value sets.
  kBijective,
  // Every point of that product is reached, maybe several times (loops may be unused).
  kSurjective,
  // Only that each index is affine in the loops.
  kNoCheck,
};

// The outcome of detect_iter_map: the normalized indices, or the reasons it failed.
struct IterMapResult {
  // One per input index, empty when detection failed. Under kBijective and kSurjective each
  // has at most one split.
  std::vector<IterSumExpr> indices;
  // Why detection failed, naming the index and the reason; empty on success.
  std::vector<std::string> errors;
  bool ok() const { return errors.empty(); }
};

// Loop variables to their ranges. The caller keeps the variables alive.
using IterRanges = std::unordered_map<const ir::Var*, ir::Range>;

// Whether `indices` are affine maps of the loop iterators of `input_iters` made of splits and
// fusions, and whether the map passes `level`'s check. `predicate` (bool; `true` for none) is a
// conjunction of conditions of the form `fused < bound` (or <=, or the mirrored > / >=) that
// shrink the domain of a loop, a fusion of loops, or one digit of either (`floormod(i, 4) < 3`),
// as non-divisible splits leave:
//     loops io in [0, 8), ii in [0, 4), predicate io*4 + ii < 30, index io*4 + ii
// is bijective onto [0, 30). The indices must then use a shrunk fusion whole (or by splits that
// divide its extent). A loop of extent 1 is a constant. Index expressions use +, -, *,
// floordiv, floormod (and truncating div/mod of provably non-negative values) of the loop
// variables and of expressions free of them. A split of a fusion that is exactly one of its
// terms is that term: floordiv(i*16 + j, 16) with j in [0, 16) gives split(i, 1, extent of i).
IterMapResult detect_iter_map(const std::vector<ir::Expr>& indices, const IterRanges& input_iters,
                              const ir::Expr& predicate, IterMapLevel level, Analyzer* analyzer);

// Each index rewritten into its normalized split/fuse form and simplified: `floordiv(f, 16)*16 +
// floormod(f, 16)` becomes f, `floormod(i*4 + j, 4)` with j in [0, 4) becomes j. An index that
// is not affine is only simplified. The results equal the indices wherever the predicate holds.
std::vector<ir::Expr> iter_map_simplify(const std::vector<ir::Expr>& indices,
                                        const IterRanges& input_iters, const ir::Expr& predicate,
                                        Analyzer* analyzer);

// Whether the iter_values of `realize` are an affine map of the loops in `loop_var_ranges` that
// passes `level` (bijective by default), under the realize's predicate: TensorIR's "affine
// binding" precondition of schedule primitives. With no loops every binding is affine. A block
// placed under loops it does not use (after compute_at) is affine only at kSurjective.
bool is_affine_binding(const ir::BlockRealize& realize, const IterRanges& loop_var_ranges,
                       Analyzer* analyzer, IterMapLevel level = IterMapLevel::kBijective);

// The loop variables of a bijective map as expressions of its outputs: `indices` is
// detect_iter_map's result at kBijective and `outputs[k]` stands for the value of index k.
// Example: for indices floordiv(f, 16) and floormod(f, 16), f = outputs[0]*16 + outputs[1].
// Loops of extent 1 are constants and have no entry. A kValue error when the map is not
// bijective.
ir::VarMap inverse_affine_map(const std::vector<IterSumExpr>& indices,
                              const std::vector<ir::Expr>& outputs, Analyzer* analyzer);

// The expression a normalized index stands for (floordiv/floormod of the marks' values).
ir::Expr to_expr(const IterSumExpr& sum);
ir::Expr to_expr(const IterSplitExpr& split);
ir::Expr to_expr(const IterMark& mark);

// Readable text, for error messages and tests: `split(mark, lower_factor, extent)*scale + base`,
// e.g. `split(fuse(split(i, 1, 8)*4 + split(j, 1, 4); extent 32), 4, 8)*2 + 1`.
std::string to_string(const IterSumExpr& sum);

}  // namespace kiln::arith
