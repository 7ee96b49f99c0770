// tir.Schedule: the state that schedule primitives transform. It holds the module being
// scheduled, the handles (random variables, "RVs") that name its blocks, loops and sampled
// values, the trace of every primitive applied, and the random state of sampling.
//
// Handles stay valid across primitives: a loop handle names the loop variable (which survives
// rebuilds of the loop node), a block handle names the block (block names are unique within a
// function). A handle whose loop or block a primitive removed is stale; using it raises a
// ScheduleError that says which primitive removed it.
//
// A primitive is a free function in its family's header (loop_transformation.h, compute_at.h,
// …) that (1) resolves its handles, (2) checks its preconditions, throwing a ScheduleError,
// (3) builds the new function, and only then (4) calls replace() and record(). Because IR is
// immutable and nothing changes before step 4, a failed primitive leaves the schedule, its
// module and its trace exactly as they were.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/ir/function.h"
#include "kiln/schedule/schedule_error.h"
#include "kiln/schedule/trace.h"

namespace kiln::schedule {

// Where a block sits in its function: its realize, its enclosing block (the scope) and the
// loops between the scope and the block, outermost first.
struct BlockLocation {
  const ir::BlockRealize* realize = nullptr;
  const ir::Block* block = nullptr;
  const ir::Block* scope = nullptr;  // null for the root block
  std::vector<const ir::For*> loops;
};

// Where a loop sits: the loop and its enclosing block (scope).
struct LoopLocation {
  const ir::For* loop = nullptr;
  const ir::Block* scope = nullptr;
};

// An index of one function's current IR: blocks by name, loops by variable, parents of every
// statement. Rebuilt lazily after each replace().
class FunctionIndex {
 public:
  explicit FunctionIndex(const ir::Ref<ir::PrimFunc>& func);
  const BlockLocation* find_block(const std::string& name) const;
  const LoopLocation* find_loop(const ir::Var* loop_var) const;
  // The statement directly containing `stmt` (For, Block, SeqStmt, IfThenElse …), or null.
  const ir::StmtNode* parent(const ir::StmtNode* stmt) const;
  // Block names in the order of a pre-order walk.
  const std::vector<std::string>& block_names() const { return block_names_; }

 private:
  ir::Ref<ir::PrimFunc> func_;
  std::unordered_map<std::string, BlockLocation> blocks_;
  std::unordered_map<const ir::Var*, LoopLocation> loops_;
  std::unordered_map<const ir::StmtNode*, const ir::StmtNode*> parents_;
  std::vector<std::string> block_names_;
};

class Schedule {
 public:
  // Schedules a module; `seed` fixes the random state of sampling (none: from the clock).
  explicit Schedule(ir::Ref<ir::IRModule> mod, std::optional<uint64_t> seed = std::nullopt);

  // The current module (structurally a new object after each successful primitive).
  const ir::Ref<ir::IRModule>& mod() const { return mod_; }
  const Trace& trace() const { return trace_; }
  // An independent copy: same module, handles, trace and random state.
  Schedule copy() const { return *this; }
  // Re-seeds the random state.
  void seed(uint64_t value);

  // --- Handles -------------------------------------------------------------------------------
  RV new_block_rv(const std::string& func_name, const std::string& block_name);
  RV new_loop_rv(const std::string& func_name, const ir::Ref<ir::Var>& loop_var);
  RV new_expr_rv(const ir::Expr& value);

  // Resolves a handle for `primitive` (named in errors). Throws StaleHandleError when the
  // block or loop no longer exists, and a kType error when the handle is of the wrong kind.
  const BlockLocation& block(const RV& rv, const char* primitive);
  const LoopLocation& loop(const RV& rv, const char* primitive);
  ir::Expr expr(const RV& rv, const char* primitive) const;
  // The function a block or loop handle belongs to.
  const std::string& func_name(const RV& rv) const;
  ir::Ref<ir::PrimFunc> func(const std::string& func_name) const { return mod_->lookup(func_name); }
  FunctionIndex& index(const std::string& func_name);

  // --- Used by primitives after their checks ------------------------------------------------
  // Installs the new version of a function. `removed_loops` / `removed_blocks` are the loop
  // variables and block names the primitive removed; their handles become stale.
  void replace(const std::string& func_name, ir::Ref<ir::PrimFunc> new_func, const char* primitive,
               const std::vector<const ir::Var*>& removed_loops = {},
               const std::vector<std::string>& removed_blocks = {});
  void record(Instruction instruction) { trace_.append(std::move(instruction)); }
  // A uniformly distributed 64-bit random number (xoshiro256**).
  uint64_t next_random();

  // --- Sampling -------------------------------------------------------------------------------
  // Narrows the compute locations sample_compute_location draws for a block (a decision it is
  // given is taken as it is): of the locations compute_at accepts, only those `filter` accepts
  // (given this schedule, the block and the decision); none accepted leaves the block at the
  // root. Copies of the schedule keep it. The tuner draws only locations that compute each
  // value once so.
  using LocationFilter = std::function<bool(Schedule&, const RV& block, int64_t location)>;
  void set_location_filter(LocationFilter filter) { location_filter_ = std::move(filter); }
  const LocationFilter& location_filter() const { return location_filter_; }

 private:
  struct Handle {
    RVKind kind;
    std::string func_name;
    std::string block_name;     // kBlock
    ir::Ref<ir::Var> loop_var;  // kLoop
    ir::Expr value;             // kExpr
    std::string removed_by;     // the primitive that removed the block or loop, if any
  };
  const Handle& handle(const RV& rv, const char* primitive) const;

  ir::Ref<ir::IRModule> mod_;
  Trace trace_;
  std::map<int64_t, Handle> handles_;
  int64_t next_id_ = 0;
  std::map<std::string, std::shared_ptr<FunctionIndex>> indices_;
  uint64_t rng_[4] = {0, 0, 0, 0};
  LocationFilter location_filter_;
};

}  // namespace kiln::schedule
