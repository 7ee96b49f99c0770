// The translation of a PrimFunc into the interpreter's code tree (code.h). The Compiler keeps
// the scope: which variables and data variables are bound at each point, and their slots. The
// node kinds are compiled in several files, by family, through the functions declared here.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "code.h"
#include "kiln/ir/function.h"
#include "kiln/ir/printer.h"

namespace kiln::interpreter {

class Compiler {
 public:
  // Dispatch on the node kind (expr_compile.cc and stmt_compile.cc).
  ExprCodePtr expr(const ir::Expr& e);
  // A LetStmt that binds device_alloc (host code of a GPU function) as an allocation; null
  // for any other LetStmt.
  StmtCodePtr compile_device_allocation(const ir::LetStmt& op);
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
  // The storage index of the data variable `data` in scope here, or -1.
  int storage_of_data(const ir::Var* data) const;
  int num_storages() const { return static_cast<int>(written_.size()); }
  // Records that the function stores into `storage`, and asks whether it does.
  void mark_written(int storage) { written_[storage] = true; }
  bool is_written(int storage) const { return written_[storage]; }
  // Whether `var` is in scope here.
  bool in_scope(const ir::Var* var) const;

  // GPU semantics (gpu_code.cc). `gpu`: loop nests bound to GPU blocks and threads run as grids
  // of thread blocks. `in_grid`: the statement being compiled runs once per GPU thread.
  bool gpu = false;
  int grid_depth = 0;
  bool in_grid() const { return grid_depth > 0; }
  // The kernels that device_launch calls may name, by their global_symbol.
  std::unordered_map<std::string, ir::Ref<ir::PrimFunc>> kernels;
  // The statements that contain a storage_sync (see find_barriers); compiled as resumable
  // nodes inside a grid.
  std::unordered_set<const ir::Node*> syncing;
  bool is_syncing(const ir::Node* s) const { return syncing.count(s) != 0; }
  // Reserves `count` entries of Frame::states; returns the first.
  int new_states(int count) {
    next_state_ += count;
    return next_state_ - count;
  }
  int num_states() const { return next_state_; }
  // The barriers compiled so far, and the conditions (as text) that enclose the statement being
  // compiled: they name a barrier in messages.
  int num_barriers = 0;
  std::vector<std::string> conditions;

 private:
  struct VarSlot {
    int slot;
    int depth;  // how many enclosing scopes bind it now; 0: out of scope
  };
  std::unordered_map<const ir::Var*, VarSlot> slots_;
  std::unordered_map<const ir::Var*, VarSlot> storages_;
  std::vector<bool> written_;
  int next_slot_ = 0;
  int next_state_ = 0;
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

// Calls of C functions by name, through libffi (extern_code.cc).
ExprCodePtr compile_extern_call(Compiler& compiler, const ir::Call& call);

// Buffer loads and stores, with their bounds checks (buffer_code.cc).
ExprCodePtr compile_load(Compiler& compiler, const ir::BufferLoad& load);
// The load `load` on the lanes where `*mask` (a boolean per lane, set before each evaluation)
// holds, 0 on the others, which are neither checked nor read.
ExprCodePtr compile_masked_load(Compiler& compiler, const ir::BufferLoad& load,
                                const std::vector<Lane>* mask);
StmtCodePtr compile_store(Compiler& compiler, const ir::BufferStore& store);
// The store `store` of only the lanes where `mask` (a boolean vector of as many lanes) holds;
// the other lanes are neither checked nor written.
StmtCodePtr compile_masked_store(Compiler& compiler, const ir::BufferStore& store,
                                 const ir::Expr& mask);

// The storage of one allocated buffer (an Allocate, or an alloc_buffer of a block). The
// constructor binds the buffer's data variable in the compiler; call `end_scope` after the body
// has been compiled. At run time, `enter` allocates (filled with garbage, see value.h) and
// `exit` releases. Inside a GPU grid, a "shared" buffer is allocated once per thread block (the
// first thread to enter allocates it, the others see the same memory, with the access record
// that detects missing barriers) and any other one once per thread, on each entry. A "shared"
// buffer allocated outside the grids of a function with GPU semantics is one memory for the
// run, also with an access record.
class AllocationCode {
 public:
  AllocationCode(Compiler& compiler, const ir::Ref<ir::Buffer>& buffer);
  void end_scope(Compiler& compiler);
  void enter(Frame& frame);
  void exit(Frame& frame);

 private:
  enum class Placement { kRun, kBlock, kThread };
  // Sizes `memory` for one entry and fills it with garbage; returns it as storage.
  Storage allocate(Frame& frame, std::vector<uint64_t>* memory);
  // Clears the access record for `storage`; returns it.
  SharedShadow* reset_shadow(const Storage& storage);

  ir::Ref<ir::Buffer> buffer_;
  ExprCodePtr elements_;  // the extent of the storage in elements, evaluated on entry
  int storage_;
  Placement placement_;
  bool track_;  // record accesses to find missing barriers
  Storage saved_;
  std::vector<uint64_t> memory_;  // reused from one entry to the next
  // kBlock: the block that `memory_` belongs to. The access record when `track_`.
  int64_t block_serial_ = -1;
  Storage block_storage_;
  SharedShadow shadow_;
  // kThread: the memory of each thread of the block, and what each thread's entry replaced.
  std::vector<std::vector<uint64_t>> thread_memory_;
  std::vector<Storage> thread_saved_;
};

// GPU semantics (gpu_code.cc).

// Records in `syncing` every statement of `s` that contains a storage_sync statement; returns
// whether `s` does.
bool find_barriers(const ir::Stmt& s, std::unordered_set<const ir::Node*>* syncing);
// The outermost loop bound to a GPU tag, with the loop nest under it, as a grid of thread
// blocks: launch extents are the largest extent of the loops bound to each tag.
StmtCodePtr compile_grid(Compiler& compiler, const ir::For& loop);
// A loop bound to a GPU tag inside a grid: the thread's index along the tag, under a guard.
StmtCodePtr compile_thread_loop(Compiler& compiler, const ir::For& loop);
// A storage_sync statement inside a grid.
StmtCodePtr compile_barrier(Compiler& compiler, const ir::Call& call);
// A device_launch statement: runs the kernel it names as a grid.
StmtCodePtr compile_device_launch(Compiler& compiler, const ir::Call& call);
// A statement that contains a barrier inside a grid, as a node that can stop at the barrier and
// go on from there (sequences, serial loops, conditions, lets, assertions, allocations).
StmtCodePtr compile_resumable(Compiler& compiler, const ir::Stmt& s);
// "(x, y, z)" of the thread with linear index `linear` in `block`, and of the block itself.
std::string thread_text(const GpuBlock& block, int64_t linear);
std::string block_text(const GpuThread& thread);

}  // namespace kiln::interpreter
