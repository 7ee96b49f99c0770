// The rule multi_level_tiling: the CPU tiling SSRSRS of a reduction block with data reuse, with
// a local accumulator tile and the choice of packing the operand read along the innermost tile;
// and, where the target has a register tile for the block, a second sketch SSRRS whose
// accumulator tile is the register tile itself; and, for a convolution whose innermost loop
// slides a window over its input, a third sketch SSRRS with the vectors along the filters.
#include <algorithm>
#include <optional>

#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/annotation.h"
#include "kiln/schedule/cache_read_write.h"
#include "kiln/schedule/compute_at.h"
#include "kiln/schedule/compute_inline.h"
#include "kiln/schedule/for_kind.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/index_map.h"
#include "kiln/schedule/layout_transformation.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/schedule/sampling.h"

namespace kiln::autotune {

namespace {

using schedule::RV;

class MultiLevelTiling : public ScheduleRule {
 public:
  explicit MultiLevelTiling(const SpaceContext& context) : context_(context) {}
  const char* name() const override { return "multi_level_tiling"; }

  std::vector<schedule::Schedule> apply(const schedule::Schedule& sch,
                                        const std::string& block_name) override {
    schedule::Schedule result = sch.copy();
    if (result.index("main").find_block(block_name) == nullptr) return {sch};
    // Step 1. A reduction with data reuse: some operand does not depend on some spatial
    // iterator, so a tile of the output reuses it.
    BlockAnalysis a = analyze_block(result, block_name);
    bool has_reduce = std::find(a.is_reduce.begin(), a.is_reduce.end(), true) != a.is_reduce.end();
    if (!a.has_init || !a.trivial_bindings || !has_reduce || !has_operand_reuse(a)) return {sch};
    schedule::Schedule resident = sch.copy();
    std::vector<schedule::Schedule> sketches;
    Tiled tiled;
    Axes axes = innermost_axes(a);
    std::optional<Axes> filters = filter_vector_axes(result, block_name, a);
    try {
      tile(result, block_name, a, /*resident=*/false, axes, &tiled);
    } catch (const schedule::ScheduleError&) {
      return {sch};
    }
    add_with_epilogue(result, tiled, &sketches);
    // A second sketch keeps the accumulator tile in registers across the whole reduction
    // (S2 = 1: SSRRS): with packing, the micro-kernel of a BLAS. The search seldom draws it
    // from the first, where it is one corner among many (both S2 factors 1).
    try {
      if (tile(resident, block_name, a, /*resident=*/true, axes, &tiled)) {
        add_with_epilogue(resident, tiled, &sketches);
      }
    } catch (const schedule::ScheduleError&) {
    }
    // A third, for a convolution, keeps the register tile's vectors along the filters.
    if (filters) {
      schedule::Schedule along_filters = sch.copy();
      try {
        if (tile(along_filters, block_name, a, /*resident=*/true, *filters, &tiled)) {
          add_with_epilogue(along_filters, tiled, &sketches);
        }
      } catch (const schedule::ScheduleError&) {
      }
    }
    return sketches;
  }

 private:
  // The handles a tiling leaves for the epilogue: the block that writes the accumulator tile
  // back and the outermost loop of the tiles.
  struct Tiled {
    RV write_back, outer;
  };

  // Appends `sch` and, when the tiled block's result has one consumer that is a spatial block
  // left as te.create_prim_func made it (an element-wise epilogue: bias, activation, SwiGLU),
  // a second sketch with that consumer fused into the tiles: inlined into the write-back of the
  // accumulator tile where it reads the result at the element it writes, else computed under the
  // outermost loop of the tiles, after the rows it reads are written (SwiGLU reads two columns
  // of each row). MetaSchedule fuses such a consumer only where it is element-wise.
  static void add_with_epilogue(const schedule::Schedule& sch, const Tiled& tiled,
                                std::vector<schedule::Schedule>* sketches) {
    sketches->push_back(sch);
    schedule::Schedule fused = sch.copy();
    std::vector<RV> consumers = schedule::get_consumers(fused, tiled.write_back);
    if (consumers.size() != 1) return;
    const ir::Block& consumer = *fused.block(consumers[0], "multi_level_tiling").block;
    const std::string name = consumer.name;
    if (is_extern_block(fused, name)) return;
    BlockAnalysis c = analyze_block(fused, name);
    if (!c.spatial || !c.trivial_bindings) return;
    if (schedule::can_reverse_compute_inline(fused, consumers[0])) {
      schedule::reverse_compute_inline(fused, consumers[0]);
    } else if (schedule::can_reverse_compute_at(fused, consumers[0], tiled.outer)) {
      schedule::reverse_compute_at(fused, consumers[0], tiled.outer);
    } else {
      return;
    }
    sketches->push_back(std::move(fused));
  }

