// The rule multi_level_tiling_gpu (GPU targets): the GPU tiling SSSRRSRS of a reduction block
// with data reuse (matmul, batch matmul, convolution). Each thread block computes a tile of the
// output, each thread a register tile of it (its accumulators in "local" memory, interleaved
// over virtual threads), and the operands' tiles of each outer reduction step are staged in
// "shared" memory, copied by all the block's threads together (rewrite_cooperative_fetch).
#include <algorithm>
#include <optional>

#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/driver/build.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/annotation.h"
#include "kiln/schedule/cache_read_write.h"
#include "kiln/schedule/compute_at.h"
#include "kiln/schedule/compute_inline.h"
#include "kiln/schedule/for_kind.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/schedule/reduction.h"
#include "kiln/schedule/sampling.h"
#include "kiln/tir/prefetch_shared.h"
#include "kiln/tir/verify_gpu_code.h"

namespace kiln::autotune {

namespace {

using schedule::RV;

// The levels of the tiling: spatial loops in five (thread block, virtual thread, thread, two
// register levels), reduction loops in three (shared-memory steps, two inner levels).
constexpr int kSpatialLevels = 5;
constexpr int kReduceLevels = 3;
// The vector widths a cooperative fetch may copy with: each is a vector type of CUDA and of
// OpenCL (1: no vector).
const std::vector<int64_t> kFetchLanes = {1, 2, 4};
// The paddings pad_shared_tiles may apply: none, for vector reads, for scalar reads.
const std::vector<int64_t> kPaddings = {0, 1, 2};

class MultiLevelTilingGpu : public ScheduleRule {
 public:
  explicit MultiLevelTilingGpu(const SpaceContext& context) : context_(context) {}
  const char* name() const override { return "multi_level_tiling_gpu"; }

  std::vector<schedule::Schedule> apply(const schedule::Schedule& sch,
                                        const std::string& block_name) override {
    schedule::Schedule result = sch.copy();
    // Step 1. A reduction with data reuse, of the root scope, under no bound loop, as
    // te.create_prim_func makes it: some operand does not depend on some spatial iterator, so a
    // tile of the output reuses it.
    const schedule::BlockLocation* loc = root_scope_block(result, block_name);
    if (loc == nullptr) return {sch};
    for (const ir::For* loop : loc->loops) {
      if (loop->kind != ir::ForKind::kSerial) return {sch};
    }
    BlockAnalysis a = analyze_block(result, block_name);
    bool has_reduce = std::find(a.is_reduce.begin(), a.is_reduce.end(), true) != a.is_reduce.end();
    if (!a.has_init || !a.trivial_bindings || !has_reduce || !has_operand_reuse(a)) return {sch};
    try {
      tile(result, block_name, a);
    } catch (const schedule::ScheduleError&) {
      return {sch};
    }
    return {result};
  }

 private:
  void tile(schedule::Schedule& sch, const std::string& block_name, const BlockAnalysis& a) {
    RV block = schedule::get_block(sch, block_name);
    std::vector<RV> loops = schedule::get_loops(sch, block);
    const schedule::BlockLocation& loc = sch.block(block, name());
    int64_t spatial_points = 1;
    for (size_t l = 0; l < loops.size(); ++l) {
      if (!a.is_reduce[a.loop_iter[l]]) spatial_points *= *ir::as_const_int(loc.loops[l]->extent);
    }
    // The operands: what the block reads but does not write.
    std::vector<int64_t> operands;
    for (size_t r = 0; r < loc.block->reads.size(); ++r) {
      bool written = false;
      for (const ir::BufferRegion& w : loc.block->writes) {
        written = written || w.buffer.same_as(loc.block->reads[r].buffer);
      }
      if (!written) operands.push_back(static_cast<int64_t>(r));
    }
    // Step 2. Split every loop: spatial ones in five levels, reductions in three.
    std::vector<std::vector<RV>> spatial, reduce;
    for (size_t l = 0; l < loops.size(); ++l) {
      bool is_reduce = a.is_reduce[a.loop_iter[l]];
      (is_reduce ? reduce : spatial)
          .push_back(split_perfect(sch, loops[l], is_reduce ? kReduceLevels : kSpatialLevels,
                                   context_.config.max_innermost_factor));
    }
    // Step 3. Order S0 S1 S2 R0 R1 S3 R2 S4, and bind the fused S0, S1 and S2 to the thread
    // block, the virtual thread and the thread.
    std::vector<RV> order;
    auto level = [&order](const std::vector<std::vector<RV>>& groups, size_t k) {
      for (const std::vector<RV>& parts : groups) order.push_back(parts[k]);
    };
    level(spatial, 0);
    level(spatial, 1);
    level(spatial, 2);
    level(reduce, 0);
    level(reduce, 1);
    level(spatial, 3);
    level(reduce, 2);
    level(spatial, 4);
    schedule::reorder(sch, order);
    RV thread_loop;
    const char* axes[3] = {"blockIdx.x", "vthread.x", "threadIdx.x"};
    for (size_t k = 0; k < 3; ++k) {
      std::vector<RV> parts;
      for (const std::vector<RV>& s : spatial) parts.push_back(s[k]);
      RV fused = parts.size() == 1 ? parts[0] : schedule::fuse(sch, parts);
      schedule::bind_loop(sch, fused, axes[k]);
      thread_loop = fused;
    }
    // Step 4. The limits check_gpu_tiles holds a draw to, right after the loops they constrain
    // (so that a draw can be checked before the rest of the sketch is replayed): at least a
    // warp of threads (or every output, when there are fewer), at most kMaxRegisterTile
    // outputs per thread.
    int64_t warp = std::max<int64_t>(1, context_.task->target.gpu.thread_warp_size);
    schedule::annotate(sch, block, kThreadExtentLowAnnotation,
                       ir::make_const(ir::DataType::int32(), std::min(warp, spatial_points)));
    schedule::annotate(sch, block, kRegisterTileAnnotation,
                       ir::make_const(ir::DataType::int32(), kMaxRegisterTile));
    // Step 5. Accumulate each thread's tile in "local" memory, written back under the thread
    // loop, with an element-wise consumer (bias, activation) inlined into the write-back.
    RV write_back = schedule::cache_write(sch, block, 0, "local");
    schedule::reverse_compute_at(sch, write_back, thread_loop);
    inline_epilogue(sch, write_back);
    // Step 6. Stage each operand's tile of one outer reduction step in "shared" memory, copied
    // cooperatively with a sampled vector width, its rows compact or padded against bank
    // conflicts for vector or for scalar reads (sampled: which the compiler makes of a
    // thread's reads along a row is its own decision).
    RV step = reduce.back()[0];
    for (int64_t r : operands) stage_in_shared(sch, block, r, step, kPaddings);
    // Step 7. Whether the copies of the next step are loaded into registers while the threads
    // compute on this one (sampled; tir::prefetch_shared).
    sample_prefetch(sch, step, context_.task->target);
    // Step 8. The accumulators start at zero before the reduction loops; the thread's nest is
    // unrolled to a sampled depth, so that the register tile is indexed by constants.
    schedule::decompose_reduction(sch, block, reduce.front()[0]);
    const std::vector<int64_t>& steps = context_.config.unroll_steps;
    RV unroll = schedule::sample_categorical(sch, steps, std::vector<double>(steps.size(), 1.0));
    schedule::annotate(sch, thread_loop, "pragma_auto_unroll_max_step", unroll);
  }

