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
#include "kiln/ir/serialize.h"
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
  cls.def(
      "astype",
      [](const Expr& self, py::handle dtype) {
        return cast(to_dtype(dtype, "PrimExpr.astype"), self);
      },
      py::arg("dtype"),
      R"doc(The expression converted to ``dtype`` (a Cast; none when the dtype is the same).

Raises:
    KilnTypeError: dtype is not a dtype string such as "float32".)doc");
  cls.def(
      "same_as",
      [](const Expr& self, py::handle other) {
        return py::isinstance<ExprNode>(other) && self.same_as(other.cast<Expr>());
      },
      py::arg("other"),
      "Whether other is this very expression (identity, not structural equality).");
}

// The truth value of an EQ / NE built by Python's == / !=: whether both sides are the same node.
template <class T>
void bind_comparison_truth(py::class_<T, BinaryNode, Ref<T>>& cls, bool negate) {
  cls.def("__bool__", [negate](const T& self) { return self.a.same_as(self.b) != negate; });
  cls.def("__hash__", [](const T& self) { return identity_hash(self); });
}

// Printing and structural comparison; defined in their section at the end of this file.
void bind_script_and_structural(py::module_& m);
// Serialization and pickling; defined in the last section of this file.
void bind_serialization(py::module_& m);

}  // namespace

void bind_ir(py::module_& m) {
  py::class_<Node, Ref<Node>>(m, "Node",
                              "The base class of kiln's IR objects: expressions, statements, "
                              "buffers, PrimFuncs and IRModules. IR objects never change; "
                              "str() prints them as TVMScript-like text.")
      .def(
          "same_as",
          [](const Node& self, py::handle other) {
            return py::isinstance<Node>(other) && &self == other.cast<const Node*>();
          },
          py::arg("other"),
          "Whether other is this very object (identity, not structural equality; see "
          "kiln.ir.structural_equal).")
      .def("__hash__", [](const Node& self) { return identity_hash(self); })
      .def("__eq__", [](const Node& self, const py::object& other) {
        return py::isinstance<Node>(other) && &self == other.cast<const Node*>();
      });

  // Expressions.
  py::class_<ExprNode, Expr> expr(m, "PrimExpr", py::base<Node>(), R"doc(An expression of a scalar
or vector dtype.

Python operators build expressions with kiln's promotion rules: + - * / // % (// and % round
toward negative infinity), < <= > >= == !=, & | ~ on bools. A Python number takes the other
operand's dtype. An expression has no Python truth value: use te.if_then_else or tir.Select for
a condition the kernel evaluates.)doc");
  expr.def_property_readonly("dtype", &dtype_str,
                             "The dtype as a string: \"int32\", \"float32\", \"float32x8\" (8 "
                             "lanes), \"bool\".");
  bind_operators(expr);

  py::class_<IntImm, ExprNode, Ref<IntImm>>(m, "IntImm", "An integer (or bool) constant.")
      .def(py::init([](py::handle dtype, py::handle value) {
             DataType t = to_dtype(dtype, "tir.IntImm");
             type_check(t.is_integer() || t.is_bool())
                 << "tir.IntImm: dtype must be an integer or bool type, found " << t;
             int64_t v = to_int(value, "tir.IntImm", "value");
             user_check(t.is_bool() ? (v == 0 || v == 1)
                                    : fits_dtype(v, t) && !(t.is_uint() && t.bits() == 64 && v < 0))
                 << "tir.IntImm: the value " << v << " does not fit " << t << " (its range is "
                 << dtype_range(t) << ")";
             return cast<IntImm>(make_const(t, v));
           }),
           py::arg("dtype"), py::arg("value"),
           R"doc(The constant ``value`` of an integer or bool dtype.

Raises:
    KilnTypeError: dtype is not an integer or bool dtype, or value is not an int.
    KilnValueError: value does not fit dtype.)doc")
      .def_readonly("value", &IntImm::value, "The value, an int.")
      .def("__int__", [](const IntImm& self) { return self.value; })
      .def("__index__", [](const IntImm& self) { return self.value; });
  py::class_<FloatImm, ExprNode, Ref<FloatImm>>(m, "FloatImm", "A floating-point constant.")
      .def(py::init([](py::handle dtype, py::handle value) {
             DataType t = to_dtype(dtype, "tir.FloatImm");
             type_check(t.is_float()) << "tir.FloatImm: dtype must be a float type, found " << t;
             return cast<FloatImm>(make_const(t, to_float(value, "tir.FloatImm", "value")));
           }),
           py::arg("dtype"), py::arg("value"),
           R"doc(The constant ``value`` of a float dtype (rounded to it).

Raises:
    KilnTypeError: dtype is not a float dtype, or value is not a number.)doc")
      .def_readonly("value", &FloatImm::value, "The value, a float.")
      .def("__float__", [](const FloatImm& self) { return self.value; });
  py::class_<StringImm, ExprNode, Ref<StringImm>>(
      m, "StringImm", "A string constant (in call arguments and annotations).")
      .def(py::init([](py::handle value) {
             return make<StringImm>(to_str(value, "tir.StringImm", "value"));
           }),
           py::arg("value"), "The string constant ``value``.")
      .def_readonly("value", &StringImm::value, "The string, a str.");
  py::class_<Var, ExprNode, Ref<Var>>(m, "Var", R"doc(A scalar variable: a loop variable, a block
iterator, a symbolic dimension or a scalar parameter.

Its identity is the object: two Vars with the same name are different variables.)doc")
      .def(py::init([](py::handle name, py::handle dtype) {
             return make<Var>(to_str(name, "tir.Var", "name"), to_dtype(dtype, "tir.Var"));
           }),
           py::arg("name"), py::arg("dtype") = "int32",
           R"doc(A new variable.

Args:
    name (str): a hint for printing.
    dtype (str): its dtype.

Raises:
    KilnTypeError: name is not a str or dtype is not a dtype.)doc")
      .def_readonly("name", &Var::name, "The name hint.")
      .def_readonly("name_hint", &Var::name, "The name hint (TVM's name).")
      .def_readonly("is_size_var", &Var::is_size_var,
                    "Whether the variable is known to be >= 0 (a symbolic dimension).");
  m.def(
      "SizeVar",
      [](py::handle name, py::handle dtype) {
        return make<Var>(to_str(name, "tir.SizeVar", "name"), to_dtype(dtype, "tir.SizeVar"), true);
      },
      py::arg("name"), py::arg("dtype") = "int32",
      R"doc(A new variable known to be >= 0, which the arithmetic analysis uses (a symbolic
dimension).

