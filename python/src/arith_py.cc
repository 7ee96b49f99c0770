// Python bindings of the arithmetic analysis (module kiln._kiln.arith): Analyzer with its
// simplifiers, bounds, modular sets, facts and constraint scopes; ConstIntBound, ModularSet and
// IntSet; and affine iterator maps (detect_iter_map, iter_map_simplify,
// inverse_affine_iter_map). Names and argument orders follow TVM's tvm.arith.
#include <pybind11/stl.h>

#include <cctype>
#include <memory>
#include <sstream>

#include "bindings.h"
#include "convert.h"
#include "kiln/arith/analyzer.h"
#include "kiln/arith/int_set.h"
#include "kiln/arith/iter_map.h"
#include "kiln/ir/printer.h"
#include "kiln/support/error.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::ir;
using namespace kiln::arith;

namespace {

// TVM's sentinels: NEG_INF is -POS_INF, one more than int64's least value, which kiln uses.
constexpr int64_t kPythonPosInf = ConstIntBound::kPosInf;
constexpr int64_t kPythonNegInf = -ConstIntBound::kPosInf;

int64_t to_python_end(int64_t v) {
  return v == ConstIntBound::kNegInf ? kPythonNegInf : v;
}

int64_t from_python_end(int64_t v) {
  return v <= kPythonNegInf ? ConstIntBound::kNegInf : v;
}

Ref<Var> to_var(py::handle obj, const char* api, const char* what) {
  type_check(py::isinstance<Var>(obj))
      << api << ": " << what << " must be a tir.Var, found an object of type "
      << python_type_name(obj);
  return obj.cast<Ref<Var>>();
}

// A dict key or value that is a loop range: a Range, or an int extent n for [0, n).
Range to_range(py::handle obj, const char* api, const Ref<Var>& var) {
  if (py::isinstance<Range>(obj)) return obj.cast<Range>();
  if (py::isinstance<py::int_>(obj) && !py::isinstance<py::bool_>(obj)) {
    return Range{make_zero(var->dtype), make_const(var->dtype, obj.cast<int64_t>())};
  }
  user_error(ErrorKind::kType) << api << ": the range of " << var->name
                               << " must be a tir.Range or an int extent, found an object of type "
                               << python_type_name(obj);
}

// Keeps the variables of a Python dict alive while a C++ map keyed by pointers is used.
struct LoopRanges {
  std::vector<Ref<Var>> vars;
  IterRanges ranges;
};

LoopRanges to_loop_ranges(py::handle input_iters, const char* api) {
  if (!py::isinstance<py::dict>(input_iters)) {
    raise_type_error(api, "input_iters", "a dict from tir.Var to Range or int extent", input_iters);
  }
  LoopRanges result;
  for (auto [key, value] : py::reinterpret_borrow<py::dict>(input_iters)) {
    Ref<Var> v = to_var(key, api, "a key of input_iters");
    result.ranges[v.get()] = to_range(value, api, v);
    result.vars.push_back(v);
  }
  return result;
}

struct SetMap {
  std::vector<Ref<Var>> vars;
  IntSetMap sets;
};

// dom_map: var -> IntSet or Range.
SetMap to_set_map(py::handle dom_map, const char* api) {
  if (!py::isinstance<py::dict>(dom_map)) {
    raise_type_error(api, "dom_map", "a dict from tir.Var to IntSet, Range or int extent", dom_map);
  }
  SetMap result;
  for (auto [key, value] : py::reinterpret_borrow<py::dict>(dom_map)) {
    Ref<Var> v = to_var(key, api, "a key of dom_map");
    if (py::isinstance<IntSet>(value)) {
      result.sets[v.get()] = value.cast<IntSet>();
    } else {
      result.sets[v.get()] = IntSet::from_range(to_range(value, api, v));
    }
    result.vars.push_back(v);
  }
  return result;
}

std::vector<Expr> to_exprs(const py::handle& seq, const char* api, const char* param) {
  if (!py::isinstance<py::list>(seq) && !py::isinstance<py::tuple>(seq)) {
    raise_type_error(api, param, "a list of expressions", seq);
  }
  std::vector<Expr> exprs;
  for (py::handle item : seq) {
    std::string entry = std::string(param) + "[" + std::to_string(exprs.size()) + "]";
    exprs.push_back(to_expr(item, api, entry.c_str()));
  }
  return exprs;
}

IterMapLevel to_level(const py::handle& obj) {
  if (py::isinstance<IterMapLevel>(obj)) return obj.cast<IterMapLevel>();
  if (!py::isinstance<py::str>(obj)) {
    raise_type_error("detect_iter_map", "check_level", "a str or an IterMapLevel", obj);
  }
  std::string text = obj.cast<std::string>();
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (text == "bijective") return IterMapLevel::kBijective;
  if (text == "surjective") return IterMapLevel::kSurjective;
  if (text == "no_check" || text == "nocheck") return IterMapLevel::kNoCheck;
  user_error(ErrorKind::kValue)
      << "detect_iter_map: check_level must be \"bijective\", \"surjective\", \"no_check\" or an "
         "IterMapLevel, found "
      << py::repr(obj).cast<std::string>();
}

// The analyzer to use: the caller's, or a fresh one owned by `holder`.
Analyzer* analyzer_or_new(const py::object& analyzer, std::unique_ptr<Analyzer>* holder,
                          const char* api) {
  if (!analyzer.is_none()) return &to_object<Analyzer>(analyzer, api, "analyzer", "an Analyzer");
  *holder = std::make_unique<Analyzer>();
  return holder->get();
}

py::object end_or_none(const Expr& e) {
  return e.defined() ? py::cast(e) : py::none();
}

std::vector<IntSet> to_int_sets(py::handle obj, const char* api) {
  if (!py::isinstance<py::list>(obj) && !py::isinstance<py::tuple>(obj)) {
    raise_type_error(api, "sets", "a list of IntSets", obj);
  }
  std::vector<IntSet> sets;
  for (py::handle item : obj) sets.push_back(to_object<IntSet>(item, api, "sets[i]", "an IntSet"));
  return sets;
}

std::string int_set_repr(const IntSet& s) {
  std::ostringstream os;
  os << "IntSet" << s;
  return os.str();
}

// `with analyzer.constraint_scope(cond):` makes cond known inside the block.
class PyConstraintScope {
 public:
  PyConstraintScope(Analyzer* analyzer, Expr condition)
      : analyzer_(analyzer), condition_(std::move(condition)) {}
  void enter() {
    user_check(!scope_) << "Analyzer.constraint_scope: the scope of " << to_script(condition_)
                        << " is already entered; make a new one for a nested block";
    scope_ = std::make_unique<ConstraintScope>(analyzer_, condition_);
  }
  void exit() { scope_.reset(); }

