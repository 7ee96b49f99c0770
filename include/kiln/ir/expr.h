// Expression nodes of kiln's IR, and what they mean.
//
// Semantics, which every pass, the simplifier, the reference interpreter and the code generators
// must agree on:
//
// * Types. Every expression has a DataType. The node structs below do not convert anything: the
//   operands of a binary node have the same dtype (checked by the builders in kiln/ir/op.h, which
//   also apply the promotion rules documented there). Comparisons and logical operators give
//   bool with the operands' lanes.
// * Integers are two's complement of their width. Arithmetic that overflows wraps modulo 2^bits
//   at run time (code generators emit no "no signed wrap" flags). Index arithmetic is assumed
//   not to overflow: the simplifier rewrites `(x * 4 + y) // 4` to `x` under that assumption,
//   which holds for any index of a buffer that fits in memory.
// * Division. Div and Mod on integers truncate toward zero (C semantics); FloorDiv and FloorMod
//   round toward negative infinity, so floormod(a, b) has the sign of b. The schedule and the
//   index arithmetic use FloorDiv/FloorMod. Integer division by zero is undefined; the reference
//   interpreter raises. Div on floats is IEEE division; FloorDiv on floats is floor(a / b).
// * Floating point follows IEEE-754 with round-to-nearest-even and no reassociation, no fast
//   math unless a build asks for it. The one default relaxation, as in C compilers: a code
//   generator may fuse a multiply feeding an add into one fused multiply-add (rounded once);
//   the reference interpreter rounds both. Target option "-fp-contract=off" forbids it. float16 and
//   bfloat16 are storage types: arithmetic on them is done in float32 and rounded back to the
//   storage type after each operation.
// * Min/Max on floats follow the C fmin/fmax convention for NaN operands: the non-NaN one wins.
// * Evaluation. Expressions have no side effects except loads, which may fault out of bounds.
//   Both arms of a Select are evaluated; the `if_then_else` builtin (kiln/ir/builtin.h)
//   evaluates only the arm it picks, which is what guards a padded, out-of-bounds load.
//   And/Or do not short-circuit unless they are inside `if_then_else`.
// * Vectors. A vector expression has lanes > 1. Ramp(base, stride, n) is
//   [base, base + stride, ...]; Broadcast(v, n) repeats a scalar. Binary operands have equal lanes.
// * Variables are objects: two Vars with the same name are different variables. The name is a
//   hint for printing only.
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/builtin.h"
#include "kiln/ir/dtype.h"
#include "kiln/ir/node.h"

namespace kiln::ir {

struct CommReducer;

// Base of all expressions.
struct ExprNode : Node {
  ExprNode(NodeKind kind, DataType dtype) : Node(kind), dtype(dtype) {}
  static bool matches(NodeKind k) { return is_expr_kind(k); }
  DataType dtype;
};
using Expr = Ref<ExprNode>;

// A constant integer (or bool) of `dtype`. The value is stored sign- or zero-extended to 64 bits.
struct IntImm : ExprNode {
  KILN_NODE_KIND(IntImm)
  IntImm(DataType dtype, int64_t value) : ExprNode(kKind, dtype), value(value) {}
  int64_t value;
};

struct FloatImm : ExprNode {
  KILN_NODE_KIND(FloatImm)
  FloatImm(DataType dtype, double value) : ExprNode(kKind, dtype), value(value) {}
  double value;
};

// A string constant; appears in call arguments (extern names, assert messages) and annotations.
struct StringImm : ExprNode {
  KILN_NODE_KIND(StringImm)
  explicit StringImm(std::string value)
      : ExprNode(kKind, DataType::handle()), value(std::move(value)) {}
  std::string value;
};

// A variable. Identity is the object. A size variable (`is_size_var`) is known to be >= 0,
// which the arithmetic analysis uses (symbolic shape dimensions are size variables).
struct Var : ExprNode {
  KILN_NODE_KIND(Var)
  Var(std::string name, DataType dtype, bool is_size_var = false)
      : ExprNode(kKind, dtype), name(std::move(name)), is_size_var(is_size_var) {}
  std::string name;
  bool is_size_var;
};

// Binary arithmetic, comparison and logical nodes share this layout.
struct BinaryNode : ExprNode {
  BinaryNode(NodeKind kind, DataType dtype, Expr a, Expr b)
      : ExprNode(kind, dtype), a(std::move(a)), b(std::move(b)) {}
  Expr a, b;
};

#define KILN_DECLARE_BINARY(Name)                                                                  \
  struct Name : BinaryNode {                                                                       \
    KILN_NODE_KIND(Name)                                                                           \
    Name(DataType dtype, Expr a, Expr b) : BinaryNode(kKind, dtype, std::move(a), std::move(b)) {} \
  };
KILN_BINARY_NODE_LIST(KILN_DECLARE_BINARY)
#undef KILN_DECLARE_BINARY

struct Not : ExprNode {
  KILN_NODE_KIND(Not)
  Not(DataType dtype, Expr a) : ExprNode(kKind, dtype), a(std::move(a)) {}
  Expr a;
};

// condition ? true_value : false_value, both evaluated.
struct Select : ExprNode {
  KILN_NODE_KIND(Select)
  Select(DataType dtype, Expr condition, Expr true_value, Expr false_value)
      : ExprNode(kKind, dtype),
        condition(std::move(condition)),
        true_value(std::move(true_value)),
        false_value(std::move(false_value)) {}
  Expr condition, true_value, false_value;
};

// Value conversion to `dtype` (float to int truncates toward zero; int to narrower int wraps).
struct Cast : ExprNode {
  KILN_NODE_KIND(Cast)
  Cast(DataType dtype, Expr value) : ExprNode(kKind, dtype), value(std::move(value)) {}
  Expr value;
};

// A call of a builtin: a math intrinsic (exp, tanh, …) or an operation of the IR itself
// (if_then_else, reinterpret, a barrier, …). The list and the meaning of each is in builtin.h.
struct Call : ExprNode {
  KILN_NODE_KIND(Call)
  Call(DataType dtype, Builtin op, std::vector<Expr> args)
      : ExprNode(kKind, dtype), op(op), args(std::move(args)) {}
  Builtin op;
  std::vector<Expr> args;
};

// The vector [base, base + stride, …, base + (lanes - 1) * stride].
struct Ramp : ExprNode {
  KILN_NODE_KIND(Ramp)
  Ramp(DataType dtype, Expr base, Expr stride, int lanes)
      : ExprNode(kKind, dtype), base(std::move(base)), stride(std::move(stride)), lanes(lanes) {}
  Expr base, stride;
  int lanes;
};

struct Broadcast : ExprNode {
  KILN_NODE_KIND(Broadcast)
  Broadcast(DataType dtype, Expr value, int lanes)
      : ExprNode(kKind, dtype), value(std::move(value)), lanes(lanes) {}
  Expr value;
  int lanes;
};

// `let var = value in body`.
struct Let : ExprNode {
  KILN_NODE_KIND(Let)
  Let(DataType dtype, Ref<Var> var, Expr value, Expr body)
      : ExprNode(kKind, dtype),
        var(std::move(var)),
        value(std::move(value)),
        body(std::move(body)) {}
  Ref<Var> var;
  Expr value, body;
};

// A typed, shaped view of memory. Loads and stores name a buffer and one index per dimension;
// the flattening pass turns them into one-dimensional accesses of `data`. Defined here, before
// BufferLoad, because loads hold buffers; helpers are in kiln/ir/buffer.h.
struct Buffer : Node {
  KILN_NODE_KIND(Buffer)
  Buffer() : Node(kKind) {}

