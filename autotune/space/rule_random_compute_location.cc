// The rule random_compute_location: a block that no earlier rule inlined or tiled (a reduction
// feeding an element-wise consumer: the max and the sum of a softmax, the sum of squares of an
// RMSNorm) is computed at a sampled loop of its consumers, so that the search can fuse it into
// their loops and keep its result in cache. (The postprocessor refuse_recomputation refuses the
// locations where a reduction would be computed over and over.)
#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/ir/functor.h"
#include "kiln/schedule/compute_at.h"
#include "kiln/schedule/getters.h"

namespace kiln::autotune {

namespace {

// The number of blocks under `stmt`, nested ones included.
int count_blocks(const ir::Stmt& stmt) {
  int count = 0;
  ir::post_order_visit(stmt, [&count](const ir::Node* node) {
    if (node->kind() == ir::NodeKind::Block) ++count;
  });
  return count;
}

class RandomComputeLocation : public ScheduleRule {
 public:
  const char* name() const override { return "random_compute_location"; }

  std::vector<schedule::Schedule> apply(const schedule::Schedule& sch,
                                        const std::string& block_name) override {
    schedule::Schedule result = sch.copy();
    // Step 1. A block of the root scope that is not an output, still under the loops
    // te.create_prim_func made for it (so not tiled), alone in its loop nest.
    const schedule::BlockLocation* loc = root_scope_block(result, block_name);
    if (loc == nullptr || loc->loops.empty()) return {sch};
    if (count_blocks(loc->loops.front()->body) != 1) return {sch};
    BlockAnalysis a = analyze_block(result, block_name);
    if (a.writes_output || !a.trivial_bindings) return {sch};
    try {
      // Step 2. Some loop of its consumers can hold it without recomputing a reduction: else
      // the sketch would only have the choice of leaving it where it is.
      schedule::RV block = schedule::get_block(result, block_name);
      if (useful_compute_locations(result, block).back() < 0) return {sch};
      // Step 3. Sample the location and move the block there.
      schedule::RV location = schedule::sample_compute_location(result, block);
      schedule::compute_at(result, block, location);
    } catch (const schedule::ScheduleError&) {
      return {sch};
    }
    return {result};
  }
};

}  // namespace

std::unique_ptr<ScheduleRule> make_random_compute_location(const SpaceContext&) {
  return std::make_unique<RandomComputeLocation>();
}

}  // namespace kiln::autotune
