// The rule multi_level_tiling_tensor_core (CUDA targets with tensor cores): a float16 or bfloat16
// matrix product accumulated in float32 (or int8, uint8 x int8 in int32) gets a sketch computed by
// the warps' tensor cores with the cuda.mma_* intrinsics, beside the block as it is (which
// multi_level_tiling_gpu then tiles for the CUDA cores). Each thread block computes a tile of the
// output, each warp a tile of 16x16 fragments of it held in the warp's registers; the operands'
// tiles of one outer reduction step are staged in shared memory (copied by all the block's
// threads), then loaded into fragments one tile of the reduction (16 or 32 columns) at a time. An
// element-wise epilogue (bias, activation) is fused into the write-back: the fragments go to a
// shared tile of the block's outputs, which the block's threads copy to the output through the
// epilogue.
//
// What it supports: blocks C[.., i, j] += A[.., i, k] * B[.., j, k] or B[.., k, j] of a family's
// types (A, B, C: float16, float16, float32; bfloat16, bfloat16, float32; int8, int8, int32;
// uint8, int8, int32), read at plain iterators, the leading ones (a batch) the same in all
// three, and the extents of i and j multiples of 16, of k of the family's tile (16; 32 for 8
// bits); the body must be what the family's cuda.mma_* computes (tensorize checks it). Others
// get no sketch.
#include <algorithm>
#include <optional>

#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/annotation.h"
#include "kiln/schedule/blockize_tensorize.h"
#include "kiln/schedule/cache_read_write.h"
#include "kiln/schedule/compute_at.h"
#include "kiln/schedule/compute_inline.h"
#include "kiln/schedule/for_kind.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/layout_transformation.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/schedule/reduction.h"
#include "kiln/schedule/sampling.h"
#include "kiln/schedule/tensor_intrin.h"

