// Printing of constants and expressions as Python text: infix operators with Python precedence
// (parentheses only where needed), `T.` calls for everything else, typed constants that read
// back to the same value.
#include <charconv>
#include <cmath>

#include "src/ir/script_printer.h"

namespace kiln::ir::script {

std::string quote(const std::string& text) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "\"";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string format_float(double value, DataType dtype) {
  if (std::isnan(value)) return "\"nan\"";
  if (std::isinf(value)) return value > 0 ? "\"inf\"" : "\"-inf\"";
  if (value == 0.0) return std::signbit(value) ? "-0.0" : "0";
  char buffer[64];
  std::to_chars_result result;
  // A float32 constant holds a float's value exactly; its shortest float text is shorter.
  if (dtype.code() == DataType::kFloat && dtype.bits() == 32) {
    result = std::to_chars(buffer, buffer + sizeof(buffer), static_cast<float>(value));
  } else {
    result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  }
  return std::string(buffer, result.ptr);
}

std::string ScriptPrinter::expr(const Expr& e) {
  return print(e).text;
}

Doc ScriptPrinter::print(const Expr& e) {
  if (!e.defined()) return {"None", kAtom};
  Doc doc = dispatch(e);
  if (is_marked(e.get())) doc.text = kMarkBegin + doc.text + kMarkEnd;
  return doc;
}

std::string ScriptPrinter::operand(const Expr& e, int min_prec) {
  Doc doc = print(e);
  if (doc.prec < min_prec) return "(" + doc.text + ")";
  return doc.text;
}

// Left-associative operators: the right operand needs a strictly higher precedence, so that
// `a - (b - c)` keeps its parentheses. Python chains comparisons (`a < b < c`), so both
// operands of a comparison need a higher precedence.
Doc ScriptPrinter::infix(const BinaryNode* op, const char* symbol, int prec, bool chains) {
  std::string a = operand(op->a, chains ? prec + 1 : prec);
  std::string b = operand(op->b, prec + 1);
  return {a + " " + symbol + " " + b, prec};
}

std::string ScriptPrinter::join(const std::vector<Expr>& exprs) {
  std::string out;
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (i > 0) out += ", ";
    out += expr(exprs[i]);
  }
  return out;
}

Doc ScriptPrinter::call(const char* callee, const std::vector<Expr>& args) {
  return {std::string(callee) + "(" + join(args) + ")", kAtom};
}

std::string ScriptPrinter::range_end(const Range& range) {
  const int64_t* lo = as_const_int(range.min);
  const int64_t* extent = as_const_int(range.extent);
  if (lo != nullptr && extent != nullptr && range.min->dtype.is_scalar()) {
    return expr(make_const(range.min->dtype, *lo + *extent));
  }
  if (lo != nullptr && *lo == 0) return expr(range.extent);
  return operand(range.min, kAdd) + " + " + operand(range.extent, kAdd + 1);
}

std::string ScriptPrinter::range_args(const Range& range) {
  if (is_const_int(range.min, 0)) return expr(range.extent);
  return expr(range.min) + ", " + range_end(range);
}

std::string ScriptPrinter::dict(const Attrs& attrs) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : attrs) {
    if (!first) out += ", ";
    first = false;
    out += quote(key) + ": " + expr(value);
  }
  return out + "}";
}

std::string ScriptPrinter::indices(const std::vector<Expr>& indices) {
  if (indices.empty()) return "[()]";
  return "[" + join(indices) + "]";
}

