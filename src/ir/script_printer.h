// The printer behind kiln/ir/printer.h, shared by printer.cc (names, output lines, marks and the
// public functions), printer_expr.cc (constants and expressions) and printer_stmt.cc
// (statements, blocks, functions and modules).
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"

namespace kiln::ir::script {

// Python's operator precedence, lowest first. An operand whose precedence is lower than its
// position requires is parenthesized.
enum Precedence : int { kOr = 1, kAnd, kNot, kCompare, kAdd, kMul, kUnary, kAtom };

// Printed expression text and the precedence of its outermost operator.
struct Doc {
  std::string text;
  int prec;
};

// Characters that bracket a marked span inside a line until the output is finished; they
// never occur in printed text otherwise (strings are escaped).
constexpr char kMarkBegin = '\x01';
constexpr char kMarkEnd = '\x02';

// `"text"` with Python escapes.
std::string quote(const std::string& text);
// The shortest decimal text that reads back as the same value of `dtype`.
std::string format_float(double value, DataType dtype);

class ScriptPrinter : public ExprFunctor<Doc> {
 public:
  explicit ScriptPrinter(const PrintOptions& options) : options_(options) {}

  // An expression without outer parentheses.
  std::string expr(const Expr& e);
  // Appends the expression as one line (a marked part is underlined by finish()).
  void expr_line(const Expr& e) { line(expr(e)); }
  // Appends the lines of a statement, a function or a module.
  void stmt(const Stmt& s);
  void func(const PrimFunc& f, const std::string& name, bool with_import);
  void module(const IRModule& m);
  // `A: T.Buffer((128,), "float32")`.
  std::string buffer_param(const Buffer* buffer);
  // `T.comm_reducer(lambda x, y: x + y, [T.float32(0)])`.
  std::string comm_reducer(const CommReducer* reducer);
  // The lines so far, each marked span underlined.
  std::string finish() const;

 private:
  // --- Names and output (printer.cc) ---
  std::string unique_name(const Node* node, const std::string& hint);
  std::string name(const Var* var);
  std::string name(const Buffer* buffer);
  // A buffer declared here: its data variable prints as `A.data`.
  void declare(const Buffer* buffer);
  void reset_names();
  void line(const std::string& text);
  bool is_marked(const Node* node) const { return node != nullptr && node == options_.mark; }
  std::string wrap_mark(const Node* node, std::string text) const;

  // --- Expressions (printer_expr.cc) ---
  Doc print(const Expr& e);
  std::string operand(const Expr& e, int min_prec);
  Doc infix(const BinaryNode* op, const char* symbol, int prec, bool chains = false);
  Doc call(const char* callee, const std::vector<Expr>& args);
  std::string join(const std::vector<Expr>& exprs);
  std::string lambda(const CommReducer* reducer);
  // `min + extent` as text, folded when both are constants.
  std::string range_end(const Range& range);
  // `extent` when min is 0, else `min, end`.
  std::string range_args(const Range& range);
  std::string dict(const Attrs& attrs);
  // `(128, 128), "float32"` and the keyword arguments that differ from the defaults.
  std::string buffer_args(const Buffer* buffer);
  std::string indices(const std::vector<Expr>& indices);

  Doc visit(const IntImm* op) override;
  Doc visit(const FloatImm* op) override;
  Doc visit(const StringImm* op) override;
  Doc visit(const Var* op) override;
  Doc visit(const Add* op) override;
  Doc visit(const Sub* op) override;
  Doc visit(const Mul* op) override;
  Doc visit(const Div* op) override;
  Doc visit(const Mod* op) override;
  Doc visit(const FloorDiv* op) override;
  Doc visit(const FloorMod* op) override;
  Doc visit(const Min* op) override;
  Doc visit(const Max* op) override;
  Doc visit(const EQ* op) override;
  Doc visit(const NE* op) override;
  Doc visit(const LT* op) override;
  Doc visit(const LE* op) override;
  Doc visit(const GT* op) override;
  Doc visit(const GE* op) override;
  Doc visit(const And* op) override;
  Doc visit(const Or* op) override;
  Doc visit(const Not* op) override;
  Doc visit(const Select* op) override;
  Doc visit(const Cast* op) override;
  Doc visit(const Call* op) override;
  Doc visit(const Ramp* op) override;
  Doc visit(const Broadcast* op) override;
  Doc visit(const Let* op) override;
  Doc visit(const BufferLoad* op) override;
  Doc visit(const Reduce* op) override;

  // --- Statements (printer_stmt.cc) ---
  void body(const Stmt& s);
  void print_stmt(const LetStmt* op);
  void print_stmt(const AssertStmt* op);
  void print_stmt(const BufferStore* op);
  void print_stmt(const Allocate* op);
  void print_stmt(const For* op);
  void print_stmt(const SeqStmt* op);
  void print_stmt(const IfThenElse* op);
  void print_stmt(const Evaluate* op);
  void print_stmt(const Block* op);
  void print_stmt(const BlockRealize* op);
  void block(const BlockRealize* realize, const Block* op);
  void block_iter_vars(const BlockRealize* realize, const Block* op);
  void alloc_buffer(const Buffer* buffer);
  std::string regions(const std::vector<BufferRegion>& regions);
  std::string loop_header(const For* op);

  PrintOptions options_;
  std::vector<std::string> lines_;
  int indent_ = 0;
  // The next line is the header of a marked statement.
  bool pending_mark_ = false;
  std::unordered_map<const Node*, std::string> names_;
  std::unordered_set<std::string> used_names_;
  std::unordered_map<const Var*, const Buffer*> data_of_;
  // Enclosing loops, innermost last: block iterators bound to one of them print as a remap.
  std::vector<const For*> loops_;
};

}  // namespace kiln::ir::script
