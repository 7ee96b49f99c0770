// The rule tensorize: a reduction block that a tensor intrinsic of the space's list computes,
// on a target with the intrinsic's features, gets a sketch of its own, tiled so that its
// innermost loops are the intrinsic's tile and tensorized there; the untouched schedule stays
// an alternative for the other rules.
//
// What it supports: intrinsics of the dot-product form C[i] += A[k] * B[i, k] (i < lanes,
// k < depth), on blocks like C[.., j] += A[.., k] * B(j, k), where
//  * the output's last index is the lane iterator j, its extent a multiple of the lanes;
//  * an operand's last index is the depth iterator k (A[i, k]: the depth is contiguous), its
//    extent a multiple of the depth;
//  * the operand read along j and k is read at plain iterators in any order (B[j, k] of
//    A @ B.T, B[k, j] of A @ B, B[b, j, k] of a batch): it is packed, inside the kernel, into
//    [.., j // lanes, k // depth, j % lanes, k % depth]; or it is already in that layout.
// Not supported: extents that are not whole tiles (no padding), an A read with the depth not
// last (A[k, i]), and intrinsics of other forms; such blocks get no tensorized sketch.
// Where the target has two intrinsics that compute the same dot product on different lane
// counts (AVX-512 VNNI and AVX-VNNI), only the wider one is tried.
#include <algorithm>
#include <optional>

#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/blockize_tensorize.h"
#include "kiln/schedule/cache_read_write.h"
#include "kiln/schedule/compute_at.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/index_map.h"
#include "kiln/schedule/layout_transformation.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/schedule/sampling.h"
#include "kiln/schedule/tensor_intrin.h"

