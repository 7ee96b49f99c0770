// Python bindings of kiln's IR (module kiln._kiln.ir): expression and statement classes with
// their fields, Python operators on expressions with kiln's promotion rules, Buffer, PrimFunc and
// IRModule. The kiln.ir and kiln.tir packages re-export these names.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "convert.h"
#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "kiln/support/error.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::ir;

namespace {

std::string dtype_str(const ExprNode& e) {
  return e.dtype.str();
}

template <class T>
size_t identity_hash(const T& node) {
  return std::hash<const void*>()(&node);
}

// Python operators on expressions. A Python number takes the other operand's type.
void bind_operators(py::class_<ExprNode, Expr>& cls) {
  using Builder = Expr (*)(Expr, Expr);
  auto binary = [&cls](const char* name, const char* rname, Builder f, const char* api) {
    cls.def(name, [f, api](const Expr& self, py::handle other) {
      return f(self, to_expr_like(other, self, api));
    });
    cls.def(rname, [f, api](const Expr& self, py::handle other) {
      return f(to_expr_like(other, self, api), self);
    });
  };
  binary("__add__", "__radd__", &add, "+");
  binary("__sub__", "__rsub__", &sub, "-");
  binary("__mul__", "__rmul__", &mul, "*");
  binary("__truediv__", "__rtruediv__", &div, "/");
  binary("__floordiv__", "__rfloordiv__", &floordiv, "//");
  binary("__mod__", "__rmod__", &floormod, "%");
  cls.def("__neg__", [](const Expr& self) { return neg(self); });
  cls.def("__lt__", [](const Expr& s, py::handle o) { return lt(s, to_expr_like(o, s, "<")); });
  cls.def("__le__", [](const Expr& s, py::handle o) { return le(s, to_expr_like(o, s, "<=")); });
  cls.def("__gt__", [](const Expr& s, py::handle o) { return gt(s, to_expr_like(o, s, ">")); });
  cls.def("__ge__", [](const Expr& s, py::handle o) { return ge(s, to_expr_like(o, s, ">=")); });
  // == and != build EQ / NE nodes; their truth value (see EQ.__bool__) is identity, so that
  // expressions still work as dictionary keys, as in TVM.
  cls.def("__eq__", [](const Expr& s, py::handle o) -> py::object {
    if (!py::isinstance<ExprNode>(o) && !py::isinstance<py::int_>(o) &&
        !py::isinstance<py::float_>(o)) {
      return py::bool_(false);
    }
    return py::cast(make<EQ>(DataType::bool_(), s, to_expr_like(o, s, "==")));
  });
  cls.def("__ne__", [](const Expr& s, py::handle o) -> py::object {
    if (!py::isinstance<ExprNode>(o) && !py::isinstance<py::int_>(o) &&
        !py::isinstance<py::float_>(o)) {
      return py::bool_(true);
    }
    return py::cast(make<NE>(DataType::bool_(), s, to_expr_like(o, s, "!=")));
  });
  cls.def("__hash__", [](const ExprNode& self) { return identity_hash(self); });
  cls.def("__bool__",
          [](const ExprNode& self) -> bool {
            user_error(ErrorKind::kType)
                << "an expression of dtype " << self.dtype
                << " has no Python truth value; use te.if_then_else or tir.Select for a condition "
                   "evaluated by the kernel";
          });
  cls.def("__and__",
          [](const Expr& s, py::handle o) { return logical_and(s, to_expr(o, "&", "operand")); });
  cls.def("__or__",
          [](const Expr& s, py::handle o) { return logical_or(s, to_expr(o, "|", "operand")); });
  cls.def("__invert__", [](const Expr& s) { return logical_not(s); });
  cls.def("astype",
          [](const Expr& self, py::handle dtype) { return cast(to_dtype(dtype, "astype"), self); });
  cls.def("same_as", [](const Expr& self, const Expr& other) { return self.same_as(other); });
}

// The truth value of an EQ / NE built by Python's == / !=: whether both sides are the same node.
template <class T>
void bind_comparison_truth(py::class_<T, BinaryNode, Ref<T>>& cls, bool negate) {
  cls.def("__bool__", [negate](const T& self) { return self.a.same_as(self.b) != negate; });
  cls.def("__hash__", [](const T& self) { return identity_hash(self); });
}

// Printing and structural comparison; defined in their section at the end of this file.
void bind_script_and_structural(py::module_& m);

}  // namespace