  // Inlines the one consumer of the write-back when it is a spatial block that reads the result
  // at the element it writes (an element-wise epilogue).
  static void inline_epilogue(schedule::Schedule& sch, const RV& write_back) {
    std::optional<RV> consumer = spatial_consumer(sch, write_back);
    if (consumer && schedule::can_reverse_compute_inline(sch, *consumer)) {
      schedule::reverse_compute_inline(sch, *consumer);
    }
  }

  SpaceContext context_;
};

}  // namespace

RV stage_in_shared(schedule::Schedule& sch, const RV& block, int64_t read, const RV& at,
                   const std::vector<int64_t>& paddings) {
  RV copy = schedule::cache_read(sch, block, read, "shared", {block});
  schedule::compute_at(sch, copy, at);
  RV lanes =
      schedule::sample_categorical(sch, kFetchLanes, std::vector<double>(kFetchLanes.size(), 1.0));
  schedule::annotate(sch, copy, kCooperativeFetchAnnotation, lanes);
  RV pad = schedule::sample_categorical(sch, paddings, std::vector<double>(paddings.size(), 1.0));
  schedule::annotate(sch, copy, kPadSharedAnnotation, pad);
  return copy;
}

std::optional<RV> spatial_consumer(schedule::Schedule& sch, const RV& block) {
  std::vector<RV> consumers = schedule::get_consumers(sch, block);
  if (consumers.size() != 1) return std::nullopt;
  const std::string name = sch.block(consumers[0], "spatial_consumer").block->name;
  if (is_extern_block(sch, name) || !analyze_block(sch, name).spatial) return std::nullopt;
  return consumers[0];
}

void sample_prefetch(schedule::Schedule& sch, const schedule::RV& step,
                     const codegen::Target& target) {
  std::vector<ir::Ref<ir::PrimFunc>> kernels;
  bool async_copy = driver::lower_options_for(target, &kernels).gpu_limits.async_copy;
  RV prefetch = async_copy ? schedule::sample_categorical(sch, {0, 1, 2, 3}, {1.0, 1.0, 1.0, 1.0})
                           : schedule::sample_categorical(sch, {0, 1}, {1.0, 1.0});
  schedule::annotate(sch, step, tir::kPrefetchSharedAnnotation, prefetch);
}

int64_t shared_stages(const schedule::BlockLocation& copy, const tir::GpuLimits& limits) {
  if (!limits.async_copy) return 1;
  for (const ir::For* loop : copy.loops) {
    auto it = loop->annotations.find(tir::kPrefetchSharedAnnotation);
    const int64_t* value = it == loop->annotations.end() ? nullptr : ir::as_const_int(it->second);
    if (value != nullptr && *value >= tir::kMinAsyncStages) return *value;
  }
  return 1;
}

std::unique_ptr<ScheduleRule> make_multi_level_tiling_gpu(const SpaceContext& context) {
  return std::make_unique<MultiLevelTilingGpu>(context);
}

}  // namespace kiln::autotune