Raises:
    KilnTypeError: name is not a str or dtype is not a dtype.)doc");

  py::class_<BinaryNode, ExprNode, Ref<BinaryNode>>(
      m, "BinaryOp", "The base class of the binary expressions (Add, LT, And, …).")
      .def_readonly("a", &BinaryNode::a, "The left operand.")
      .def_readonly("b", &BinaryNode::b, "The right operand.");
#define KILN_BIND_BINARY(Name, doc) \
  py::class_<Name, BinaryNode, Ref<Name>> Name##_class(m, #Name, doc);
  KILN_BIND_BINARY(Add, "a + b.")
  KILN_BIND_BINARY(Sub, "a - b.")
  KILN_BIND_BINARY(Mul, "a * b.")
  KILN_BIND_BINARY(Div, "a / b: IEEE division on floats; rounds toward zero on integers.")
  KILN_BIND_BINARY(Mod, "The remainder of a / b rounded toward zero (C's %), on integers.")
  KILN_BIND_BINARY(FloorDiv, "a / b rounded toward negative infinity (Python's //).")
  KILN_BIND_BINARY(FloorMod, "The remainder of FloorDiv, with the sign of b (Python's %).")
  KILN_BIND_BINARY(Min, "The smaller of a and b (on floats, the non-NaN one).")
  KILN_BIND_BINARY(Max, "The larger of a and b (on floats, the non-NaN one).")
  KILN_BIND_BINARY(EQ, "a == b, a bool expression.")
  KILN_BIND_BINARY(NE, "a != b, a bool expression.")
  KILN_BIND_BINARY(LT, "a < b, a bool expression.")
  KILN_BIND_BINARY(LE, "a <= b, a bool expression.")
  KILN_BIND_BINARY(GT, "a > b, a bool expression.")
  KILN_BIND_BINARY(GE, "a >= b, a bool expression.")
  KILN_BIND_BINARY(And, "The logical and of two bool expressions (no short circuit).")
  KILN_BIND_BINARY(Or, "The logical or of two bool expressions (no short circuit).")
