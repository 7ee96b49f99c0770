// Helpers of the reduction family shared by rfactor, decompose_reduction and blockize: the
// conditions of a predicate, substitution in regions, and the init of a reduction rebuilt as a
// loop nest of its own. Private to schedule/; implemented in reduction_util.cc.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "kiln/ir/functor.h"
#include "kiln/ir/stmt.h"

namespace kiln::schedule {

// The conjunction of `conditions`, `true` for none.
ir::Expr conjunction(const std::vector<ir::Expr>& conditions);

// `regions` with the variables of `vmap` replaced in their ranges.
std::vector<ir::BufferRegion> substitute_regions(const std::vector<ir::BufferRegion>& regions,
                                                 const ir::VarMap& vmap);

// Whether `e` uses one of `vars`.
bool uses_any(const ir::Expr& e, const std::unordered_set<const ir::Var*>& vars);

// Whether the bindings of `realize` map `loops` (the loops from some loop down to the block)
// one to one onto iterator values, the loops outside them held fixed; the reason in `why`
// otherwise. An init moved above `loops` runs once for all their iterations, which is right only
// then: a loop that binds nothing, or two points of the loops that reach the same iterator
// values, would run the reduction again after a single init.
bool loops_map_one_to_one(const ir::BlockRealize& realize, const std::vector<const ir::For*>& loops,
                          std::string* why);

// What make_init_nest needs to know about the block whose init it moves.
struct InitSource {
  std::string block_name;                // the name of the new init block
  std::vector<ir::IterVar> iters;        // the spatial iterators the init runs over
  std::vector<ir::Expr> bindings;        // their bindings, over `loops` and loops outside them
  ir::Expr predicate;                    // the block's predicate (`true` for none)
  std::vector<const ir::For*> loops;     // the loops the nest may copy, outermost first
  ir::Stmt init;                         // the init, over `iters`
  std::vector<ir::BufferRegion> writes;  // the block's writes, over `iters`
  bool always_block = true;              // false: with no iterators, the bare init
  // The values of the loops the nest does not copy at the reduction's first step (where the
  // block ran its init), where known: a condition over both kinds of loops is then taken there.
  ir::VarMap first_step;
};

// The init of a reduction as a nest of its own: copies ("<loop>_init") of the loops of
// `source.loops` that the bindings use, and a block `source.block_name` whose iterators are
// copies ("<iter>_init") of `source.iters`, bound through the copied loops, that runs the init.
// The conditions of the predicate over copied loops (and loops outside them) are kept; those
// over loops that are not copied are dropped; one over both kinds is taken at the first step
// (`source.first_step`: the tail of a reduction split by a factor that does not divide it,
// `k_0 * 16 + k_1 < 197`, holds for every lane k_1 at k_0 = 0), and dropped where it holds for
// every iteration of the copied loops.
// Returns null and names the condition in `conflict` when one condition uses both kinds of
// loops and the first step does not give every loop it uses that is not copied.
ir::Stmt make_init_nest(const InitSource& source, std::string* conflict);

}  // namespace kiln::schedule
