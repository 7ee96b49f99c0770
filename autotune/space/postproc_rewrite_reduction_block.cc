// The postprocessor rewrite_reduction_block: the init of every reduction block moves out of its
// reduction loops (decompose_reduction at its outermost reduction loop), so that no reduction
// step tests whether it is the first.
#include <unordered_set>

#include "autotune/space/space_parts.h"
#include "kiln/ir/functor.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/reduction.h"

namespace kiln::autotune {

namespace {

using namespace ir;

// The position in the block's loops of the outermost loop that a reduction iterator's binding
// uses, or -1.
int outermost_reduction_loop(const schedule::BlockLocation& loc) {
  std::unordered_set<const Var*> reduce_vars;
  for (size_t k = 0; k < loc.block->iter_vars.size(); ++k) {
    if (loc.block->iter_vars[k].type == IterType::kDataPar) continue;
    post_order_visit(loc.realize->iter_values[k], [&](const Node* node) {
      if (node->kind() == NodeKind::Var) reduce_vars.insert(static_cast<const Var*>(node));
    });
  }
  for (size_t l = 0; l < loc.loops.size(); ++l) {
    if (reduce_vars.count(loc.loops[l]->loop_var.get()) != 0) return static_cast<int>(l);
  }
  return -1;
}

class RewriteReductionBlock : public Postproc {
 public:
  const char* name() const override { return "rewrite_reduction_block"; }

  void apply(schedule::Schedule& sch) override {
    std::vector<std::string> names = sch.index("main").block_names();
    for (const std::string& name : names) {
      const schedule::BlockLocation* loc = sch.index("main").find_block(name);
      if (loc == nullptr || !loc->block->init.defined() || loc->realize == nullptr) continue;
      int position = outermost_reduction_loop(*loc);
      if (position < 0) continue;
      schedule::RV block = schedule::get_block(sch, name);
      std::vector<schedule::RV> loops = schedule::get_loops(sch, block);
      schedule::decompose_reduction(sch, block, loops[position]);
    }
  }
};

}  // namespace

std::unique_ptr<Postproc> make_rewrite_reduction_block(const SpaceContext&) {
  return std::make_unique<RewriteReductionBlock>();
}

}  // namespace kiln::autotune