#undef KILN_BIND_BINARY
  bind_comparison_truth(EQ_class, false);
  bind_comparison_truth(NE_class, true);

  py::class_<Not, ExprNode, Ref<Not>>(m, "Not", "The logical not of a bool expression.")
      .def_readonly("a", &Not::a, "The negated bool expression.");
  py::class_<Select, ExprNode, Ref<Select>>(
      m, "Select",
      "condition ? true_value : false_value, evaluating both values (te.if_then_else evaluates "
      "only the chosen one).")
      .def(py::init([](py::handle c, py::handle t, py::handle f) {
             Expr cond = to_expr(c, "tir.Select", "condition");
             auto [tv, fv] = promote("tir.Select", to_expr(t, "tir.Select", "true_value"),
                                     to_expr(f, "tir.Select", "false_value"));
             type_check(cond->dtype.is_bool())
                 << "tir.Select: the condition must be a bool, found dtype " << cond->dtype;
             return make<Select>(tv->dtype, cond, tv, fv);
           }),
           py::arg("condition"), py::arg("true_value"), py::arg("false_value"),
           R"doc(A Select; the values are promoted to one dtype.

Raises:
    KilnTypeError: an argument is not an expression or a number, or condition is not a bool.)doc")
      .def_readonly("condition", &Select::condition, "The bool condition.")
      .def_readonly("true_value", &Select::true_value, "The value where the condition holds.")
      .def_readonly("false_value", &Select::false_value, "The value elsewhere.");
  py::class_<Cast, ExprNode, Ref<Cast>>(
      m, "Cast",
      "A conversion of value to dtype (float to int truncates toward zero; a narrower int "
      "wraps). PrimExpr.astype makes one.")
      .def_readonly("value", &Cast::value, "The converted expression.");
  m.def(
      "likely",
      [](py::handle cond) {
        Expr c = to_expr(cond, "tir.likely", "the condition");
        type_check(c->dtype.is_bool() && c->dtype.is_scalar())
            << "tir.likely: the condition must be a bool, found dtype " << c->dtype;
        return call(Builtin::Likely, {c});
      },
      py::arg("cond"),
      R"doc(cond, marked as usually true: lowering's loop_partition splits the loops around an
if_then_else whose condition is marked this way where the condition is decided (as it always
does for if statements), and computes only the chosen value there.

Args:
    cond (PrimExpr): a bool condition.

Raises:
    KilnTypeError: cond is not a bool expression.

Example:
    B = te.compute((n, n), lambda i, j: te.if_then_else(tir.likely(j <= i), A[i, j], 0.0)))doc");
  auto bind_extern_call = [&m](const char* name, Builtin op, const char* doc) {
    m.def(
        name,
        [name, op](py::handle dtype, py::handle func_name, py::args args) {
          std::string api = std::string("tir.") + name;
          std::vector<Expr> call_args = {
              make<StringImm>(to_str(func_name, api.c_str(), "func_name"))};
          user_check(!call_args[0].as<StringImm>()->value.empty()) << api << ": func_name is empty";
          for (py::handle a : args) call_args.push_back(to_expr(a, api.c_str(), "an argument"));
          // "void": a C function that returns nothing (called for its effect).
          bool is_void = py::isinstance<py::str>(dtype) && dtype.cast<std::string>() == "void";
          DataType result = is_void ? DataType::void_() : to_dtype(dtype, api.c_str());
          return Expr(make<Call>(result, op, std::move(call_args)));
        },
        py::arg("dtype"), py::arg("func_name"), doc);
  };
  bind_extern_call("call_extern", Builtin::CallExtern, R"doc(A call of the C function
``func_name``, with the result dtype ``dtype`` ("void" for a function returning nothing,
"int32", "float64", …). Arguments: integer and float expressions (passed as their dtype) and
buffer pointers (``buf.data`` or ``buf.access_ptr("r")``). Wrap it in tir.Evaluate to use it
as a statement (te.extern does so for an expression fcompute returns).

The symbol resolves in the process (libc, libm, the program) or in a library opened with
kiln.runtime.load_library.

Example:
    tir.call_extern("float64", "hypot", x, y))doc");
  bind_extern_call("call_pure_extern", Builtin::CallPureExtern, R"doc(As call_extern, for a C
function without side effects: the call may be moved or removed when its value is unused.)doc");

  py::class_<Call, ExprNode, Ref<Call>>(
      m, "Call", "A call of a builtin: a math function (exp, tanh, …) or an IR operation.")
      .def_property_readonly(
          "op", [](const Call& self) { return builtin_name(self.op); },
          "The builtin's name, e.g. \"exp\", \"if_then_else\".")
      .def_readonly("args", &Call::args, "The arguments, a list of expressions.");
  py::class_<Ramp, ExprNode, Ref<Ramp>>(
      m, "Ramp", "The vector [base, base + stride, …, base + (lanes - 1) * stride].")
      .def_readonly("base", &Ramp::base, "The first lane's value.")
      .def_readonly("stride", &Ramp::stride, "The step between lanes.")
      .def_readonly("lanes", &Ramp::lanes, "The number of lanes.");
  py::class_<Broadcast, ExprNode, Ref<Broadcast>>(m, "Broadcast",
                                                  "A vector repeating one scalar value.")
      .def_readonly("value", &Broadcast::value, "The scalar value.")
      .def_readonly("lanes", &Broadcast::lanes, "The number of lanes.");
  py::class_<Let, ExprNode, Ref<Let>>(m, "Let", "let var = value in body.")
      .def_readonly("var", &Let::var, "The bound variable.")
      .def_readonly("value", &Let::value, "The value bound to var.")
      .def_readonly("body", &Let::body, "The expression that uses it.");
  py::class_<BufferLoad, ExprNode, Ref<BufferLoad>>(m, "BufferLoad",
                                                    "A load of one element (or a vector) of a "
                                                    "buffer: buffer[indices].")
      .def_readonly("buffer", &BufferLoad::buffer, "The buffer it loads from.")
      .def_readonly("indices", &BufferLoad::indices, "One index per dimension.");
  py::class_<CommReducer, Node, Ref<CommReducer>>(
      m, "CommReducer",
      "A commutative reducer: result = combine(lhs, rhs), starting from identity_element "
      "(te.sum's is x + y from 0).")
      .def_readonly("lhs", &CommReducer::lhs, "The variables of the left operands.")
      .def_readonly("rhs", &CommReducer::rhs, "The variables of the right operands.")
      .def_readonly("result", &CommReducer::result, "The combined values, of lhs and rhs.")
      .def_readonly("identity_element", &CommReducer::identity, "The neutral elements.");
  py::class_<Reduce, ExprNode, Ref<Reduce>>(m, "Reduce",
                                            "A reduction of source over the reduce axes "
                                            "(what te.sum, te.max … return).")
      .def_readonly("combiner", &Reduce::combiner, "The CommReducer that combines values.")
      .def_readonly("source", &Reduce::source, "The reduced expressions (several for a tuple).")
      .def_readonly("axis", &Reduce::axis, "The reduce axes, tir.IterVars.")
      .def_readonly("condition", &Reduce::condition, "Where the points count (the where=).")
      .def_readonly("value_index", &Reduce::value_index,
                    "Which component of a tuple reduction this is.");

  py::class_<Range>(m, "Range", "The integers [min, min + extent).")
      .def(py::init([](py::handle begin, py::handle end) {
             Expr b = to_expr(begin, "tir.Range", "begin");
             Expr e = to_expr(end, "tir.Range", "end");
             return Range{b, sub(e, b)};
           }),
           py::arg("begin"), py::arg("end"),
           R"doc(The range [begin, end).

Raises:
    KilnTypeError: begin or end is not an expression or a number.)doc")
      .def_readonly("min", &Range::min, "The first value.")
      .def_readonly("extent", &Range::extent, "The number of values.");
  py::class_<IterVar>(m, "IterVar", R"doc(An iteration variable with its domain: an axis of a
te.compute, a reduce axis (te.reduce_axis), or a block iterator.

In tensor expressions it stands for its variable: ``A[i, k]``, ``k * 2``.)doc")
      .def_readonly("var", &IterVar::var, "The iteration variable, a tir.Var.")
      .def_readonly("dom", &IterVar::dom, "Its domain, a Range.")
      .def_property_readonly(
          "iter_type", [](const IterVar& self) { return iter_type_name(self.type); },
          "\"spatial\", \"reduce\" or \"opaque\".")
      // An IterVar stands for its variable in expressions (k in te.sum(A[i, k], axis=k)).
      .def("_as_expr", [](const IterVar& self) { return Expr(self.var); });

  // Buffers.
  py::class_<Buffer, Node, Ref<Buffer>>(m, "Buffer", R"doc(A typed, shaped view of memory that
loads and stores name: a parameter of a PrimFunc or an allocation.

``buffer[i, j]`` builds a load of one element.)doc")
      .def_readonly("name", &Buffer::name, "The name (a hint for printing).")
      .def_readonly("data", &Buffer::data, "The pointer variable of its storage.")
      .def_property_readonly(
          "dtype", [](const Buffer& b) { return b.dtype.str(); }, "The element dtype.")
      .def_readonly("shape", &Buffer::shape, "The extents, one expression per dimension.")
      .def_readonly("strides", &Buffer::strides,
                    "The strides in elements; empty for compact row-major.")
      .def_readonly("elem_offset", &Buffer::elem_offset,
                    "The offset of element 0 from data, in elements.")
      .def_property_readonly("data_alignment", &Buffer::alignment,
                             "The bytes the data is known to be aligned to: the declared "
                             "alignment, else the element's size.")
      .def_readonly("offset_factor", &Buffer::offset_factor,
                    "A factor that elem_offset is a multiple of.")
      .def_property_readonly("ndim", &Buffer::ndim, "The number of dimensions.")
      .def(
          "scope", [](const Buffer& b) { return b.scope; },
          "The storage scope: \"global\", \"shared\" or \"local\".")
      .def(
          "__getitem__",
          [](const Ref<Buffer>& self, py::handle index) {
            std::vector<Expr> indices;
            if (py::isinstance<py::tuple>(index)) {
              for (py::handle i : index)
                indices.push_back(to_expr(i, "Buffer.__getitem__", "an index"));
            } else {
              indices.push_back(to_expr(index, "Buffer.__getitem__", "the index"));
            }
            return buffer_load(self, std::move(indices));
          },
          py::arg("indices"),
          R"doc(A load of the element at ``indices``: ``B[i, j]``.

Raises:
    KilnIndexError: the number of indices differs from ndim.
    KilnTypeError: an index is not an integer expression.)doc")
      .def(
          "access_ptr",
          [](const Buffer& self, py::handle access_mask, py::handle ptr_type,
             py::handle content_lanes, py::handle offset) {
            const char* api = "Buffer.access_ptr";
            std::string mask = to_str(access_mask, api, "access_mask");
            user_check(!mask.empty() && mask.find_first_not_of("rw") == std::string::npos)
                << api << ": access_mask must be \"r\", \"w\" or \"rw\", found \"" << mask << "\"";
            user_check(to_str(ptr_type, api, "ptr_type") == "handle")
                << api << ": only ptr_type=\"handle\" is supported";
            user_check(to_int(content_lanes, api, "content_lanes") == 1)
                << api << ": only content_lanes=1 is supported";
            const int64_t* elem_offset = as_const_int(self.elem_offset);
            user_check(to_int(offset, api, "offset") == 0 && elem_offset != nullptr &&
                       *elem_offset == 0)
                << api << ": buffer " << self.name
                << ": only the pointer to element 0 (offset=0, elem_offset 0) is supported; "
                   "pass an offset to the C function as an argument of its own";
            return self.data;
          },
          py::arg("access_mask"), py::arg("ptr_type") = "handle", py::arg("content_lanes") = 1,
          py::arg("offset") = 0,
          R"doc(The pointer to the buffer's first element, to pass to a C function
(tir.call_extern); the same as ``buffer.data``. access_mask ("r", "w", "rw") documents the
access. kiln passes the pointer only: the C function receives element 0, and an offset is
an argument of its own.

Raises:
    KilnValueError: access_mask is not "r"/"w"/"rw", ptr_type is not "handle", content_lanes
        is not 1, or offset or the buffer's elem_offset is not 0.)doc");
  m.def(
      "decl_buffer",
      [](py::handle shape, py::handle dtype, py::handle name, py::handle scope) {
        const char* api = "tir.decl_buffer";
        return decl_buffer(to_shape(shape, api), to_dtype(dtype, api), to_str(name, api, "name"),
                           to_str(scope, api, "scope"));
      },
      py::arg("shape"), py::arg("dtype") = "float32", py::arg("name") = "buffer",
      py::arg("scope") = "global",
      R"doc(A new compact buffer.

Args:
    shape (tuple of int or PrimExpr): the extents.
    dtype (str): the element dtype.
    name (str): the name.
    scope (str): "global", "shared" or "local".

Raises:
    KilnTypeError: an argument has the wrong type.)doc");

  // Statements.
  py::class_<StmtNode, Stmt>(m, "Stmt", py::base<Node>(), "The base class of statements.");
  py::class_<LetStmt, StmtNode, Ref<LetStmt>>(m, "LetStmt", "let var = value in body.")
      .def_readonly("var", &LetStmt::var, "The bound variable.")
      .def_readonly("value", &LetStmt::value, "The value bound to var.")
      .def_readonly("body", &LetStmt::body, "The statement that uses it.");
  py::class_<AssertStmt, StmtNode, Ref<AssertStmt>>(
      m, "AssertStmt", "Fails with message unless condition holds, then runs body.")
      .def_readonly("condition", &AssertStmt::condition, "The checked condition.")
      .def_readonly("message", &AssertStmt::message, "The failure message.")
      .def_readonly("body", &AssertStmt::body, "What runs after the check.");
  py::class_<BufferStore, StmtNode, Ref<BufferStore>>(m, "BufferStore", "buffer[indices] = value.")
      .def_readonly("buffer", &BufferStore::buffer, "The buffer it stores into.")
      .def_readonly("value", &BufferStore::value, "The stored value.")
      .def_readonly("indices", &BufferStore::indices, "One index per dimension.");
  py::class_<Allocate, StmtNode, Ref<Allocate>>(
      m, "Allocate", "Allocates the storage of buffer for the duration of body.")
      .def_readonly("buffer", &Allocate::buffer, "The allocated buffer.")
      .def_readonly("body", &Allocate::body, "The statement that uses it.");
  py::class_<For, StmtNode, Ref<For>>(m, "For", "for loop_var in [min, min + extent): body.")
      .def_readonly("loop_var", &For::loop_var, "The loop variable.")
      .def_readonly("min", &For::min, "The first value.")
      .def_readonly("extent", &For::extent, "The number of iterations.")
      .def_property_readonly(
          "kind", [](const For& f) { return for_kind_name(f.kind); },
          "\"serial\", \"parallel\", \"vectorized\", \"unrolled\" or \"thread_binding\".")
      .def_readonly("body", &For::body, "The loop body.")
      .def_readonly("thread_tag", &For::thread_tag,
                    "The thread axis of a thread_binding loop (\"threadIdx.x\" …), else \"\".")
      .def_property_readonly(
          "annotations",
          [](const For& f) {
            py::dict d;
            for (const auto& [k, v] : f.annotations) d[py::str(k)] = from_attr_value(v);
            return d;
          },
          "The loop's annotations, a dict (Schedule.annotate sets them).");
  py::class_<SeqStmt, StmtNode, Ref<SeqStmt>>(m, "SeqStmt", "Statements run in order.")
      .def_readonly("seq", &SeqStmt::seq, "The statements, in order.")
      .def("__len__", [](const SeqStmt& s) { return s.seq.size(); })
      .def(
          "__getitem__",
          [](const SeqStmt& s, py::handle index) {
            int64_t i = to_int(index, "SeqStmt.__getitem__", "index");
            index_check(i >= 0 && i < static_cast<int64_t>(s.seq.size()))
                << "SeqStmt: index " << i << " out of range for " << s.seq.size() << " statements";
            return s.seq[static_cast<size_t>(i)];
          },
          py::arg("index"),
          R"doc(The statement at ``index``.

Raises:
    KilnIndexError: index is out of range.
    KilnTypeError: index is not an int.)doc");
  py::class_<IfThenElse, StmtNode, Ref<IfThenElse>>(m, "IfThenElse",
                                                    "if condition: then_case else: else_case.")
      .def_readonly("condition", &IfThenElse::condition, "The bool condition.")
      .def_readonly("then_case", &IfThenElse::then_case, "What runs where it holds.")
      .def_readonly("else_case", &IfThenElse::else_case, "What runs elsewhere, or None.");
  py::class_<Evaluate, StmtNode, Ref<Evaluate>>(m, "Evaluate",
                                                "Evaluates an expression for its effect (a call).")
      .def(py::init([](py::handle value) {
             return make<Evaluate>(to_expr(value, "tir.Evaluate", "value"));
           }),
           py::arg("value"), R"doc(A statement that evaluates ``value`` for its effect, e.g. a
tir.call_extern in the statement a te.extern fcompute returns.

Raises:
    KilnTypeError: value is not an expression.)doc")
      .def_readonly("value", &Evaluate::value, "The evaluated expression.");
  py::class_<BufferRegion>(m, "BufferRegion",
                           "A region of a buffer, one Range per dimension (a block's reads "
                           "and writes).")
      .def_readonly("buffer", &BufferRegion::buffer, "The buffer of the region.")
      .def_readonly("region", &BufferRegion::region, "One Range per dimension.");
  py::class_<Block, StmtNode, Ref<Block>>(m, "Block", R"doc(The unit of scheduling: a computation
with its iterators (spatial, reduce), the regions it reads and writes, the buffers it allocates,
an optional init (for reductions) and a body. Schedule.get(block_rv) gives one.)doc")
      .def_readonly("name_hint", &Block::name, "The block's name, unique in its function.")
      .def_readonly("iter_vars", &Block::iter_vars,
                    "The block iterators, tir.IterVars with their domains and kinds.")
      .def_readonly("reads", &Block::reads, "The regions it reads, BufferRegions.")
      .def_readonly("writes", &Block::writes, "The regions it writes, BufferRegions.")
      .def_readonly("alloc_buffers", &Block::alloc_buffers, "The buffers it allocates.")
      .def_readonly("init", &Block::init,
                    "What runs before the first reduction step of each output point, or None.")
      .def_readonly("body", &Block::body, "The statement the block runs for each point.")
      .def_property_readonly(
          "annotations",
          [](const Block& b) {
            py::dict d;
            for (const auto& [k, v] : b.annotations) d[py::str(k)] = from_attr_value(v);
            return d;
          },
          "The block's annotations, a dict.");
  py::class_<BlockRealize, StmtNode, Ref<BlockRealize>>(
      m, "BlockRealize",
      "Runs a block where predicate holds, with each iterator bound to a value of the loop "
      "variables.")
      .def_readonly("iter_values", &BlockRealize::iter_values,
                    "The values of the block's iterators.")
      .def_readonly("predicate", &BlockRealize::predicate, "Where the block runs.")
      .def_readonly("block", &BlockRealize::block, "The Block it runs.");

  // Functions and modules.
  py::class_<PrimFunc, Node, Ref<PrimFunc>>(m, "PrimFunc", R"doc(A function of TensorIR: scalar
and buffer parameters and a body, what te.create_prim_func makes and tir.Schedule transforms.

print(func) shows it as TVMScript-like text; tir.interpret runs it; kiln.build compiles it.)doc")
      .def_readonly("params", &PrimFunc::params,
                    "The parameters, Vars (a buffer parameter is the Var of buffer_map).")
      .def_property_readonly(
          "buffer_map",
          [](const PrimFunc& f) {
            py::dict d;
            for (const auto& [var, buffer] : f.buffer_map) d[py::cast(var)] = py::cast(buffer);
            return d;
          },
          "The buffer of each buffer parameter: a dict from parameter Var to Buffer.")
      .def_readonly("body", &PrimFunc::body, "The body statement.")
      .def_property_readonly(
          "attrs",
          [](const PrimFunc& f) {
            py::dict d;
            for (const auto& [k, v] : f.attrs) d[py::str(k)] = from_attr_value(v);
            return d;
          },
          "The function's attributes, a dict (\"global_symbol\", …).")
      .def(
          "with_attr",
          [](const PrimFunc& f, py::handle key, py::handle value) {
            auto n = copy(&f);
            n->attrs[to_str(key, "PrimFunc.with_attr", "key")] =
                to_attr_value(value, "PrimFunc.with_attr");
            return n;
          },
          py::arg("key"), py::arg("value"),
          R"doc(A copy of the function with attribute ``key`` set to ``value``.

Args:
    key (str): the attribute, e.g. "global_symbol".
    value (int, float, bool, str or PrimExpr): its value.

Raises:
    KilnTypeError: key is not a str or value is not a constant or an expression.)doc");

  py::class_<IRModule, Node, Ref<IRModule>>(
      m, "IRModule",
      "A module of named PrimFuncs: what kiln.build compiles and tir.Schedule.mod holds.")
      .def(py::init([](py::handle functions) {
             const char* api = "IRModule";
             auto mod = make<IRModule>();
             if (functions.is_none()) return mod;
             if (!py::isinstance<py::dict>(functions)) {
               raise_type_error(api, "functions", "a dict from names to PrimFuncs", functions);
             }
             for (auto [name, func] : py::reinterpret_borrow<py::dict>(functions)) {
               std::string key = to_str(name, api, "a key of functions");
               mod->functions[key] =
                   to_node<PrimFunc>(func, api, "a value of functions", "a PrimFunc");
             }
             return mod;
           }),
           py::arg("functions") = py::none(),
           R"doc(A module of the given functions.

Args:
    functions (dict of str to PrimFunc, optional): the functions by name.

Raises:
    KilnTypeError: functions is not a dict from names to PrimFuncs.)doc")
      .def(
          "__getitem__",
          [](const IRModule& mod, py::handle name) {
            return mod.lookup(to_str(name, "IRModule.__getitem__", "name"));
          },
          py::arg("name"),
          R"doc(The function called ``name``: ``mod["main"]``.

Raises:
    KilnIndexError: the module has no such function (the message lists its functions).
    KilnTypeError: name is not a str.)doc")
      .def("__contains__",
           [](const IRModule& mod, py::handle name) {
             return py::isinstance<py::str>(name) &&
                    mod.functions.count(name.cast<std::string>()) > 0;
           })
      .def("__len__", [](const IRModule& mod) { return mod.functions.size(); })
      .def(
          "keys",
          [](const IRModule& mod) {
            std::vector<std::string> names;
            for (const auto& [name, f] : mod.functions) names.push_back(name);
            return names;
          },
          "The function names, sorted.")
      .def_readonly("functions", &IRModule::functions,
                    "The functions, a dict from name to PrimFunc.");
  bind_script_and_structural(m);
  bind_serialization(m);
}