namespace kiln::autotune {

namespace {

using schedule::RV;

// The intrinsics of one family: A x B into an accumulator of `acc`.
struct MmaIntrinsics {
  ir::DataType a, b, acc;
  int64_t k_tile;  // the columns of a tile of A along the reduction (16, or 32 for 8 bits)
  const char* mma;
  // The fragments' loads: one ldmatrix.x4 per lane and tile (sm_75 and newer, which every
  // target of mma.sync is), but for an 8-bit B as [K, N] (no .trans for 8 bits).
  const char* load_a;
  const char* load_b_trans;  // B as [N, K]
  const char* load_b;        // B as [K, N]
  const char* fill;
  const char* store;
};
const MmaIntrinsics kMmaFamilies[] = {
    {ir::DataType::float_(16), ir::DataType::float_(16), ir::DataType::float32(), 16,
     "cuda.mma_f16f16f32", "cuda.mma_ldmatrix_16x16_f16_a", "cuda.mma_ldmatrix_16x16_f16_b_trans",
     "cuda.mma_ldmatrix_16x16_f16_b", "cuda.mma_fill_16x16_f32", "cuda.mma_store_16x16_f32"},
    {ir::DataType::bfloat16(), ir::DataType::bfloat16(), ir::DataType::float32(), 16,
     "cuda.mma_bf16bf16f32", "cuda.mma_ldmatrix_16x16_bf16_a",
     "cuda.mma_ldmatrix_16x16_bf16_b_trans", "cuda.mma_ldmatrix_16x16_bf16_b",
     "cuda.mma_fill_16x16_f32", "cuda.mma_store_16x16_f32"},
    {ir::DataType::int_(8), ir::DataType::int_(8), ir::DataType::int32(), 32, "cuda.mma_s8s8s32",
     "cuda.mma_ldmatrix_16x32_s8_a", "cuda.mma_ldmatrix_16x32_s8_b_trans",
     "cuda.mma_load_32x16_s8_b", "cuda.mma_fill_16x16_s32", "cuda.mma_store_16x16_s32"},
    {ir::DataType::uint(8), ir::DataType::int_(8), ir::DataType::int32(), 32, "cuda.mma_u8s8s32",
     "cuda.mma_ldmatrix_16x32_u8_a", "cuda.mma_ldmatrix_16x32_s8_b_trans",
     "cuda.mma_load_32x16_s8_b", "cuda.mma_fill_16x16_s32", "cuda.mma_store_16x16_s32"},
};
constexpr int64_t kTile = 16;
constexpr int64_t kWarpLanes = 32;
// The most fragments along one side of a warp's tile, and the most steps of the
// reduction per shared-memory stage.
constexpr int64_t kMaxFragmentsPerSide = 4;
constexpr int64_t kMaxStepsPerStage = 4;

// How a block maps onto the intrinsics: its loops of the batch, of i, j and k (in the block's
// loop order), the reads of A and B, and whether B is read as [.., j, k].
struct MmaMatch {
  std::vector<int> batch_loops;
  int i_loop = -1, j_loop = -1, k_loop = -1;
  int a_read = -1, b_read = -1;
  bool trans_b = true;
  const MmaIntrinsics* intrinsics = nullptr;  // of the operands' and accumulator's types
};

// `families`: the intrinsics the rule may use (kMmaFamilies the space and target allow).
std::optional<MmaMatch> match_block(const schedule::BlockLocation& loc, const BlockAnalysis& a,
                                    const std::vector<const MmaIntrinsics*>& families) {
  const ir::Block& block = *loc.block;
  if (block.writes.size() != 1) return std::nullopt;
  const ir::BufferRegion& write = block.writes[0];
  size_t rank = write.region.size();
  if (rank < 2 || block.iter_vars.size() != rank + 1) return std::nullopt;
  // The output's indices: the batch's iterators, then i and j; k is the one left.
  std::vector<int> indices;
  std::vector<bool> used(block.iter_vars.size(), false);
  for (const ir::Range& range : write.region) {
    int iter = iterator_index(range.min, block);
    if (iter < 0 || used[iter] || a.is_reduce[iter]) return std::nullopt;
    used[iter] = true;
    indices.push_back(iter);
  }
  int vi = indices[rank - 2], vj = indices[rank - 1];
  int vk = static_cast<int>(std::find(used.begin(), used.end(), false) - used.begin());
  if (!a.is_reduce[vk]) return std::nullopt;
  MmaMatch m;
  for (size_t r = 0; r < block.reads.size(); ++r) {
    const ir::BufferRegion& read = block.reads[r];
    if (read.buffer.same_as(write.buffer)) continue;
    if (read.region.size() != rank) return std::nullopt;
    for (size_t d = 0; d + 2 < rank; ++d) {
      if (iterator_index(read.region[d].min, block) != indices[d]) return std::nullopt;
    }
    int first = iterator_index(read.region[rank - 2].min, block);
    int second = iterator_index(read.region[rank - 1].min, block);
    if (first == vi && second == vk && m.a_read < 0) {
      m.a_read = static_cast<int>(r);
    } else if ((first == vj && second == vk) || (first == vk && second == vj)) {
      if (m.b_read >= 0) return std::nullopt;
      m.b_read = static_cast<int>(r);
      m.trans_b = first == vj;
    } else {
      return std::nullopt;
    }
  }
  if (m.a_read < 0 || m.b_read < 0) return std::nullopt;
  // The family of the operands' and the accumulator's types, and whole tiles of it.
  for (const MmaIntrinsics* family : families) {
    if (family->a == block.reads[m.a_read].buffer->dtype &&
        family->b == block.reads[m.b_read].buffer->dtype && family->acc == write.buffer->dtype) {
      m.intrinsics = family;
    }
  }
  if (m.intrinsics == nullptr) return std::nullopt;
  for (const auto& [iter, tile] : {std::make_pair(vi, kTile), std::make_pair(vj, kTile),
                                   std::make_pair(vk, m.intrinsics->k_tile)}) {
    const int64_t* extent = ir::as_const_int(block.iter_vars[iter].dom.extent);
    if (extent == nullptr || *extent % tile != 0) return std::nullopt;
  }
  for (size_t d = 0; d + 2 < rank; ++d) m.batch_loops.push_back(a.iter_loop[indices[d]]);
  m.i_loop = a.iter_loop[vi];
  m.j_loop = a.iter_loop[vj];
  m.k_loop = a.iter_loop[vk];
  return m;
}

class MultiLevelTilingTensorCore : public ScheduleRule {
 public:
  explicit MultiLevelTilingTensorCore(const SpaceContext& context) : context_(context) {
    // A family needs what its multiply-accumulate (cuda.mma_f16f16f32, ..., cuda.mma_u8s8s32)
    // needs (its loads, fill and store any GPU runs); it is tried where the space's list names
    // it and the target has its features.
    const codegen::Target& target = context.task->target;
    if (target.kind != "cuda") return;
    const std::vector<std::string>& names = context.config.tensor_intrinsics;
    intrin_target_ = schedule::IntrinTarget{target.str(), target.intrinsic_features()};
    for (const MmaIntrinsics& family : kMmaFamilies) {
      if (std::find(names.begin(), names.end(), family.mma) != names.end() &&
          schedule::missing_features(schedule::get_tensor_intrin(family.mma), intrin_target_)
              .empty()) {
        families_.push_back(&family);
      }
    }
  }
  const char* name() const override { return "multi_level_tiling_tensor_core"; }

