// The Analyzer: facts about variables and scoped conditions, and the public entry points that
// dispatch to the analyses (const_int_bound.cc, modular_set.cc, the simplifiers, prove.cc).
#include "kiln/arith/analyzer.h"

#include <algorithm>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/support/error.h"
#include "src/arith/analyzer_impl.h"
#include "src/arith/canonical_simplify.h"
#include "src/arith/expr_compare.h"
#include "src/arith/int_math.h"

namespace kiln::arith {

using namespace ir;

// ---------------------------------------------------------------------------------------------
// Scopes

size_t Analyzer::Impl::push_frame() {
  frames.push_back(Frame{undo_log.size(), facts.size()});
  return frames.size();
}

void Analyzer::Impl::pop_frame(size_t depth) {
  // Scopes end in reverse order of entering; ending an outer scope ends the inner ones too.
  if (depth == 0 || depth > frames.size()) return;
  Frame frame = frames[depth - 1];
  frames.resize(depth - 1);
  while (undo_log.size() > frame.undo_size) {
    Undo& undo = undo_log.back();
    if (undo.existed) {
      vars[undo.var] = std::move(undo.old);
    } else {
      vars.erase(undo.var);
    }
    undo_log.pop_back();
  }
  facts.resize(std::min(facts.size(), frame.fact_count));
}

FactScope::FactScope(Analyzer::Impl* impl, const Expr& condition)
    : impl_(impl), depth_(impl->push_frame()) {
  if (!condition.defined()) return;
  try {
    impl->add_condition(condition, true);
  } catch (...) {
    impl->pop_frame(depth_);
    throw;
  }
}

const VarInfo* Analyzer::Impl::find(const Var* v) const {
  auto it = vars.find(v);
  return it == vars.end() ? nullptr : &it->second;
}

void Analyzer::Impl::set_info(VarInfo info, bool scoped) {
  const Var* key = info.var.get();
  auto it = vars.find(key);
  if (scoped && !frames.empty()) {
    bool existed = it != vars.end();
    undo_log.push_back(Undo{key, existed, existed ? it->second : VarInfo{}});
  } else {
    // A lasting fact set inside a scope must survive the scope's end.
    for (Undo& undo : undo_log) {
      if (undo.var == key) {
        undo.existed = true;
        undo.old = info;
      }
    }
  }
  vars[key] = std::move(info);
}

namespace {

ConstIntBound intersect(const ConstIntBound& a, const ConstIntBound& b) {
  return {std::max(a.min_value, b.min_value), std::min(a.max_value, b.max_value)};
}

bool is_index(const Expr& e) {
  return e->dtype.is_int() && e->dtype.is_scalar();
}

}  // namespace

void Analyzer::Impl::bind_range(const Ref<Var>& v, const Range& range, bool scoped) {
  Expr min = simplify(range.min, 4);
  Expr extent = simplify(range.extent, 4);
  if (is_const_int(extent, 1)) {
    bind_value(v, min, scoped);
    return;
  }
  const VarInfo* old = find(v.get());
  VarInfo info = old != nullptr ? *old : VarInfo{};
  info.var = v;
  info.range = Range{min, extent};
  info.value = nullptr;
  ConstIntBound bmin = bound(min), bext = bound(extent);
  int64_t hi = bmin.max_value == kPosInf || bext.max_value == kPosInf
                   ? kPosInf
                   : bound_add(bound_add(bmin.max_value, bext.max_value), -1);
  // The end may be tighter than the sum of the bounds: a loop from a to a + (b - a) ends at b,
  // wherever a is.
  ConstIntBound bend = bound(simplify(add(min, extent), 4));
  if (bend.max_value != kPosInf) hi = std::min(hi, bound_add(bend.max_value, -1));
  // An empty range (a loop that never runs) gives no bound.
  info.bound =
      hi < bmin.min_value ? ConstIntBound::everything() : ConstIntBound{bmin.min_value, hi};
  info.modular = ModularSet::everything();
  set_info(std::move(info), scoped);
  if (!min.is<IntImm>() || !extent.is<IntImm>()) {
    add_condition(le(min, v), scoped);
    add_condition(lt(v, add(min, extent)), scoped);
  }
}

void Analyzer::Impl::bind_value(const Ref<Var>& v, const Expr& value, bool scoped) {
  type_check(value->dtype == v->dtype)
      << "Analyzer::bind: variable " << v->name << " has dtype " << v->dtype
      << " but the value it is bound to has dtype " << value->dtype;
  Expr simplified = simplify(value, 4);
  const Var* var = v.get();
  user_check(!uses_var(simplified, [var](const Var* u) { return u == var; }))
      << "Analyzer::bind: variable " << v->name << " cannot be bound to a value that uses it ("
      << simplified << ")";
  VarInfo info;
  info.var = v;
  info.value = simplified;
  info.bound = bound(simplified);
  info.modular = modular(simplified);
  set_info(std::move(info), scoped);
}

void Analyzer::Impl::add_condition(const Expr& condition, bool scoped) {
  if (const auto* a = condition.as<And>()) {
    add_condition(a->a, scoped);
    add_condition(a->b, scoped);
    return;
  }
  if (is_const_int(condition, 1)) return;
  // likely(c) says c.
  if (const auto* call = condition.as<Call>()) {
    if (call->op == Builtin::Likely) {
      add_condition(call->args[0], scoped);
      return;
    }
  }
  // Scoped facts go to the end of the list and leave with their frame; lasting ones are put
  // before every scoped fact.
  auto record = [&](Expr nonneg) {
    Fact fact{condition, std::move(nonneg)};
    if (scoped || frames.empty()) {
      facts.push_back(std::move(fact));
    } else {
      facts.insert(facts.begin(), std::move(fact));
      for (Frame& f : frames) ++f.fact_count;
    }
  };
  // A comparison of signed integers becomes "difference >= 0" facts.
  bool is_compare = condition.is<LT>() || condition.is<LE>() || condition.is<GT>() ||
                    condition.is<GE>() || condition.is<EQ>();
  const auto* bin = is_compare ? static_cast<const BinaryNode*>(condition.get()) : nullptr;
  if (bin != nullptr && is_index(bin->a)) {
    const Expr& a = bin->a;
    const Expr& b = bin->b;
    if (condition.is<LT>()) record(canonical(sub(sub(b, a), make_one(a->dtype))));
    if (condition.is<LE>()) record(canonical(sub(b, a)));
    if (condition.is<GT>()) record(canonical(sub(sub(a, b), make_one(a->dtype))));
    if (condition.is<GE>()) record(canonical(sub(a, b)));
    if (condition.is<EQ>()) {
      record(canonical(sub(a, b)));
      record(canonical(sub(b, a)));
    }
    // Step 2. A variable compared with an expression of known bounds gets a tighter bound.
    auto tighten = [&](const Expr& var_side, ConstIntBound limit) {
      const auto* v = var_side.as<Var>();
      if (v == nullptr) return;
      ConstIntBound current = bound(var_side);
      ConstIntBound tightened = intersect(current, limit);
      if (tightened == current || tightened.min_value > tightened.max_value) return;
      const VarInfo* old = find(v);
      VarInfo info = old != nullptr ? *old : VarInfo{};
      info.var = Ref<Var>(v);
      info.bound = tightened;
      set_info(std::move(info), scoped);
    };
    ConstIntBound ba = bound(a), bb = bound(b);
    auto below = [](int64_t hi, int64_t d) {
      return ConstIntBound{kNegInf, hi == kPosInf ? kPosInf : bound_add(hi, -d)};
    };
    auto above = [](int64_t lo, int64_t d) {
      return ConstIntBound{lo == kNegInf ? kNegInf : bound_add(lo, d), kPosInf};
    };
    if (condition.is<LT>()) {
      tighten(a, below(bb.max_value, 1));
      tighten(b, above(ba.min_value, 1));
    } else if (condition.is<LE>()) {
      tighten(a, below(bb.max_value, 0));
      tighten(b, above(ba.min_value, 0));
    } else if (condition.is<GT>()) {
      tighten(b, below(ba.max_value, 1));
      tighten(a, above(bb.min_value, 1));
    } else if (condition.is<GE>()) {
      tighten(b, below(ba.max_value, 0));
      tighten(a, above(bb.min_value, 0));
    } else {
      tighten(a, bb);
      tighten(b, ba);
      // Step 3. floormod(v, c) == r tells what v is modulo c.
      const auto* mod = a.as<FloorMod>();
      const int64_t* r = as_const_int(b);
      const int64_t* c = mod != nullptr ? as_const_int(mod->b) : nullptr;
      const auto* v = mod != nullptr ? mod->a.as<Var>() : nullptr;
      if (v != nullptr && c != nullptr && r != nullptr && *c > 0 && *r >= 0 && *r < *c) {
        const VarInfo* old = find(v);
        VarInfo info = old != nullptr ? *old : VarInfo{};
        if (info.modular.is_everything()) {
          info.var = Ref<Var>(v);
          info.modular = ModularSet{*c, *r};
          set_info(std::move(info), scoped);
        }
      }
    }
    return;
  }
  // A bool variable (or its negation) that is known is a constant.
  const Expr& atom = condition.is<Not>() ? condition.as<Not>()->a : condition;
  if (const auto* v = atom.as<Var>()) {
    if (v->dtype.is_bool() && v->dtype.is_scalar()) {
      const VarInfo* old = find(v);
      VarInfo info = old != nullptr ? *old : VarInfo{};
      info.var = Ref<Var>(v);
      info.bound = ConstIntBound::single(condition.is<Not>() ? 0 : 1);
      set_info(std::move(info), scoped);
    }
  }
  record(nullptr);
}

Expr Analyzer::Impl::simplify(const Expr& e, int max_rounds) {
  Expr current = rewrite(e);
  for (int round = 0; round < max_rounds; ++round) {
    Expr next = rewrite(canonical(current));
    if (next.same_as(current) || deep_equal(next, current)) break;
    current = next;
  }
  return deep_equal(current, e) ? e : current;
}

// ---------------------------------------------------------------------------------------------
// Public interface

Analyzer::Analyzer() : impl_(std::make_unique<Impl>()) {}
Analyzer::~Analyzer() = default;

void Analyzer::bind(const Ref<Var>& v, const Range& range, bool allow_override) {
  internal_check(v.defined() && range.min.defined() && range.extent.defined())
      << "Analyzer::bind: null variable or range";
  const VarInfo* old = impl_->find(v.get());
  if (old != nullptr && old->bound_by_user && !allow_override) {
    bool same = old->range.min.defined() && deep_equal(old->range.min, range.min) &&
                deep_equal(old->range.extent, range.extent);
    user_check(same) << "Analyzer::bind: variable " << v->name
                     << " is already bound; pass allow_override to bind it again";
    return;
  }
  impl_->bind_range(v, range, false);
  VarInfo info = *impl_->find(v.get());
  info.bound_by_user = true;
  impl_->set_info(std::move(info), false);
}

void Analyzer::bind(const Ref<Var>& v, const Expr& value, bool allow_override) {
  internal_check(v.defined() && value.defined()) << "Analyzer::bind: null variable or value";
  const VarInfo* old = impl_->find(v.get());
  if (old != nullptr && old->bound_by_user && !allow_override) {
    bool same = old->value.defined() && deep_equal(old->value, impl_->simplify(value, 4));
    user_check(same) << "Analyzer::bind: variable " << v->name
                     << " is already bound; pass allow_override to bind it again";
    return;
  }
  impl_->bind_value(v, value, false);
  VarInfo info = *impl_->find(v.get());
  info.bound_by_user = true;
  impl_->set_info(std::move(info), false);
}

void Analyzer::update(const Ref<Var>& v, const ConstIntBound& bound, bool allow_override) {
  internal_check(v.defined()) << "Analyzer::update: null variable";
  const VarInfo* old = impl_->find(v.get());
  VarInfo info = old != nullptr ? *old : VarInfo{};
  info.var = v;
  ConstIntBound merged = allow_override || old == nullptr ? bound : intersect(info.bound, bound);
  user_check(merged.min_value <= merged.max_value)
      << "Analyzer::update: the bound " << bound << " of variable " << v->name
      << " contradicts the known bound " << info.bound;
  info.bound = merged;
  impl_->set_info(std::move(info), false);
}

void Analyzer::update(const Ref<Var>& v, const ModularSet& set, bool allow_override) {
  internal_check(v.defined()) << "Analyzer::update: null variable";
  user_check(set.coeff >= 0 && (set.coeff == 0 || (set.base >= 0 && set.base < set.coeff)))
      << "Analyzer::update: modular set " << set << " of variable " << v->name
      << " is not normalized (expected coeff >= 0 and 0 <= base < coeff)";
  const VarInfo* old = impl_->find(v.get());
  VarInfo info = old != nullptr ? *old : VarInfo{};
  info.var = v;
  if (allow_override || info.modular.is_everything()) info.modular = set;
  impl_->set_info(std::move(info), false);
}

ConstIntBound Analyzer::const_int_bound(const Expr& e) {
  return impl_->bound(e);
}

ModularSet Analyzer::modular_set(const Expr& e) {
  return impl_->modular(e);
}

Expr Analyzer::rewrite_simplify(const Expr& e) {
  return impl_->rewrite(e);
}

Expr Analyzer::canonical_simplify(const Expr& e) {
  return impl_->canonical(e);
}

Expr Analyzer::simplify(const Expr& e, int max_rounds) {
  return impl_->simplify(e, max_rounds);
}

bool Analyzer::can_prove(const Expr& cond) {
  Expr s = impl_->simplify(cond, 4);
  const int64_t* c = as_const_int(s);
  return c != nullptr && *c != 0;
}

bool Analyzer::can_prove_greater_equal(const Expr& e, int64_t c) {
  if (!e->dtype.is_int() && !e->dtype.is_uint()) return false;
  ConstIntBound b = impl_->bound(e);
  if (b.min_value >= c) return true;
  if (!is_index(e) || wrap_to_dtype(c, e->dtype) != c) return false;
  return impl_->prove_nonneg(sub(e, make_const(e->dtype, c)));
}

bool Analyzer::can_prove_less(const Expr& e, int64_t c) {
  if (!e->dtype.is_int() && !e->dtype.is_uint()) return false;
  ConstIntBound b = impl_->bound(e);
  if (b.max_value < c) return true;
  std::optional<int64_t> limit = checked_sub(c, 1);
  if (!is_index(e) || !limit || wrap_to_dtype(*limit, e->dtype) != *limit) return false;
  // e < c  <=>  (c - 1) - e >= 0
  return impl_->prove_nonneg(sub(make_const(e->dtype, *limit), e));
}

bool Analyzer::can_prove_equal(const Expr& a, const Expr& b) {
  if (deep_equal(a, b)) return true;
  if (is_index(a) && is_index(b)) {
    Expr d = impl_->simplify(sub(a, b), 4);
    return is_const_int(d, 0);
  }
  return can_prove(eq(a, b));
}

ConstraintScope Analyzer::enter_constraint(const Expr& condition) {
  return ConstraintScope(this, condition);
}

ConstraintScope::ConstraintScope(Analyzer* analyzer, const Expr& condition) : analyzer_(analyzer) {
  internal_check(analyzer != nullptr && condition.defined())
      << "ConstraintScope: null analyzer or condition";
  Analyzer::Impl* impl = analyzer->impl();
  Expr simplified = impl->simplify(condition, 4);
  depth_ = impl->push_frame();
  impl->add_condition(simplified, true);
}

ConstraintScope Analyzer::enter_range(const Ref<Var>& v, const Range& range) {
  return ConstraintScope(this, v, range);
}

ConstraintScope::ConstraintScope(Analyzer* analyzer, const Ref<Var>& v, const Range& range)
    : analyzer_(analyzer) {
  internal_check(analyzer != nullptr && v.defined() && range.min.defined() &&
                 range.extent.defined())
      << "ConstraintScope: null analyzer, variable or range";
  Analyzer::Impl* impl = analyzer->impl();
  depth_ = impl->push_frame();
  try {
    impl->bind_range(v, range, true);
  } catch (...) {
    impl->pop_frame(depth_);
    throw;
  }
}

ConstraintScope::~ConstraintScope() {
  analyzer_->impl()->pop_frame(depth_);
}

}  // namespace kiln::arith