  Ref<Var> data;                 // the pointer variable (dtype handle); identity of the storage
  DataType dtype;                // element type (scalar)
  std::vector<Expr> shape;       // one extent per dimension; may contain size variables
  std::vector<Expr> strides;     // empty: compact row-major
  Expr elem_offset;              // offset of element 0 from `data`, in elements
  std::string name;              // a hint for printing; identity is the object
  std::string scope = "global";  // "global", "local", "shared", "shared.dyn", "warp"
  // Bytes the data is known to be aligned to; the argument checks ensure it. 0 (the default):
  // only the element's own size, which every array (NumPy's included) has, so that callers' arrays
  // are used in place. The runtime still allocates buffers 64-byte aligned.
  int data_alignment = 0;
  int offset_factor = 1;

  int ndim() const { return static_cast<int>(shape.size()); }
  // The alignment in bytes that code may assume: data_alignment, or the element's size.
  int alignment() const { return data_alignment > 0 ? data_alignment : dtype.bytes(); }
};

// buffer[indices...]. A vector load has a Ramp (or other vector) as its last index and the
// vector dtype of the result.
struct BufferLoad : ExprNode {
  KILN_NODE_KIND(BufferLoad)
  BufferLoad(DataType dtype, Ref<Buffer> buffer, std::vector<Expr> indices)
      : ExprNode(kKind, dtype), buffer(std::move(buffer)), indices(std::move(indices)) {}
  Ref<Buffer> buffer;
  std::vector<Expr> indices;
};

// A range [min, min + extent).
struct Range {
  Expr min, extent;
};

// The kind of a block iterator or of an iteration axis.
enum class IterType : uint8_t {
  kDataPar,     // spatial: each value is an independent output point
  kCommReduce,  // reduction with a commutative, associative combiner
  kOrdered,     // sequential dependence (scan)
  kOpaque,      // anything else; schedule primitives treat it conservatively
};
const char* iter_type_name(IterType type);

// An iteration axis: a variable with its domain. Block iterators and TE axes are IterVars.
struct IterVar {
  Ref<Var> var;
  Range dom;
  IterType type = IterType::kDataPar;
};

// A commutative reducer: result(lhs, rhs) combines two partial values, identity is its neutral
// element. Tuples (e.g. argmax's (index, value)) have one entry per component.
struct CommReducer : Node {
  KILN_NODE_KIND(CommReducer)
  CommReducer() : Node(kKind) {}
  std::vector<Ref<Var>> lhs, rhs;
  std::vector<Expr> result;
  std::vector<Expr> identity;
};

// A reduction, only in TE compute bodies: combine `source` over the reduce `axis` where
// `condition` holds. create_prim_func turns it into a block with an init and an update.
struct Reduce : ExprNode {
  KILN_NODE_KIND(Reduce)
  Reduce(DataType dtype) : ExprNode(kKind, dtype) {}
  Ref<CommReducer> combiner;
  std::vector<Expr> source;
  std::vector<IterVar> axis;
  Expr condition;
  int value_index = 0;
  std::vector<Expr> init;  // optional initial values, one per source
};

}  // namespace kiln::ir