void bind_ir(py::module_& m) {
  py::class_<Node, Ref<Node>>(m, "Node")
      .def("same_as", [](const Node& self, const Node& other) { return &self == &other; })
      .def("__hash__", [](const Node& self) { return identity_hash(self); })
      .def("__eq__", [](const Node& self, const py::object& other) {
        return py::isinstance<Node>(other) && &self == other.cast<const Node*>();
      });

  // Expressions.
  py::class_<ExprNode, Expr> expr(m, "PrimExpr", py::base<Node>());
  expr.def_property_readonly("dtype", &dtype_str);
  bind_operators(expr);

  py::class_<IntImm, ExprNode, Ref<IntImm>>(m, "IntImm")
      .def(py::init([](py::handle dtype, int64_t value) {
             DataType t = to_dtype(dtype, "tir.IntImm");
             type_check(t.is_integer() || t.is_bool())
                 << "tir.IntImm: dtype must be an integer or bool type, found " << t;
             user_check(t.is_bool()
                            ? (value == 0 || value == 1)
                            : fits_dtype(value, t) && !(t.is_uint() && t.bits() == 64 && value < 0))
                 << "tir.IntImm: the value " << value << " does not fit " << t << " (its range is "
                 << dtype_range(t) << ")";
             return cast<IntImm>(make_const(t, value));
           }),
           py::arg("dtype"), py::arg("value"))
      .def_readonly("value", &IntImm::value)
      .def("__int__", [](const IntImm& self) { return self.value; })
      .def("__index__", [](const IntImm& self) { return self.value; });
  py::class_<FloatImm, ExprNode, Ref<FloatImm>>(m, "FloatImm")
      .def(py::init([](py::handle dtype, double value) {
             DataType t = to_dtype(dtype, "tir.FloatImm");
             type_check(t.is_float()) << "tir.FloatImm: dtype must be a float type, found " << t;
             return cast<FloatImm>(make_const(t, value));
           }),
           py::arg("dtype"), py::arg("value"))
      .def_readonly("value", &FloatImm::value)
      .def("__float__", [](const FloatImm& self) { return self.value; });
  py::class_<StringImm, ExprNode, Ref<StringImm>>(m, "StringImm")
      .def(py::init([](std::string value) { return make<StringImm>(std::move(value)); }))
      .def_readonly("value", &StringImm::value);
  py::class_<Var, ExprNode, Ref<Var>>(m, "Var")
      .def(py::init([](std::string name, py::handle dtype) {
             return make<Var>(std::move(name), to_dtype(dtype, "tir.Var"));
           }),
           py::arg("name"), py::arg("dtype") = "int32")
      .def_readonly("name", &Var::name)
      .def_readonly("name_hint", &Var::name)
      .def_readonly("is_size_var", &Var::is_size_var);
  m.def(
      "SizeVar",
      [](std::string name, py::handle dtype) {
        return make<Var>(std::move(name), to_dtype(dtype, "tir.SizeVar"), true);
      },
      py::arg("name"), py::arg("dtype") = "int32");

  py::class_<BinaryNode, ExprNode, Ref<BinaryNode>>(m, "BinaryOp")
      .def_readonly("a", &BinaryNode::a)
      .def_readonly("b", &BinaryNode::b);
#define KILN_BIND_BINARY(Name) py::class_<Name, BinaryNode, Ref<Name>> Name##_class(m, #Name);
  KILN_BIND_BINARY(Add)
  KILN_BIND_BINARY(Sub)
  KILN_BIND_BINARY(Mul)
  KILN_BIND_BINARY(Div)
  KILN_BIND_BINARY(Mod)
  KILN_BIND_BINARY(FloorDiv)
  KILN_BIND_BINARY(FloorMod)
  KILN_BIND_BINARY(Min)
  KILN_BIND_BINARY(Max)
  KILN_BIND_BINARY(EQ)
  KILN_BIND_BINARY(NE)
  KILN_BIND_BINARY(LT)
  KILN_BIND_BINARY(LE)
  KILN_BIND_BINARY(GT)
  KILN_BIND_BINARY(GE)
  KILN_BIND_BINARY(And)
  KILN_BIND_BINARY(Or)
#undef KILN_BIND_BINARY
  bind_comparison_truth(EQ_class, false);
  bind_comparison_truth(NE_class, true);

  py::class_<Not, ExprNode, Ref<Not>>(m, "Not").def_readonly("a", &Not::a);
  py::class_<Select, ExprNode, Ref<Select>>(m, "Select")
      .def(py::init([](py::handle c, py::handle t, py::handle f) {
             Expr cond = to_expr(c, "tir.Select", "condition");
             auto [tv, fv] = promote("tir.Select", to_expr(t, "tir.Select", "true_value"),
                                     to_expr(f, "tir.Select", "false_value"));
             type_check(cond->dtype.is_bool())
                 << "tir.Select: the condition must be a bool, found dtype " << cond->dtype;
             return make<Select>(tv->dtype, cond, tv, fv);
           }),
           py::arg("condition"), py::arg("true_value"), py::arg("false_value"))
      .def_readonly("condition", &Select::condition)
      .def_readonly("true_value", &Select::true_value)
      .def_readonly("false_value", &Select::false_value);
  py::class_<Cast, ExprNode, Ref<Cast>>(m, "Cast").def_readonly("value", &Cast::value);
  py::class_<Call, ExprNode, Ref<Call>>(m, "Call")
      .def_property_readonly("op", [](const Call& self) { return builtin_name(self.op); })
      .def_readonly("args", &Call::args);
  py::class_<Ramp, ExprNode, Ref<Ramp>>(m, "Ramp")
      .def_readonly("base", &Ramp::base)
      .def_readonly("stride", &Ramp::stride)
      .def_readonly("lanes", &Ramp::lanes);
  py::class_<Broadcast, ExprNode, Ref<Broadcast>>(m, "Broadcast")
      .def_readonly("value", &Broadcast::value)
      .def_readonly("lanes", &Broadcast::lanes);
  py::class_<Let, ExprNode, Ref<Let>>(m, "Let")
      .def_readonly("var", &Let::var)
      .def_readonly("value", &Let::value)
      .def_readonly("body", &Let::body);
  py::class_<BufferLoad, ExprNode, Ref<BufferLoad>>(m, "BufferLoad")
      .def_readonly("buffer", &BufferLoad::buffer)
      .def_readonly("indices", &BufferLoad::indices);
  py::class_<CommReducer, Node, Ref<CommReducer>>(m, "CommReducer")
      .def_readonly("lhs", &CommReducer::lhs)
      .def_readonly("rhs", &CommReducer::rhs)
      .def_readonly("result", &CommReducer::result)
      .def_readonly("identity_element", &CommReducer::identity);
  py::class_<Reduce, ExprNode, Ref<Reduce>>(m, "Reduce")
      .def_readonly("combiner", &Reduce::combiner)
      .def_readonly("source", &Reduce::source)
      .def_readonly("axis", &Reduce::axis)
      .def_readonly("condition", &Reduce::condition)
      .def_readonly("value_index", &Reduce::value_index);

  py::class_<Range>(m, "Range")
      .def(py::init([](py::handle begin, py::handle end) {
             Expr b = to_expr(begin, "tir.Range", "begin");
             Expr e = to_expr(end, "tir.Range", "end");
             return Range{b, sub(e, b)};
           }),
           py::arg("begin"), py::arg("end"))
      .def_readonly("min", &Range::min)
      .def_readonly("extent", &Range::extent);
  py::class_<IterVar>(m, "IterVar")
      .def_readonly("var", &IterVar::var)
      .def_readonly("dom", &IterVar::dom)
      .def_property_readonly("iter_type",
                             [](const IterVar& self) { return iter_type_name(self.type); })
      // An IterVar stands for its variable in expressions (k in te.sum(A[i, k], axis=k)).
      .def("_as_expr", [](const IterVar& self) { return Expr(self.var); });

  // Buffers.
  py::class_<Buffer, Node, Ref<Buffer>>(m, "Buffer")
      .def_readonly("name", &Buffer::name)
      .def_readonly("data", &Buffer::data)
      .def_property_readonly("dtype", [](const Buffer& b) { return b.dtype.str(); })
      .def_readonly("shape", &Buffer::shape)
      .def_readonly("strides", &Buffer::strides)
      .def_readonly("elem_offset", &Buffer::elem_offset)
      .def_property_readonly("data_alignment", &Buffer::alignment)
      .def_readonly("offset_factor", &Buffer::offset_factor)
      .def_property_readonly("ndim", &Buffer::ndim)
      .def("scope", [](const Buffer& b) { return b.scope; })
      .def("__getitem__", [](const Ref<Buffer>& self, py::handle index) {
        std::vector<Expr> indices;
        if (py::isinstance<py::tuple>(index)) {
          for (py::handle i : index)
            indices.push_back(to_expr(i, "Buffer.__getitem__", "an index"));
        } else {
          indices.push_back(to_expr(index, "Buffer.__getitem__", "the index"));
        }
        return buffer_load(self, std::move(indices));
      });
  m.def(
      "decl_buffer",
      [](py::handle shape, py::handle dtype, std::string name, std::string scope) {
        return decl_buffer(to_shape(shape, "tir.decl_buffer"), to_dtype(dtype, "tir.decl_buffer"),
                           std::move(name), std::move(scope));
      },
      py::arg("shape"), py::arg("dtype") = "float32", py::arg("name") = "buffer",
      py::arg("scope") = "global");

  // Statements.
  py::class_<StmtNode, Stmt>(m, "Stmt", py::base<Node>());
  py::class_<LetStmt, StmtNode, Ref<LetStmt>>(m, "LetStmt")
      .def_readonly("var", &LetStmt::var)
      .def_readonly("value", &LetStmt::value)
      .def_readonly("body", &LetStmt::body);
  py::class_<AssertStmt, StmtNode, Ref<AssertStmt>>(m, "AssertStmt")
      .def_readonly("condition", &AssertStmt::condition)
      .def_readonly("message", &AssertStmt::message)
      .def_readonly("body", &AssertStmt::body);
  py::class_<BufferStore, StmtNode, Ref<BufferStore>>(m, "BufferStore")
      .def_readonly("buffer", &BufferStore::buffer)
      .def_readonly("value", &BufferStore::value)
      .def_readonly("indices", &BufferStore::indices);
  py::class_<Allocate, StmtNode, Ref<Allocate>>(m, "Allocate")
      .def_readonly("buffer", &Allocate::buffer)
      .def_readonly("body", &Allocate::body);
  py::class_<For, StmtNode, Ref<For>>(m, "For")
      .def_readonly("loop_var", &For::loop_var)
      .def_readonly("min", &For::min)
      .def_readonly("extent", &For::extent)
      .def_property_readonly("kind", [](const For& f) { return for_kind_name(f.kind); })
      .def_readonly("body", &For::body)
      .def_readonly("thread_tag", &For::thread_tag)
      .def_property_readonly("annotations", [](const For& f) {
        py::dict d;
        for (const auto& [k, v] : f.annotations) d[py::str(k)] = from_attr_value(v);
        return d;
      });
  py::class_<SeqStmt, StmtNode, Ref<SeqStmt>>(m, "SeqStmt")
      .def_readonly("seq", &SeqStmt::seq)
      .def("__len__", [](const SeqStmt& s) { return s.seq.size(); })
      .def("__getitem__", [](const SeqStmt& s, size_t i) {
        index_check(i < s.seq.size())
            << "SeqStmt: index " << i << " out of range for " << s.seq.size() << " statements";
        return s.seq[i];
      });
  py::class_<IfThenElse, StmtNode, Ref<IfThenElse>>(m, "IfThenElse")
      .def_readonly("condition", &IfThenElse::condition)
      .def_readonly("then_case", &IfThenElse::then_case)
      .def_readonly("else_case", &IfThenElse::else_case);
  py::class_<Evaluate, StmtNode, Ref<Evaluate>>(m, "Evaluate")
      .def_readonly("value", &Evaluate::value);
  py::class_<BufferRegion>(m, "BufferRegion")
      .def_readonly("buffer", &BufferRegion::buffer)
      .def_readonly("region", &BufferRegion::region);
  py::class_<Block, StmtNode, Ref<Block>>(m, "Block")
      .def_readonly("name_hint", &Block::name)
      .def_readonly("iter_vars", &Block::iter_vars)
      .def_readonly("reads", &Block::reads)
      .def_readonly("writes", &Block::writes)
      .def_readonly("alloc_buffers", &Block::alloc_buffers)
      .def_readonly("init", &Block::init)
      .def_readonly("body", &Block::body)
      .def_property_readonly("annotations", [](const Block& b) {
        py::dict d;
        for (const auto& [k, v] : b.annotations) d[py::str(k)] = from_attr_value(v);
        return d;
      });
  py::class_<BlockRealize, StmtNode, Ref<BlockRealize>>(m, "BlockRealize")
      .def_readonly("iter_values", &BlockRealize::iter_values)
      .def_readonly("predicate", &BlockRealize::predicate)
      .def_readonly("block", &BlockRealize::block);

  // Functions and modules.
  py::class_<PrimFunc, Node, Ref<PrimFunc>>(m, "PrimFunc")
      .def_readonly("params", &PrimFunc::params)
      .def_property_readonly("buffer_map",
                             [](const PrimFunc& f) {
                               py::dict d;
                               for (const auto& [var, buffer] : f.buffer_map) {
                                 d[py::cast(var)] = py::cast(buffer);
                               }
                               return d;
                             })
      .def_readonly("body", &PrimFunc::body)
      .def_property_readonly("attrs",
                             [](const PrimFunc& f) {
                               py::dict d;
                               for (const auto& [k, v] : f.attrs)
                                 d[py::str(k)] = from_attr_value(v);
                               return d;
                             })
      .def(
          "with_attr",
          [](const PrimFunc& f, const std::string& key, py::handle value) {
            auto n = copy(&f);
            n->attrs[key] = to_attr_value(value, "PrimFunc.with_attr");
            return n;
          },
          py::arg("key"), py::arg("value"));

  py::class_<IRModule, Node, Ref<IRModule>>(m, "IRModule")
      .def(py::init([](const std::map<std::string, Ref<PrimFunc>>& functions) {
             auto mod = make<IRModule>();
             mod->functions = functions;
             return mod;
           }),
           py::arg("functions") = std::map<std::string, Ref<PrimFunc>>{})
      .def("__getitem__", &IRModule::lookup)
      .def("__contains__", [](const IRModule& mod,
                              const std::string& name) { return mod.functions.count(name) > 0; })
      .def("__len__", [](const IRModule& mod) { return mod.functions.size(); })
      .def("keys",
           [](const IRModule& mod) {
             std::vector<std::string> names;
             for (const auto& [name, f] : mod.functions) names.push_back(name);
             return names;
           })
      .def_readonly("functions", &IRModule::functions);
  bind_script_and_structural(m);
}

