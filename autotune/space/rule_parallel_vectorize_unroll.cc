// The rule parallel_vectorize_unroll: on the root block, the largest parallel extent, the
// largest vectorized extent and the depth of automatic unrolling, for the postprocessor of the
// same name to apply once the loops are final, and whether outputs are stored past the caches.
#include "autotune/program_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/annotation.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/sampling.h"

namespace kiln::autotune {

namespace {

class ParallelVectorizeUnroll : public ScheduleRule {
 public:
  explicit ParallelVectorizeUnroll(const SpaceContext& context) : context_(context) {}
  const char* name() const override { return "parallel_vectorize_unroll"; }

  std::vector<schedule::Schedule> apply(const schedule::Schedule& sch,
                                        const std::string& block_name) override {
    schedule::Schedule result = sch.copy();
    try {
      schedule::RV root = schedule::get_block(result, block_name);
      // Parallel loops of one chunk per thread up to many chunks per thread (which balance
      // better when threads are interrupted or iterations differ).
      int threads = context_.num_threads;
      std::vector<int64_t> extents = {threads, int64_t{4} * threads,
                                      int64_t{context_.config.max_jobs_per_thread} * threads};
      schedule::RV parallel = schedule::sample_categorical(result, extents, {1.0, 1.0, 1.0});
      schedule::annotate(result, root, kParallelMaxAnnotation, parallel);
      int lanes = context_.task->target.vector_lanes(ir::DataType::float32());
      schedule::annotate(result, root, kVectorizeMaxAnnotation,
                         ir::make_const(ir::DataType::int32(), int64_t{8} * lanes));
      const std::vector<int64_t>& steps = context_.config.unroll_steps;
      schedule::RV unroll =
          schedule::sample_categorical(result, steps, std::vector<double>(steps.size(), 1.0));
      schedule::annotate(result, root, kUnrollMaxAnnotation, unroll);
      if (outgrows_last_level_cache()) {
        schedule::RV stream = schedule::sample_categorical(result, {0, 1}, {1.0, 1.0});
        schedule::annotate(result, root, kStreamingAnnotation, stream);
      }
    } catch (const schedule::ScheduleError&) {
      return {sch};
    }
    return {result};
  }

 private:
  // Whether the function's buffers hold more bytes than the target's last-level cache.
  bool outgrows_last_level_cache() const {
    return argument_bytes(*context_.task->func) >
           detail::machine_model(context_.task->target, MachineOptions()).l3_bytes;
  }

  SpaceContext context_;
};

}  // namespace

std::unique_ptr<ScheduleRule> make_parallel_vectorize_unroll(const SpaceContext& context) {
  return std::make_unique<ParallelVectorizeUnroll>(context);
}

}  // namespace kiln::autotune