namespace kiln::autotune {

namespace {

using schedule::RV;

// The most accumulator vectors of one row of the register tile.
constexpr int64_t kMaxVectors = 4;

// An intrinsic of the dot-product form (schedule/intrin/intrinsics.h): a description whose
// nest is one spatial loop of `lanes` around one reduce loop of `depth`.
struct DotProduct {
  std::string name;
  int64_t lanes = 0;
  int64_t depth = 0;
  std::vector<ir::DataType> dtypes;  // of A, B and C
};

std::optional<DotProduct> dot_product_form(const schedule::TensorIntrin& intrin) {
  const auto* root = intrin.desc->body.as<ir::BlockRealize>();
  const auto* outer = root != nullptr ? root->block->body.as<ir::For>() : nullptr;
  const auto* inner = outer != nullptr ? outer->body.as<ir::For>() : nullptr;
  const auto* realize = inner != nullptr ? inner->body.as<ir::BlockRealize>() : nullptr;
  if (realize == nullptr || realize->block->iter_vars.size() != 2) return std::nullopt;
  const std::vector<ir::IterVar>& iters = realize->block->iter_vars;
  const int64_t* lanes = ir::as_const_int(outer->extent);
  const int64_t* depth = ir::as_const_int(inner->extent);
  if (iters[0].type != ir::IterType::kDataPar || iters[1].type != ir::IterType::kCommReduce ||
      realize->iter_values[0].as<ir::Var>() != outer->loop_var.get() ||
      realize->iter_values[1].as<ir::Var>() != inner->loop_var.get() || lanes == nullptr ||
      depth == nullptr) {
    return std::nullopt;
  }
  std::vector<ir::DataType> dtypes;
  for (const ir::Ref<ir::Var>& param : intrin.desc->params) {
    dtypes.push_back(intrin.desc->buffer_of(param)->dtype);
  }
  return DotProduct{intrin.name, *lanes, *depth, dtypes};
}

// Whether `wide` computes the dot product of `narrow` on more lanes (AVX-512 VNNI's 16 over
// AVX-VNNI's 8).
bool is_wider_form(const DotProduct& wide, const DotProduct& narrow) {
  return wide.depth == narrow.depth && wide.dtypes == narrow.dtypes && wide.lanes > narrow.lanes;
}

// How a block maps onto a dot product: the spatial iterator of the lanes (the output's last
// index), the reduce iterator of the depth (the last index of an operand), and the operand read
// along both, which is packed as [other dims…, lane // lanes, depth // depth, lane % lanes,
// depth % depth] when the block reads it at plain iterators (pack_dims: their positions).
struct BlockMatch {
  int lane_iter = -1;
  int depth_iter = -1;
  int pack_read = -1;
  int pack_lane_dim = -1;
  int pack_depth_dim = -1;
};

std::optional<BlockMatch> match_block(const schedule::BlockLocation& loc, const BlockAnalysis& a,
                                      const DotProduct& intrin) {
  const ir::Block& block = *loc.block;
  const ir::BufferRegion& write = block.writes.at(0);
  BlockMatch m;
  m.lane_iter = write.region.empty() ? -1 : iterator_index(write.region.back().min, block);
  if (m.lane_iter < 0 || a.is_reduce[m.lane_iter]) return std::nullopt;
  auto extent = [&block](int iter) {
    const int64_t* e = ir::as_const_int(block.iter_vars[iter].dom.extent);
    return e != nullptr ? *e : int64_t{-1};  // -1 divides by nothing: no match
  };
  if (extent(m.lane_iter) % intrin.lanes != 0) return std::nullopt;
  for (size_t r = 0; r < block.reads.size(); ++r) {
    int last = a.read_last_iter[r];
    if (block.reads[r].buffer.same_as(write.buffer) || last < 0 || !a.is_reduce[last]) continue;
    if (extent(last) % intrin.depth == 0) m.depth_iter = last;
  }
  if (m.depth_iter < 0) return std::nullopt;
  // The operand read along both; another layout than plain iterators (an operand packed by
  // the caller) is left for tensorize to accept or refuse.
  int operand = -1;
  for (size_t r = 0; r < block.reads.size() && operand < 0; ++r) {
    if (!block.reads[r].buffer.same_as(write.buffer) && a.read_uses[r][m.lane_iter] &&
        a.read_uses[r][m.depth_iter]) {
      operand = static_cast<int>(r);
    }
  }
  if (operand < 0) return std::nullopt;
  const ir::BufferRegion& read = block.reads[operand];
  bool plain = true;
  for (size_t d = 0; d < read.region.size(); ++d) {
    int iter = iterator_index(read.region[d].min, block);
    plain = plain && iter >= 0;
    if (iter == m.lane_iter) m.pack_lane_dim = static_cast<int>(d);
    if (iter == m.depth_iter) m.pack_depth_dim = static_cast<int>(d);
  }
  if (plain) m.pack_read = operand;
  return m;
}

class Tensorize : public ScheduleRule {
 public:
  explicit Tensorize(const SpaceContext& context) : context_(context) {
    // The intrinsics of the space's list (a name that is not registered is a kValue error)
    // that have the dot-product form and whose features the target has: the rule asks the
    // target, never this machine.
    const codegen::Target& target = context.task->target;
    for (const std::string& name : context.config.tensor_intrinsics) {
      schedule::TensorIntrin intrin = schedule::get_tensor_intrin(name);
      bool supported = true;
      for (const std::string& feature : intrin.required_features) {
        supported = supported && target.has_feature(feature);
      }
      std::optional<DotProduct> form = dot_product_form(intrin);
      if (supported && form) intrinsics_.push_back(*form);
    }
    // Of the forms of one dot product the target has, only the widest: a target with AVX-512
    // VNNI (and AVX-VNNI, as Sapphire Rapids) gets no sketch of the 8-lane form.
    std::vector<DotProduct> widest;
    for (const DotProduct& intrin : intrinsics_) {
      bool narrower =
          std::any_of(intrinsics_.begin(), intrinsics_.end(),
                      [&](const DotProduct& other) { return is_wider_form(other, intrin); });
      if (!narrower) widest.push_back(intrin);
    }
    intrinsics_ = std::move(widest);
    intrin_target_ = schedule::IntrinTarget{target.str(), target.isa_features()};
  }
  const char* name() const override { return "tensorize"; }

