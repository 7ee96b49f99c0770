// The rewriter behind detect_iter_map and iter_map_simplify, which turns index expressions into
// sums of splits of iterator marks (iter_map_detect.cc, iter_map_fuse.cc, iter_map_predicate.cc),
// and the check of how the splits of each mark tile it (iter_map.cc).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/arith/iter_map.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"

namespace kiln::arith {

// A zero of the scalar type of e.
inline ir::Expr zero_like(const ir::Expr& e) {
  return ir::make_zero(e->dtype.element_of());
}

// An expression's script text, for messages.
inline std::string text(const ir::Expr& e) {
  return ir::to_script(e);
}

class IterMapRewriter {
 public:
  // Makes a mark for every loop of `input_iters` (a loop of extent 1 is its min) and binds the
  // loops' ranges in `analyzer` for the rewriter's lifetime.
  IterMapRewriter(const IterRanges& input_iters, Analyzer* analyzer);
  ~IterMapRewriter();

  // Applies the conditions of `predicate` (see detect_iter_map). False, with a message in
  // `error`, for a condition that is not of a supported form.
  bool add_predicate(const ir::Expr& predicate, std::string* error);

  // `index` as a sum of splits, or nothing with the reason in `error`.
  std::optional<IterSumExpr> rewrite(const ir::Expr& index, std::string* error);

  // The sum as at most one split (a fusion of its splits, reusing the fused mark of an equal
  // sum and merging adjacent digits of one mark), or nothing with the reason in `error`.
  std::optional<IterSumExpr> fuse(const IterSumExpr& sum, std::string* error);

  // Replaces splits of fusions by the fusions' terms where every split of a fusion lines up
  // with one term: `floordiv(i*16 + j, 16)` becomes i.
  void resolve_fusions(std::vector<IterSumExpr>* sums);
  // The sum with every split of a fusion that lines up with its terms replaced by those terms
  // (for turning normalized forms into expressions).
  IterSumExpr expand_fusions(const IterSumExpr& sum);

  // The marks of the loops (extent > 1) and the marks that predicates shrank.
  const std::vector<std::shared_ptr<const IterMark>>& input_marks() const { return input_marks_; }
  std::vector<std::shared_ptr<const IterMark>> restricted_marks() const;
  const std::string& predicate_text(const IterMark* mark) const;

  Analyzer* analyzer() const { return analyzer_; }

 private:
  using MarkPtr = std::shared_ptr<const IterMark>;

  bool uses_input(const ir::Expr& e) const;
  std::optional<IterSumExpr> visit(const ir::Expr& e, std::string* error);
  std::optional<IterSumExpr> floordiv_sum(const IterSumExpr& sum, const ir::Expr& c,
                                          std::string* error);
  std::optional<IterSumExpr> floormod_sum(const IterSumExpr& sum, const ir::Expr& c,
                                          std::string* error);
  // floordiv / floormod of one unscaled split by c.
  std::optional<IterSumExpr> split_floordiv(const IterSplitExpr& x, const ir::Expr& c,
                                            std::string* error);
  std::optional<IterSumExpr> split_floormod(const IterSplitExpr& x, const ir::Expr& c,
                                            std::string* error);
  // The sum with the digits of each fusion that a predicate shrank replaced by that fusion.
  IterSumExpr use_restricted_fusions(IterSumExpr sum);
  // A split of a fusion whose digits line up with the fusion's terms, as those terms.
  IterSumExpr resolve(const IterSplitExpr& split);
  // The fused mark of a normalized mixed-radix sum, reused when one exists.
  MarkPtr fused_mark(const IterSumExpr& source, const ir::Expr& extent);
  bool same_split(const IterSplitExpr& a, const IterSplitExpr& b);
  bool applies_condition(const ir::Expr& condition, std::string* error);
  // Makes the unscaled split x range over [0, bound) only, shrinking its mark (or the fusion of
  // the digit x); returns the split that stands for x from now on.
  std::optional<IterSplitExpr> restrict_split(const IterSplitExpr& x, const ir::Expr& bound,
                                              const ir::Expr& condition, std::string* error);

  Analyzer* analyzer_;
  std::unordered_map<const ir::Var*, IterSumExpr> var_map_;
  std::vector<MarkPtr> input_marks_;
  std::vector<MarkPtr> fused_marks_;
  // Marks made smaller by a predicate (their extent is less than the product of their digits),
  // with the condition that did it.
  struct Restriction {
    MarkPtr mark;
    std::string condition;
  };
  std::vector<Restriction> restricted_;
  const Restriction* find_restriction(const IterMark* mark) const;
  std::unique_ptr<ConstraintScope> scope_;
  // Whether floordiv and floormod divide the digits of shrunk fusions as those fusions.
  bool substitute_restricted_ = true;
};

// Arithmetic on factor expressions: constants fold, symbolic ones are simplified and compared
// by the analyzer.
struct FactorMath {
  Analyzer* analyzer;
  bool equal(const ir::Expr& a, const ir::Expr& b) const;
  bool less_equal(const ir::Expr& a, const ir::Expr& b) const;
  // Whether d divides x.
  bool divides(const ir::Expr& d, const ir::Expr& x) const;
  ir::Expr mul(const ir::Expr& a, const ir::Expr& b) const;
  // a / b for a known multiple a of b.
  ir::Expr exact_div(const ir::Expr& a, const ir::Expr& b) const;
  ir::Expr ceil_div(const ir::Expr& a, const ir::Expr& b) const;
};

// The splits that the indices and the fusions reachable from them take of each mark, in the
// order marks are reached.
struct MarkUses {
  std::vector<std::shared_ptr<const IterMark>> marks;
  std::unordered_map<const IterMark*, std::vector<IterSplitExpr>> splits;
};
MarkUses collect_mark_uses(const std::vector<IterSumExpr>& indices);

// Whether the splits of `mark` tile it as `level` requires (kBijective: exactly, digit after
// digit; kSurjective: without overlapping digits); the reason in `error` otherwise.
bool check_mark_splits(const IterMark& mark, const std::vector<IterSplitExpr>& splits,
                       IterMapLevel level, const FactorMath& math, std::string* error);

}  // namespace kiln::arith