  // The candidates of the register tile of this target, for the block's accumulator dtype:
  // NR (columns, whole vectors: a power of two of them; vectors of half a register where whole
  // registers do not divide the columns, see Target::vector_lanes_dividing; whole registers with
  // a partial last tile where no vector divides them, 1001 columns: the partial tile's columns
  // past the end are masked, where scalar tiles ran at a third of the speed) and MR (rows) such
  // that the MR x NR accumulators, the vectors of one row of the operand and one broadcast fit
  // the vector registers (MR * V + V + 1 <= registers, V = NR / lanes). MR is a divisor of the
  // rows, or the most rows that fit with one of the NR (6 x 16 with AVX2's 16 registers): a BLAS's
  // tile, which uses the registers best, is worth a last partial tile (its split leaves a
  // guard, and lowering peels the last tile off) where it does not divide the rows (128).
  struct RegisterTiles {
    std::vector<int64_t> columns, rows;
  };
  RegisterTiles register_tiles(ir::DataType dtype, int64_t column_extent,
                               int64_t row_extent) const {
    RegisterTiles tiles;
    const codegen::Target& target = context_.task->target;
    bool vectors_of_dtype = dtype.is_scalar() && target.vector_register_bits > 0;
    int lanes = vectors_of_dtype ? target.vector_lanes_dividing(dtype, column_extent) : 1;
    int register_lanes = vectors_of_dtype ? target.vector_lanes(dtype) : 1;
    int registers = target.num_vector_registers;
    bool partial = lanes == 1 && register_lanes > 1 && column_extent > register_lanes;
    if (partial) lanes = register_lanes;  // no vector divides the columns
    int64_t max_rows = 1;
    std::vector<int64_t> fullest;  // per NR, the most rows that fit
    for (int64_t vectors = 1; vectors * 2 + 1 < registers; vectors *= 2) {
      int64_t rows = (registers - 1 - vectors) / vectors;
      if (partial ? vectors * lanes > column_extent : column_extent % (vectors * lanes) != 0) {
        continue;
      }
      if (rows < 1) continue;
      tiles.columns.push_back(vectors * lanes);
      max_rows = std::max(max_rows, rows);
      fullest.push_back(rows);
    }
    for (int64_t rows = 1; rows <= max_rows && rows <= row_extent; ++rows) {
      bool is_fullest = std::find(fullest.begin(), fullest.end(), rows) != fullest.end();
      if (row_extent % rows == 0 || is_fullest) tiles.rows.push_back(rows);
    }
    return tiles;
  }

  // The loops of the register tile: its columns (NR, the vectors) and rows (MR), by their
  // positions among the block's loops (-1: none). With vectors along the filters of a
  // convolution, the columns' dimension of the output goes last in the accumulator tile
  // (`column_dim`) and the weight is packed with the filters of a tile side by side: read
  // `packed_read`, its dimension `packed_dim`.
  struct Axes {
    int column = -1, row = -1;
    int64_t column_dim = -1, packed_read = -1, packed_dim = -1;
  };

  // The register tile of the block as te.create_prim_func lays out its loops: the innermost
  // spatial loop and the one before.
  static Axes innermost_axes(const BlockAnalysis& a) {
    Axes axes;
    for (size_t l = 0; l < a.loop_iter.size(); ++l) {
      if (a.is_reduce[a.loop_iter[l]]) continue;
      axes.row = axes.column;
      axes.column = static_cast<int>(l);
    }
    return axes;
  }

