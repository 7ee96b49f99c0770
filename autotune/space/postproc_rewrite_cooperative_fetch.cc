// The postprocessor rewrite_cooperative_fetch (GPU targets): a copy into shared memory that
// multi_level_tiling_gpu placed under a thread loop copies the whole thread block's tile, and
// every thread would copy all of it. Once the tile sizes are drawn, the copy's loops are spread
// over the block's threads, each copying every threads-th element (or vector of elements).
#include <algorithm>
#include <unordered_set>

#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/annotation.h"
#include "kiln/schedule/for_kind.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/loop_transformation.h"

namespace kiln::autotune {

namespace {

using namespace ir;
using schedule::RV;

constexpr const char* kName = "rewrite_cooperative_fetch";

class RewriteCooperativeFetch : public Postproc {
 public:
  explicit RewriteCooperativeFetch(const SpaceContext&) {}
  const char* name() const override { return kName; }

  void apply(schedule::Schedule& sch) override {
    // The names first: each rewrite makes a new index.
    std::vector<std::string> names = sch.index("main").block_names();
    for (const std::string& name : names) {
      const schedule::BlockLocation* loc = sch.index("main").find_block(name);
      if (loc == nullptr) continue;
      auto it = loc->block->annotations.find(kCooperativeFetchAnnotation);
      if (it == loc->block->annotations.end()) continue;
      const int64_t* lanes = as_const_int(it->second);
      internal_check(lanes != nullptr) << kName << ": block " << name << " has no decided width";
      rewrite(sch, name, *lanes);
    }
  }

 private:
  static void rewrite(schedule::Schedule& sch, const std::string& name, int64_t lanes) {
    RV block = schedule::get_block(sch, name);
    // Step 1. The copy's own loops: those below the loops its consumers share with it (the
    // loops around it that its consumers are under too). A copy into the output (the write-back
    // of a tensor-core tile) has no consumer: its producers' loops then.
    std::unordered_set<const For*> shared_loops;
    std::vector<RV> others = schedule::get_consumers(sch, block);
    if (others.empty()) others = schedule::get_producers(sch, block);
    int64_t producer_warps = 0;
    for (const RV& other : others) {
      for (const For* loop : sch.block(other, kName).loops) {
        shared_loops.insert(loop);
        if (loop->kind == ForKind::kThreadBinding && loop->thread_tag == "threadIdx.y") {
          producer_warps = std::max(producer_warps, *as_const_int(loop->extent));
        }
      }
    }
    const schedule::BlockLocation& loc = sch.block(block, kName);
    std::vector<RV> loops = schedule::get_loops(sch, block);
    std::vector<RV> own;
    int64_t threads = 0, warps = 0, elements = 1, row = 1;
    for (size_t l = 0; l < loops.size(); ++l) {
      const For* loop = loc.loops[l];
      if (shared_loops.count(loop) != 0) {
        if (loop->kind == ForKind::kThreadBinding && loop->thread_tag == "threadIdx.x") {
          threads = *as_const_int(loop->extent);
        }
        if (loop->kind == ForKind::kThreadBinding && loop->thread_tag == "threadIdx.y") {
          warps = *as_const_int(loop->extent);
        }
        continue;
      }
      own.push_back(loops[l]);
      row = *as_const_int(loop->extent);
      elements *= row;
    }
    // Step 2. The vector width: the annotated one where it divides the copied rows, the
    // operand's rows and the elements per pass of the threads, and the copy is a plain load
    // (a padded copy's guarded loads are no vector access).
    // A copy for warp-level intrinsics (kiln.warp_lanes) is under the loop of the warps
    // (threadIdx.y); the lanes of threadIdx.x run inside the intrinsics.
    const Block& copy = *loc.block;
    int64_t warp_lanes = annotation_or(copy, kWarpLanesAnnotation, 0);
    if (warp_lanes > 0 && warps == 0) warps = producer_warps;  // the warps it runs after
    if (warp_lanes > 0 && threads == 0 && warps > 0) threads = warp_lanes;
    int64_t all_threads = threads * (warp_lanes > 0 ? std::max<int64_t>(warps, 1) : 1);
    const auto* store = copy.body.as<BufferStore>();
    const auto* load = store != nullptr ? store->value.as<BufferLoad>() : nullptr;
    const int64_t* operand_row =
        load != nullptr ? as_const_int(load->buffer->shape.back()) : nullptr;
    if (lanes > 1 && (load == nullptr || operand_row == nullptr || *operand_row % lanes != 0 ||
                      row % lanes != 0 || threads == 0 || elements % (all_threads * lanes) != 0)) {
      lanes = 1;
    }
    schedule::unannotate(sch, block, kCooperativeFetchAnnotation);
    if (warp_lanes > 0) schedule::unannotate(sch, block, kWarpLanesAnnotation);
    if (threads == 0 || own.empty()) return;
    // Step 3. Fuse, split by the threads (the warps, then their lanes, where the copy is for
    // warp-level intrinsics) and lanes, bind and vectorize.
    RV fused = own.size() == 1 ? own[0] : schedule::fuse(sch, own);
    std::vector<schedule::SplitFactor> factors = {std::monostate{}};
    bool by_warps = warp_lanes > 0 && warps > 0;
    if (by_warps) factors.push_back(warps);
    factors.push_back(threads);
    if (lanes > 1) factors.push_back(lanes);
    std::vector<RV> parts = schedule::split(sch, fused, factors);
    if (by_warps) schedule::bind_loop(sch, parts[1], "threadIdx.y");
    schedule::bind_loop(sch, parts[by_warps ? 2 : 1], "threadIdx.x");
    if (lanes > 1) schedule::vectorize(sch, parts.back());
  }
};

}  // namespace

std::unique_ptr<Postproc> make_rewrite_cooperative_fetch(const SpaceContext& context) {
  return std::make_unique<RewriteCooperativeFetch>(context);
}

}  // namespace kiln::autotune