  std::vector<schedule::Schedule> apply(const schedule::Schedule& sch,
                                        const std::string& block_name) override {
    std::vector<schedule::Schedule> results = {sch};
    if (intrinsics_.empty()) return results;
    schedule::Schedule probe = sch.copy();
    const schedule::BlockLocation* loc = probe.index("main").find_block(block_name);
    if (loc == nullptr) return results;
    // Step 1. A reduction block as te.create_prim_func makes it, whose output's last index
    // and an operand's last index fit an intrinsic's lanes and depth.
    BlockAnalysis a = analyze_block(probe, block_name);
    bool has_reduce = std::find(a.is_reduce.begin(), a.is_reduce.end(), true) != a.is_reduce.end();
    if (!a.has_init || !a.trivial_bindings || !has_reduce || loc->block->writes.size() != 1) {
      return results;
    }
    for (const DotProduct& intrin : intrinsics_) {
      std::optional<BlockMatch> m = match_block(*loc, a, intrin);
      if (!m) continue;
      schedule::Schedule result = sch.copy();
      try {
        tile_and_tensorize(result, block_name, a, *m, intrin);
      } catch (const schedule::ScheduleError&) {
        continue;  // the body is not what the intrinsic computes, or its layout does not fit
      }
      results.push_back(result);
    }
    return results;
  }

 private:
  // Step 2. Pack the operand read along the lanes and the depth, so that each lanes x depth
  // tile of it is contiguous (the intrinsic reads it as one vector). The copy's loops run in
  // the packed order, so that it writes the packed buffer in sequence.
  static void pack(schedule::Schedule& sch, const RV& block, const std::string& block_name,
                   const BlockMatch& m, const DotProduct& intrin) {
    int ndim = static_cast<int>(
        sch.index("main").find_block(block_name)->block->reads.at(m.pack_read).region.size());
    RV packed = schedule::cache_read(sch, block, m.pack_read, "global");
    std::vector<ir::Ref<ir::Var>> dims;
    for (int d = 0; d < ndim; ++d) dims.push_back(ir::make_var("d" + std::to_string(d)));
    std::vector<ir::Expr> finals;
    for (int d = 0; d < ndim; ++d) {
      if (d != m.pack_lane_dim && d != m.pack_depth_dim) finals.push_back(dims[d]);
    }
    ir::Expr lane = dims[m.pack_lane_dim], depth = dims[m.pack_depth_dim];
    ir::Expr lanes = ir::make_const(lane->dtype, intrin.lanes);
    ir::Expr depths = ir::make_const(depth->dtype, intrin.depth);
    finals.push_back(ir::floordiv(lane, lanes));
    finals.push_back(ir::floordiv(depth, depths));
    finals.push_back(ir::floormod(lane, lanes));
    finals.push_back(ir::floormod(depth, depths));
    schedule::transform_layout(sch, packed,
                               std::make_pair(schedule::BufferIndexType::kWrite, int64_t{0}),
                               schedule::IndexMap(dims, finals));
    std::vector<RV> loops = schedule::get_loops(sch, packed);
    std::vector<RV> lane_parts =
        schedule::split(sch, loops[m.pack_lane_dim], {std::monostate{}, intrin.lanes});
    std::vector<RV> depth_parts =
        schedule::split(sch, loops[m.pack_depth_dim], {std::monostate{}, intrin.depth});
    std::vector<RV> order;
    for (int d = 0; d < ndim; ++d) {
      if (d != m.pack_lane_dim && d != m.pack_depth_dim) order.push_back(loops[d]);
    }
    order.insert(order.end(), {lane_parts[0], depth_parts[0], lane_parts[1], depth_parts[1]});
    schedule::reorder(sch, order);
  }

  // The divisors of `extent` up to `limit`, or only the powers of two among them.
  static std::vector<int64_t> divisors(int64_t extent, int64_t limit, bool powers_of_two) {
    std::vector<int64_t> out;
    for (int64_t d = 1; d <= std::min(extent, limit); ++d) {
      bool power = (d & (d - 1)) == 0;
      if (extent % d == 0 && (power || !powers_of_two)) out.push_back(d);
    }
    return out;
  }