  // A convolution in the layout NCHW: its innermost spatial iterator x slides a window over
  // an input (an index of the input uses x and a reduction iterator), so the vectors of x read
  // overlapping, maybe strided spans of it. Its register tile can instead be NR filters x MR
  // output columns: vectors along an iterator f of whole vectors that the input does not use
  // and that one other operand (the weight) reads at an index that is f itself, not its last
  // (it is packed as [f // NR, .., f % NR]), and that does not use x; MR input values are
  // broadcast per tap. The output tile keeps f last. The same where x is no whole vectors and
  // no window (a matmul of 20 columns: vectors along its rows, A packed [i // NR, k, i % NR],
  // B broadcast). nullopt for any other block (a matmul of whole vectors of columns, a
  // depthwise convolution, NHWC, whose vectors run along the filters already).
  std::optional<Axes> filter_vector_axes(schedule::Schedule& sch, const std::string& block_name,
                                         const BlockAnalysis& a) const {
    const schedule::BlockLocation* loc = sch.index("main").find_block(block_name);
    if (loc == nullptr) return std::nullopt;
    const ir::Block& block = *loc->block;
    Axes rows = innermost_axes(a);
    if (rows.column < 0 || block.writes.size() != 1) return std::nullopt;
    int x = a.loop_iter[rows.column];
    auto var_of = [&block](size_t k) { return block.iter_vars[k].var.get(); };
    auto uses = [](const ir::Expr& e, const ir::Var* var) {
      return ir::uses_var(e, [var](const ir::Var* v) { return v == var; });
    };
    auto dim_of = [&](const std::vector<ir::Range>& region, size_t k) {
      return exact_dim(region, var_of(k));
    };
    int64_t input = -1;
    for (size_t r = 0; r < block.reads.size() && input < 0; ++r) {
      for (const ir::Range& range : block.reads[r].region) {
        bool window = uses(range.min, var_of(x));
        bool slides = false;
        for (size_t k = 0; k < block.iter_vars.size(); ++k) {
          slides = slides || (a.is_reduce[k] && uses(range.min, var_of(k)));
        }
        if (window && slides) input = static_cast<int64_t>(r);
      }
    }
    ir::DataType dtype = block.writes[0].buffer->dtype;
    const codegen::Target& target = context_.task->target;
    if (!dtype.is_scalar() || target.vector_register_bits <= 0) return std::nullopt;
    if (target.vector_lanes(dtype) < 2) return std::nullopt;
    // Without a window: where x is no whole vectors (a 1 x 1 convolution of 14 x 14 pixels),
    // the operand read along x is the broadcast one.
    const int64_t* x_extent = ir::as_const_int(loc->loops[rows.column]->extent);
    for (size_t r = 0; r < block.reads.size() && input < 0 && x_extent != nullptr &&
                       target.vector_lanes_dividing(dtype, *x_extent) == 1;
         ++r) {
      if (a.read_uses[r][x]) input = static_cast<int64_t>(r);
    }
    if (input < 0) return std::nullopt;
    for (size_t l = 0; l < a.loop_iter.size(); ++l) {
      int f = a.loop_iter[l];
      if (a.is_reduce[f] || f == x || a.read_uses[input][f]) continue;
      const int64_t* extent = ir::as_const_int(loc->loops[l]->extent);
      int64_t out_dim = dim_of(block.writes[0].region, f);
      if (extent == nullptr || target.vector_lanes_dividing(dtype, *extent) == 1 || out_dim < 0) {
        continue;
      }
      for (size_t r = 0; r < block.reads.size(); ++r) {
        int64_t d = dim_of(block.reads[r].region, f);
        if (d < 0 || d + 1 == static_cast<int64_t>(block.reads[r].region.size()) ||
            a.read_uses[r][x]) {
          continue;
        }
        Axes axes;
        axes.column = static_cast<int>(l);
        axes.row = rows.column;
        axes.column_dim = out_dim;
        axes.packed_read = static_cast<int64_t>(r);
        axes.packed_dim = d;
        return axes;
      }
    }
    return std::nullopt;
  }

