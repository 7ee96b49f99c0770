// Helpers shared by the schedule primitives: rebuilding a function with one statement replaced,
// walking the blocks under a statement, and adding predicates. Private to schedule/.
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/function.h"
#include "kiln/ir/functor.h"
#include "kiln/schedule/schedule.h"

namespace kiln::arith {
class Analyzer;
}

namespace kiln::schedule {

// `root` with the statement `target` (found by identity) replaced by `replacement`; only the
// path from the root to the target is rebuilt. A null replacement removes the statement from
// its SeqStmt.
ir::Stmt replace_stmt(const ir::Stmt& root, const ir::StmtNode* target,
                      const ir::Stmt& replacement);

// A copy of `func` with a new body.
ir::Ref<ir::PrimFunc> with_body(const ir::Ref<ir::PrimFunc>& func, ir::Stmt body);

// The BlockRealizes directly under `stmt` (not those nested inside another block), in order.
std::vector<const ir::BlockRealize*> child_block_realizes(const ir::Stmt& stmt);

// Every block under `stmt`, nested ones included, in program order.
std::vector<const ir::Block*> blocks_under(const ir::Stmt& stmt);

// `stmt` with `condition` and-ed into the predicate of each BlockRealize directly under it.
ir::Stmt add_predicate(const ir::Stmt& stmt, const ir::Expr& condition);

// Each iterator of the block mapped to its binding: substituted into the block's regions, it
// gives them over the loops around the block.
ir::VarMap block_bindings(const BlockLocation& block);

// Binds, in `analyzer`, the variable of every loop and the iterators of every block that
// enclose `stmt` to their ranges, so that bounds of expressions at `stmt` see them.
void bind_enclosing_ranges(const FunctionIndex& index, const ir::StmtNode* stmt,
                           arith::Analyzer* analyzer);

// A block name not used in the function, made from `base` ("C_local", "C_local_1", …).
std::string fresh_block_name(const FunctionIndex& index, const std::string& base);

// The loop of `location` as a Stmt handle.
inline ir::Stmt loop_stmt(const LoopLocation& location) {
  return ir::Stmt(location.loop);
}

}  // namespace kiln::schedule