std::string ScriptPrinter::buffer_args(const Buffer* buffer) {
  std::string out = "(" + join(buffer->shape) + (buffer->shape.size() == 1 ? ",)" : ")");
  out += ", " + quote(buffer->dtype.str());
  if (buffer->scope != "global") out += ", scope=" + quote(buffer->scope);
  if (!buffer->strides.empty()) {
    out += ", strides=(" + join(buffer->strides) + (buffer->strides.size() == 1 ? ",)" : ")");
  }
  if (buffer->elem_offset.defined() && !is_const_int(buffer->elem_offset, 0)) {
    out += ", elem_offset=" + expr(buffer->elem_offset);
  }
  if (buffer->data_alignment != 0) out += ", align=" + std::to_string(buffer->data_alignment);
  if (buffer->offset_factor != 1) {
    out += ", offset_factor=" + std::to_string(buffer->offset_factor);
  }
  return out;
}

std::string ScriptPrinter::buffer_param(const Buffer* buffer) {
  declare(buffer);
  return wrap_mark(buffer, name(buffer) + ": T.Buffer(" + buffer_args(buffer) + ")");
}

// `lambda x, y: x + y`, or `lambda x0, x1, y0, y1: (r0, r1)` for a tuple reducer.
std::string ScriptPrinter::lambda(const CommReducer* reducer) {
  if (reducer == nullptr) return "None";
  std::string params;
  for (const auto* vars : {&reducer->lhs, &reducer->rhs}) {
    for (const Ref<Var>& v : *vars) {
      if (!params.empty()) params += ", ";
      params += name(v.get());
    }
  }
  std::string result = join(reducer->result);
  if (reducer->result.size() != 1) result = "(" + result + ")";
  return "lambda " + params + ": " + result;
}

std::string ScriptPrinter::comm_reducer(const CommReducer* reducer) {
  return wrap_mark(reducer,
                   "T.comm_reducer(" + lambda(reducer) + ", [" + join(reducer->identity) + "])");
}

// --- Constants and variables -------------------------------------------------------------------

Doc ScriptPrinter::visit(const IntImm* op) {
  if (op->dtype.is_bool()) return {op->value != 0 ? "T.bool(True)" : "T.bool(False)", kAtom};
  std::string digits = op->dtype.is_uint() && op->dtype.bits() == 64
                           ? std::to_string(static_cast<uint64_t>(op->value))
                           : std::to_string(op->value);
  if (op->dtype == DataType::int32()) return {digits, op->value < 0 ? kUnary : kAtom};
  return {"T." + op->dtype.str() + "(" + digits + ")", kAtom};
}

Doc ScriptPrinter::visit(const FloatImm* op) {
  return {"T." + op->dtype.str() + "(" + format_float(op->value, op->dtype) + ")", kAtom};
}

Doc ScriptPrinter::visit(const StringImm* op) {
  return {quote(op->value), kAtom};
}

Doc ScriptPrinter::visit(const Var* op) {
  return {name(op), kAtom};
}

// --- Arithmetic, comparison and logic ----------------------------------------------------------

Doc ScriptPrinter::visit(const Add* op) {
  return infix(op, "+", kAdd);
}
Doc ScriptPrinter::visit(const Sub* op) {
  return infix(op, "-", kAdd);
}
Doc ScriptPrinter::visit(const Mul* op) {
  return infix(op, "*", kMul);
}
// `/` is true division in Python; integer Div truncates, so it is spelled out.
Doc ScriptPrinter::visit(const Div* op) {
  if (op->dtype.is_float()) return infix(op, "/", kMul);
  return call("T.truncdiv", {op->a, op->b});
}
Doc ScriptPrinter::visit(const Mod* op) {
  return call("T.truncmod", {op->a, op->b});
}
Doc ScriptPrinter::visit(const FloorDiv* op) {
  return infix(op, "//", kMul);
}
Doc ScriptPrinter::visit(const FloorMod* op) {
  return infix(op, "%", kMul);
}
Doc ScriptPrinter::visit(const Min* op) {
  return call("T.min", {op->a, op->b});
}
Doc ScriptPrinter::visit(const Max* op) {
  return call("T.max", {op->a, op->b});
}
Doc ScriptPrinter::visit(const EQ* op) {
  return infix(op, "==", kCompare, true);
}
Doc ScriptPrinter::visit(const NE* op) {
  return infix(op, "!=", kCompare, true);
}
Doc ScriptPrinter::visit(const LT* op) {
  return infix(op, "<", kCompare, true);
}
Doc ScriptPrinter::visit(const LE* op) {
  return infix(op, "<=", kCompare, true);
}
Doc ScriptPrinter::visit(const GT* op) {
  return infix(op, ">", kCompare, true);
}
Doc ScriptPrinter::visit(const GE* op) {
  return infix(op, ">=", kCompare, true);
}
Doc ScriptPrinter::visit(const And* op) {
  return infix(op, "and", kAnd);
}
Doc ScriptPrinter::visit(const Or* op) {
  return infix(op, "or", kOr);
}
Doc ScriptPrinter::visit(const Not* op) {
  return {"not " + operand(op->a, kNot), kNot};
}

