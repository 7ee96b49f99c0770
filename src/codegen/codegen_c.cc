// The C-like base of the GPU code generators: expressions, statements and kernel signatures
// (see codegen_c.h). Every expression is fully parenthesized; nothing depends on C's precedence.
#include "codegen_c.h"

#include <cmath>
#include <cstdio>

#include "kiln/ir/buffer.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "kiln/support/error.h"

namespace kiln::codegen {

using namespace ir;

namespace {

// Words that CUDA C++ or OpenCL C reserve, which a variable name must not become.
const std::unordered_set<std::string>& reserved_words() {
  static const std::unordered_set<std::string> words = {
      "auto",      "bool",     "break",    "case",   "char",     "const",    "continue", "default",
      "do",        "double",   "else",     "enum",   "extern",   "float",    "for",      "goto",
      "half",      "if",       "inline",   "int",    "long",     "register", "restrict", "return",
      "short",     "signed",   "sizeof",   "static", "struct",   "switch",   "typedef",  "union",
      "unsigned",  "void",     "volatile", "while",  "global",   "local",    "constant", "private",
      "kernel",    "new",      "delete",   "class",  "template", "this",     "true",     "false",
      "namespace", "operator", "min",      "max",    "abs",      "exp",      "log",      "sqrt",
      "barrier"};
  return words;
}

const char* launch_tags[6] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                              "threadIdx.x", "threadIdx.y", "threadIdx.z"};

}  // namespace

// ---- Names ----

std::string CodeGenC::name_of(const Var* var) {
  auto it = names_.find(var);
  if (it != names_.end()) return it->second;
  std::string base;
  for (char c : var->name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    base += ok ? c : '_';
  }
  if (base.empty() || (base[0] >= '0' && base[0] <= '9')) base = "v_" + base;
  if (base.rfind("kiln_", 0) == 0 || base.rfind("__", 0) == 0) base = "v_" + base;
  if (reserved_words().count(base) != 0) base += "_";
  std::string name = base;
  for (int k = 1; used_names_.count(name) != 0; ++k) name = base + "_" + std::to_string(k);
  used_names_.insert(name);
  names_.emplace(var, name);
  return name;
}

void CodeGenC::unsupported(const std::string& what) {
  user_error(ErrorKind::kValue) << "codegen: kernel " << kernel_name_ << ": " << what;
}

std::ostream& CodeGenC::line() {
  for (int i = 0; i < indent_; ++i) *out_ << "  ";
  return *out_;
}

std::string CodeGenC::bfloat16_in_software(const std::string& prefix, const std::string& ushort,
                                           const std::string& uint,
                                           const std::string& bits_of_float,
                                           const std::string& float_of_bits) {
  auto fn = [&](const std::string& ret, const std::string& name, const std::string& arg,
                const std::string& body) {
    return prefix + " " + ret + " " + name + "(" + arg + ") {\n" + body + "}\n";
  };
  // The upper half of a float, rounded to nearest even (NaN kept a NaN).
  std::string to_bf16 = "  " + uint + " u = " + bits_of_float +
                        "(f);\n"
                        "  if ((u & 0x7fffffffu) > 0x7f800000u) return (" +
                        ushort +
                        ")((u >> 16) | 0x40u);\n"
                        "  u += 0x7fffu + ((u >> 16) & 1u);\n"
                        "  return (" +
                        ushort + ")(u >> 16);\n";
  std::string from_bf16 = "  return " + float_of_bits + "((" + uint + ")b << 16);\n";
  return fn(ushort, "kiln_float_to_bf16", "float f", to_bf16) +
         fn("float", "kiln_bf16_to_float", ushort + " b", from_bf16);
}

std::string CodeGenC::storage_type(DataType dtype) const {
  if (dtype.is_float16() || dtype.is_bfloat16()) {
    const_cast<CodeGenC*>(this)->uses_half_ = true;
    return "unsigned short";
  }
  return type_name(dtype);
}