// ---------------------------------------------------------------------------------------------
// Printing (str/repr of every node, PrimFunc/IRModule.script() and .show()) and structural
// comparison (structural_equal, structural_hash, assert_structural_equal).

namespace {

// A Node or None; anything else is a type error that names the API.
Ref<Node> to_node(const py::handle& obj, const char* api, const char* what) {
  if (obj.is_none()) return nullptr;
  type_check(py::isinstance<Node>(obj))
      << api << ": " << what << " must be an IR node (an expression, statement, buffer, PrimFunc "
      << "or IRModule), found " << py::str(py::type::of(obj).attr("__name__")).cast<std::string>();
  return obj.cast<Ref<Node>>();
}

// The name a function prints under: its global_symbol when it has one.
std::string func_name(const PrimFunc& f, const py::object& name) {
  if (!name.is_none()) return name.cast<std::string>();
  auto it = f.attrs.find("global_symbol");
  if (it != f.attrs.end()) {
    if (const auto* s = it->second.as<StringImm>()) return s->value;
  }
  return "main";
}

void bind_script_and_structural(py::module_& m) {
  auto node = py::reinterpret_borrow<py::class_<Node, Ref<Node>>>(m.attr("Node"));
  node.def("__str__", [](const Ref<Node>& self) { return to_script_node(self); });
  node.def("__repr__", [](const Ref<Node>& self) { return to_script_node(self); });

  auto func = py::reinterpret_borrow<py::class_<PrimFunc, Node, Ref<PrimFunc>>>(m.attr("PrimFunc"));
  func.def(
      "script",
      [](const Ref<PrimFunc>& self, const py::object& name) {
        return to_script(self, func_name(*self, name));
      },
      py::arg("name") = py::none(),
      "The function as TVMScript-like text, named `name` (default: its global_symbol or main).");
  func.def(
      "show",
      [](const Ref<PrimFunc>& self, const py::object& name) {
        py::print(to_script(self, func_name(*self, name)));
      },
      py::arg("name") = py::none(), "Prints script() to stdout.");

  auto mod = py::reinterpret_borrow<py::class_<IRModule, Node, Ref<IRModule>>>(m.attr("IRModule"));
  mod.def(
      "script", [](const Ref<IRModule>& self) { return to_script(self); },
      "The module as TVMScript-like text.");
  mod.def(
      "show", [](const Ref<IRModule>& self) { py::print(to_script(self)); },
      "Prints script() to stdout.");

  m.def(
      "structural_equal",
      [](const py::object& lhs, const py::object& rhs, bool map_free_vars) {
        return structural_equal(to_node(lhs, "structural_equal", "lhs"),
                                to_node(rhs, "structural_equal", "rhs"), map_free_vars);
      },
      py::arg("lhs"), py::arg("rhs"), py::arg("map_free_vars") = false);
  m.def(
      "structural_hash",
      [](const py::object& node, bool map_free_vars) {
        return structural_hash(to_node(node, "structural_hash", "node"), map_free_vars);
      },
      py::arg("node"), py::arg("map_free_vars") = false);
  m.def(
      "assert_structural_equal",
      [](const py::object& lhs, const py::object& rhs, bool map_free_vars) {
        std::string diff =
            structural_diff(to_node(lhs, "assert_structural_equal", "lhs"),
                            to_node(rhs, "assert_structural_equal", "rhs"), map_free_vars);
        user_check(diff.empty())
            << "assert_structural_equal: the two objects are not structurally equal; first "
               "difference at "
            << diff;
      },
      py::arg("lhs"), py::arg("rhs"), py::arg("map_free_vars") = false);
}

}  // namespace

}  // namespace kiln::python
