// Fuzz test of the simplifiers: random integer expressions (int32 and int64) over a few
// variables, some bound to ranges (negative ones too) or constrained by a scoped condition, are
// simplified and then evaluated, original and simplified, on random values of the variables.
// Every evaluation where the original is defined (no division by zero, no overflow of its
// dtype) must agree. KILN_FUZZ_ITERATIONS sets the number of expressions (default 100000),
// KILN_FUZZ_SEED the seed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <random>
#include <sstream>
#include <unordered_map>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"

namespace kiln::arith {
namespace {

using namespace ir;

using Values = std::unordered_map<const Var*, int64_t>;

int64_t env_or(const char* name, int64_t fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::strtoll(text, nullptr, 10) : fallback;
}

// ---------------------------------------------------------------------------------------------
// Evaluation. `strict` evaluates the original: an overflow of the dtype or a division by zero
// makes the case undefined. Otherwise arithmetic wraps in the dtype, as compiled code does.

int64_t floordiv_ref(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

class Evaluator {
 public:
  // Evaluates lane `lane` of vector expressions (a scalar expression has one lane).
  Evaluator(const Values& values, bool strict, int lane = 0)
      : values_(values), strict_(strict), lane_(lane) {}
  // A copy of the evaluator whose variables include `v` = `value` (for the body of a let).
  Evaluator with(const Var* v, int64_t value) const {
    Evaluator inner = *this;
    inner.values_[v] = value;
    return inner;
  }

  std::optional<int64_t> eval(const Expr& e) {
    DataType t = e->dtype;
    switch (e->kind()) {
      case NodeKind::IntImm:
        return e.as<IntImm>()->value;
      case NodeKind::Var: {
        auto it = values_.find(e.as<Var>());
        if (it == values_.end()) return std::nullopt;
        return it->second;
      }
      case NodeKind::Add:
      case NodeKind::Sub:
      case NodeKind::Mul:
      case NodeKind::FloorDiv:
      case NodeKind::FloorMod:
      case NodeKind::Div:
      case NodeKind::Mod:
      case NodeKind::Min:
      case NodeKind::Max: {
        const auto* n = static_cast<const BinaryNode*>(e.get());
        std::optional<int64_t> a = eval(n->a), b = eval(n->b);
        if (!a || !b) return std::nullopt;
        return arith(e->kind(), t, *a, *b);
      }
      case NodeKind::EQ:
      case NodeKind::NE:
      case NodeKind::LT:
      case NodeKind::LE:
      case NodeKind::GT:
      case NodeKind::GE:
      case NodeKind::And:
      case NodeKind::Or: {
        const auto* n = static_cast<const BinaryNode*>(e.get());
        std::optional<int64_t> a = eval(n->a), b = eval(n->b);
        if (!a || !b) return std::nullopt;
        return logic(e->kind(), *a, *b);
      }
      case NodeKind::Not: {
        std::optional<int64_t> a = eval(e.as<Not>()->a);
        if (!a) return std::nullopt;
        return *a == 0 ? 1 : 0;
      }
      case NodeKind::Select: {
        const auto* n = e.as<Select>();
        // Both arms are evaluated.
        std::optional<int64_t> c = eval(n->condition), a = eval(n->true_value),
                               b = eval(n->false_value);
        if (!c || !a || !b) return std::nullopt;
        return *c != 0 ? *a : *b;
      }
      case NodeKind::Ramp: {
        const auto* n = e.as<Ramp>();
        std::optional<int64_t> base = eval(n->base), stride = eval(n->stride);
        if (!base || !stride) return std::nullopt;
        return fit(static_cast<__int128>(*base) + static_cast<__int128>(*stride) * lane_,
                   n->base->dtype);
      }
      case NodeKind::Broadcast:
        return eval(e.as<Broadcast>()->value);
      case NodeKind::Cast: {
        // Integer conversions wrap to the target type; that is their meaning, not an overflow.
        std::optional<int64_t> v = eval(e.as<Cast>()->value);
        if (!v) return std::nullopt;
        return wrap_to_dtype(*v, t.element_of());
      }
      case NodeKind::Let: {
        const auto* n = e.as<Let>();
        std::optional<int64_t> v = eval(n->value);
        if (!v) return std::nullopt;
        return with(n->var.get(), *v).eval(n->body);
      }
      case NodeKind::Call: {
        const auto* n = e.as<Call>();
        if (n->op != Builtin::IfThenElse) return std::nullopt;
        // Only the chosen arm is evaluated.
        std::optional<int64_t> c = eval(n->args[0]);
        if (!c) return std::nullopt;
        return eval(n->args[*c != 0 ? 1 : 2]);
      }
      default:
        return std::nullopt;
    }
  }

 private:
  // Signed results must fit (the no-overflow contract of index arithmetic); unsigned ones wrap
  // by definition.
  std::optional<int64_t> fit(__int128 v, DataType t) {
    int64_t wrapped = wrap_to_dtype(static_cast<int64_t>(v), t.element_of());
    if (strict_ && t.is_int() && static_cast<__int128>(wrapped) != v) return std::nullopt;
    return wrapped;
  }

  std::optional<int64_t> arith(NodeKind kind, DataType t, int64_t a, int64_t b) {
    __int128 x = a, y = b;
    switch (kind) {
      case NodeKind::Add:
        return fit(x + y, t);
      case NodeKind::Sub:
        return fit(x - y, t);
      case NodeKind::Mul:
        return fit(x * y, t);
      case NodeKind::Min:
        return a < b ? a : b;
      case NodeKind::Max:
        return a > b ? a : b;
      default:
        break;
    }
    if (b == 0) return std::nullopt;
    if (b == -1) {
      // The quotient -a may overflow; the remainder is 0.
      if (kind == NodeKind::FloorMod || kind == NodeKind::Mod) return 0;
      return fit(-x, t);
    }
    switch (kind) {
      case NodeKind::FloorDiv:
        return floordiv_ref(a, b);
      case NodeKind::FloorMod:
        return a - floordiv_ref(a, b) * b;
      case NodeKind::Div:
        return a / b;
      default:
        return a % b;
    }
  }

  static int64_t logic(NodeKind kind, int64_t a, int64_t b) {
    switch (kind) {
      case NodeKind::EQ:
        return a == b;
      case NodeKind::NE:
        return a != b;
      case NodeKind::LT:
        return a < b;
      case NodeKind::LE:
        return a <= b;
      case NodeKind::GT:
        return a > b;
      case NodeKind::GE:
        return a >= b;
      case NodeKind::And:
        return (a != 0) && (b != 0);
      default:
        return (a != 0) || (b != 0);
    }
  }

  Values values_;
  bool strict_;
  int lane_;
};

// ---------------------------------------------------------------------------------------------
// Random expressions.

struct VarSpec {
  Ref<Var> var;
  bool bound = false;
  int64_t lo = 0, extent = 0;
};

class Generator {
 public:
  Generator(std::mt19937_64* rng, DataType t, const std::vector<VarSpec>* vars)
      : rng_(*rng), t_(t), vars_(*vars) {}

  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(int percent) { return uniform(0, 99) < percent; }

  // A constant of the expression type; unsigned types take the magnitude.
  Expr imm(int64_t v) { return make<IntImm>(t_, t_.is_uint() && v < 0 ? -v : v); }

  Expr constant() {
    int64_t v = chance(85) ? uniform(-9, 9) : uniform(-100, 100);
    if (chance(2)) v = chance(50) ? 4096 : -65536;
    return imm(v);
  }

  // A divisor: mostly a non-zero constant (powers of two often), sometimes an expression.
  Expr divisor(int depth) {
    if (chance(25)) return integer(depth - 1);
    static const int64_t kDivisors[] = {1, 2, 3, 4, 8, 16, -1, -2, -3, -4, -8, 5, 6, 7, 32};
    return imm(kDivisors[uniform(0, 14)]);
  }

  Expr integer(int depth) {
    if (depth <= 0 || chance(20)) {
      if (chance(75)) return vars_[uniform(0, vars_.size() - 1)].var;
      return constant();
    }
    switch (uniform(0, 17)) {
      case 0:
      case 1:
        return make<Add>(t_, integer(depth - 1), integer(depth - 1));
      case 2:
      case 3:
        return make<Sub>(t_, integer(depth - 1), integer(depth - 1));
      case 4:
        return make<Mul>(t_, integer(depth - 1), integer(depth - 1));
      case 5:
        return make<Mul>(t_, integer(depth - 1), constant());
      case 6:
        return make<FloorDiv>(t_, integer(depth - 1), divisor(depth));
      case 7:
        return make<FloorMod>(t_, integer(depth - 1), divisor(depth));
      case 8:
        return make<Div>(t_, integer(depth - 1), divisor(depth));
      case 9:
        return make<Mod>(t_, integer(depth - 1), divisor(depth));
      case 10:
        return make<Min>(t_, integer(depth - 1), integer(depth - 1));
      case 11:
        return make<Max>(t_, integer(depth - 1), integer(depth - 1));
      case 12:
        if (chance(20)) {
          return make<Call>(
              t_, Builtin::IfThenElse,
              std::vector<Expr>{boolean(depth - 1), integer(depth - 1), integer(depth - 1)});
        }
        return make<Select>(t_, boolean(depth - 1), integer(depth - 1), integer(depth - 1));
      case 13:
        // A split pattern: (a // c) * c + a % c and friends.
        return split(depth);
      case 14:
        return index(depth);
      case 15:
        if (chance(50)) {
          // Through a narrower or a wider type and back.
          DataType other = chance(50) ? DataType::int_(16) : DataType::int64();
          if (other == t_) other = DataType::int32();
          return make<Cast>(t_, make<Cast>(other, integer(depth - 1)));
        } else {
          // let v = value in body, the body using v in place of one of the variables.
          Ref<Var> v = make_var("v", t_);
          Expr body = substitute(integer(depth - 1),
                                 VarMap{{vars_[uniform(0, vars_.size() - 1)].var.get(), Expr(v)}});
          return make<Let>(t_, v, integer(depth - 1), body);
        }
      default:
        return make<Add>(t_, make<Mul>(t_, integer(depth - 1), constant()), integer(depth - 1));
    }
  }

  Expr split(int depth) {
    Expr a = integer(depth - 1);
    Expr c = imm(uniform(1, 8) * (chance(80) ? 1 : -1));
    switch (uniform(0, 3)) {
      case 0:
        return make<Add>(t_, make<Mul>(t_, make<FloorDiv>(t_, a, c), c), make<FloorMod>(t_, a, c));
      case 1:
        return make<Sub>(t_, a, make<Mul>(t_, make<FloorDiv>(t_, a, c), c));
      case 2:
        return make<FloorMod>(t_, make<FloorDiv>(t_, a, c), imm(uniform(1, 6)));
      default:
        return make<Add>(t_, make<Mul>(t_, make<Div>(t_, a, c), c), make<Mod>(t_, a, c));
    }
  }

  // An index of a split loop nest, (v1*c1 + v2*c2 + v3) // d or % d with c's and d's powers of
  // two, sometimes nested: the shapes that the canonical simplifier must resolve.
  Expr index(int depth) {
    auto power = [&]() { return int64_t{1} << uniform(0, 4); };
    auto var = [&]() { return Expr(vars_[uniform(0, vars_.size() - 1)].var); };
    Expr e = var();
    for (int terms = static_cast<int>(uniform(1, 2)); terms > 0; --terms) {
      e = make<Add>(t_, make<Mul>(t_, var(), imm(power())), e);
    }
    if (chance(30)) e = make<Add>(t_, e, imm(uniform(-5, 5)));
    for (int ops = static_cast<int>(uniform(1, 2)); ops > 0; --ops) {
      Expr d = imm(power());
      e = chance(50) ? Expr(make<FloorDiv>(t_, e, d)) : Expr(make<FloorMod>(t_, e, d));
    }
    return e;
  }

  // A vector of `lanes` lanes built from ramps and broadcasts of scalar expressions.
  Expr vector(int depth, int lanes) {
    DataType vt = t_.with_lanes(lanes);
    auto bcast = [&](Expr v) { return Expr(make<Broadcast>(vt, v, lanes)); };
    if (depth <= 0 || chance(30)) {
      if (chance(60)) {
        return make<Ramp>(vt, integer(1), make<IntImm>(t_, uniform(-3, 4)), lanes);
      }
      return bcast(integer(1));
    }
    switch (uniform(0, 7)) {
      case 0:
        return make<Add>(vt, vector(depth - 1, lanes), vector(depth - 1, lanes));
      case 1:
        return make<Sub>(vt, vector(depth - 1, lanes), vector(depth - 1, lanes));
      case 2:
        return make<Mul>(vt, vector(depth - 1, lanes), bcast(constant()));
      case 3:
        return make<FloorDiv>(vt, vector(depth - 1, lanes), bcast(divisor(0)));
      case 4:
        return make<FloorMod>(vt, vector(depth - 1, lanes), bcast(divisor(0)));
      case 5:
        return make<Min>(vt, vector(depth - 1, lanes), vector(depth - 1, lanes));
      case 6: {
        Expr c = make<LT>(DataType::bool_(lanes), vector(depth - 1, lanes), vector(0, lanes));
        return make<Select>(vt, c, vector(depth - 1, lanes), vector(depth - 1, lanes));
      }
      default:
        return make<Max>(vt, vector(depth - 1, lanes), vector(depth - 1, lanes));
    }
  }

  Expr boolean(int depth) {
    DataType b = DataType::bool_();
    if (depth <= 0 || chance(50)) {
      Expr x = integer(depth - 1), y = chance(50) ? constant() : integer(depth - 1);
      switch (uniform(0, 5)) {
        case 0:
          return make<EQ>(b, x, y);
        case 1:
          return make<NE>(b, x, y);
        case 2:
          return make<LT>(b, x, y);
        case 3:
          return make<LE>(b, x, y);
        case 4:
          return make<GT>(b, x, y);
        default:
          return make<GE>(b, x, y);
      }
    }
    switch (uniform(0, 2)) {
      case 0:
        return make<And>(b, boolean(depth - 1), boolean(depth - 1));
      case 1:
        return make<Or>(b, boolean(depth - 1), boolean(depth - 1));
      default:
        return make<Not>(b, boolean(depth - 1));
    }
  }

 private:
  std::mt19937_64& rng_;
  DataType t_;
  const std::vector<VarSpec>& vars_;
};

std::string describe(const Values& values, const std::vector<VarSpec>& vars) {
  std::ostringstream os;
  for (const VarSpec& v : vars) {
    os << "  " << v.var->name << " = " << values.at(v.var.get());
    if (v.bound) os << "  (bound to [" << v.lo << ", " << v.lo + v.extent << "))";
    os << "\n";
  }
  return os.str();
}

TEST(SimplifyFuzz, SimplifiedExpressionsEvaluateLikeTheOriginals) {
  const int64_t iterations = env_or("KILN_FUZZ_ITERATIONS", 100000);
  const uint64_t seed = static_cast<uint64_t>(env_or("KILN_FUZZ_SEED", 20240611));
  std::mt19937_64 rng(seed);
  int64_t checked = 0, mismatches = 0;
  for (int64_t iter = 0; iter < iterations && mismatches < 5; ++iter) {
    // Mostly signed index types; some uint32, whose arithmetic wraps by definition.
    DataType t = iter % 10 == 9  ? DataType::uint(32)
                 : iter % 2 == 0 ? DataType::int32()
                                 : DataType::int64();
    std::vector<VarSpec> vars;
    const char* names[] = {"x", "y", "z", "w"};
    std::uniform_int_distribution<int> coin(0, 99);
    int num_vars = 2 + coin(rng) % 3;
    for (int i = 0; i < num_vars; ++i) vars.push_back(VarSpec{make_var(names[i], t)});
    Analyzer ana;
    for (VarSpec& v : vars) {
      if (coin(rng) < 50) {
        v.bound = true;
        v.lo = std::uniform_int_distribution<int64_t>(t.is_uint() ? 0 : -20, 20)(rng);
        v.extent = std::uniform_int_distribution<int64_t>(1, 24)(rng);
        ana.bind(v.var, Range{make_const(t, v.lo), make_const(t, v.extent)});
      }
    }
    Generator gen(&rng, t, &vars);
    int depth = 1 + coin(rng) % 4;
    int kind = coin(rng);
    int lanes = kind < 12 && t.is_int() ? 2 + coin(rng) % 7 : 1;
    Expr original = lanes > 1   ? gen.vector(depth, lanes)
                    : kind < 75 ? gen.integer(depth)
                                : gen.boolean(depth);
    // Sometimes a scoped condition: the values below then satisfy it.
    Expr constraint = coin(rng) < 15 ? gen.boolean(1) : Expr();
    Expr simplified;
    int mode = coin(rng);
    {
      std::optional<ConstraintScope> scope;
      if (constraint.defined()) scope.emplace(&ana, constraint);
      simplified = mode < 70   ? ana.simplify(original)
                   : mode < 85 ? ana.rewrite_simplify(original)
                               : ana.canonical_simplify(original);
    }
    if (std::getenv("KILN_FUZZ_PRINT") != nullptr && iter < 40) {
      std::cout << original << "\n    => " << simplified << "\n";
    }
    const char* mode_name = mode < 70   ? "simplify"
                            : mode < 85 ? "rewrite_simplify"
                                        : "canonical_simplify";
    for (int sample = 0; sample < 6; ++sample) {
      Values values;
      for (const VarSpec& v : vars) {
        int64_t value;
        if (v.bound) {
          value = v.lo + std::uniform_int_distribution<int64_t>(0, v.extent - 1)(rng);
        } else {
          int64_t span = coin(rng) < 80 ? 12 : 1000;
          value = std::uniform_int_distribution<int64_t>(t.is_uint() ? 0 : -span, span)(rng);
        }
        values[v.var.get()] = value;
      }
      if (constraint.defined()) {
        std::optional<int64_t> holds = Evaluator(values, true).eval(constraint);
        if (!holds || *holds == 0) continue;
      }
      std::optional<int64_t> expected, actual;
      int lane = 0;
      for (; lane < lanes; ++lane) {
        expected = Evaluator(values, true, lane).eval(original);
        if (!expected) break;
        actual = Evaluator(values, false, lane).eval(simplified);
        if (actual != expected) break;
      }
      if (!expected) continue;
      ++checked;
      if (actual != expected) {
        ++mismatches;
        ADD_FAILURE() << "mismatch (seed " << seed << ", iteration " << iter << ", " << mode_name
                      << ", dtype " << t << ")\n  original:   " << original
                      << "\n  simplified: " << simplified
                      << (constraint.defined() ? "\n  under:      " : "")
                      << (constraint.defined() ? to_script(constraint) : "") << "\n  expected "
                      << *expected << " in lane " << lane << ", got "
                      << (actual ? std::to_string(*actual) : "undefined") << " with\n"
                      << describe(values, vars);
        break;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  // Most cases must be defined, or the test checks little.
  EXPECT_GT(checked, iterations);
  std::cout << "simplify fuzz: " << iterations << " expressions, " << checked
            << " evaluations compared, seed " << seed << "\n";
}

}  // namespace
}  // namespace kiln::arith
