// Short, Python-like text of an expression for the interpreter's error messages, so that a
// division by zero or a bad shift names the expression where it happened.
#include <sstream>

#include "compiler.h"
#include "kiln/ir/op.h"

namespace kiln::interpreter {

using namespace kiln::ir;

namespace {

// Deeper subexpressions are elided: the message names the place, it does not dump the program.
constexpr int kMaxDepth = 6;

const char* infix_operator(NodeKind kind, DataType dtype) {
  switch (kind) {
    case NodeKind::Add:
      return " + ";
    case NodeKind::Sub:
      return " - ";
    case NodeKind::Mul:
      return " * ";
    case NodeKind::Div:
      return dtype.is_float() ? " / " : nullptr;
    case NodeKind::FloorDiv:
      return " // ";
    case NodeKind::FloorMod:
      return " % ";
    case NodeKind::EQ:
      return " == ";
    case NodeKind::NE:
      return " != ";
    case NodeKind::LT:
      return " < ";
    case NodeKind::LE:
      return " <= ";
    case NodeKind::GT:
      return " > ";
    case NodeKind::GE:
      return " >= ";
    case NodeKind::And:
      return " and ";
    case NodeKind::Or:
      return " or ";
    default:
      return nullptr;
  }
}

const char* prefix_function(NodeKind kind) {
  switch (kind) {
    case NodeKind::Div:
      return "truncdiv";
    case NodeKind::Mod:
      return "truncmod";
    case NodeKind::Min:
      return "min";
    case NodeKind::Max:
      return "max";
    default:
      return "?";
  }
}

class Describer {
 public:
  explicit Describer(std::ostream& os) : os_(os) {}

  void print(const Expr& e, int depth, bool top) {
    if (!e.defined()) {
      os_ << "<null>";
      return;
    }
    if (depth > kMaxDepth) {
      os_ << "...";
      return;
    }
    if (const auto* imm = e.as<IntImm>()) {
      if (e->dtype.is_bool()) {
        os_ << (imm->value != 0 ? "True" : "False");
      } else {
        os_ << imm->value;
      }
    } else if (const auto* f = e.as<FloatImm>()) {
      os_ << f->value;
    } else if (const auto* s = e.as<StringImm>()) {
      os_ << '"' << s->value << '"';
    } else if (const auto* var = e.as<Var>()) {
      os_ << var->name;
    } else if (const auto* bin = dynamic_cast<const BinaryNode*>(e.get())) {
      print_binary(*bin, depth, top);
    } else if (const auto* n = e.as<Not>()) {
      os_ << "not ";
      print(n->a, depth + 1, false);
    } else if (const auto* sel = e.as<Select>()) {
      call("select", {sel->condition, sel->true_value, sel->false_value}, depth);
    } else if (const auto* cast = e.as<Cast>()) {
      call(e->dtype.str().c_str(), {cast->value}, depth);
    } else if (const auto* c = e.as<Call>()) {
      call(builtin_name(c->op), c->args, depth);
    } else if (const auto* ramp = e.as<Ramp>()) {
      call("ramp", {ramp->base, ramp->stride, make_const(DataType::int32(), int64_t{ramp->lanes})},
           depth);
    } else if (const auto* b = e.as<Broadcast>()) {
      call("broadcast", {b->value, make_const(DataType::int32(), int64_t{b->lanes})}, depth);
    } else if (const auto* let = e.as<Let>()) {
      os_ << "(let " << let->var->name << " = ";
      print(let->value, depth + 1, true);
      os_ << " in ";
      print(let->body, depth + 1, true);
      os_ << ")";
    } else if (const auto* load = e.as<BufferLoad>()) {
      os_ << load->buffer->name << "[";
      list(load->indices, depth);
      os_ << "]";
    } else {
      os_ << kind_name(e->kind()) << "(...)";
    }
  }

 private:
  void print_binary(const BinaryNode& bin, int depth, bool top) {
    if (const char* op = infix_operator(bin.kind(), bin.a->dtype)) {
      if (!top) os_ << "(";
      print(bin.a, depth + 1, false);
      os_ << op;
      print(bin.b, depth + 1, false);
      if (!top) os_ << ")";
    } else {
      call(prefix_function(bin.kind()), {bin.a, bin.b}, depth);
    }
  }

  void call(const char* name, const std::vector<Expr>& args, int depth) {
    os_ << name << "(";
    list(args, depth);
    os_ << ")";
  }

  void list(const std::vector<Expr>& args, int depth) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (i > 0) os_ << ", ";
      print(args[i], depth + 1, true);
    }
  }

  std::ostream& os_;
};

}  // namespace

std::string describe(const Expr& e) {
  std::ostringstream os;
  Describer(os).print(e, 0, true);
  return os.str();
}

}  // namespace kiln::interpreter
