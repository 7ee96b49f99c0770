// The rule cross_thread_reduction (GPU targets): a reduction with fewer output elements than
// steps per element (the sum of each of a few long rows) leaves most threads idle when each
// thread computes one element. Its extra sketch gives each output element a thread block whose
// threads split the reduction: the reduction loop becomes threadIdx.x (a sampled count) around
// the steps of one thread, the spatial loop becomes blockIdx.x, and lowering combines the
// threads' partial results (lower_cross_thread_reduction). The block as it is stays a sketch,
// which auto_bind binds one element per thread. The reduction may be of several values (argmax's
// index and value): rfactor and lowering combine every value of the pair together.
//
// A reduction to one value (no spatial loop, or spatial loops of extent 1) keeps the block as it
// is (auto_bind gives it one thread) and gets two sketches: one thread block whose threads stride
// over the input (a unit loop, add_unit_loop, bound to blockIdx.x when there is no spatial loop),
// and two stages (not for fewer than kMinReduction steps): the reduction loop split
// into (steps, a sampled count of thread blocks, threads), rfactor over the blocks giving each
// block's threads a slice to reduce into a partial result, and one thread block reducing the
// partial results across its threads:
//   l1, l2, l3 = split(k, [None, v_blocks, v_threads]); reorder(l2, l3, l1); rfactor(l2, 0)
//   bind(l2, "blockIdx.x"); bind(l3, "threadIdx.x"); bind(add_unit_loop(l4), "blockIdx.x") ...
#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/for_kind.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/schedule/reduction.h"
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
    const schedule::BlockLocation* loc = root_scope_block(result, block_name);
    if (loc == nullptr) return {sch};
    BlockAnalysis a = analyze_block(result, block_name);
    if (!a.has_init || !a.trivial_bindings) return {sch};
    for (const ir::For* loop : loc->loops) {
      if (loop->kind == ir::ForKind::kThreadBinding) return {sch};  // a partial result, bound
    }
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
    if (num_spatial == loc->loops.size()) return {sch};
    if (spatial == 1 && (num_spatial == 0 || reduce >= kMinReduction)) {
      return reduce_to_one_value(sch, block_name, num_spatial, reduce);
    }
    if (reduce < kMinReduction || spatial >= reduce) return {sch};
    try {
      // Step 2. The reduction loop (the reduction loops fused) split into the threads (outer,
      // as lower_cross_thread_reduction wants them) and the steps of each thread.
      auto [block, spatial_loops, reduction, threads] =
          fuse_reduction(result, block_name, num_spatial, reduce);
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
  // The block, its spatial loops (the first num_spatial), its reduction loops fused into one,
  // and a sampled count of threads for that loop.
  struct ReductionLoops {
    RV block;
    std::vector<RV> spatial;
    RV reduction;
    RV threads;
  };
  ReductionLoops fuse_reduction(schedule::Schedule& sch, const std::string& block_name,
                                size_t num_spatial, int64_t reduce) const {
    ReductionLoops r;
    r.block = schedule::get_block(sch, block_name);
    std::vector<RV> loops = schedule::get_loops(sch, r.block);
    r.spatial.assign(loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(num_spatial));
    std::vector<RV> reduce_loops(loops.begin() + static_cast<std::ptrdiff_t>(num_spatial),
                                 loops.end());
    r.reduction = reduce_loops.size() == 1 ? reduce_loops[0] : schedule::fuse(sch, reduce_loops);
    std::vector<int64_t> counts = gpu_thread_counts(context_.task->target, 16, 512, reduce);
    r.threads = schedule::sample_categorical(sch, counts, std::vector<double>(counts.size(), 1.0));
    return r;
  }

  // The sketches of a reduction to one value (spatial loops, num_spatial of them, of extent 1):
  // the block as it is (auto_bind gives it one thread), one thread block, and two stages (not
  // for fewer than kMinReduction steps).
  std::vector<schedule::Schedule> reduce_to_one_value(const schedule::Schedule& sch,
                                                      const std::string& block_name,
                                                      size_t num_spatial, int64_t reduce) {
    std::vector<schedule::Schedule> out = {sch};
    for (bool two_stages : {false, true}) {
      if (two_stages && reduce < kMinReduction) continue;
      schedule::Schedule result = sch.copy();
      try {
        // Step 1. The reduction loops fused, split into steps, thread blocks (two stages) and
        // threads: element (s * blocks + b) * threads + t, so that neighbouring threads read
        // neighbouring elements.
        auto [block, spatial_loops, reduction, threads] =
            fuse_reduction(result, block_name, num_spatial, reduce);
        const codegen::Target& target = context_.task->target;
        if (!two_stages) {
          std::vector<RV> parts = schedule::split(result, reduction, {std::monostate{}, threads});
          schedule::reorder(result, {parts[1], parts[0]});
          bind_one_block(result, spatial_loops, parts[1]);
          out.push_back(result);
          continue;
        }
        // Step 2. Two stages: as many blocks as the one block of the second stage has threads,
        // at most.
        std::vector<int64_t> block_counts = gpu_thread_counts(target, 2, 1024, reduce / 16);
        RV blocks = schedule::sample_categorical(result, block_counts,
                                                 std::vector<double>(block_counts.size(), 1.0));
        std::vector<RV> parts =
            schedule::split(result, reduction, {std::monostate{}, blocks, threads});
        schedule::reorder(result, {parts[1], parts[2], parts[0]});
        schedule::rfactor(result, parts[1], static_cast<int>(num_spatial));
        std::vector<RV> outer = spatial_loops;
        outer.push_back(parts[1]);
        schedule::bind_loop(result, outer.size() == 1 ? outer[0] : schedule::fuse(result, outer),
                            "blockIdx.x");
        schedule::bind_loop(result, parts[2], "threadIdx.x");
        // Step 3. The write-back: its spatial loops (copies), then the partial results.
        std::vector<RV> final_loops = schedule::get_loops(result, block);
        RV partial = final_loops.back();
        final_loops.pop_back();
        bind_one_block(result, final_loops, partial);
        out.push_back(result);
      } catch (const schedule::ScheduleError&) {
        continue;
      }
    }
    return out;
  }

  // Binds `units` (loops of extent 1, fused; none: a new unit loop) to blockIdx.x and `thread`
  // to threadIdx.x.
  static void bind_one_block(schedule::Schedule& sch, const std::vector<RV>& units,
                             const RV& thread) {
    RV block = units.empty()       ? schedule::add_unit_loop(sch, thread)
               : units.size() == 1 ? units[0]
                                   : schedule::fuse(sch, units);
    schedule::bind_loop(sch, block, "blockIdx.x");
    schedule::bind_loop(sch, thread, "threadIdx.x");
  }

  SpaceContext context_;
};

}  // namespace

std::unique_ptr<ScheduleRule> make_cross_thread_reduction(const SpaceContext& context) {
  return std::make_unique<CrossThreadReduction>(context);
}

}  // namespace kiln::autotune
