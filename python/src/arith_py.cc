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

std::string type_name(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
}

Ref<Var> to_var(py::handle obj, const char* api, const char* what) {
  type_check(py::isinstance<Var>(obj))
      << api << ": " << what << " must be a tir.Var, found an object of type " << type_name(obj);
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
                               << type_name(obj);
}

// Keeps the variables of a Python dict alive while a C++ map keyed by pointers is used.
struct LoopRanges {
  std::vector<Ref<Var>> vars;
  IterRanges ranges;
};

LoopRanges to_loop_ranges(const py::dict& input_iters, const char* api) {
  LoopRanges result;
  for (auto [key, value] : input_iters) {
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
SetMap to_set_map(const py::dict& dom_map, const char* api) {
  SetMap result;
  for (auto [key, value] : dom_map) {
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

std::vector<Expr> to_exprs(const py::handle& seq, const char* api, const char* what) {
  std::vector<Expr> exprs;
  for (py::handle item : seq) exprs.push_back(to_expr(item, api, what));
  return exprs;
}

IterMapLevel to_level(const py::handle& obj) {
  if (py::isinstance<IterMapLevel>(obj)) return obj.cast<IterMapLevel>();
  std::string text = py::isinstance<py::str>(obj) ? obj.cast<std::string>() : "";
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
Analyzer* analyzer_or_new(const py::object& analyzer, std::unique_ptr<Analyzer>* holder) {
  if (!analyzer.is_none()) return analyzer.cast<Analyzer*>();
  *holder = std::make_unique<Analyzer>();
  return holder->get();
}

py::object end_or_none(const Expr& e) {
  return e.defined() ? py::cast(e) : py::none();
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
      .def(py::init([](int64_t min_value, int64_t max_value) {
             return ConstIntBound{from_python_end(min_value), max_value};
           }),
           py::arg("min_value"), py::arg("max_value"))
      .def_property_readonly("min_value",
                             [](const ConstIntBound& b) { return to_python_end(b.min_value); })
      .def_property_readonly("max_value", [](const ConstIntBound& b) { return b.max_value; })
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
      .def(py::init([](int64_t coeff, int64_t base) {
             return ModularSet{coeff, base};
           }),
           py::arg("coeff"), py::arg("base"))
      .def_readonly("coeff", &ModularSet::coeff)
      .def_readonly("base", &ModularSet::base)
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
      .def_property_readonly("min_value", [](const IntSet& s) { return end_or_none(s.min()); })
      .def_property_readonly("max_value", [](const IntSet& s) { return end_or_none(s.max()); })
      .def("is_nothing", &IntSet::is_nothing)
      .def("is_everything", &IntSet::is_everything)
      .def("is_single_point", &IntSet::is_single_point)
      .def(
          "cover_range",
          [](const IntSet& s, const py::object& bounds) {
            Analyzer analyzer;
            if (bounds.is_none()) return s.cover_range(&analyzer);
            return s.cover_range(bounds.cast<Range>(), &analyzer);
          },
          py::arg("bounds") = py::none(),
          "The Range [min, max + 1); an infinite end takes the end of `bounds`.")
      .def_static("everything", &IntSet::everything)
      .def_static("nothing", &IntSet::nothing)
      .def_static(
          "single_point",
          [](py::handle v) { return IntSet::single_point(to_expr(v, "IntSet.single_point", "v")); },
          py::arg("value"))
      .def_static("from_range", &IntSet::from_range, py::arg("range"))
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
      [](const std::vector<IntSet>& sets) {
        Analyzer analyzer;
        return union_sets(sets, &analyzer);
      },
      py::arg("sets"));
  m.def(
      "intersect_sets",
      [](const std::vector<IntSet>& sets) {
        Analyzer analyzer;
        return intersect_sets(sets, &analyzer);
      },
      py::arg("sets"));
  m.def(
      "eval_region",
      [](const py::list& region, const py::dict& dom_map, const py::object& analyzer) {
        SetMap sets = to_set_map(dom_map, "eval_region");
        std::unique_ptr<Analyzer> owned;
        Analyzer* ana = analyzer_or_new(analyzer, &owned);
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
  py::class_<PyConstraintScope>(m, "ConstraintScope")
      .def("__enter__", [](PyConstraintScope& s) { s.enter(); })
      .def("__exit__", [](PyConstraintScope& s, const py::args&) { s.exit(); });

  py::class_<Analyzer>(m, "Analyzer",
                       "Arithmetic analysis of integer expressions with facts about variables.")
      .def(py::init<>())
      .def(
          "simplify",
          [](Analyzer& a, py::handle e, int steps) {
            return a.simplify(to_expr(e, "Analyzer.simplify", "expr"), steps);
          },
          py::arg("expr"), py::arg("steps") = 4)
      .def(
          "rewrite_simplify",
          [](Analyzer& a, py::handle e) {
            return a.rewrite_simplify(to_expr(e, "Analyzer.rewrite_simplify", "expr"));
          },
          py::arg("expr"))
      .def(
          "canonical_simplify",
          [](Analyzer& a, py::handle e) {
            return a.canonical_simplify(to_expr(e, "Analyzer.canonical_simplify", "expr"));
          },
          py::arg("expr"))
      .def(
          "const_int_bound",
          [](Analyzer& a, py::handle e) {
            return a.const_int_bound(to_expr(e, "Analyzer.const_int_bound", "expr"));
          },
          py::arg("expr"))
      .def(
          "modular_set",
          [](Analyzer& a, py::handle e) {
            return a.modular_set(to_expr(e, "Analyzer.modular_set", "expr"));
          },
          py::arg("expr"))
      .def(
          "bind",
          [](Analyzer& a, py::handle var, py::handle value, bool allow_override) {
            Ref<Var> v = to_var(var, "Analyzer.bind", "var");
            if (py::isinstance<Range>(value)) {
              a.bind(v, value.cast<Range>(), allow_override);
            } else {
              a.bind(v, to_expr_like(value, v, "Analyzer.bind"), allow_override);
            }
          },
          py::arg("var"), py::arg("expr"), py::arg("allow_override") = false,
          "Binds var to a Range (its values) or to an expression (its value).")
      .def(
          "update",
          [](Analyzer& a, py::handle var, py::handle info, bool override_) {
            Ref<Var> v = to_var(var, "Analyzer.update", "var");
            if (py::isinstance<ConstIntBound>(info)) {
              a.update(v, info.cast<ConstIntBound>(), override_);
            } else if (py::isinstance<ModularSet>(info)) {
              a.update(v, info.cast<ModularSet>(), override_);
            } else {
              user_error(ErrorKind::kType)
                  << "Analyzer.update: info must be a ConstIntBound or a ModularSet, found an "
                     "object of type "
                  << type_name(info);
            }
          },
          py::arg("var"), py::arg("info"), py::arg("override") = false)
      .def(
          "can_prove",
          [](Analyzer& a, py::handle cond) {
            return a.can_prove(to_expr(cond, "Analyzer.can_prove", "cond"));
          },
          py::arg("cond"))
      .def(
          "can_prove_equal",
          [](Analyzer& a, py::handle lhs, py::handle rhs) {
            Expr x = to_expr(lhs, "Analyzer.can_prove_equal", "lhs");
            return a.can_prove_equal(x, to_expr_like(rhs, x, "Analyzer.can_prove_equal"));
          },
          py::arg("lhs"), py::arg("rhs"))
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
          "A context manager: `with analyzer.constraint_scope(x < n): ...` knows x < n inside.")
      .def(
          "int_set",
          [](Analyzer& a, py::handle e, const py::dict& dom_map) {
            SetMap sets = to_set_map(dom_map, "Analyzer.int_set");
            return eval_set(to_expr(e, "Analyzer.int_set", "expr"), sets.sets, &a);
          },
          py::arg("expr"), py::arg("dom_map"),
          "The set of values of expr while each variable of dom_map (var -> IntSet or Range) "
          "ranges over its set.");
}

void bind_iter_map(py::module_& m) {
  py::enum_<IterMapLevel>(m, "IterMapLevel")
      .value("Bijective", IterMapLevel::kBijective)
      .value("Surjective", IterMapLevel::kSurjective)
      .value("NoCheck", IterMapLevel::kNoCheck);

  py::class_<IterMapResult>(m, "IterMapResult",
                            "The normalized indices of detect_iter_map, or why it failed.")
      .def_property_readonly("indices",
                             [](const IterMapResult& r) {
                               std::vector<Expr> exprs;
                               for (const IterSumExpr& sum : r.indices) {
                                 exprs.push_back(to_expr(sum));
                               }
                               return exprs;
                             })
      .def_property_readonly("forms",
                             [](const IterMapResult& r) {
                               std::vector<std::string> forms;
                               for (const IterSumExpr& sum : r.indices) {
                                 forms.push_back(to_string(sum));
                               }
                               return forms;
                             })
      .def_readonly("errors", &IterMapResult::errors)
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
      [](const py::list& indices, const py::dict& input_iters, py::handle predicate,
         py::handle check_level, const py::object& analyzer) {
        const char* api = "detect_iter_map";
        LoopRanges loops = to_loop_ranges(input_iters, api);
        std::unique_ptr<Analyzer> owned;
        Analyzer* ana = analyzer_or_new(analyzer, &owned);
        return detect_iter_map(to_exprs(indices, api, "an index"), loops.ranges,
                               to_expr(predicate, api, "predicate"), to_level(check_level), ana);
      },
      py::arg("indices"), py::arg("input_iters"), py::arg("predicate") = true,
      py::arg("check_level") = "bijective", py::arg("analyzer") = py::none(),
      "Whether indices are splits and fusions of the loops input_iters (var -> Range); returns "
      "an IterMapResult with the normalized indices or the errors.");
  m.def(
      "iter_map_simplify",
      [](const py::list& indices, const py::dict& input_iters, py::handle input_pred,
         const py::object& analyzer) {
        const char* api = "iter_map_simplify";
        LoopRanges loops = to_loop_ranges(input_iters, api);
        std::unique_ptr<Analyzer> owned;
        Analyzer* ana = analyzer_or_new(analyzer, &owned);
        return iter_map_simplify(to_exprs(indices, api, "an index"), loops.ranges,
                                 to_expr(input_pred, api, "input_pred"), ana);
      },
      py::arg("indices"), py::arg("input_iters"), py::arg("input_pred") = true,
      py::arg("analyzer") = py::none(),
      "Each index in its normalized split/fuse form, simplified.");
  m.def(
      "inverse_affine_iter_map",
      [](const IterMapResult& iter_map, const py::list& outputs) {
        const char* api = "inverse_affine_iter_map";
        user_check(iter_map.ok()) << api << ": the IterMapResult holds errors, not a map: "
                                  << iter_map.errors.front();
        Analyzer analyzer;
        VarMap inverse =
            inverse_affine_map(iter_map.indices, to_exprs(outputs, api, "an output"), &analyzer);
        py::dict result;
        for (const auto& [var, value] : inverse) result[py::cast(Ref<Var>(var))] = value;
        return result;
      },
      py::arg("iter_map"), py::arg("outputs"),
      "The loop variables of a bijective map as expressions of its outputs.");
}

}  // namespace

void bind_arithmetic(py::module_& m) {
  bind_bounds(m);
  bind_int_set(m);
  bind_analyzer(m);
  bind_iter_map(m);
}

}  // namespace kiln::python