 private:
  Analyzer* analyzer_;
  Expr condition_;
  std::unique_ptr<ConstraintScope> scope_;
};

void bind_bounds(py::module_& m) {
  py::class_<ConstIntBound> bound(m, "ConstIntBound",
                                  "Constant bounds [min_value, max_value] of an integer "
                                  "expression; POS_INF / NEG_INF stand for no bound.");
  bound
      .def(py::init([](py::handle min_value, py::handle max_value) {
             const char* api = "ConstIntBound";
             return ConstIntBound{from_python_end(to_int(min_value, api, "min_value")),
                                  to_int(max_value, api, "max_value")};
           }),
           py::arg("min_value"), py::arg("max_value"),
           "The bounds [min_value, max_value]; NEG_INF and POS_INF for none.")
      .def_property_readonly(
          "min_value", [](const ConstIntBound& b) { return to_python_end(b.min_value); },
          "The lower bound, or NEG_INF.")
      .def_property_readonly(
          "max_value", [](const ConstIntBound& b) { return b.max_value; },
          "The upper bound, or POS_INF.")
      .def("__eq__", [](const ConstIntBound& a, const ConstIntBound& b) { return a == b; })
      .def("__repr__", [](const ConstIntBound& b) {
        std::ostringstream os;
        os << "ConstIntBound" << b;
        return os.str();
      });
  bound.attr("POS_INF") = py::int_(kPythonPosInf);
  bound.attr("NEG_INF") = py::int_(kPythonNegInf);

  py::class_<ModularSet>(m, "ModularSet",
                         "Values coeff * k + base for integers k (coeff 0: exactly base).")
      .def(py::init([](py::handle coeff, py::handle base) {
             return ModularSet{to_int(coeff, "ModularSet", "coeff"),
                               to_int(base, "ModularSet", "base")};
           }),
           py::arg("coeff"), py::arg("base"), "The set coeff * k + base.")
      .def_readonly("coeff", &ModularSet::coeff, "The modulus (0: a single value).")
      .def_readonly("base", &ModularSet::base, "The remainder (the value itself when coeff is 0).")
      .def("__eq__", [](const ModularSet& a, const ModularSet& b) { return a == b; })
      .def("__repr__", [](const ModularSet& s) {
        std::ostringstream os;
        os << "ModularSet" << s;
        return os.str();
      });
}

void bind_int_set(py::module_& m) {
  py::class_<IntSet>(m, "IntSet",
                     "An interval [min_value, max_value] of integers with expression ends (None "
                     "for an infinite end), or the empty set.")
      .def_property_readonly(
          "min_value", [](const IntSet& s) { return end_or_none(s.min()); },
          "The least value, an expression, or None when unbounded below.")
      .def_property_readonly(
          "max_value", [](const IntSet& s) { return end_or_none(s.max()); },
          "The greatest value, an expression, or None when unbounded above.")
      .def("is_nothing", &IntSet::is_nothing, "Whether the set is empty.")
      .def("is_everything", &IntSet::is_everything, "Whether both ends are infinite.")
      .def("is_single_point", &IntSet::is_single_point, "Whether min_value is max_value.")
      .def(
          "cover_range",
          [](const IntSet& s, const py::object& bounds) {
            Analyzer analyzer;
            if (bounds.is_none()) return s.cover_range(&analyzer);
            return s.cover_range(
                to_object<Range>(bounds, "IntSet.cover_range", "bounds", "a tir.Range"), &analyzer);
          },
          py::arg("bounds") = py::none(),
          R"doc(The Range [min_value, max_value + 1).

Args:
    bounds (tir.Range, optional): an infinite end takes the end of bounds.

Raises:
    KilnValueError: an end is infinite and no bounds are given.
    KilnTypeError: bounds is not a tir.Range.)doc")
      .def_static("everything", &IntSet::everything, "The set of all integers.")
      .def_static("nothing", &IntSet::nothing, "The empty set.")
      .def_static(
          "single_point",
          [](py::handle v) {
            return IntSet::single_point(to_expr(v, "IntSet.single_point", "value"));
          },
          py::arg("value"), "The set {value}, for an expression or an int.")
      .def_static(
          "from_range",
          [](py::handle range) {
            return IntSet::from_range(
                to_object<Range>(range, "IntSet.from_range", "range", "a tir.Range"));
          },
          py::arg("range"), "The set of the values of a tir.Range.")
      .def("__repr__", &int_set_repr);

  m.def(
      "IntervalSet",
      [](py::handle min_value, py::handle max_value) {
        Expr lo = min_value.is_none() ? Expr() : to_expr(min_value, "IntervalSet", "min_value");
        Expr hi = max_value.is_none() ? Expr() : to_expr(max_value, "IntervalSet", "max_value");
        return IntSet::interval(lo, hi);
      },
      py::arg("min_value"), py::arg("max_value"),
      "The interval [min_value, max_value]; None for an infinite end.");
  m.def(
      "union_sets",
      [](py::handle sets) {
        Analyzer analyzer;
        return union_sets(to_int_sets(sets, "union_sets"), &analyzer);
      },
      py::arg("sets"), "The smallest interval that contains every set of the list.");
  m.def(
      "intersect_sets",
      [](py::handle sets) {
        Analyzer analyzer;
        return intersect_sets(to_int_sets(sets, "intersect_sets"), &analyzer);
      },
      py::arg("sets"), "The interval common to every set of the list.");
  m.def(
      "eval_region",
      [](py::handle region, py::handle dom_map, const py::object& analyzer) {
        const char* api = "eval_region";
        if (!py::isinstance<py::list>(region) && !py::isinstance<py::tuple>(region)) {
          raise_type_error(api, "region", "a list of indices or Ranges", region);
        }
        SetMap sets = to_set_map(dom_map, api);
        std::unique_ptr<Analyzer> owned;
        Analyzer* ana = analyzer_or_new(analyzer, &owned, api);
        std::vector<Range> ranges;
        for (py::handle item : region) {
          if (py::isinstance<Range>(item)) {
            ranges.push_back(item.cast<Range>());
          } else {
            ranges.push_back(Range{to_expr(item, "eval_region", "an index"), int32_const(1)});
          }
        }
        return eval_region(ranges, sets.sets, ana);
      },
      py::arg("region"), py::arg("dom_map"), py::arg("analyzer") = py::none(),
      "The Range each dimension of a region (indices or Ranges) covers while the variables of "
      "dom_map range over their sets.");
}

void bind_analyzer(py::module_& m) {
  py::class_<PyConstraintScope>(m, "ConstraintScope",
                                "What Analyzer.constraint_scope returns: a context manager under "
                                "which the analyzer knows its condition.")
      .def("__enter__", [](PyConstraintScope& s) { s.enter(); })
      .def("__exit__", [](PyConstraintScope& s, const py::args&) { s.exit(); });

  py::class_<Analyzer>(m, "Analyzer", R"doc(Arithmetic analysis of integer expressions, with facts
about variables (bind, update, constraint_scope) that every query uses.

Example:
    ana = arith.Analyzer()
    x = tir.Var("x", "int32")
    ana.bind(x, tir.Range(0, 8))
    ana.simplify(x // 8)            # 0
    ana.const_int_bound(x * 2 + 1)  # ConstIntBound[1, 15])doc")
      .def(py::init<>(), "An analyzer that knows no facts yet.")
      .def(
          "simplify",
          [](Analyzer& a, py::handle e, py::handle steps) {
            const char* api = "Analyzer.simplify";
            return a.simplify(to_expr(e, api, "expr"),
                              static_cast<int>(to_int(steps, api, "steps", 0, INT32_MAX)));
          },
          py::arg("expr"), py::arg("steps") = 4,
          R"doc(``expr`` simplified with the known facts: rewrite rules and the canonical form,
alternated up to ``steps`` times.

Raises:
    KilnTypeError: expr is not an expression or a number, or steps is not an int.)doc")
      .def(
          "rewrite_simplify",
          [](Analyzer& a, py::handle e) {
            return a.rewrite_simplify(to_expr(e, "Analyzer.rewrite_simplify", "expr"));
          },
          py::arg("expr"), "``expr`` simplified by the rewrite rules only.")
      .def(
          "canonical_simplify",
          [](Analyzer& a, py::handle e) {
            return a.canonical_simplify(to_expr(e, "Analyzer.canonical_simplify", "expr"));
          },
          py::arg("expr"),
          "``expr`` in canonical form: a sum of scaled terms, with splits of a variable "
          "(x // c, x % c) combined.")
      .def(
          "const_int_bound",
          [](Analyzer& a, py::handle e) {
            return a.const_int_bound(to_expr(e, "Analyzer.const_int_bound", "expr"));
          },
          py::arg("expr"), "Constant bounds of an integer expression, a ConstIntBound.")
      .def(
          "modular_set",
          [](Analyzer& a, py::handle e) {
            return a.modular_set(to_expr(e, "Analyzer.modular_set", "expr"));
          },
          py::arg("expr"), "The values of an integer expression as coeff * k + base, a ModularSet.")
      .def(
          "bind",
          [](Analyzer& a, py::handle var, py::handle value, py::handle allow_override) {
            const char* api = "Analyzer.bind";
            Ref<Var> v = to_var(var, api, "var");
            bool override_ = to_bool(allow_override, api, "allow_override");
            if (py::isinstance<Range>(value)) {
              a.bind(v, value.cast<Range>(), override_);
            } else {
              a.bind(v, to_expr_like(value, v, api), override_);
            }
          },
          py::arg("var"), py::arg("expr"), py::arg("allow_override") = false,
          R"doc(Makes ``var`` range over a tir.Range, or stand for an expression.

Args:
    var (tir.Var): the variable.
    expr (tir.Range, PrimExpr or int): its range or its value.
    allow_override (bool): replace an earlier binding of var.

Raises:
    KilnValueError: var is bound already and allow_override is False.
    KilnTypeError: var is not a tir.Var, or expr is not a Range, an expression or a number.)doc")
      .def(
          "update",
          [](Analyzer& a, py::handle var, py::handle info, py::handle override_arg) {
            const char* api = "Analyzer.update";
            Ref<Var> v = to_var(var, api, "var");
            bool override_ = to_bool(override_arg, api, "override");
            if (py::isinstance<ConstIntBound>(info)) {
              a.update(v, info.cast<ConstIntBound>(), override_);
            } else if (py::isinstance<ModularSet>(info)) {
              a.update(v, info.cast<ModularSet>(), override_);
            } else {
              raise_type_error(api, "info", "a ConstIntBound or a ModularSet", info);
            }
          },
          py::arg("var"), py::arg("info"), py::arg("override") = false,
          R"doc(Records a fact about ``var``: its constant bounds or its modular set.

Args:
    var (tir.Var): the variable.
    info (ConstIntBound or ModularSet): the fact.
    override (bool): replace what is known instead of intersecting with it.

Raises:
    KilnTypeError: var is not a tir.Var, or info is neither a ConstIntBound nor a ModularSet.)doc")
      .def(
          "can_prove",
          [](Analyzer& a, py::handle cond) {
            return a.can_prove(to_expr(cond, "Analyzer.can_prove", "cond"));
          },
          py::arg("cond"),
          "Whether the bool expression ``cond`` provably holds (False when unknown).")
      .def(
          "can_prove_equal",
          [](Analyzer& a, py::handle lhs, py::handle rhs) {
            Expr x = to_expr(lhs, "Analyzer.can_prove_equal", "lhs");
            return a.can_prove_equal(x, to_expr_like(rhs, x, "Analyzer.can_prove_equal"));
          },
          py::arg("lhs"), py::arg("rhs"), "Whether lhs == rhs provably holds (False when unknown).")
      .def(
          "constraint_scope",
          [](Analyzer& a, py::handle cond) {
            Expr c = to_expr(cond, "Analyzer.constraint_scope", "cond");
            type_check(c->dtype.is_bool())
                << "Analyzer.constraint_scope: the condition must be a bool, found " << to_script(c)
                << " of dtype " << c->dtype;
            return PyConstraintScope(&a, c);
          },
          py::arg("cond"), py::keep_alive<0, 1>(),
          R"doc(A context manager under which the analyzer knows ``cond``.

Example:
    with ana.constraint_scope(x < n):
        ana.can_prove(x < n)   # True

Raises:
    KilnTypeError: cond is not a bool expression.)doc")
      .def(
          "int_set",
          [](Analyzer& a, py::handle e, py::handle dom_map) {
            SetMap sets = to_set_map(dom_map, "Analyzer.int_set");
            return eval_set(to_expr(e, "Analyzer.int_set", "expr"), sets.sets, &a);
          },
          py::arg("expr"), py::arg("dom_map"),
          R"doc(The IntSet of the values of ``expr`` while each variable of ``dom_map`` ranges over
its set.

Args:
    expr (PrimExpr): an integer expression.
    dom_map (dict): tir.Var to IntSet, tir.Range or int extent n (for [0, n)).

Raises:
    KilnTypeError: expr is not an expression, or dom_map is not such a dict.)doc");
}

void bind_iter_map(py::module_& m) {
  py::enum_<IterMapLevel>(m, "IterMapLevel",
                          "What detect_iter_map checks: Bijective (every point once), "
                          "Surjective (every point at least once) or NoCheck.")
      .value("Bijective", IterMapLevel::kBijective)
      .value("Surjective", IterMapLevel::kSurjective)
      .value("NoCheck", IterMapLevel::kNoCheck);

  py::class_<IterMapResult>(m, "IterMapResult",
                            "The normalized indices of detect_iter_map, or why it failed; "
                            "false when it failed.")
      .def_property_readonly(
          "indices",
          [](const IterMapResult& r) {
            std::vector<Expr> exprs;
            for (const IterSumExpr& sum : r.indices) exprs.push_back(to_expr(sum));
            return exprs;
          },
          "The normalized indices as expressions.")
      .def_property_readonly(
          "forms",
          [](const IterMapResult& r) {
            std::vector<std::string> forms;
            for (const IterSumExpr& sum : r.indices) forms.push_back(to_string(sum));
            return forms;
          },
          "The normalized indices as text, showing their splits and fusions.")
      .def_readonly("errors", &IterMapResult::errors,
                    "Why detection failed, one message per reason (empty when it succeeded).")
      .def("__bool__", &IterMapResult::ok)
      .def("__repr__", [](const IterMapResult& r) {
        std::string text = "IterMapResult(";
        if (r.ok()) {
          for (size_t k = 0; k < r.indices.size(); ++k) {
            text += (k > 0 ? ", " : "") + to_string(r.indices[k]);
          }
        } else {
          text += "errors=" + std::to_string(r.errors.size());
        }
        return text + ")";
      });

  m.def(
      "detect_iter_map",
      [](py::handle indices, py::handle input_iters, py::handle predicate, py::handle check_level,
         const py::object& analyzer) {
        const char* api = "detect_iter_map";
        LoopRanges loops = to_loop_ranges(input_iters, api);
        std::unique_ptr<Analyzer> owned;
        Analyzer* ana = analyzer_or_new(analyzer, &owned, api);
        return detect_iter_map(to_exprs(indices, api, "indices"), loops.ranges,
                               to_expr(predicate, api, "predicate"), to_level(check_level), ana);
      },
      py::arg("indices"), py::arg("input_iters"), py::arg("predicate") = true,
      py::arg("check_level") = "bijective", py::arg("analyzer") = py::none(),
      R"doc(Whether ``indices`` are splits and fusions of the loops ``input_iters``.

Args:
    indices (list of PrimExpr): the index expressions.
    input_iters (dict): loop tir.Var to tir.Range or int extent.
    predicate (PrimExpr or bool): a condition the loops satisfy (a split's bound check).
    check_level (str or IterMapLevel): "bijective", "surjective" or "no_check".
    analyzer (Analyzer, optional): the analyzer to use (its facts included).

Returns:
    IterMapResult: the normalized indices, or the errors; false when detection failed.

Raises:
    KilnTypeError: an argument has the wrong type.
    KilnValueError: check_level is not one of the names.

Example:
    i = tir.Var("i", "int32")
    arith.detect_iter_map([i // 4, i % 4], {i: 16}))doc");
  m.def(
      "iter_map_simplify",
      [](py::handle indices, py::handle input_iters, py::handle input_pred,
         const py::object& analyzer) {
        const char* api = "iter_map_simplify";
        LoopRanges loops = to_loop_ranges(input_iters, api);
        std::unique_ptr<Analyzer> owned;
        Analyzer* ana = analyzer_or_new(analyzer, &owned, api);
        return iter_map_simplify(to_exprs(indices, api, "indices"), loops.ranges,
                                 to_expr(input_pred, api, "input_pred"), ana);
      },
      py::arg("indices"), py::arg("input_iters"), py::arg("input_pred") = true,
      py::arg("analyzer") = py::none(),
      R"doc(Each index rewritten in its normalized split/fuse form over ``input_iters`` and
simplified; an index that is no such form is returned as it is.

Args: as detect_iter_map (input_pred is its predicate).

Raises:
    KilnTypeError: an argument has the wrong type.)doc");
  m.def(
      "inverse_affine_iter_map",
      [](py::handle iter_map_arg, py::handle outputs) {
        const char* api = "inverse_affine_iter_map";
        const IterMapResult& iter_map =
            to_object<IterMapResult>(iter_map_arg, api, "iter_map", "an IterMapResult");
        user_check(iter_map.ok()) << api << ": the IterMapResult holds errors, not a map: "
                                  << iter_map.errors.front();
        Analyzer analyzer;
        VarMap inverse =
            inverse_affine_map(iter_map.indices, to_exprs(outputs, api, "outputs"), &analyzer);
        py::dict result;
        for (const auto& [var, value] : inverse) result[py::cast(Ref<Var>(var))] = value;
        return result;
      },
      py::arg("iter_map"), py::arg("outputs"),
      R"doc(The loop variables of a bijective iterator map as expressions of its outputs.

Args:
    iter_map (IterMapResult): a successful bijective detect_iter_map.
    outputs (list of PrimExpr): one expression per index of the map.

Returns:
    dict: loop tir.Var to its expression of the outputs.

Raises:
    KilnValueError: iter_map failed, or the outputs do not match its indices.
    KilnTypeError: an argument has the wrong type.)doc");
}

}  // namespace

void bind_arithmetic(py::module_& m) {
  bind_bounds(m);
  bind_int_set(m);
  bind_analyzer(m);
  bind_iter_map(m);
}

}  // namespace kiln::python
