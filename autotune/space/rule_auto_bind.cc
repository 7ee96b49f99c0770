// The rule auto_bind (GPU targets): a block that no loop binds to a GPU thread yet runs one
// output element per thread. Its outer spatial loops are fused into one, split by a sampled
// thread count, and the two parts are bound to blockIdx.x and threadIdx.x; loops inside them
// (the reduction of a matmul, say) stay serial in each thread. A block without an outer
// spatial loop (a 0-d block, a reduction to one value) runs in one thread: two unit loops
// (add_unit_loop) around its loops are bound to blockIdx.x and threadIdx.x. Without it, a block
// would be left for the host, which a GPU function cannot have (verify_gpu_code refuses it).
#include <algorithm>
#include <unordered_set>

#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/for_kind.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/schedule/sampling.h"

namespace kiln::autotune {

namespace {

using schedule::RV;

// The number of outer loops of the block that bind no reduction iterator of it.
int leading_spatial_loops(const schedule::BlockLocation& loc) {
  std::unordered_set<const ir::Var*> reduce_vars;
  for (size_t k = 0; k < loc.block->iter_vars.size(); ++k) {
    if (loc.block->iter_vars[k].type == ir::IterType::kDataPar) continue;
    ir::post_order_visit(loc.realize->iter_values[k], [&](const ir::Node* node) {
      if (node->kind() == ir::NodeKind::Var) reduce_vars.insert(static_cast<const ir::Var*>(node));
    });
  }
  int count = 0;
  for (const ir::For* loop : loc.loops) {
    if (reduce_vars.count(loop->loop_var.get()) != 0) break;
    ++count;
  }
  return count;
}

class AutoBind : public ScheduleRule {
 public:
  explicit AutoBind(const SpaceContext& context) : context_(context) {}
  const char* name() const override { return "auto_bind"; }

  std::vector<schedule::Schedule> apply(const schedule::Schedule& sch,
                                        const std::string& block_name) override {
    schedule::Schedule result = sch.copy();
    // Step 1. A block of the root scope under loops none of which is bound yet.
    const schedule::BlockLocation* loc = root_scope_block(result, block_name);
    if (loc == nullptr || loc->realize == nullptr) return {sch};
    for (const ir::For* loop : loc->loops) {
      if (loop->kind == ir::ForKind::kThreadBinding) return {sch};
    }
    // Step 2. Its outer spatial loops, of constant extents: one iteration per thread.
    int count = leading_spatial_loops(*loc);
    if (count == 0) return {one_thread(result, block_name, !loc->loops.empty())};
    int64_t extent = 1;
    for (int l = 0; l < count; ++l) {
      const int64_t* c = ir::as_const_int(loc->loops[l]->extent);
      if (c == nullptr) return {sch};
      extent *= *c;
    }
    try {
      // Step 3. Fuse them, split by a sampled thread count, bind the parts.
      RV block = schedule::get_block(result, block_name);
      std::vector<RV> loops = schedule::get_loops(result, block);
      std::vector<RV> outer(loops.begin(), loops.begin() + count);
      RV fused = count == 1 ? outer[0] : schedule::fuse(result, outer);
      std::vector<int64_t> counts = gpu_thread_counts(context_.task->target, 32, 1024, extent);
      RV threads =
          schedule::sample_categorical(result, counts, std::vector<double>(counts.size(), 1.0));
      std::vector<RV> parts = schedule::split(result, fused, {std::monostate{}, threads});
      schedule::bind_loop(result, parts[0], "blockIdx.x");
      schedule::bind_loop(result, parts[1], "threadIdx.x");
    } catch (const schedule::ScheduleError&) {
      return {sch};
    }
    return {result};
  }

 private:
  // `sch` with the block called `name` (and its loops, if `has_loops`) in one thread.
  static schedule::Schedule one_thread(schedule::Schedule& sch, const std::string& name,
                                       bool has_loops) {
    RV block = schedule::get_block(sch, name);
    RV around = has_loops ? schedule::get_loops(sch, block)[0] : block;
    RV thread = schedule::add_unit_loop(sch, around);
    RV thread_block = schedule::add_unit_loop(sch, thread);
    schedule::bind_loop(sch, thread_block, "blockIdx.x");
    schedule::bind_loop(sch, thread, "threadIdx.x");
    return sch;
  }

  SpaceContext context_;
};

}  // namespace

std::vector<int64_t> gpu_thread_counts(const codegen::Target& target, int64_t smallest,
                                       int64_t largest, int64_t extent) {
  int64_t limit = std::min(largest, target.gpu.max_threads_per_block);
  std::vector<int64_t> counts;
  for (int64_t count = smallest; count <= limit; count *= 2) {
    if (!counts.empty() && count > 2 * extent) break;
    counts.push_back(count);
  }
  if (counts.empty()) counts.push_back(std::max<int64_t>(1, limit));
  return counts;
}

std::unique_ptr<ScheduleRule> make_auto_bind(const SpaceContext& context) {
  return std::make_unique<AutoBind>(context);
}

}  // namespace kiln::autotune