std::string CodeGenC::rounded(DataType dtype, const std::string& value) {
  if (dtype.is_float16() || dtype.is_bfloat16()) uses_half_ = true;
  if (dtype.is_float16()) return "kiln_half_to_float(kiln_float_to_half(" + value + "))";
  if (dtype.is_bfloat16()) return "kiln_bf16_to_float(kiln_float_to_bf16(" + value + "))";
  return value;
}

std::string CodeGenC::type_name(DataType dtype) const {
  if (dtype.is_bool()) return "bool";
  if (dtype.is_float16() || dtype.is_bfloat16()) {
    const_cast<CodeGenC*>(this)->uses_half_ = true;
    return "float";
  }
  if (dtype.is_float() && !dtype.is_bfloat16() && dtype.bits() == 32) return "float";
  if (dtype.is_float() && !dtype.is_bfloat16() && dtype.bits() == 64) return "double";
  if (dtype.is_int() || dtype.is_uint()) {
    std::string base;
    switch (dtype.bits()) {
      case 8:
        base = "char";
        break;
      case 16:
        base = "short";
        break;
      case 32:
        base = "int";
        break;
      case 64:
        base = "long long";
        break;
      default:
        break;
    }
    if (!base.empty())
      return dtype.is_uint() ? "unsigned " + base : (dtype.bits() == 8 ? "signed char" : base);
  }
  const_cast<CodeGenC*>(this)->unsupported(
      "the dtype " + dtype.str() +
      " has no type in the GPU code generators (they support bool, int8-64, uint8-64, "
      "float16, bfloat16, float32 and float64)");
}

// ---- Expressions ----

std::string CodeGenC::visit(const IntImm* op) {
  DataType t = op->dtype;
  if (t.is_bool()) return op->value != 0 ? "true" : "false";
  std::string type = type_name(t);
  std::string suffix = int64_suffix();
  if (t.is_uint()) {
    return "((" + type + ")" + std::to_string(static_cast<uint64_t>(op->value)) + "u" + suffix +
           ")";
  }
  if (op->value == INT64_MIN) return "((" + type + ")(-9223372036854775807" + suffix + " - 1))";
  if (t.bits() == 32 && op->value >= INT32_MIN && op->value <= INT32_MAX) {
    if (op->value == INT32_MIN) return "(-2147483647 - 1)";
    return op->value < 0 ? "(" + std::to_string(op->value) + ")" : std::to_string(op->value);
  }
  return "((" + type + ")" + std::to_string(op->value) + suffix + ")";
}

std::string CodeGenC::visit(const FloatImm* op) {
  if (!std::isfinite(op->value)) return special_float(op->value, op->dtype);
  char text[64];
  bool single = op->dtype.bits() <= 32;
  if (op->dtype.bits() == 16) uses_half_ = true;
  std::snprintf(text, sizeof(text), single ? "%.9g" : "%.17g", op->value);
  std::string s = text;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  if (single) s += "f";
  if (!single) uses_double_ = true;
  return rounded(op->dtype, "(" + s + ")");
}

std::string CodeGenC::visit(const StringImm* op) {
  unsupported("a string constant (\"" + op->value + "\") where a value is expected");
}

std::string CodeGenC::visit(const Var* op) {
  auto it = let_values_.find(op);
  if (it != let_values_.end()) return it->second;
  return name_of(op);
}

std::string CodeGenC::binary(const BinaryNode* op, const char* symbol) {
  return rounded(op->dtype, "(" + dispatch(op->a) + " " + symbol + " " + dispatch(op->b) + ")");
}

std::string CodeGenC::visit(const Add* op) {
  return binary(op, "+");
}
std::string CodeGenC::visit(const Sub* op) {
  return binary(op, "-");
}
std::string CodeGenC::visit(const Mul* op) {
  return binary(op, "*");
}
std::string CodeGenC::visit(const Div* op) {
  return binary(op, "/");
}