  void tile_and_tensorize(schedule::Schedule& sch, const std::string& block_name,
                          const BlockAnalysis& a, const BlockMatch& m, const DotProduct& intrin) {
    RV block = schedule::get_block(sch, block_name);
    if (m.pack_read >= 0) pack(sch, block, block_name, m, intrin);
    // Step 3. Split the lane loop into [four levels of whole intrinsic tiles, lanes] and the
    // depth loop into [two levels, depth]. The register tile is MR rows (the last level of the
    // last spatial loop other than the lane loop) by V tiles of lanes (the lane loop's last
    // level), V <= 4 and MR small enough that the MR x V accumulators, V operand vectors and
    // one broadcast fit the target's vector registers. Other spatial loops keep their last
    // level at 1; other reduce loops are split in two.
    std::vector<RV> loops = schedule::get_loops(sch, block);
    int lane_loop = a.iter_loop[m.lane_iter];
    int depth_loop = a.iter_loop[m.depth_iter];
    int row_loop = -1;
    for (size_t l = 0; l < loops.size(); ++l) {
      bool spatial = !a.is_reduce[a.loop_iter[l]];
      if (spatial && static_cast<int>(l) != lane_loop) row_loop = static_cast<int>(l);
    }
    const schedule::BlockLocation& loc = *sch.index("main").find_block(block_name);
    auto extent = [&loc](int l) { return *ir::as_const_int(loc.loops[l]->extent); };
    int64_t registers = context_.task->target.num_vector_registers;
    int64_t max_rows = std::max<int64_t>(1, (registers - 1 - kMaxVectors) / kMaxVectors);
    std::vector<int64_t> vectors = divisors(extent(lane_loop) / intrin.lanes, kMaxVectors, true);
    std::vector<int64_t> rows =
        row_loop >= 0 ? divisors(extent(row_loop), max_rows, false) : std::vector<int64_t>{};
    std::vector<std::vector<RV>> spatial, reduce;
    RV lane_inner, depth_inner;
    for (size_t l = 0; l < loops.size(); ++l) {
      int position = static_cast<int>(l);
      if (position == lane_loop) {
        std::vector<RV> halves = schedule::split(sch, loops[l], {std::monostate{}, intrin.lanes});
        lane_inner = halves[1];
        spatial.push_back(split_with_inner(sch, halves[0], 4, vectors));
      } else if (position == depth_loop) {
        std::vector<RV> halves = schedule::split(sch, loops[l], {std::monostate{}, intrin.depth});
        depth_inner = halves[1];
        reduce.push_back(split_perfect(sch, halves[0], 2, kMaxInnerTile));
      } else if (a.is_reduce[a.loop_iter[l]]) {
        reduce.push_back(split_perfect(sch, loops[l], 2, kMaxInnerTile));
      } else if (position == row_loop) {
        spatial.push_back(split_with_inner(sch, loops[l], 4, rows));
      } else {
        spatial.push_back(split_perfect(sch, loops[l], 4, 1));
      }
    }
    // Step 4. Order S0 S1 R0 S2 R1 S3, then the intrinsic's tile: lanes, depth.
    std::vector<RV> order;
    auto level = [&order](const std::vector<std::vector<RV>>& groups, size_t k) {
      for (const std::vector<RV>& parts : groups) order.push_back(parts[k]);
    };
    level(spatial, 0);
    level(spatial, 1);
    level(reduce, 0);
    level(spatial, 2);
    level(reduce, 1);
    level(spatial, 3);
    order.push_back(lane_inner);
    order.push_back(depth_inner);
    schedule::reorder(sch, order);
    // Step 5. Accumulate the tile of the output in a local buffer written back after S1.
    RV cache = schedule::cache_write(sch, block, 0, "local");
    schedule::reverse_compute_at(sch, cache, spatial.back()[1]);
    // Step 6. Replace the tile by the intrinsic.
    schedule::tensorize(sch, lane_inner, intrin.name, &intrin_target_);
  }

  SpaceContext context_;
  std::vector<DotProduct> intrinsics_;
  schedule::IntrinTarget intrin_target_;
};

}  // namespace

std::unique_ptr<ScheduleRule> make_tensorize(const SpaceContext& context) {
  return std::make_unique<Tensorize>(context);
}

}  // namespace kiln::autotune
