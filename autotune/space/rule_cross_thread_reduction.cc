// The rule cross_thread_reduction (GPU targets): a reduction with fewer output elements than
// steps per element (the sum of each of a few long rows) leaves most threads idle when each
// thread computes one element. Its extra sketch gives each output element a thread block whose
// threads split the reduction: the reduction loop becomes threadIdx.x (a sampled count) around
// the steps of one thread, the spatial loop becomes blockIdx.x, and lowering combines the
// threads' partial results (lower_cross_thread_reduction). The block as it is stays a sketch,
// which auto_bind binds one element per thread.
#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/for_kind.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/schedule/sampling.h"

namespace kiln::autotune {

namespace {

using schedule::RV;

// Fewer reduction steps than this are summed faster by one thread than by a block's threads
// through shared memory and barriers.
constexpr int64_t kMinReduction = 32;

class CrossThreadReduction : public ScheduleRule {
 public:
  explicit CrossThreadReduction(const SpaceContext& context) : context_(context) {}
  const char* name() const override { return "cross_thread_reduction"; }

  std::vector<schedule::Schedule> apply(const schedule::Schedule& sch,
                                        const std::string& block_name) override {
    schedule::Schedule result = sch.copy();
    // Step 1. A reduction of the root scope as te.create_prim_func makes it (spatial loops, then
    // reduction loops, none bound yet) with more steps per element than elements.
    const schedule::BlockLocation* loc = result.index("main").find_block(block_name);
    const schedule::BlockLocation* root = result.index("main").find_block("root");
    if (loc == nullptr || root == nullptr || loc->scope != root->block) return {sch};
    BlockAnalysis a = analyze_block(result, block_name);
    if (!a.has_init || !a.trivial_bindings) return {sch};
    int64_t spatial = 1, reduce = 1;
    size_t num_spatial = 0;
    for (size_t l = 0; l < loc->loops.size(); ++l) {
      int64_t extent = *ir::as_const_int(loc->loops[l]->extent);
      if (a.is_reduce[a.loop_iter[l]]) {
        reduce *= extent;
      } else {
        if (num_spatial != l) return {sch};  // a spatial loop inside a reduction loop
        spatial *= extent;
        ++num_spatial;
      }
    }
    // A scalar result has no spatial loop to bind to blockIdx, which lowering needs around the
    // threads (the partial results live in the thread block).
    if (num_spatial == 0 || num_spatial == loc->loops.size() || reduce < kMinReduction ||
        spatial >= reduce) {
      return {sch};
    }
    try {
      // Step 2. The reduction loop (the reduction loops fused) split into the threads (outer,
      // as lower_cross_thread_reduction wants them) and the steps of each thread.
      RV block = schedule::get_block(result, block_name);
      std::vector<RV> loops = schedule::get_loops(result, block);
      std::vector<RV> spatial_loops(loops.begin(), loops.begin() + num_spatial);
      std::vector<RV> reduce_loops(loops.begin() + num_spatial, loops.end());
      RV reduction =
          reduce_loops.size() == 1 ? reduce_loops[0] : schedule::fuse(result, reduce_loops);
      std::vector<int64_t> counts = gpu_thread_counts(context_.task->target, 16, 512, reduce);
      RV threads =
          schedule::sample_categorical(result, counts, std::vector<double>(counts.size(), 1.0));
      std::vector<RV> parts = schedule::split(result, reduction, {threads, std::monostate{}});
      schedule::bind_loop(result, parts[0], "threadIdx.x");
      // Step 3. One thread block per output element.
      if (!spatial_loops.empty()) {
        RV outer =
            spatial_loops.size() == 1 ? spatial_loops[0] : schedule::fuse(result, spatial_loops);
        schedule::bind_loop(result, outer, "blockIdx.x");
      }
    } catch (const schedule::ScheduleError&) {
      return {sch};
    }
    return {sch, result};
  }

 private:
  SpaceContext context_;
};

}  // namespace

std::unique_ptr<ScheduleRule> make_cross_thread_reduction(const SpaceContext& context) {
  return std::make_unique<CrossThreadReduction>(context);
}

}  // namespace kiln::autotune