std::string CodeGenC::visit(const Mod* op) {
  if (op->dtype.is_float()) return math_call("fmod", op->dtype, {dispatch(op->a), dispatch(op->b)});
  return binary(op, "%");
}

std::string CodeGenC::visit(const FloorDiv* op) {
  if (op->dtype.is_float()) {
    return math_call("floor", op->dtype, {"(" + dispatch(op->a) + " / " + dispatch(op->b) + ")"});
  }
  if (op->dtype.is_uint()) return binary(op, "/");
  std::string suffix = op->dtype.bits() == 64 ? "64" : "32";
  std::string cast =
      op->dtype.bits() == 64 || op->dtype.bits() == 32 ? "" : "(" + type_name(op->dtype) + ")";
  return cast + "kiln_floordiv" + suffix + "(" + dispatch(op->a) + ", " + dispatch(op->b) + ")";
}

std::string CodeGenC::visit(const FloorMod* op) {
  if (op->dtype.is_float()) {
    std::string a = dispatch(op->a), b = dispatch(op->b);
    return "(" + a + " - " + math_call("floor", op->dtype, {"(" + a + " / " + b + ")"}) + " * " +
           b + ")";
  }
  if (op->dtype.is_uint()) return binary(op, "%");
  std::string suffix = op->dtype.bits() == 64 ? "64" : "32";
  std::string cast =
      op->dtype.bits() == 64 || op->dtype.bits() == 32 ? "" : "(" + type_name(op->dtype) + ")";
  return cast + "kiln_floormod" + suffix + "(" + dispatch(op->a) + ", " + dispatch(op->b) + ")";
}

std::string CodeGenC::visit(const Min* op) {
  if (op->dtype.is_float()) return math_call("fmin", op->dtype, {dispatch(op->a), dispatch(op->b)});
  std::string a = dispatch(op->a), b = dispatch(op->b);
  return "((" + a + " < " + b + ") ? " + a + " : " + b + ")";
}

std::string CodeGenC::visit(const Max* op) {
  if (op->dtype.is_float()) return math_call("fmax", op->dtype, {dispatch(op->a), dispatch(op->b)});
  std::string a = dispatch(op->a), b = dispatch(op->b);
  return "((" + a + " > " + b + ") ? " + a + " : " + b + ")";
}

std::string CodeGenC::visit(const EQ* op) {
  return binary(op, "==");
}
std::string CodeGenC::visit(const NE* op) {
  return binary(op, "!=");
}
std::string CodeGenC::visit(const LT* op) {
  return binary(op, "<");
}
std::string CodeGenC::visit(const LE* op) {
  return binary(op, "<=");
}
std::string CodeGenC::visit(const GT* op) {
  return binary(op, ">");
}
std::string CodeGenC::visit(const GE* op) {
  return binary(op, ">=");
}
std::string CodeGenC::visit(const And* op) {
  return binary(op, "&&");
}
std::string CodeGenC::visit(const Or* op) {
  return binary(op, "||");
}
std::string CodeGenC::visit(const Not* op) {
  return "(!" + dispatch(op->a) + ")";
}

std::string CodeGenC::visit(const Select* op) {
  return "(" + dispatch(op->condition) + " ? " + dispatch(op->true_value) + " : " +
         dispatch(op->false_value) + ")";
}

std::string CodeGenC::visit(const Cast* op) {
  std::string value = dispatch(op->value);
  if (op->dtype.is_bool()) return "(" + value + " != 0)";
  return rounded(op->dtype, "((" + type_name(op->dtype) + ")" + value + ")");
}

std::string CodeGenC::visit(const Call* op) {
  std::string value = emit_builtin(op);
  bool arithmetic = op->op != Builtin::IfThenElse && op->op != Builtin::Likely &&
                    op->op != Builtin::Reinterpret && op->op != Builtin::IsNan;
  return arithmetic ? rounded(op->dtype, value) : value;
}