  std::vector<schedule::Schedule> apply(const schedule::Schedule& sch,
                                        const std::string& block_name) override {
    std::vector<schedule::Schedule> results = {sch};
    if (families_.empty()) return results;
    schedule::Schedule result = sch.copy();
    // Step 1. A reduction of the root scope under serial loops, as te.create_prim_func makes
    // it, that the intrinsics compute.
    const schedule::BlockLocation* loc = root_scope_block(result, block_name);
    if (loc == nullptr) return results;
    for (const ir::For* loop : loc->loops) {
      if (loop->kind != ir::ForKind::kSerial) return results;
    }
    BlockAnalysis a = analyze_block(result, block_name);
    if (!a.has_init || !a.trivial_bindings) return results;
    std::optional<MmaMatch> m = match_block(*loc, a, families_);
    if (!m) return results;
    try {
      tile_and_tensorize(result, block_name, *m);
    } catch (const schedule::ScheduleError&) {
      return results;  // the body is not what the intrinsics compute
    }
    results.push_back(result);
    return results;
  }

 private:
  void tile_and_tensorize(schedule::Schedule& sch, const std::string& block_name,
                          const MmaMatch& m) {
    RV block = schedule::get_block(sch, block_name);
    std::vector<RV> loops = schedule::get_loops(sch, block);
    // Step 2. Split i and j into [thread blocks, warps, fragments per warp, 16] and k into
    // [stages, steps per stage, 16 (32 for 8 bits)]; the last are the intrinsics' tiles.
    const MmaIntrinsics& family = *m.intrinsics;
    auto tiles = [&sch](const RV& loop, int levels, int max_inner, int64_t tile = kTile) {
      std::vector<RV> halves = schedule::split(sch, loop, {std::monostate{}, tile});
      std::vector<RV> parts = split_perfect(sch, halves[0], levels, max_inner);
      parts.push_back(halves[1]);
      return parts;
    };
    std::vector<RV> i = tiles(loops[m.i_loop], 3, kMaxFragmentsPerSide);
    std::vector<RV> j = tiles(loops[m.j_loop], 3, kMaxFragmentsPerSide);
    std::vector<RV> k = tiles(loops[m.k_loop], 2, kMaxStepsPerStage, family.k_tile);
    // The batch's loops stay whole, outermost, and share blockIdx.x with the tiles of i and j.
    std::vector<RV> blocks;
    for (int l : m.batch_loops) blocks.push_back(loops[l]);
    blocks.insert(blocks.end(), {i[0], j[0]});
    std::vector<RV> order = blocks;
    order.insert(order.end(), {i[1], j[1], k[0], k[1], i[2], j[2], i[3], j[3], k[2]});
    schedule::reorder(sch, order);
    RV block_loop = schedule::fuse(sch, blocks);
    schedule::bind_loop(sch, block_loop, "blockIdx.x");
    RV warp = schedule::fuse(sch, {i[1], j[1]});
    schedule::bind_loop(sch, warp, "threadIdx.y");
    // Step 3. The limits check_gpu_tiles holds a draw to: the warps' lanes run inside the
    // intrinsics (threadIdx.x, 32), so a block of W warps has 32 W threads (one warp at least)
    // and each thread holds 8 accumulators per fragment of its warp's tile.
    auto annotate = [&sch, &block](const char* key, int64_t value) {
      schedule::annotate(sch, block, key, ir::make_const(ir::DataType::int32(), value));
    };
    annotate(kWarpLanesAnnotation, kWarpLanes);
    annotate(kThreadExtentLowAnnotation, kWarpLanes);
    annotate(kRegisterTileAnnotation, kMaxTensorCoreAccumulators);
    // Step 4. The accumulators in the warp's registers, stored into the output after the
    // reduction; the operands' tiles of one stage in shared memory, copied by all the block's
    // threads (rewrite_cooperative_fetch, with a sampled vector width) and padded where
    // sampled (pad_shared_tiles: ldmatrix reads 16-byte rows of 8 rows at a time, which compact
    // rows of 64 or 128 bytes put in the same banks); their fragments loaded one k tile at
    // a time.
    // An element-wise epilogue of the product (bias, activation): the fragments are stored into
    // a shared tile of the block's outputs, which all the block's threads then copy to the
    // output through the epilogue (rewrite_cooperative_fetch spreads the copy).
    std::optional<RV> epilogue = element_wise_consumer(sch, block);
    std::optional<RV> staged;
    if (epilogue) {
      staged = schedule::cache_write(sch, block, 0, "shared");
      schedule::reverse_compute_inline(sch, *epilogue);
    }
    RV acc = schedule::cache_write(sch, block, 0, "warp");
    schedule::reverse_compute_at(sch, acc, warp);
    if (staged) {
      schedule::reverse_compute_at(sch, *staged, block_loop);
      schedule::annotate(sch, *staged, kCooperativeFetchAnnotation,
                         ir::make_const(ir::DataType::int32(), 1));
      schedule::annotate(sch, *staged, kWarpLanesAnnotation,
                         ir::make_const(ir::DataType::int32(), kWarpLanes));
    }
    for (int read : {m.a_read, m.b_read}) {
      // Padded for vector reads only: ldmatrix reads 16-byte rows, which stay aligned.
      RV shared = stage_in_shared(sch, block, read, k[0], {0, 1});
      schedule::annotate(sch, shared, kWarpLanesAnnotation,
                         ir::make_const(ir::DataType::int32(), kWarpLanes));
    }
    // The reads of A and B are now of the shared copies, at the same positions.
    RV a_frag = schedule::cache_read(sch, block, m.a_read, "warp", {block});
    RV b_frag = schedule::cache_read(sch, block, m.b_read, "warp", {block});
    schedule::compute_at(sch, a_frag, k[1]);
    schedule::compute_at(sch, b_frag, k[1]);
    // Step 5. The fragments' layout (after the compute locations, which follow the loops
    // through the buffers' logical indices).
    const auto write = std::make_pair(schedule::BufferIndexType::kWrite, int64_t{0});
    const auto read = std::make_pair(schedule::BufferIndexType::kRead, int64_t{0});
    int batch = static_cast<int>(m.batch_loops.size());
    schedule::transform_layout(sch, a_frag, write,
                               schedule::cuda_mma_fragment_map(false, batch, family.a));
    schedule::transform_layout(sch, b_frag, write,
                               schedule::cuda_mma_fragment_map(!m.trans_b, batch, family.b));
    schedule::transform_layout(sch, acc, read,
                               schedule::cuda_mma_fragment_map(false, batch, family.acc));
    RV init = schedule::decompose_reduction(sch, block, k[0]);
    // Step 6. The tiles (16x16, 16x32 of 8-bit operands) that the intrinsics replace.
    std::vector<RV> a_loops = schedule::get_loops(sch, a_frag);
    RV a_tile = schedule::split(sch, a_loops[a_loops.size() - 2], {std::monostate{}, kTile})[1];
    std::vector<RV> b_loops = schedule::get_loops(sch, b_frag);
    RV b_tile;
    if (m.trans_b) {
      b_tile = schedule::split(sch, b_loops[b_loops.size() - 2], {std::monostate{}, kTile})[1];
    } else {
      RV outer = schedule::split(sch, b_loops.back(), {std::monostate{}, kTile})[0];
      schedule::reorder(sch, {outer, b_loops[b_loops.size() - 2]});
      b_tile = b_loops[b_loops.size() - 2];
    }
    std::vector<RV> s = schedule::get_loops(sch, acc);
    std::vector<RV> rows = schedule::split(sch, s[s.size() - 2], {std::monostate{}, kTile});
    RV columns = schedule::split(sch, s.back(), {std::monostate{}, kTile})[0];
    schedule::reorder(sch, {rows[0], columns, rows[1]});
    std::vector<RV> init_loops = schedule::get_loops(sch, init);
    RV init_tile = init_loops[init_loops.size() - 2];
    schedule::tensorize(sch, a_tile, family.load_a, &intrin_target_);
    schedule::tensorize(sch, b_tile, m.trans_b ? family.load_b_trans : family.load_b,
                        &intrin_target_);
    schedule::tensorize(sch, i[3], family.mma, &intrin_target_);
    schedule::tensorize(sch, init_tile, family.fill, &intrin_target_);
    schedule::tensorize(sch, rows[1], family.store, &intrin_target_);
    // Step 7. Whether the next stage's tiles are loaded into registers (or, sm_80, copied
    // asynchronously into a second set of tiles) while the warps compute on this one (sampled;
    // tir::prefetch_shared), and a sampled unroll depth for the warp's nest
    // (its fragment loops).
    sample_prefetch(sch, k[0], context_.task->target);
    const std::vector<int64_t>& steps = context_.config.unroll_steps;
    RV unroll = schedule::sample_categorical(sch, steps, std::vector<double>(steps.size(), 1.0));
    schedule::annotate(sch, warp, "pragma_auto_unroll_max_step", unroll);
  }

  // The one consumer of the product when it is a spatial block that reads it at the element it
  // writes (an element-wise epilogue, which reverse_compute_inline can fold into a copy of the
  // product); else nothing.
  static std::optional<RV> element_wise_consumer(schedule::Schedule& sch, const RV& block) {
    std::optional<RV> consumer = spatial_consumer(sch, block);
    if (!consumer) return std::nullopt;
    const char* api = "multi_level_tiling_tensor_core";
    const std::string name = sch.block(*consumer, api).block->name;
    schedule::Schedule probe = sch.copy();
    schedule::cache_write(probe, schedule::get_block(probe, sch.block(block, api).block->name), 0,
                          "shared");
    if (!schedule::can_reverse_compute_inline(probe, schedule::get_block(probe, name))) {
      return std::nullopt;
    }
    return consumer;
  }

  SpaceContext context_;
  std::vector<const MmaIntrinsics*> families_;  // those the space and the target allow
  schedule::IntrinTarget intrin_target_;
};

}  // namespace

std::unique_ptr<ScheduleRule> make_multi_level_tiling_tensor_core(const SpaceContext& context) {
  return std::make_unique<MultiLevelTilingTensorCore>(context);
}

}  // namespace kiln::autotune
