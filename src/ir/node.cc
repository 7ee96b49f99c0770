// Names and classes of node kinds, builtins, loop kinds and iterator types.
#include "kiln/ir/node.h"
#include "kiln/ir/builtin.h"
#include "kiln/ir/stmt.h"

namespace kiln::ir {

const char* kind_name(NodeKind kind) {
  switch (kind) {
#define KILN_KIND_NAME(Name) \
  case NodeKind::Name:       \
    return #Name;
    KILN_EXPR_NODE_LIST(KILN_KIND_NAME)
    KILN_STMT_NODE_LIST(KILN_KIND_NAME)
    KILN_OTHER_NODE_LIST(KILN_KIND_NAME)
#undef KILN_KIND_NAME
  }
  return "?";
}

bool is_expr_kind(NodeKind kind) {
  switch (kind) {
#define KILN_KIND_CASE(Name) case NodeKind::Name:
    KILN_EXPR_NODE_LIST(KILN_KIND_CASE)
#undef KILN_KIND_CASE
    return true;
    default:
      return false;
  }
}

bool is_stmt_kind(NodeKind kind) {
  switch (kind) {
#define KILN_KIND_CASE(Name) case NodeKind::Name:
    KILN_STMT_NODE_LIST(KILN_KIND_CASE)
#undef KILN_KIND_CASE
    return true;
    default:
      return false;
  }
}

namespace {
struct BuiltinInfo {
  const char* name;
  int arity;
  bool pure;
};
constexpr BuiltinInfo kBuiltins[] = {
#define KILN_BUILTIN_INFO(Name, text, arity, pure) {text, arity, pure},
    KILN_BUILTIN_LIST(KILN_BUILTIN_INFO)
#undef KILN_BUILTIN_INFO
};
}  // namespace

const char* builtin_name(Builtin op) {
  return kBuiltins[static_cast<int>(op)].name;
}
int builtin_arity(Builtin op) {
  return kBuiltins[static_cast<int>(op)].arity;
}
bool builtin_is_pure(Builtin op) {
  return kBuiltins[static_cast<int>(op)].pure;
}

bool builtin_is_transcendental(Builtin op) {
  switch (op) {
    case Builtin::Exp:
    case Builtin::Exp2:
    case Builtin::Log:
    case Builtin::Log2:
    case Builtin::Log1p:
    case Builtin::Sin:
    case Builtin::Cos:
    case Builtin::Tan:
    case Builtin::Tanh:
    case Builtin::Sigmoid:
    case Builtin::Erf:
    case Builtin::Pow:
      return true;
    default:
      return false;
  }
}

std::optional<Builtin> builtin_from_name(const std::string& name) {
  for (size_t i = 0; i < sizeof(kBuiltins) / sizeof(kBuiltins[0]); ++i) {
    if (name == kBuiltins[i].name) return static_cast<Builtin>(i);
  }
  return std::nullopt;
}

const char* for_kind_name(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial:
      return "serial";
    case ForKind::kParallel:
      return "parallel";
    case ForKind::kVectorized:
      return "vectorized";
    case ForKind::kUnrolled:
      return "unroll";
    case ForKind::kThreadBinding:
      return "thread_binding";
  }
  return "?";
}

const char* iter_type_name(IterType type) {
  switch (type) {
    case IterType::kDataPar:
      return "spatial";
    case IterType::kCommReduce:
      return "reduce";
    case IterType::kOrdered:
      return "scan";
    case IterType::kOpaque:
      return "opaque";
  }
  return "?";
}

}  // namespace kiln::ir