// ---------------------------------------------------------------------------------------------
// Printing (str/repr of every node, PrimFunc/IRModule.script() and .show()) and structural
// comparison (structural_equal, structural_hash, assert_structural_equal).

namespace {

// A Node or None; anything else is a type error that names the API.
Ref<Node> to_optional_node(const py::handle& obj, const char* api, const char* what) {
  if (obj.is_none()) return nullptr;
  type_check(py::isinstance<Node>(obj))
      << api << ": " << what << " must be an IR node (an expression, statement, buffer, PrimFunc "
      << "or IRModule), found " << py::str(py::type::of(obj).attr("__name__")).cast<std::string>();
  return obj.cast<Ref<Node>>();
}

// The name a function prints under: `name`, else its global_symbol when it has one.
std::string func_name(const PrimFunc& f, const py::object& name, const char* api) {
  if (!name.is_none()) return to_str(name, api, "name");
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
        return to_script(self, func_name(*self, name, "PrimFunc.script"));
      },
      py::arg("name") = py::none(),
      R"doc(The function as TVMScript-like text (what print(func) shows).

Args:
    name (str, optional): the name it prints under; default: its global_symbol, else main.)doc");
  func.def(
      "show",
      [](const Ref<PrimFunc>& self, const py::object& name) {
        py::print(to_script(self, func_name(*self, name, "PrimFunc.show")));
      },
      py::arg("name") = py::none(), "Prints script(name) to stdout.");

  auto mod = py::reinterpret_borrow<py::class_<IRModule, Node, Ref<IRModule>>>(m.attr("IRModule"));
  mod.def(
      "script", [](const Ref<IRModule>& self) { return to_script(self); },
      "The module as TVMScript-like text.");
  mod.def(
      "show", [](const Ref<IRModule>& self) { py::print(to_script(self)); },
      "Prints script() to stdout.");

  m.def(
      "structural_equal",
      [](const py::object& lhs, const py::object& rhs, py::handle map_free_vars) {
        const char* api = "structural_equal";
        return structural_equal(to_optional_node(lhs, api, "lhs"),
                                to_optional_node(rhs, api, "rhs"),
                                to_bool(map_free_vars, api, "map_free_vars"));
      },
      py::arg("lhs"), py::arg("rhs"), py::arg("map_free_vars") = false,
      R"doc(Whether two IR objects have the same structure.

Variables and buffers are compared by where they are defined, not by name (two functions made
by the same code are equal); block names and constants must match.

Args:
    lhs, rhs: IR nodes (expressions, statements, buffers, PrimFuncs, IRModules) or None.
    map_free_vars (bool): let variables defined outside both objects correspond too.

Raises:
    KilnTypeError: an argument is not an IR node or None.)doc");
  m.def(
      "structural_hash",
      [](const py::object& node, py::handle map_free_vars) {
        const char* api = "structural_hash";
        return structural_hash(to_optional_node(node, api, "node"),
                               to_bool(map_free_vars, api, "map_free_vars"));
      },
      py::arg("node"), py::arg("map_free_vars") = false,
      R"doc(A 64-bit hash consistent with structural_equal.

The hash ignores variable names and is the same in every process, run and machine, so it can
key a cache or a database of functions.

Raises:
    KilnTypeError: node is not an IR node or None.)doc");
  m.def(
      "assert_structural_equal",
      [](const py::object& lhs, const py::object& rhs, py::handle map_free_vars) {
        const char* api = "assert_structural_equal";
        std::string diff =
            structural_diff(to_optional_node(lhs, api, "lhs"), to_optional_node(rhs, api, "rhs"),
                            to_bool(map_free_vars, api, "map_free_vars"));
        user_check(diff.empty())
            << "assert_structural_equal: the two objects are not structurally equal; first "
               "difference at "
            << diff;
      },
      py::arg("lhs"), py::arg("rhs"), py::arg("map_free_vars") = false,
      R"doc(Raises unless structural_equal(lhs, rhs, map_free_vars).

Raises:
    KilnValueError: the objects differ; the message shows the path to the first difference.
    KilnTypeError: an argument is not an IR node or None.)doc");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Serialization (kiln.ir.save_json / load_json wrap these) and pickling of PrimFunc and IRModule