// --- Other expressions ------------------------------------------------------------------------

Doc ScriptPrinter::visit(const Select* op) {
  return call("T.Select", {op->condition, op->true_value, op->false_value});
}

Doc ScriptPrinter::visit(const Cast* op) {
  return {"T.Cast(" + quote(op->dtype.str()) + ", " + expr(op->value) + ")", kAtom};
}

Doc ScriptPrinter::visit(const Call* op) {
  std::string callee = std::string("T.") + builtin_name(op->op);
  switch (op->op) {
    // The result dtype of these is not implied by their arguments.
    case Builtin::Reinterpret:
    case Builtin::CallPureExtern:
    case Builtin::CallExtern:
    case Builtin::CallLLVMPureIntrin: {
      std::string args = quote(op->dtype.str());
      if (!op->args.empty()) args += ", " + join(op->args);
      return {callee + "(" + args + ")", kAtom};
    }
    default:
      return call(callee.c_str(), op->args);
  }
}

Doc ScriptPrinter::visit(const Ramp* op) {
  return {
      "T.Ramp(" + expr(op->base) + ", " + expr(op->stride) + ", " + std::to_string(op->lanes) + ")",
      kAtom};
}

Doc ScriptPrinter::visit(const Broadcast* op) {
  return {"T.Broadcast(" + expr(op->value) + ", " + std::to_string(op->lanes) + ")", kAtom};
}

Doc ScriptPrinter::visit(const Let* op) {
  std::string value = expr(op->value);
  std::string var = name(op->var.get());
  return {"T.let(" + var + ", " + value + ", " + expr(op->body) + ")", kAtom};
}

Doc ScriptPrinter::visit(const BufferLoad* op) {
  return {name(op->buffer.get()) + indices(op->indices), kAtom};
}

// T.reduce(lambda x, y: x + y, [identity], [source], axis={k: range(128)}, where=…, …)
Doc ScriptPrinter::visit(const Reduce* op) {
  const CommReducer* reducer = op->combiner.get();
  std::string text = "T.reduce(" + lambda(reducer) + ", [" +
                     (reducer != nullptr ? join(reducer->identity) : "") + "], [" +
                     join(op->source) + "], axis={";
  for (size_t i = 0; i < op->axis.size(); ++i) {
    const IterVar& iv = op->axis[i];
    if (i > 0) text += ", ";
    std::string range = "range(" + range_args(iv.dom) + ")";
    if (iv.type != IterType::kCommReduce) {
      range = "(" + range + ", " + quote(iter_type_name(iv.type)) + ")";
    }
    text += name(iv.var.get()) + ": " + range;
  }
  text += "}";
  if (op->condition.defined() && !is_const_int(op->condition, 1)) {
    text += ", where=" + expr(op->condition);
  }
  if (op->value_index != 0) text += ", value_index=" + std::to_string(op->value_index);
  if (!op->init.empty()) text += ", init=[" + join(op->init) + "]";
  return {text + ")", kAtom};
}

}  // namespace kiln::ir::script