std::string CodeGenC::visit(const Ramp* op) {
  unsupported("a vector index (Ramp) reached the GPU code generator: " + to_script(Expr(op)));
}
std::string CodeGenC::visit(const Broadcast* op) {
  unsupported("a vector value (Broadcast) reached the GPU code generator: " + to_script(Expr(op)));
}

std::string CodeGenC::visit(const Let* op) {
  // C has no let expressions: the variable stands for its value's text (which has no side
  // effects: expressions have none but loads).
  std::string value = dispatch(op->value);
  let_values_[op->var.get()] = value;
  std::string body = dispatch(op->body);
  let_values_.erase(op->var.get());
  return body;
}

std::string CodeGenC::visit(const BufferLoad* op) {
  if (op->indices.size() != 1 || !op->dtype.is_scalar()) {
    unsupported("a load of buffer " + op->buffer->name +
                " that is not a scalar access of a flattened buffer");
  }
  std::string element = data_of(*op->buffer) + "[" + dispatch(op->indices[0]) + "]";
  if (op->dtype.is_float16()) return "kiln_half_to_float(" + element + ")";
  if (op->dtype.is_bfloat16()) return "kiln_bf16_to_float(" + element + ")";
  return element;
}

std::string CodeGenC::visit(const Reduce* op) {
  unsupported("a Reduce node reached the code generator (lower the function first)");
}

std::string CodeGenC::emit_builtin(const Call* op) {
  std::vector<std::string> args;
  auto arg = [&](size_t i) { return dispatch(op->args[i]); };
  DataType t = op->dtype;
  switch (op->op) {
    case Builtin::Exp:
      return math_call("exp", t, {arg(0)});
    case Builtin::Exp2:
      return math_call("exp2", t, {arg(0)});
    case Builtin::Log:
      return math_call("log", t, {arg(0)});
    case Builtin::Log2:
      return math_call("log2", t, {arg(0)});
    case Builtin::Log1p:
      return math_call("log1p", t, {arg(0)});
    case Builtin::Sqrt:
      return math_call("sqrt", t, {arg(0)});
    case Builtin::Rsqrt:
      return math_call("rsqrt", t, {arg(0)});
    case Builtin::Sin:
      return math_call("sin", t, {arg(0)});
    case Builtin::Cos:
      return math_call("cos", t, {arg(0)});
    case Builtin::Tan:
      return math_call("tan", t, {arg(0)});
    case Builtin::Tanh:
      return math_call("tanh", t, {arg(0)});
    case Builtin::Erf:
      return math_call("erf", t, {arg(0)});
    case Builtin::Floor:
      return math_call("floor", t, {arg(0)});
    case Builtin::Ceil:
      return math_call("ceil", t, {arg(0)});
    case Builtin::Round:  // half to even
      return math_call("rint", t, {arg(0)});
    case Builtin::Trunc:
      return math_call("trunc", t, {arg(0)});
    case Builtin::Pow:
      return math_call("pow", t, {arg(0), arg(1)});
    case Builtin::Sigmoid: {
      std::string one = t.bits() <= 32 ? "1.0f" : "1.0";
      return "(" + one + " / (" + one + " + " + math_call("exp", t, {"(-" + arg(0) + ")"}) + "))";
    }
    case Builtin::IsNan:
      return "(" + arg(0) + " != " + arg(0) + ")";
    case Builtin::Abs: {
      if (t.is_float()) return math_call("fabs", t, {arg(0)});
      std::string x = arg(0);
      return "((" + x + " < 0) ? (" + type_name(t) + ")(-" + x + ") : " + x + ")";
    }
    case Builtin::ShiftLeft:
      return "(" + arg(0) + " << " + arg(1) + ")";
    case Builtin::ShiftRight:
      return "(" + arg(0) + " >> " + arg(1) + ")";
    case Builtin::BitwiseAnd:
      return "(" + arg(0) + " & " + arg(1) + ")";
    case Builtin::BitwiseOr:
      return "(" + arg(0) + " | " + arg(1) + ")";
    case Builtin::BitwiseXor:
      return "(" + arg(0) + " ^ " + arg(1) + ")";
    case Builtin::BitwiseNot:
      return "((" + type_name(t) + ")(~" + arg(0) + "))";
    case Builtin::IfThenElse:  // only the picked arm is evaluated, as C's ?: does
      return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
    case Builtin::Likely:
      return arg(0);
    case Builtin::Reinterpret:
      return reinterpret(arg(0), op->args[0]->dtype, t);
    case Builtin::AddressOf: {
      const auto* load = op->args[0].as<BufferLoad>();
      if (load == nullptr || load->indices.size() != 1) {
        unsupported("address_of expects a scalar load of a flattened buffer");
      }
      return "(&" + data_of(*load->buffer) + "[" + dispatch(load->indices[0]) + "])";
    }
    case Builtin::CallExtern:
    case Builtin::CallPureExtern: {
      const auto* name = op->args.empty() ? nullptr : op->args[0].as<StringImm>();
      if (name == nullptr) unsupported("call_extern without a function name");
      std::string text = name->value + "(";
      for (size_t i = 1; i < op->args.size(); ++i) text += (i > 1 ? ", " : "") + arg(i);
      return text + ")";
    }
    case Builtin::StorageSync:
      unsupported("storage_sync inside an expression");
    case Builtin::WarpShuffleDown:
      return warp_shuffle_down(arg(0), arg(1), arg(2));
    case Builtin::PtxMma:
      unsupported("ptx_mma outside a store of its result into the accumulator");
    case Builtin::PtxLdmatrix:
      unsupported("ptx_ldmatrix outside a store of its result into a fragment");
    case Builtin::PtxCpAsync:
      unsupported("ptx_cp_async outside a store of its value into shared memory");
    default:
      unsupported(std::string("the builtin ") + builtin_name(op->op) +
                  " has no GPU code (it belongs to CPU or host code)");
  }
}