  // Tiles the block SSRSRS, or SSRRS when `resident` (then only where the target has a register
  // tile for it; returns false without tiling elsewhere), its register tile on `axes`.
  bool tile(schedule::Schedule& sch, const std::string& block_name, const BlockAnalysis& a,
            bool resident, const Axes& axes, Tiled* tiled) {
    RV block = schedule::get_block(sch, block_name);
    std::vector<RV> loops = schedule::get_loops(sch, block);
    const schedule::BlockLocation& loc = sch.block(block, "multi_level_tiling");
    ir::DataType dtype = loc.block->writes.at(0).buffer->dtype;
    size_t output_rank = loc.block->writes.at(0).region.size();
    std::vector<int64_t> extents;
    for (const ir::For* loop : loc.loops) extents.push_back(*ir::as_const_int(loop->extent));
    // Step 2. Split every loop: spatial ones in four levels, reductions in two. The register
    // tile's columns (NR, the last level of the innermost spatial loop) and rows (MR, that of
    // the one before) are drawn from the tiles that fit this target's registers; other spatial
    // loops keep their last level at 1, so that the tile stays MR x NR.
    int last_spatial = axes.column, row_loop = axes.row;
    RegisterTiles tiles =
        register_tiles(dtype, extents[last_spatial], row_loop >= 0 ? extents[row_loop] : 0);
    if (resident && (tiles.columns.empty() || tiles.rows.empty())) return false;
    int spatial_levels = resident ? 3 : 4;
    std::vector<std::vector<RV>> spatial, reduce;
    std::vector<RV> row_parts, column_parts;
    std::optional<RV> rows_drawn, columns_drawn;
    for (size_t l = 0; l < loops.size(); ++l) {
      int position = static_cast<int>(l);
      bool is_reduce = a.is_reduce[a.loop_iter[l]];
      std::vector<RV> parts;
      if (position == last_spatial && !tiles.columns.empty()) {
        columns_drawn.emplace();
        parts = split_with_inner(sch, loops[l], spatial_levels, tiles.columns, &*columns_drawn);
        column_parts = parts;
      } else if (position == row_loop && !tiles.columns.empty() && !tiles.rows.empty()) {
        rows_drawn.emplace();
        parts = split_with_inner(sch, loops[l], spatial_levels, tiles.rows, &*rows_drawn);
        row_parts = parts;
      } else {
        int levels = is_reduce ? 2 : spatial_levels;
        int max_inner =
            is_reduce || position == last_spatial || position == row_loop
                ? (position == last_spatial ? context_.config.max_innermost_factor : kMaxInnerTile)
                : 1;
        parts = split_perfect(sch, loops[l], levels, max_inner);
      }
      (is_reduce ? reduce : spatial).push_back(parts);
    }
    // The register tile drawn, for check_register_tiles (right after the draws: a sample is
    // checked on a replay of the instructions up to here).
    if (rows_drawn && columns_drawn) {
      schedule::annotate(sch, block, kRegisterRowsAnnotation, *rows_drawn);
      schedule::annotate(sch, block, kRegisterColumnsAnnotation, *columns_drawn);
    }
    // Step 3. Order S0 S1 R0 S2 R1 S3 (resident: S0 S1 R0 R1 S3), the columns innermost.
    std::vector<RV> order;
    auto level = [&order, &column_parts](const std::vector<std::vector<RV>>& groups, size_t k) {
      bool last = !column_parts.empty() && k + 1 == column_parts.size();
      for (const std::vector<RV>& parts : groups) {
        if (!last || !(parts[k] == column_parts[k])) order.push_back(parts[k]);
      }
      if (last) order.push_back(column_parts[k]);
    };
    level(spatial, 0);
    level(spatial, 1);
    level(reduce, 0);
    if (!resident) level(spatial, 2);
    level(reduce, 1);
    level(spatial, resident ? 2 : 3);
    schedule::reorder(sch, order);
    // The rows of the register tile are unrolled here, not left to LLVM (which the
    // parallel_vectorize_unroll postprocessor keeps from unrolling): the accumulators are then
    // at constant offsets of the local tile and stay in registers.
    if (!row_parts.empty()) schedule::unroll(sch, row_parts.back());
    // Step 4. Accumulate the tile of the output in a local buffer written back after S1.
    RV cache = schedule::cache_write(sch, block, 0, "local");
    schedule::reverse_compute_at(sch, cache, spatial.back()[1]);
    tiled->write_back = cache;
    tiled->outer = spatial.front()[0];
    if (axes.column_dim >= 0) {
      // The filters of the accumulator tile side by side, so that its columns are vectors.
      std::vector<ir::Ref<ir::Var>> dims;
      std::vector<ir::Expr> order;
      for (size_t d = 0; d < output_rank; ++d)
        dims.push_back(ir::make_var("d" + std::to_string(d)));
      for (size_t d = 0; d < output_rank; ++d) {
        if (static_cast<int64_t>(d) != axes.column_dim) order.push_back(dims[d]);
      }
      order.push_back(dims[axes.column_dim]);
      schedule::transform_layout(sch, block,
                                 std::make_pair(schedule::BufferIndexType::kWrite, int64_t{0}),
                                 schedule::IndexMap(dims, order));
    }
    // Step 5. Whether to pack the operand read along the innermost spatial tile, and the one
    // read along the rows of the register tile. The weight of a tile along the filters is
    // always packed: its filters are far apart.
    if (!context_.config.pack_operands) return true;
    if (axes.packed_read >= 0) {
      annotate_packing_along(sch, block, axes.packed_read, axes.packed_dim);
      return true;
    }
    if (row_loop >= 0 && !tiles.rows.empty()) {
      annotate_row_packing(sch, block, a, a.loop_iter[row_loop], a.loop_iter[last_spatial]);
    }
    int innermost_iter = a.loop_iter[last_spatial];
    auto reused = [&a](size_t r) {
      for (size_t k = 0; k < a.read_uses[r].size(); ++k) {
        if (!a.is_reduce[k] && !a.read_uses[r][k]) return true;
      }
      return false;
    };
    for (size_t r = 0; r < a.read_last_iter.size(); ++r) {
      if (a.read_last_iter[r] != innermost_iter || !reused(r)) continue;
      RV pack = schedule::sample_categorical(sch, {0, 1}, {0.5, 0.5});
      schedule::annotate(sch, block, kPackReadAnnotation, pack);
      schedule::annotate(sch, block, kPackIndexAnnotation,
                         ir::make_const(ir::DataType::int32(), static_cast<int64_t>(r)));
      return true;
    }
    // An operand that reads the columns along another dimension than its last (the weight
    // [n, k] of a dense layer, K of Q K^T) is always packed [n // NR, .., k, n % NR]: its
    // columns are far apart.
    const ir::Block& b = *sch.block(block, "multi_level_tiling").block;
    const ir::Var* column = b.iter_vars[innermost_iter].var.get();
    for (size_t r = 0; r < b.reads.size(); ++r) {
      int64_t d = exact_dim(b.reads[r].region, column);
      if (d < 0 || d + 1 == static_cast<int64_t>(b.reads[r].region.size()) || !reused(r)) continue;
      annotate_packing_along(sch, block, static_cast<int64_t>(r), d);
      return true;
    }
    return true;
  }

