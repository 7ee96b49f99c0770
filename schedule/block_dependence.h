// Producer-consumer relations between the blocks of one scope, the block properties that the
// compute-location primitives require (complete block, reduction block, stage pipeline), and
// the regions that block accesses cover over a part of their loop nest. Private to schedule/.
//
// Vocabulary (as in TensorIR):
//  * The scope of a block is its nearest enclosing block; the blocks of a scope are those whose
//    scope it is. Relations below are between blocks of one scope.
//  * A producer of a block writes a buffer the block reads; a consumer reads a buffer it writes.
//  * A complete block has only spatial iterators, is the only writer of its outputs in the
//    scope, and does not read a buffer it writes.
//  * A reduction block has an init, only spatial and reduction iterators bound affinely, is the
//    only writer of its outputs, and indexes its outputs by spatial iterators only.
//  * A scope is a stage pipeline when its body holds only loops, sequences and blocks, no block
//    writes a buffer that an earlier block of the scope reads (no write after read), and every
//    consumer that shares a loop with a producer reads, in one iteration of the innermost shared
//    loop, only what the producer writes in that iteration (region cover).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/arith/analyzer.h"
#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// The blocks whose scope is `scope`, in program order.
std::vector<const BlockLocation*> scope_blocks(const FunctionIndex& index, const ir::Block* scope);

// The blocks of the scope of `block` that write a buffer it reads / read a buffer it writes,
// itself excluded, in program order.
std::vector<const BlockLocation*> producers_of(const FunctionIndex& index,
                                               const BlockLocation& block);
std::vector<const BlockLocation*> consumers_of(const FunctionIndex& index,
                                               const BlockLocation& block);

// Why `block` is not a complete block of its scope, or "" when it is one.
std::string why_not_complete(const FunctionIndex& index, const BlockLocation& block);
// Why `block` is not a reduction block of its scope, or "" when it is one.
std::string why_not_reduction(const FunctionIndex& index, const BlockLocation& block);

// The first buffer `block` writes that its scope does not allocate (an output of the scope, a
// function parameter for the root scope), or null.
const ir::Buffer* output_buffer(const BlockLocation& block);

// A broken property: why, and the node to mark in the error message.
struct Violation {
  std::string reason;
  const ir::Node* where = nullptr;
  bool ok() const { return reason.empty(); }
};

// Whether `scope` (the scope block of the blocks in `index`) is a stage pipeline.
Violation check_stage_pipeline(const FunctionIndex& index, const ir::Block* scope);

// Tells `analyzer` the range of each loop (once per variable; `bound` records which are known).
void bind_loops(const std::vector<const ir::For*>& loops, arith::Analyzer* analyzer,
                std::unordered_map<const ir::Var*, bool>* bound);

// The region `region` (a read or write region of `block`, in its iterators) covers while the
// loops of `block` below position `depth` of its loop list range over their domains: the
// block's bindings are substituted and those loops relaxed, so the result is in the variables
// of the outer `depth` loops (and of the function's parameters). Dimensions whose set is
// unbounded cover the buffer's shape. The caller binds the block's loops in `analyzer`.
// With `gpu_scope` "shared", outer loops bound to threadIdx or vthread are relaxed too: the
// threads of a block (and their virtual threads) share a "shared" buffer, so what one thread
// needs of it is what all of them need (as in TVM).
std::vector<ir::Range> relaxed_region(const BlockLocation& block, const ir::BufferRegion& region,
                                      size_t depth, arith::Analyzer* analyzer,
                                      const std::string& gpu_scope = "");

// Whether statement `a` starts before statement `b` in the program order of `scope`'s body (both
// loops or block realizes of the scope, outside nested blocks).
bool comes_before(const ir::Block* scope, const ir::StmtNode* a, const ir::StmtNode* b);

// ---------------------------------------------------------------------------------------------
// Rewrites shared by the compute-location primitives (compute_at.cc, compute_inline.cc).

// A planned primitive: the new function and the loops and blocks it removes. Nothing changes
// until apply_rewrite.
struct BlockRewrite {
  ir::Ref<ir::PrimFunc> func;
  std::vector<const ir::Var*> removed_loops;
  std::vector<std::string> removed_blocks;
};
void apply_rewrite(Schedule& sch, const std::string& func_name, const BlockRewrite& rewrite,
                   const char* primitive);

// How to take `block` out of its place: the statement to remove (its realize, or the
// outermost of the loops around it that hold nothing else) and the variables of those loops.
struct BlockRemoval {
  const ir::StmtNode* target = nullptr;
  std::vector<const ir::Var*> loops;
};
BlockRemoval plan_block_removal(const BlockLocation& block);

// compute_inline and reverse_compute_inline of `block`, planned (defined in compute_inline.cc);
// `primitive` names the primitive in errors.
BlockRewrite plan_compute_inline(Schedule& sch, const RV& block, const char* primitive);
BlockRewrite plan_reverse_compute_inline(Schedule& sch, const RV& block, const char* primitive);

// The position of `loop` in the loops of `block` (block.loops.size() when it is not one).
size_t loop_depth(const BlockLocation& block, const ir::For* loop);

}  // namespace kiln::schedule