// ---- Statements ----

void CodeGenC::emit_stmt(const Stmt& s) {
  switch (s->kind()) {
    case NodeKind::SeqStmt:
      for (const Stmt& child : s.as<SeqStmt>()->seq) emit_stmt(child);
      return;
    case NodeKind::LetStmt: {
      const auto* op = s.as<LetStmt>();
      if (op->var->dtype.is_handle()) unsupported("a handle bound by a LetStmt");
      if (op->var->dtype.lanes() > 1) {
        emit_vector_let(op);
        return;
      }
      if (op->var->dtype.is_integer()) analyzer_->bind(op->var, op->value, true);
      line() << "const " << type_name(op->var->dtype) << " " << name_of(op->var.get()) << " = "
             << dispatch(op->value) << ";\n";
      emit_stmt(op->body);
      return;
    }
    case NodeKind::AssertStmt:
      unsupported("an assertion (\"" + s.as<AssertStmt>()->message +
                  "\") inside a GPU kernel, which cannot report errors");
    case NodeKind::BufferStore: {
      const auto* op = s.as<BufferStore>();
      const auto* call = op->value.as<Call>();
      if (call != nullptr && call->op == Builtin::PtxMma) {
        emit_mma_store(op, call);
        return;
      }
      if (call != nullptr && call->op == Builtin::PtxLdmatrix) {
        emit_ldmatrix_store(op, call);
        return;
      }
      if (call != nullptr && call->op == Builtin::PtxCpAsync) {
        emit_async_copy_store(op, call);
        return;
      }
      if (op->value->dtype.lanes() > 1) {
        emit_vector_store(op);
        return;
      }
      if (op->indices.size() != 1 || !op->value->dtype.is_scalar()) {
        unsupported("a store to buffer " + op->buffer->name +
                    " that is not a scalar access of a flattened buffer");
      }
      std::string value;
      const auto* copied = op->value.as<BufferLoad>();
      if ((op->buffer->dtype.is_float16() || op->buffer->dtype.is_bfloat16()) &&
          copied != nullptr && copied->dtype == op->buffer->dtype && copied->indices.size() == 1) {
        // A copy of a 16-bit float moves its bits.
        value = data_of(*copied->buffer) + "[" + dispatch(copied->indices[0]) + "]";
      } else {
        value = dispatch(op->value);
        if (op->buffer->dtype.is_float16()) value = "kiln_float_to_half(" + value + ")";
        if (op->buffer->dtype.is_bfloat16()) value = "kiln_float_to_bf16(" + value + ")";
      }
      line() << data_of(*op->buffer) << "[" << dispatch(op->indices[0]) << "] = " << value << ";\n";
      return;
    }
    case NodeKind::Allocate:
      emit_allocate(s.as<Allocate>());
      return;
    case NodeKind::For:
      emit_for(s.as<For>());
      return;
    case NodeKind::IfThenElse: {
      const auto* op = s.as<IfThenElse>();
      line() << "if (" << dispatch(op->condition) << ") {\n";
      ++indent_;
      emit_stmt(op->then_case);
      --indent_;
      if (op->else_case.defined()) {
        line() << "} else {\n";
        ++indent_;
        emit_stmt(op->else_case);
        --indent_;
      }
      line() << "}\n";
      return;
    }
    case NodeKind::Evaluate: {
      const auto* op = s.as<Evaluate>();
      const auto* call = op->value.as<Call>();
      if (call != nullptr && call->op == Builtin::StorageSync) {
        line() << barrier() << "\n";
        return;
      }
      if (call != nullptr && (call->op == Builtin::PtxCpAsyncCommitGroup ||
                              call->op == Builtin::PtxCpAsyncWaitGroup)) {
        emit_async_copy_fence(call);
        return;
      }
      if (op->value.as<IntImm>() != nullptr) return;
      line() << dispatch(op->value) << ";\n";
      return;
    }
    default:
      unsupported(std::string("the statement kind ") + kind_name(s->kind()) +
                  " (lower the function first)");
  }
}

