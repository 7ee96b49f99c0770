// Fusion of iterators: recognizes sums of digits that form a mixed-radix number and gives them
// one fused mark, reusing equal fusions and those a predicate shrank; and the way back, from
// splits of a fusion to its terms.
#include <algorithm>
#include <limits>
#include <sstream>
#include <unordered_set>

#include "kiln/ir/op.h"
#include "kiln/support/error.h"
#include "src/arith/iter_map_impl.h"

namespace kiln::arith {

using namespace ir;

// ---------------------------------------------------------------------------------------------
// Splits of a fusion as its terms

IterSumExpr IterMapRewriter::resolve(const IterSplitExpr& split) {
  const IterMark& mark = *split.source;
  IterSumExpr unchanged{{split}, zero_like(split.scale)};
  if (!mark.fused || find_restriction(&mark) != nullptr) return unchanged;
  FactorMath m{analyzer_};
  // The fusion's terms from the lowest digit up, with the digit where each starts.
  const std::vector<IterSplitExpr>& terms = mark.fused->args;
  size_t n = terms.size();
  Expr upper = m.mul(split.lower_factor, split.extent);
  bool reaches_top = m.less_equal(mark.extent, upper);
  std::optional<size_t> first, last;
  for (size_t k = 0; k < n; ++k) {
    const IterSplitExpr& term = terms[n - 1 - k];
    if (!first && m.equal(term.scale, split.lower_factor)) first = k;
    if (first && !reaches_top && m.equal(m.mul(term.scale, term.extent), upper)) {
      last = k;
      break;
    }
  }
  if (!first) return unchanged;
  if (reaches_top) last = n - 1;
  if (!last) return unchanged;
  IterSumExpr result{{}, zero_like(split.scale)};
  for (size_t k = *first; k <= *last; ++k) {
    IterSplitExpr term = terms[n - 1 - k];
    term.scale = m.mul(m.exact_div(term.scale, split.lower_factor), split.scale);
    result.args.push_back(term);
  }
  return result;
}

void IterMapRewriter::resolve_fusions(std::vector<IterSumExpr>* sums) {
  // A fusion is replaced only when every split the indices take of it is one of its terms and
  // no other fusion is built on it; replacing some of its splits and not others would count its
  // terms twice.
  bool changed = true;
  while (changed) {
    changed = false;
    MarkUses uses = collect_mark_uses(*sums);
    std::unordered_set<const IterMark*> inner;
    for (const auto& mark : uses.marks) {
      if (!mark->fused) continue;
      for (const IterSplitExpr& arg : mark->fused->args) inner.insert(arg.source.get());
    }
    for (const auto& mark : uses.marks) {
      if (!mark->fused || inner.count(mark.get()) > 0 || find_restriction(mark.get()) != nullptr) {
        continue;
      }
      bool all = true;
      for (const IterSplitExpr& split : uses.splits.at(mark.get())) {
        IterSumExpr r = resolve(split);
        if (r.args.size() != 1 || r.args[0].source == split.source) all = false;
      }
      if (!all) continue;
      for (IterSumExpr& sum : *sums) {
        for (IterSplitExpr& arg : sum.args) {
          if (arg.source == mark) arg = resolve(arg).args[0];
        }
      }
      changed = true;
      break;
    }
  }
}

IterSumExpr IterMapRewriter::expand_fusions(const IterSumExpr& sum) {
  IterSumExpr result{{}, sum.base};
  for (const IterSplitExpr& arg : sum.args) {
    IterSumExpr r = resolve(arg);
    bool same = r.args.size() == 1 && r.args[0].source == arg.source;
    if (same) {
      result.args.push_back(arg);
      continue;
    }
    IterSumExpr inner = expand_fusions(r);
    result.args.insert(result.args.end(), inner.args.begin(), inner.args.end());
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Fusion

namespace {

// Why the terms of a sum are not a mixed-radix number, for the error message.
std::string fusion_failure(const IterSumExpr& sum, const FactorMath& m) {
  std::vector<IterSplitExpr> args = sum.args;
  bool constant = true;
  for (const IterSplitExpr& a : args) {
    if (as_const_int(a.scale) == nullptr || as_const_int(a.extent) == nullptr) constant = false;
  }
  std::string whole = text(to_expr(sum));
  if (!constant) {
    return "the terms of " + whole +
           " could not be proved to form a fusion of iterators (each scale the product of the "
           "extents below it)";
  }
  std::stable_sort(args.begin(), args.end(), [](const IterSplitExpr& a, const IterSplitExpr& b) {
    return std::abs(*as_const_int(a.scale)) < std::abs(*as_const_int(b.scale));
  });
  for (size_t k = 0; k + 1 < args.size(); ++k) {
    int64_t next = std::abs(*as_const_int(args[k].scale)) * *as_const_int(args[k].extent);
    int64_t found = std::abs(*as_const_int(args[k + 1].scale));
    if (found == next) continue;
    IterSplitExpr low = args[k], high = args[k + 1];
    std::ostringstream os;
    os << "in " << whole << ", the term " << text(to_expr(low)) << " ranges over "
       << *as_const_int(low.extent) << " values of step " << std::abs(*as_const_int(low.scale))
       << " but the next term " << text(to_expr(high)) << " has scale " << found;
    if (found < next) {
      os << ": the terms overlap, so the map is not injective";
    } else {
      os << ": the terms leave gaps, so they do not fuse into one iterator";
    }
    return os.str();
  }
  return "the terms of " + whole + " do not form a fusion of iterators";
}

}  // namespace

IterSumExpr IterMapRewriter::use_restricted_fusions(IterSumExpr sum) {
  if (!substitute_restricted_) return sum;
  FactorMath m{analyzer_};
  for (const Restriction& r : restricted_) {
    if (!r.mark->fused) continue;
    const std::vector<IterSplitExpr>& digits = r.mark->fused->args;
    if (digits.size() > sum.args.size()) continue;
    // The lowest digit (relative scale 1) gives the scale c of the fusion in the sum.
    auto find = [&](const IterSplitExpr& digit, const Expr* scale) -> std::optional<size_t> {
      for (size_t k = 0; k < sum.args.size(); ++k) {
        if (same_split(sum.args[k], digit) &&
            (scale == nullptr || m.equal(sum.args[k].scale, *scale))) {
          return k;
        }
      }
      return std::nullopt;
    };
    std::optional<size_t> lowest = find(digits.back(), nullptr);
    if (!lowest) continue;
    Expr c = sum.args[*lowest].scale;
    std::vector<size_t> found;
    for (const IterSplitExpr& digit : digits) {
      Expr scale = m.mul(digit.scale, c);
      std::optional<size_t> k = find(digit, &scale);
      if (!k) break;
      found.push_back(*k);
    }
    if (found.size() != digits.size()) continue;
    std::vector<IterSplitExpr> args;
    for (size_t k = 0; k < sum.args.size(); ++k) {
      if (std::find(found.begin(), found.end(), k) == found.end()) args.push_back(sum.args[k]);
    }
    args.push_back(IterSplitExpr{r.mark, make_one(r.mark->extent->dtype), r.mark->extent, c});
    sum.args = std::move(args);
  }
  return sum;
}

std::optional<IterSumExpr> IterMapRewriter::fuse(const IterSumExpr& original, std::string* error) {
  // Step 0. Digits that form a fusion shrunk by a predicate stand for it, with its extent.
  IterSumExpr sum = use_restricted_fusions(original);
  if (sum.args.size() <= 1) return sum;
  FactorMath m{analyzer_};
  size_t n = sum.args.size();
  // Step 1. Try each term's scale as the lowest digit's and follow the chain of scales.
  std::vector<size_t> candidates(n);
  for (size_t k = 0; k < n; ++k) candidates[k] = k;
  auto magnitude = [&](size_t k) {
    const int64_t* c = as_const_int(sum.args[k].scale);
    return c != nullptr ? std::abs(*c) : std::numeric_limits<int64_t>::max();
  };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](size_t a, size_t b) { return magnitude(a) < magnitude(b); });
  std::vector<IterSplitExpr> chain;
  Expr scale;
  for (size_t candidate : candidates) {
    Expr expected = sum.args[candidate].scale;
    std::vector<bool> used(n, false);
    chain.clear();
    for (size_t step = 0; step < n; ++step) {
      std::optional<size_t> next;
      for (size_t j = 0; j < n && !next; ++j) {
        if (!used[j] && m.equal(sum.args[j].scale, expected)) next = j;
      }
      if (!next) break;
      used[*next] = true;
      chain.push_back(sum.args[*next]);
      expected = m.mul(expected, sum.args[*next].extent);
    }
    if (chain.size() == n) {
      scale = sum.args[candidate].scale;
      break;
    }
  }
  if (!scale.defined()) {
    *error = fusion_failure(sum, m);
    return std::nullopt;
  }
  // Step 2. Adjacent digits of one mark merge into one split.
  std::vector<IterSplitExpr> merged;
  for (const IterSplitExpr& arg : chain) {
    if (!merged.empty()) {
      IterSplitExpr& low = merged.back();
      if (low.source == arg.source &&
          m.equal(arg.lower_factor, m.mul(low.lower_factor, low.extent))) {
        low.extent = m.mul(low.extent, arg.extent);
        continue;
      }
    }
    merged.push_back(arg);
  }
  // Merged digits may form a digit that a predicate bounds; fuse again with it.
  IterSumExpr merged_sum{merged, sum.base};
  IterSumExpr substituted = use_restricted_fusions(merged_sum);
  bool substitutes = substituted.args.size() != merged.size();
  for (size_t k = 0; k < merged.size() && !substitutes; ++k) {
    substitutes = substituted.args[k].source != merged[k].source;
  }
  if (substitutes) return fuse(substituted, error);
  if (merged.size() == 1) return merged_sum;
  // Step 3. The fused mark: the digits from the highest down, scales relative to the lowest.
  IterSumExpr source{{}, zero_like(scale)};
  Expr extent = make_one(merged[0].extent->dtype);
  for (auto it = merged.rbegin(); it != merged.rend(); ++it) {
    IterSplitExpr arg = *it;
    arg.scale = m.exact_div(arg.scale, scale);
    source.args.push_back(arg);
    extent = m.mul(extent, arg.extent);
  }
  MarkPtr mark = fused_mark(source, extent);
  return IterSumExpr{{IterSplitExpr{mark, make_one(extent->dtype), mark->extent, scale}}, sum.base};
}

IterMapRewriter::MarkPtr IterMapRewriter::fused_mark(const IterSumExpr& source,
                                                     const Expr& extent) {
  FactorMath m{analyzer_};
  for (const MarkPtr& mark : fused_marks_) {
    const std::vector<IterSplitExpr>& args = mark->fused->args;
    if (args.size() != source.args.size()) continue;
    bool equal = true;
    for (size_t k = 0; k < args.size() && equal; ++k) {
      equal = same_split(args[k], source.args[k]) && m.equal(args[k].scale, source.args[k].scale);
    }
    if (equal) return mark;
  }
  auto mark = std::make_shared<IterMark>();
  mark->fused = source;
  mark->extent = extent;
  fused_marks_.push_back(mark);
  return mark;
}

}  // namespace kiln::arith
