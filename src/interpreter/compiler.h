// The translation of a PrimFunc into the interpreter's code tree (code.h). The Compiler keeps
// the scope: which variables and data variables are bound at each point, and their slots. The
// node kinds are compiled in several files, by family, through the functions declared here.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "code.h"
#include "kiln/ir/function.h"
#include "kiln/ir/printer.h"

namespace kiln::interpreter {

class Compiler {
 public:
  // Dispatch on the node kind (expr_compile.cc and stmt_compile.cc).
  ExprCodePtr expr(const ir::Expr& e);
  StmtCodePtr stmt(const ir::Stmt& s);

  // `var` comes into scope; returns its slot, the same one each time the variable is bound.
  int bind(const ir::Var* var);
  // `var` goes out of scope.
  void unbind(const ir::Var* var);
  // The slot of a variable in scope; a user error naming `context` when it is not in scope.
  int slot_of(const ir::Var* var, const std::string& context) const;
  // Whether `var` has been bound anywhere so far (in scope or not).
  bool has_slot(const ir::Var* var) const { return slots_.count(var) != 0; }
  int num_slots() const { return next_slot_; }

  // The data variable `data` is bound to storage from here on; returns its storage index.
  int bind_storage(const ir::Var* data);
  void unbind_storage(const ir::Var* data);
  // The storage index of a buffer's data variable; a user error when it is not bound here.
  int storage_of(const ir::Buffer& buffer) const;
  int num_storages() const { return static_cast<int>(written_.size()); }
  // Records that the function stores into `storage`, and asks whether it does.
  void mark_written(int storage) { written_[storage] = true; }
  bool is_written(int storage) const { return written_[storage]; }

 private:
  struct VarSlot {
    int slot;
    int depth;  // how many enclosing scopes bind it now; 0: out of scope
  };
  std::unordered_map<const ir::Var*, VarSlot> slots_;
  std::unordered_map<const ir::Var*, VarSlot> storages_;
  std::vector<bool> written_;
  int next_slot_ = 0;
};

// Binds a variable for the lifetime of the guard (the compile-time scope of a loop, let, block).
class ScopedVar {
 public:
  ScopedVar(Compiler& compiler, const ir::Var* var)
      : compiler_(compiler), var_(var), slot_(compiler.bind(var)) {}
  ~ScopedVar() { compiler_.unbind(var_); }
  ScopedVar(const ScopedVar&) = delete;
  ScopedVar& operator=(const ScopedVar&) = delete;
  int slot() const { return slot_; }

 private:
  Compiler& compiler_;
  const ir::Var* var_;
  int slot_;
};

// Arithmetic, comparison and logical nodes (arith_code.cc).
ExprCodePtr make_binary_code(const ir::BinaryNode& op, ExprCodePtr a, ExprCodePtr b);
ExprCodePtr make_cast_code(ir::DataType dtype, ExprCodePtr value);

// Builtin calls (call_code.cc).
ExprCodePtr compile_call(Compiler& compiler, const ir::Call& call);

// Buffer loads and stores, with their bounds checks (buffer_code.cc).
ExprCodePtr compile_load(Compiler& compiler, const ir::BufferLoad& load);
StmtCodePtr compile_store(Compiler& compiler, const ir::BufferStore& store);

// The storage of one allocated buffer (an Allocate, or an alloc_buffer of a block). The
// constructor binds the buffer's data variable in the compiler; call `end_scope` after the body
// has been compiled. At run time, `enter` allocates (filled with garbage, see value.h) and
// `exit` releases.
class AllocationCode {
 public:
  AllocationCode(Compiler& compiler, const ir::Ref<ir::Buffer>& buffer);
  void end_scope(Compiler& compiler);
  void enter(Frame& frame);
  void exit(Frame& frame);

 private:
  ir::Ref<ir::Buffer> buffer_;
  ExprCodePtr elements_;  // the extent of the storage in elements, evaluated on entry
  int storage_;
  Storage saved_;
  std::vector<uint64_t> memory_;  // reused from one entry to the next
};

}  // namespace kiln::interpreter