void CodeGenC::emit_async_copy_store(const BufferStore* op, const Call* async_copy) {
  if (async_copy->args.size() != 1) unsupported("ptx_cp_async takes one argument");
  emit_stmt(buffer_store(op->buffer, async_copy->args[0], op->indices));
}

void CodeGenC::emit_for(const For* op) {
  std::string var = name_of(op->loop_var.get());
  std::string type = type_name(op->loop_var->dtype);
  analyzer_->bind(op->loop_var, Range{op->min, op->extent}, true);
  if (op->kind == ForKind::kThreadBinding) {
    // Every thread runs the kernel body: the loop is this thread's index, under a guard when
    // the loop is shorter than the launch extent of its tag.
    std::string index = "((" + type + ")" + thread_index(op->thread_tag) + ")";
    auto it = kernel_->attrs.find("kiln.launch." + op->thread_tag);
    bool guard = it == kernel_->attrs.end() || !structural_equal(it->second, op->extent);
    line() << "{\n";
    ++indent_;
    line() << "const " << type << " " << var << " = " << index << " + " << dispatch(op->min)
           << ";\n";
    if (guard) {
      line() << "if (" << index << " < " << dispatch(op->extent) << ") {\n";
      ++indent_;
    }
    emit_stmt(op->body);
    if (guard) {
      --indent_;
      line() << "}\n";
    }
    --indent_;
    line() << "}\n";
    return;
  }
  if (op->kind == ForKind::kParallel) {
    unsupported("loop " + op->loop_var->name +
                " is parallel (a CPU thread pool loop) inside a GPU kernel; bind it to "
                "threadIdx or blockIdx instead");
  }
  // A vectorized loop that vectorize_loops left serial still asks for its lanes side by side.
  if (op->kind == ForKind::kUnrolled || op->kind == ForKind::kVectorized ||
      op->annotations.count("kiln.vectorize_fallback") != 0) {
    line() << "#pragma unroll\n";
  }
  std::string begin = dispatch(op->min);
  std::string end = "(" + begin + " + " + dispatch(op->extent) + ")";
  if (is_const_int(op->min, 0)) end = dispatch(op->extent);
  line() << "for (" << type << " " << var << " = " << begin << "; " << var << " < " << end << "; ++"
         << var << ") {\n";
  ++indent_;
  emit_stmt(op->body);
  --indent_;
  line() << "}\n";
}

