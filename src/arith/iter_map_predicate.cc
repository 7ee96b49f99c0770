// Predicates of iterator maps: conditions `fused < bound` shrink the extent of a loop, of a
// fusion of loops, or of one digit of either, so that a non-divisible split is still exact.
#include <algorithm>
#include <unordered_set>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"
#include "src/arith/iter_map_impl.h"

namespace kiln::arith {

using namespace ir;

// ---------------------------------------------------------------------------------------------
// Predicates

bool IterMapRewriter::add_predicate(const Expr& predicate, std::string* error) {
  std::vector<Expr> conditions = conjuncts(predicate);
  // Conditions on fewer loops, then smaller ones, first: a shrunk loop or fusion is then used by
  // the conditions on larger fusions that contain it.
  auto loops_used = [this](const Expr& c) {
    std::unordered_set<const Var*> used;
    post_order_visit(c, [&](const Node* node) {
      if (node->kind() != NodeKind::Var) return;
      const auto* v = static_cast<const Var*>(node);
      if (var_map_.count(v) > 0) used.insert(v);
    });
    return used.size();
  };
  auto size = [](const Expr& c) {
    size_t nodes = 0;
    post_order_visit(c, [&](const Node*) { ++nodes; });
    return nodes;
  };
  std::stable_sort(conditions.begin(), conditions.end(), [&](const Expr& a, const Expr& b) {
    size_t la = loops_used(a), lb = loops_used(b);
    return la != lb ? la < lb : size(a) < size(b);
  });
  // A condition on a sum that contains a fusion bounded by a later condition may only make
  // sense after it: retry the failed ones while others succeed.
  while (!conditions.empty()) {
    std::vector<Expr> failed;
    std::string first_error;
    for (const Expr& c : conditions) {
      std::string why;
      if (applies_condition(c, &why)) continue;
      if (failed.empty()) first_error = why;
      failed.push_back(c);
    }
    if (failed.size() == conditions.size()) {
      *error = first_error;
      return false;
    }
    conditions = std::move(failed);
  }
  return true;
}

bool IterMapRewriter::applies_condition(const Expr& condition, std::string* error) {
  if (!uses_input(condition)) return true;
  std::string prefix = "predicate " + text(condition) + ": ";
  Expr lhs, bound;
  if (const auto* op = condition.as<LT>()) {
    lhs = op->a;
    bound = op->b;
  } else if (const auto* op = condition.as<LE>()) {
    lhs = op->a;
    bound = op->b + 1;
  } else if (const auto* op = condition.as<GT>()) {
    lhs = op->b;
    bound = op->a;
  } else if (const auto* op = condition.as<GE>()) {
    lhs = op->b;
    bound = op->a + 1;
  } else {
    *error = prefix + "only conditions `fused < bound` (or <=) on loop iterators are supported";
    return false;
  }
  if (uses_input(bound)) {
    *error = prefix +
             "only upper bounds `fused < bound` with a bound free of loop iterators "
             "are supported";
    return false;
  }
  std::string why;
  auto sum = rewrite(lhs, &why);
  if (sum) sum = fuse(*sum, &why);
  if (!sum) {
    *error = prefix + why;
    return false;
  }
  if (sum->args.empty()) return true;
  const IterSplitExpr& x = sum->args[0];
  if (!is_const_int(x.scale, 1)) {
    *error = prefix + "it bounds " + text(to_expr(x)) +
             ", a scaled iterator; only `fused < bound` is supported";
    return false;
  }
  auto bounded = restrict_split(x, analyzer_->simplify(bound - sum->base), condition, &why);
  if (!bounded) {
    *error = prefix + why;
    return false;
  }
  return true;
}

std::optional<IterSplitExpr> IterMapRewriter::restrict_split(const IterSplitExpr& x,
                                                             const Expr& bound,
                                                             const Expr& condition,
                                                             std::string* error) {
  FactorMath m{analyzer_};
  Expr one = make_one(x.extent->dtype);
  // Step 1. The top digits of a mark, floordiv(mark, lf) < b, bound the mark: mark < b * lf.
  // Other digits become a fusion of one digit, which the condition bounds.
  MarkPtr mark = x.source;
  Expr lower_factor = x.lower_factor;
  bool top = is_const_int(x.lower_factor, 1)
                 ? m.equal(x.extent, mark->extent)
                 : m.less_equal(mark->extent, m.mul(x.lower_factor, x.extent));
  if (!top) {
    mark = fused_mark(IterSumExpr{{x}, zero_like(x.scale)}, x.extent);
    lower_factor = one;
  }
  Expr extent = analyzer_->simplify(m.mul(bound, lower_factor));
  if (m.less_equal(mark->extent, extent)) return x;
  if (m.less_equal(extent, make_zero(extent->dtype))) {
    *error = "no iteration satisfies it";
    return std::nullopt;
  }
  bool exact = m.less_equal(extent, mark->extent);
  if (!exact) extent = analyzer_->simplify(min(extent, mark->extent));
  MarkPtr smaller;
  // Step 2. A fusion bounded by a multiple of its top digit's scale only bounds that digit:
  // i*4 + j < 28 with j in [0, 4) is i < 7. The fusion is rebuilt on the bounded digit.
  if (exact && mark->fused && mark->fused->args.size() > 1 &&
      m.divides(mark->fused->args[0].scale, extent)) {
    IterSplitExpr digit = mark->fused->args[0];
    Expr scale = digit.scale;
    digit.scale = make_one(scale->dtype);
    auto bounded = restrict_split(digit, m.exact_div(extent, scale), condition, error);
    if (!bounded) return std::nullopt;
    IterSumExpr source = *mark->fused;
    source.args[0] = *bounded;
    source.args[0].scale = scale;
    auto rebuilt = std::make_shared<IterMark>();
    rebuilt->fused = source;
    rebuilt->extent = extent;
    std::replace(fused_marks_.begin(), fused_marks_.end(), mark, MarkPtr(rebuilt));
    // An earlier, weaker bound of the fusion is superseded.
    restricted_.erase(std::remove_if(restricted_.begin(), restricted_.end(),
                                     [&](const Restriction& r) { return r.mark == mark; }),
                      restricted_.end());
    smaller = rebuilt;
  } else {
    // Step 3. A copy of the mark with the smaller extent replaces it.
    auto copy = std::make_shared<IterMark>(*mark);
    copy->extent = extent;
    smaller = copy;
    if (mark->var.defined()) {
      var_map_[mark->var.get()] = IterSumExpr{
          {IterSplitExpr{smaller, one, extent, make_one(mark->var->dtype)}}, mark->var_min};
      std::replace(input_marks_.begin(), input_marks_.end(), mark, smaller);
    } else {
      std::replace(fused_marks_.begin(), fused_marks_.end(), mark, smaller);
    }
    bool recorded = false;
    for (Restriction& r : restricted_) {
      if (r.mark == mark) {
        r.mark = smaller;
        r.condition += " and " + text(condition);
        recorded = true;
      }
    }
    if (!recorded) restricted_.push_back(Restriction{smaller, text(condition)});
  }
  return IterSplitExpr{smaller, lower_factor, m.ceil_div(extent, lower_factor), one};
}

const IterMapRewriter::Restriction* IterMapRewriter::find_restriction(const IterMark* mark) const {
  for (const Restriction& r : restricted_) {
    if (r.mark.get() == mark) return &r;
  }
  return nullptr;
}

std::vector<std::shared_ptr<const IterMark>> IterMapRewriter::restricted_marks() const {
  std::vector<MarkPtr> marks;
  for (const Restriction& r : restricted_) marks.push_back(r.mark);
  return marks;
}

const std::string& IterMapRewriter::predicate_text(const IterMark* mark) const {
  const Restriction* r = find_restriction(mark);
  internal_check(r != nullptr) << "IterMapRewriter: the mark has no predicate";
  return r->condition;
}

}  // namespace kiln::arith