  // Where `region` indexes exactly `var` (-1: nowhere).
  static int64_t exact_dim(const std::vector<ir::Range>& region, const ir::Var* var) {
    for (size_t d = 0; d < region.size(); ++d) {
      if (region[d].min.get() == var && ir::is_const_int(region[d].extent, 1)) {
        return static_cast<int64_t>(d);
      }
    }
    return -1;
  }

  // Packs read `read` of the block along its dimension `dim` (pack_operand), always.
  static void annotate_packing_along(schedule::Schedule& sch, const RV& block, int64_t read,
                                     int64_t dim) {
    auto constant = [](int64_t v) { return ir::make_const(ir::DataType::int32(), v); };
    schedule::annotate(sch, block, kPackReadAnnotation, constant(1));
    schedule::annotate(sch, block, kPackIndexAnnotation, constant(read));
    schedule::annotate(sch, block, kPackDimAnnotation, constant(dim));
  }

  // Samples whether to pack the operand whose index along one dimension is exactly the row
  // iterator, that does not use the column iterator, and whose last index is a reduction
  // iterator (A[i, k] of C[i, j] += A[i, k] * B[k, j]).
  static void annotate_row_packing(schedule::Schedule& sch, const RV& block, const BlockAnalysis& a,
                                   int row_iter, int column_iter) {
    const ir::Block& b = *sch.block(block, "multi_level_tiling").block;
    for (size_t r = 0; r < b.reads.size(); ++r) {
      int last = a.read_last_iter[r];
      if (last < 0 || !a.is_reduce[last] || a.read_uses[r][column_iter]) continue;
      int64_t d = exact_dim(b.reads[r].region, b.iter_vars[row_iter].var.get());
      if (d < 0 || d + 1 == static_cast<int64_t>(b.reads[r].region.size())) continue;
      RV pack = schedule::sample_categorical(sch, {0, 1}, {0.5, 0.5});
      schedule::annotate(sch, block, kPackRowsAnnotation, pack);
      schedule::annotate(sch, block, kPackRowsIndexAnnotation,
                         ir::make_const(ir::DataType::int32(), static_cast<int64_t>(r)));
      schedule::annotate(sch, block, kPackRowsDimAnnotation,
                         ir::make_const(ir::DataType::int32(), d));
      return;
    }
  }