std::string CodeGenC::data_of(const Buffer& buffer) {
  std::string name = name_of(buffer.data.get());
  auto declared = array_element_.find(buffer.data.get());
  std::string element = storage_type(buffer.dtype);
  if (declared == array_element_.end() || declared->second == element) return name;
  return "((" + pointer_type(element, buffer.scope) + ")" + name + ")";
}

void CodeGenC::emit_allocate(const Allocate* op) {
  const Buffer& buffer = *op->buffer;
  array_element_[buffer.data.get()] = storage_type(buffer.dtype);
  if (buffer.scope == "shared.dyn") {
    // One block per kernel (merge_dynamic_shared_memory), sized by the launch; its buffers are
    // views of other dtypes into it (data_of).
    internal_check(dynamic_shared_.empty())
        << "codegen: kernel " << kernel_name_ << " has several \"shared.dyn\" allocations";
    dynamic_shared_ = name_of(buffer.data.get());
    data_alignment_[buffer.data.get()] = kDynamicSharedAlignment;
    emit_stmt(op->body);
    return;
  }
  int64_t elements = 1;
  for (const Expr& extent : buffer.shape) {
    const int64_t* c = as_const_int(extent);
    if (c == nullptr) {
      unsupported("buffer " + buffer.name + " (scope \"" + buffer.scope +
                  "\") has the non-constant size " + to_script(extent) +
                  "; GPU kernels allocate constant sizes");
    }
    elements *= *c;
  }
  std::string decl = storage_type(buffer.dtype) + " " + name_of(buffer.data.get()) + "[" +
                     std::to_string(std::max<int64_t>(elements, 1)) + "]";
  int64_t& alignment = data_alignment_[buffer.data.get()];
  if (buffer.scope == "shared" && elements * buffer.dtype.bytes() >= kDynamicSharedAlignment) {
    // Aligned for the widest vector: the device compiler then merges a thread's loads of
    // consecutive elements at a multiple of four (a register tile's row) into one access.
    alignment = std::max<int64_t>(alignment, kDynamicSharedAlignment);
  }
  if (alignment > buffer.dtype.bytes()) {
    decl = align_array(decl, alignment);
  } else {
    alignment = buffer.dtype.bytes();
  }
  decl += ";";
  if (buffer.scope == "shared") {
    // OpenCL requires __local arrays at kernel scope; one per block either way.
    shared_decls_.push_back(shared_qualifier() + " " + decl);
  } else if (buffer.scope == "local") {
    line() << decl << "\n";
  } else {
    unsupported("buffer " + buffer.name + " of scope \"" + buffer.scope +
                "\" is allocated inside a GPU kernel; use \"shared\" or \"local\"");
  }
  emit_stmt(op->body);
}

// ---- Kernels ----