// through the same JSON text, so that functions can be sent to worker processes.

namespace {

void bind_serialization(py::module_& m) {
  m.def(
      "save_json",
      [](const py::object& node) { return save_json(to_optional_node(node, "save_json", "node")); },
      py::arg("node"),
      R"doc(The IR node (or None) as a JSON document; see kiln.ir.save_json.

Raises:
    KilnTypeError: node is not an IR node or None.
    KilnValueError: the tree cannot be written faithfully.)doc");
  m.def(
      "load_json", [](py::handle text) { return load_json(to_str(text, "load_json", "text")); },
      py::arg("text"),
      R"doc(The IR node a document of save_json holds; see kiln.ir.load_json.

Raises:
    KilnTypeError: text is not a str.
    KilnValueError: the document is malformed (the message gives the path).)doc");

  // Pickling goes through kiln.ir.load_json, a plain Python function, so that a pickle names a
  // stable importable function and holds the JSON text, readable by any later kiln of the
  // same format version.
  auto reduce = [](const Ref<Node>& self) {
    py::object load = py::module_::import("kiln.ir").attr("load_json");
    return py::make_tuple(load, py::make_tuple(save_json(self)));
  };
  const char* reduce_doc =
      "Pickle support: the object is rebuilt by kiln.ir.load_json from its JSON text.";
  py::reinterpret_borrow<py::class_<PrimFunc, Node, Ref<PrimFunc>>>(m.attr("PrimFunc"))
      .def("__reduce__", reduce, reduce_doc);
  py::reinterpret_borrow<py::class_<IRModule, Node, Ref<IRModule>>>(m.attr("IRModule"))
      .def("__reduce__", reduce, reduce_doc);
}

}  // namespace

}  // namespace kiln::python
