// Statement nodes of kiln's IR (TensorIR): loops, blocks, stores, allocation and control flow.
//
// A scheduled-but-not-lowered function is a tree of For loops and BlockRealize/Block pairs.
// A Block is the unit of scheduling: its iterators (spatial, reduce, opaque) are bound by the
// enclosing BlockRealize to expressions of the loop variables; it declares the buffer regions it
// reads and writes, may carry an `init` run before the first reduction step, and allocates the
// buffers that live inside it. The lowering pipeline (tir/) removes blocks and leaves plain loops.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/ir/buffer.h"
#include "kiln/ir/expr.h"

namespace kiln::ir {

// Base of all statements.
struct StmtNode : Node {
  explicit StmtNode(NodeKind kind) : Node(kind) {}
  static bool matches(NodeKind k) { return is_stmt_kind(k); }
};
using Stmt = Ref<StmtNode>;

// Annotations of loops and blocks, and attributes of functions: names to constants
// (IntImm, FloatImm, StringImm) or expressions. Sorted, so printing and hashing are stable.
using Attrs = std::map<std::string, Expr>;

// `let var = value` over body.
struct LetStmt : StmtNode {
  KILN_NODE_KIND(LetStmt)
  LetStmt(Ref<Var> var, Expr value, Stmt body)
      : StmtNode(kKind), var(std::move(var)), value(std::move(value)), body(std::move(body)) {}
  Ref<Var> var;
  Expr value;
  Stmt body;
};

// Checks `condition` at run time; when false the function returns an error with `message`.
struct AssertStmt : StmtNode {
  KILN_NODE_KIND(AssertStmt)
  AssertStmt(Expr condition, std::string message, Stmt body)
      : StmtNode(kKind),
        condition(std::move(condition)),
        message(std::move(message)),
        body(std::move(body)) {}
  Expr condition;
  std::string message;
  Stmt body;
};

// buffer[indices...] = value.
struct BufferStore : StmtNode {
  KILN_NODE_KIND(BufferStore)
  BufferStore(Ref<Buffer> buffer, Expr value, std::vector<Expr> indices)
      : StmtNode(kKind),
        buffer(std::move(buffer)),
        value(std::move(value)),
        indices(std::move(indices)) {}
  Ref<Buffer> buffer;
  Expr value;
  std::vector<Expr> indices;
};

// Allocates the storage of `buffer` (its shape, dtype and scope) for the duration of body.
struct Allocate : StmtNode {
  KILN_NODE_KIND(Allocate)
  Allocate(Ref<Buffer> buffer, Stmt body)
      : StmtNode(kKind), buffer(std::move(buffer)), body(std::move(body)) {}
  Ref<Buffer> buffer;
  Stmt body;
};

enum class ForKind : uint8_t {
  kSerial,
  kParallel,       // iterations run on the thread pool
  kVectorized,     // iterations become vector lanes
  kUnrolled,       // the body is repeated extent times
  kThreadBinding,  // the loop variable is a GPU thread or block index (`thread_tag`)
};
const char* for_kind_name(ForKind kind);

// for loop_var in [min, min + extent): body.
struct For : StmtNode {
  KILN_NODE_KIND(For)
  For(Ref<Var> loop_var, Expr min, Expr extent, ForKind kind, Stmt body)
      : StmtNode(kKind),
        loop_var(std::move(loop_var)),
        min(std::move(min)),
        extent(std::move(extent)),
        kind(kind),
        body(std::move(body)) {}
  Ref<Var> loop_var;
  Expr min, extent;
  ForKind kind;
  Stmt body;
  std::string thread_tag;  // "blockIdx.x", "threadIdx.y", … when kind is kThreadBinding
  Attrs annotations;
};

// Statements run in order.
struct SeqStmt : StmtNode {
  KILN_NODE_KIND(SeqStmt)
  explicit SeqStmt(std::vector<Stmt> seq) : StmtNode(kKind), seq(std::move(seq)) {}
  std::vector<Stmt> seq;
};

struct IfThenElse : StmtNode {
  KILN_NODE_KIND(IfThenElse)
  IfThenElse(Expr condition, Stmt then_case, Stmt else_case = nullptr)
      : StmtNode(kKind),
        condition(std::move(condition)),
        then_case(std::move(then_case)),
        else_case(std::move(else_case)) {}
  Expr condition;
  Stmt then_case;
  Stmt else_case;  // may be null
};

// Evaluates an expression for its effect (a call).
struct Evaluate : StmtNode {
  KILN_NODE_KIND(Evaluate)
  explicit Evaluate(Expr value) : StmtNode(kKind), value(std::move(value)) {}
  Expr value;
};

// A region of a buffer: one range per dimension.
struct BufferRegion {
  Ref<Buffer> buffer;
  std::vector<Range> region;
};

// The unit of scheduling; see the file comment.
struct Block : StmtNode {
  KILN_NODE_KIND(Block)
  Block() : StmtNode(kKind) {}
  std::string name;
  std::vector<IterVar> iter_vars;
  std::vector<BufferRegion> reads;
  std::vector<BufferRegion> writes;
  std::vector<Ref<Buffer>> alloc_buffers;
  Stmt init;  // may be null; runs when every reduce iterator is at its minimum
  Stmt body;
  Attrs annotations;
};

// Instantiates a block: binds each iterator to a value (an expression of the loop variables)
// and runs it where `predicate` holds.
struct BlockRealize : StmtNode {
  KILN_NODE_KIND(BlockRealize)
  BlockRealize(std::vector<Expr> iter_values, Expr predicate, Ref<Block> block)
      : StmtNode(kKind),
        iter_values(std::move(iter_values)),
        predicate(std::move(predicate)),
        block(std::move(block)) {}
  std::vector<Expr> iter_values;
  Expr predicate;
  Ref<Block> block;
};

// Sequences statements, flattening nested SeqStmts and dropping nulls; returns the single
// statement itself when only one is left.
Stmt seq(std::vector<Stmt> stmts);

}  // namespace kiln::ir