void CodeGenC::add_kernel(const PrimFunc& kernel) {
  auto it = kernel.attrs.find("global_symbol");
  const auto* symbol = it == kernel.attrs.end() ? nullptr : it->second.as<StringImm>();
  internal_check(symbol != nullptr) << "codegen: a device kernel without global_symbol";
  kernel_name_ = symbol->value;
  kernel_ = &kernel;
  names_.clear();
  used_names_ = {kernel_name_};
  let_values_.clear();
  shared_decls_.clear();
  analyzer_ = std::make_unique<arith::Analyzer>();
  data_alignment_.clear();
  hoisted_loads_.clear();
  hoisted_vector_names_.clear();
  vector_lets_.clear();
  vector_let_names_.clear();
  vector_temps_ = 0;
  array_element_.clear();
  dynamic_shared_.clear();

  // Step 1. What each pointer parameter points to, whether the kernel stores through it, and
  // how its data is aligned; the alignment of the shared arrays.
  std::unordered_map<const Var*, DataType> element;
  std::unordered_set<const Var*> stored;
  std::unordered_set<const Var*> pointer_params;
  for (const Ref<Var>& param : kernel.params) pointer_params.insert(param.get());
  post_order_visit(kernel.body, [&](const Node* node) {
    const Buffer* b = nullptr;
    if (node->kind() == NodeKind::BufferLoad) {
      b = static_cast<const BufferLoad*>(node)->buffer.get();
    } else if (node->kind() == NodeKind::BufferStore) {
      b = static_cast<const BufferStore*>(node)->buffer.get();
      stored.insert(b->data.get());
    }
    if (b == nullptr) return;
    element.emplace(b->data.get(), b->dtype);
    if (pointer_params.count(b->data.get()) != 0) {
      auto [it, fresh] = data_alignment_.emplace(b->data.get(), parameter_alignment(*b));
      if (!fresh) it->second = std::min(it->second, parameter_alignment(*b));
    }
  });
  plan_array_alignment(kernel.body);

  // Step 2. The body, into its own stream (shared arrays are declared first).
  std::ostringstream body;
  out_ = &body;
  indent_ = 1;
  std::vector<std::string> params;
  for (const Ref<Var>& param : kernel.params) {
    std::string name = name_of(param.get());
    if (param->dtype.is_handle()) {
      auto e = element.find(param.get());
      internal_check(e != element.end())
          << "codegen: kernel parameter " << param->name << " is a handle that no buffer uses";
      params.push_back(
          pointer_param(storage_type(e->second), stored.count(param.get()) == 0, name));
    } else {
      // bool travels as int: OpenCL kernels take no bool arguments.
      DataType t = param->dtype.is_bool() ? DataType::int32() : param->dtype;
      if (t.is_float16() || t.is_bfloat16()) {
        unsupported("scalar parameter " + param->name + " of dtype " + t.str() +
                    "; pass 16-bit float scalars as float32");
      }
      params.push_back(type_name(t) + " " + name);
    }
  }
  emit_stmt(kernel.body);
  if (!dynamic_shared_.empty()) {
    shared_decls_.push_back(
        declare_dynamic_shared(dynamic_shared_, kDynamicSharedAlignment, &params));
  }

  int64_t threads = 1;
  for (const char* tag : launch_tags) {
    auto launch = kernel.attrs.find(std::string("kiln.launch.") + tag);
    if (launch == kernel.attrs.end() || std::string(tag).rfind("threadIdx", 0) != 0) continue;
    const int64_t* c = as_const_int(launch->second);
    if (c != nullptr) threads *= *c;
  }
  body_ << kernel_prefix(threads) << " " << kernel_name_ << "(";
  for (size_t i = 0; i < params.size(); ++i) body_ << (i > 0 ? ", " : "") << params[i];
  body_ << ") {\n";
  for (const std::string& decl : shared_decls_) body_ << "  " << decl << "\n";
  body_ << body.str() << "}\n\n";
  out_ = nullptr;
  kernel_ = nullptr;
}

std::string CodeGenC::finish() {
  return preamble(uses_double_) + (uses_half_ ? half_section() : "") + body_.str();
}

}  // namespace kiln::codegen