  SpaceContext context_;
};

}  // namespace

std::vector<RV> split_perfect(schedule::Schedule& sch, const RV& loop, int levels, int max_inner) {
  std::vector<RV> factors = schedule::sample_perfect_tile(sch, loop, levels, max_inner);
  return schedule::split(sch, loop,
                         std::vector<schedule::SplitFactor>(factors.begin(), factors.end()));
}

std::vector<RV> split_with_inner(schedule::Schedule& sch, const RV& loop, int levels,
                                 const std::vector<int64_t>& candidates, RV* inner) {
  RV factor =
      schedule::sample_categorical(sch, candidates, std::vector<double>(candidates.size(), 1.0));
  if (inner != nullptr) *inner = factor;
  std::vector<RV> halves = schedule::split(sch, loop, {std::monostate{}, factor});
  std::vector<RV> parts = split_perfect(sch, halves[0], levels - 1, kMaxInnerTile);
  parts.push_back(halves[1]);
  return parts;
}

void check_register_tiles(schedule::Schedule& sch, const codegen::Target& target) {
  if (target.vector_register_bits <= 0) return;
  for (const std::string& name : sch.index("main").block_names()) {
    const schedule::BlockLocation* loc = sch.index("main").find_block(name);
    const ir::Block& block = *loc->block;
    int64_t rows = annotation_or(block, kRegisterRowsAnnotation, 0);
    int64_t columns = annotation_or(block, kRegisterColumnsAnnotation, 0);
    if (rows <= 0 || columns <= 0 || block.writes.empty()) continue;
    ir::DataType dtype = block.writes[0].buffer->dtype;
    if (!dtype.is_float() || !dtype.is_scalar()) continue;
    int64_t lanes = target.vector_lanes(dtype);
    int64_t vectors = (columns + lanes - 1) / lanes;
    int64_t needed = rows * vectors + vectors + 1;
    if (needed > target.num_vector_registers) {
      schedule::schedule_error("RegisterTileSpillError", "multi_level_tiling",
                               "block " + name + " accumulates a register tile of " +
                                   std::to_string(rows) + " x " + std::to_string(columns) + " " +
                                   dtype.str() + ", which with its operands needs " +
                                   std::to_string(needed) + " vector registers; the target has " +
                                   std::to_string(target.num_vector_registers));
    }
  }
}

std::unique_ptr<ScheduleRule> make_multi_level_tiling(const SpaceContext& context) {
  return std::make_unique<MultiLevelTiling>(context);
}

}  // namespace kiln::autotune
