// The entry points of affine iterator maps: detection with the check of how the splits of each
// mark tile it, the affine-binding test of blocks, simplification into normalized form, the
// inverse of a bijective map, and the conversion of normalized forms back to expressions.
#include <algorithm>
#include <sstream>

#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/support/error.h"
#include "src/arith/expr_compare.h"
#include "src/arith/iter_map_impl.h"

namespace kiln::arith {

using namespace ir;

// ---------------------------------------------------------------------------------------------
// Expressions of normalized forms

namespace {

// `c` in dtype `t`: constants are rebuilt, other expressions cast.
Expr in_dtype(const Expr& c, DataType t) {
  if (c->dtype == t) return c;
  if (const int64_t* v = as_const_int(c)) return make_const(t, *v);
  return cast(t, c);
}

// Whether lower_factor * extent provably reaches the mark's extent, without an analyzer.
bool reaches_top(const IterSplitExpr& split) {
  const Expr& total = split.source->extent;
  const int64_t* lf = as_const_int(split.lower_factor);
  const int64_t* ext = as_const_int(split.extent);
  const int64_t* top = as_const_int(total);
  if (lf != nullptr && ext != nullptr && top != nullptr) return *lf * *ext >= *top;
  if (lf != nullptr && *lf == 1) return deep_equal(split.extent, total);
  return deep_equal(mul(split.lower_factor, split.extent), total) ||
         deep_equal(mul(split.extent, split.lower_factor), total);
}

std::string mark_text(const IterMark& mark) {
  if (mark.var.defined()) {
    if (is_const_int(mark.var_min, 0)) return mark.var->name;
    return text(to_expr(mark));
  }
  return text(to_expr(mark));
}

}  // namespace

Expr to_expr(const IterMark& mark) {
  if (mark.var.defined()) {
    if (is_const_int(mark.var_min, 0)) return mark.var;
    return mark.var - in_dtype(mark.var_min, mark.var->dtype);
  }
  internal_check(mark.fused.has_value()) << "IterMark: neither a loop variable nor a fusion";
  return to_expr(*mark.fused);
}

Expr to_expr(const IterSplitExpr& split) {
  Expr e = to_expr(*split.source);
  DataType t = e->dtype;
  if (!is_const_int(split.lower_factor, 1)) e = floordiv(e, in_dtype(split.lower_factor, t));
  if (!reaches_top(split)) e = floormod(e, in_dtype(split.extent, t));
  if (!is_const_int(split.scale, 1)) e = e * in_dtype(split.scale, t);
  return e;
}

Expr to_expr(const IterSumExpr& sum) {
  DataType t = sum.base.defined() ? sum.base->dtype : DataType::int32();
  Expr e;
  for (const IterSplitExpr& arg : sum.args) {
    Expr term = in_dtype(to_expr(arg), t);
    e = e.defined() ? e + term : term;
  }
  if (!e.defined()) return sum.base.defined() ? sum.base : make_zero(t);
  if (!is_const_int(sum.base, 0)) e = e + sum.base;
  return e;
}

std::string to_string(const IterSumExpr& sum) {
  std::ostringstream os;
  bool first = true;
  for (const IterSplitExpr& arg : sum.args) {
    if (!first) os << " + ";
    first = false;
    const IterMark& mark = *arg.source;
    os << "split(";
    if (mark.fused) {
      os << "fuse(" << to_string(*mark.fused) << "; extent " << text(mark.extent) << ")";
    } else {
      os << mark_text(mark);
    }
    os << ", " << text(arg.lower_factor) << ", " << text(arg.extent) << ")";
    if (!is_const_int(arg.scale, 1)) os << "*" << text(arg.scale);
  }
  if (first || !is_const_int(sum.base, 0)) {
    if (!first) os << " + ";
    os << text(sum.base);
  }
  return os.str();
}

// ---------------------------------------------------------------------------------------------
// The check of a map

MarkUses collect_mark_uses(const std::vector<IterSumExpr>& indices) {
  MarkUses uses;
  auto add_use = [&uses](const IterSplitExpr& split) {
    auto [it, inserted] = uses.splits.try_emplace(split.source.get());
    it->second.push_back(split);
    if (inserted) uses.marks.push_back(split.source);
  };
  for (const IterSumExpr& index : indices) {
    for (const IterSplitExpr& arg : index.args) add_use(arg);
  }
  // A fusion uses its digits once, however many splits of it there are.
  for (size_t k = 0; k < uses.marks.size(); ++k) {
    std::shared_ptr<const IterMark> mark = uses.marks[k];
    if (!mark->fused) continue;
    for (const IterSplitExpr& arg : mark->fused->args) add_use(arg);
  }
  return uses;
}

bool check_mark_splits(const IterMark& mark, const std::vector<IterSplitExpr>& splits,
                       IterMapLevel level, const FactorMath& math, std::string* error) {
  // Step 1. Follow the digits up from 1: each split must start where the previous one ends.
  std::vector<bool> used(splits.size(), false);
  Expr expected = make_one(mark.extent->dtype);
  size_t placed = 0;
  std::string problem;
  while (placed < splits.size()) {
    std::vector<size_t> matches;
    for (size_t j = 0; j < splits.size(); ++j) {
      if (!used[j] && math.equal(splits[j].lower_factor, expected)) matches.push_back(j);
    }
    if (matches.size() > 1) {
      problem = "two splits start at digit " + text(expected) + ", so they overlap";
      break;
    }
    if (matches.empty()) {
      bool overlap = false;
      for (size_t j = 0; j < splits.size(); ++j) {
        if (!used[j] && !math.equal(splits[j].lower_factor, expected) &&
            math.less_equal(splits[j].lower_factor, expected)) {
          overlap = true;
        }
      }
      problem = "no split starts at digit " + text(expected) +
                (overlap ? ", and a split that starts below it overlaps the splits before"
                         : ", so the splits leave a gap");
      break;
    }
    used[matches[0]] = true;
    ++placed;
    expected = math.mul(expected, splits[matches[0]].extent);
  }
  if (placed == splits.size()) {
    if (math.equal(expected, mark.extent)) return true;
    if (level == IterMapLevel::kSurjective && math.divides(expected, mark.extent)) return true;
    problem =
        "the splits cover " + text(expected) + " values but the iterator has " + text(mark.extent);
  }
  // Step 2. A surjective map may skip digits: constant splits need only not overlap.
  if (level == IterMapLevel::kSurjective) {
    std::vector<IterSplitExpr> sorted = splits;
    bool constant = std::all_of(sorted.begin(), sorted.end(), [](const IterSplitExpr& s) {
      return as_const_int(s.lower_factor) != nullptr && as_const_int(s.extent) != nullptr;
    });
    if (constant) {
      std::sort(sorted.begin(), sorted.end(), [](const IterSplitExpr& a, const IterSplitExpr& b) {
        return *as_const_int(a.lower_factor) < *as_const_int(b.lower_factor);
      });
      int64_t covered = 1;
      bool ok = true;
      for (const IterSplitExpr& s : sorted) {
        int64_t lf = *as_const_int(s.lower_factor);
        if (lf % covered != 0) ok = false;
        covered = lf * *as_const_int(s.extent);
      }
      if (ok && math.divides(make_const(mark.extent->dtype, covered), mark.extent)) return true;
    }
  }
  std::ostringstream os;
  os << "iterator " << mark_text(mark) << " (extent " << text(mark.extent) << ") is split into ";
  for (size_t j = 0; j < splits.size(); ++j) {
    IterSplitExpr unscaled = splits[j];
    unscaled.scale = make_one(unscaled.lower_factor->dtype);
    os << (j > 0 ? ", " : "") << text(to_expr(unscaled));
  }
  os << ", which "
     << (level == IterMapLevel::kBijective ? "do not tile it exactly" : "overlap or leave parts")
     << ": " << problem;
  *error = os.str();
  return false;
}

// ---------------------------------------------------------------------------------------------
// Detection

namespace {

void check_map(const IterMapRewriter& rewriter, const std::vector<IterSumExpr>& sums,
               IterMapLevel level, std::vector<std::string>* errors) {
  FactorMath math{rewriter.analyzer()};
  MarkUses uses = collect_mark_uses(sums);
  for (const auto& mark : uses.marks) {
    std::string error;
    if (!check_mark_splits(*mark, uses.splits.at(mark.get()), level, math, &error)) {
      errors->push_back(error);
    }
  }
  if (level == IterMapLevel::kBijective) {
    for (const auto& mark : rewriter.input_marks()) {
      if (uses.splits.count(mark.get()) > 0) continue;
      errors->push_back("loop " + mark->var->name + " (extent " + text(mark->extent) +
                        ") is not used by any index, so the map is not injective");
    }
  }
  for (const auto& mark : rewriter.restricted_marks()) {
    if (!mark->fused || uses.splits.count(mark.get()) > 0) continue;
    errors->push_back("the predicate " + rewriter.predicate_text(mark.get()) + " bounds " +
                      text(to_expr(*mark)) +
                      ", which no index uses whole, so the indices do not cover a box");
  }
}

}  // namespace

IterMapResult detect_iter_map(const std::vector<Expr>& indices, const IterRanges& input_iters,
                              const Expr& predicate, IterMapLevel level, Analyzer* analyzer) {
  internal_check(analyzer != nullptr) << "detect_iter_map: null analyzer";
  IterMapResult result;
  IterMapRewriter rewriter(input_iters, analyzer);
  std::string error;
  if (predicate.defined() && !rewriter.add_predicate(predicate, &error)) {
    result.errors.push_back(error);
    return result;
  }
  // The predicate holds at every point the map is about.
  ConstraintScope scope(analyzer, predicate.defined() ? predicate : bool_const(true));
  std::vector<IterSumExpr> sums;
  for (size_t k = 0; k < indices.size(); ++k) {
    std::string prefix = "index " + std::to_string(k) + " (" + text(indices[k]) + "): ";
    std::optional<IterSumExpr> sum = rewriter.rewrite(indices[k], &error);
    if (!sum) {
      result.errors.push_back(prefix + error);
      continue;
    }
    std::optional<IterSumExpr> fused = rewriter.fuse(*sum, &error);
    if (fused) {
      sums.push_back(*fused);
    } else if (level == IterMapLevel::kNoCheck) {
      sums.push_back(*sum);
    } else {
      result.errors.push_back(prefix + error);
    }
  }
  if (result.errors.empty()) rewriter.resolve_fusions(&sums);
  if (result.errors.empty() && level != IterMapLevel::kNoCheck) {
    check_map(rewriter, sums, level, &result.errors);
  }
  if (result.errors.empty()) result.indices = std::move(sums);
  return result;
}

bool is_affine_binding(const BlockRealize& realize, const IterRanges& loop_var_ranges,
                       Analyzer* analyzer, IterMapLevel level) {
  if (loop_var_ranges.empty()) return true;
  Expr predicate = realize.predicate.defined() ? realize.predicate : bool_const(true);
  return detect_iter_map(realize.iter_values, loop_var_ranges, predicate, level, analyzer).ok();
}

// ---------------------------------------------------------------------------------------------
// Simplification

std::vector<Expr> iter_map_simplify(const std::vector<Expr>& indices, const IterRanges& input_iters,
                                    const Expr& predicate, Analyzer* analyzer) {
  internal_check(analyzer != nullptr) << "iter_map_simplify: null analyzer";
  IterMapRewriter rewriter(input_iters, analyzer);
  Expr condition = predicate.defined() ? predicate : bool_const(true);
  // An unsupported condition only leaves its fusion at its full extent; rewriting stays exact.
  std::string error;
  rewriter.add_predicate(condition, &error);
  ConstraintScope scope(analyzer, condition);
  std::vector<Expr> result;
  result.reserve(indices.size());
  for (const Expr& index : indices) {
    std::optional<IterSumExpr> sum = rewriter.rewrite(index, &error);
    if (!sum) {
      result.push_back(analyzer->simplify(index));
      continue;
    }
    std::optional<IterSumExpr> fused = rewriter.fuse(*sum, &error);
    Expr normalized = to_expr(rewriter.expand_fusions(fused ? *fused : *sum));
    result.push_back(in_dtype(analyzer->simplify(normalized), index->dtype));
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Inverse

VarMap inverse_affine_map(const std::vector<IterSumExpr>& indices, const std::vector<Expr>& outputs,
                          Analyzer* analyzer) {
  internal_check(analyzer != nullptr) << "inverse_affine_map: null analyzer";
  user_check(indices.size() == outputs.size())
      << "inverse_affine_map: " << indices.size() << " indices but " << outputs.size()
      << " outputs; expected one output per index";
  FactorMath math{analyzer};
  // Step 1. The map must be bijective: every mark tiled exactly by its splits.
  MarkUses uses = collect_mark_uses(indices);
  for (size_t k = 0; k < indices.size(); ++k) {
    user_check(indices[k].args.size() <= 1)
        << "inverse_affine_map: index " << k << " (" << to_string(indices[k])
        << ") is not a single split; pass the result of detect_iter_map at kBijective";
  }
  for (const auto& mark : uses.marks) {
    std::string error;
    user_check(check_mark_splits(*mark, uses.splits.at(mark.get()), IterMapLevel::kBijective, math,
                                 &error))
        << "inverse_affine_map: the map is not bijective: " << error;
  }
  // Step 2. The value of each split taken by an output.
  std::unordered_map<const IterMark*, std::vector<std::pair<IterSplitExpr, Expr>>> known;
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k].args.empty()) continue;
    const IterSplitExpr& split = indices[k].args[0];
    Expr value = outputs[k] - in_dtype(indices[k].base, outputs[k]->dtype);
    if (!is_const_int(split.scale, 1)) {
      value = floordiv(value, in_dtype(split.scale, value->dtype));
    }
    known[split.source.get()].push_back({split, value});
  }
  // Step 3. A mark whose splits are all known is their mixed-radix sum; a fusion's value gives
  // the values of its digits. Marks are solved once every split of them is known.
  VarMap result;
  std::vector<bool> solved(uses.marks.size(), false);
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t m = 0; m < uses.marks.size(); ++m) {
      const IterMark& mark = *uses.marks[m];
      const auto& parts = known[&mark];
      if (solved[m] || parts.size() != uses.splits.at(&mark).size()) continue;
      solved[m] = true;
      progress = true;
      Expr value;
      for (const auto& [split, v] : parts) {
        Expr term =
            is_const_int(split.lower_factor, 1) ? v : v * in_dtype(split.lower_factor, v->dtype);
        value = value.defined() ? value + term : term;
      }
      if (mark.var.defined()) {
        Expr v = in_dtype(value, mark.var->dtype);
        if (!is_const_int(mark.var_min, 0)) v = v + in_dtype(mark.var_min, v->dtype);
        result[mark.var.get()] = analyzer->simplify(v);
        continue;
      }
      const std::vector<IterSplitExpr>& terms = mark.fused->args;
      for (size_t t = 0; t < terms.size(); ++t) {
        Expr digit = value;
        if (!is_const_int(terms[t].scale, 1)) {
          digit = floordiv(digit, in_dtype(terms[t].scale, digit->dtype));
        }
        if (t > 0) digit = floormod(digit, in_dtype(terms[t].extent, digit->dtype));
        known[terms[t].source.get()].push_back({terms[t], digit});
      }
    }
  }
  return result;
}

}  // namespace kiln::arith
