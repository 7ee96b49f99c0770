// The postprocessor pack_operand: a block that multi_level_tiling annotated with
// kiln.pack_read = 1 reads its operand from a packed copy, laid out so that the innermost tile
// it reads along is contiguous ([n // NR, …, n % NR]); the copy is made with vectors. Where
// kiln.pack_read_dim names another dimension than the last (the filters of a convolution's
// weight), that one is cut: [f // NR, …, f % NR]. With kiln.pack_rows = 1 the operand read along
// the register tile's rows is packed as well
// ([i // MR, …, k, i % MR]). A copy is made under the outer loops that iterate over slices of
// the operand (the batch of a batch matmul), one slice at a time, else once before the block.
#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/cache_read_write.h"
#include "kiln/schedule/compute_at.h"
#include "kiln/schedule/for_kind.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/index_map.h"
#include "kiln/schedule/layout_transformation.h"
#include "kiln/schedule/loop_transformation.h"

namespace kiln::autotune {

namespace {

using namespace ir;
using schedule::RV;

class PackOperand : public Postproc {
 public:
  const char* name() const override { return "pack_operand"; }

  void apply(schedule::Schedule& sch) override {
    std::vector<std::string> names = sch.index("main").block_names();
    for (const std::string& name : names) {
      const schedule::BlockLocation* loc = sch.index("main").find_block(name);
      if (loc == nullptr) continue;
      const Block& block = *loc->block;
      int64_t index = annotation_or(block, kPackIndexAnnotation, -1);
      int64_t dim = annotation_or(block, kPackDimAnnotation, -1);
      int64_t row_read = annotation_or(block, kPackRowsIndexAnnotation, -1);
      int64_t row_dim = annotation_or(block, kPackRowsDimAnnotation, -1);
      bool pack_rows_too = annotation_or(block, kPackRowsAnnotation, 0) == 1 && row_read >= 0 &&
                           row_dim >= 0 && loc->loops.size() >= 2;
      if (annotation_or(block, kPackReadAnnotation, 0) == 1 && index >= 0 && !loc->loops.empty()) {
        if (dim >= 0) {
          pack_dimension(sch, name, index, dim, /*tile_loop=*/1);
        } else {
          pack_read(sch, name, index);
        }
      }
      if (pack_rows_too) pack_dimension(sch, name, row_read, row_dim, /*tile_loop=*/2);
    }
  }

 private:
  // Where the copy of read `index` of block `name` is made: the position in the block's loops
  // of the innermost of its outermost loops that each iterate only spatial iterators that the
  // read uses (the batch loops of a batch matmul: each packs the slice of the operand that the
  // loops inside it read, in the parallel loop, just before they read it), unit loops at the
  // end left out; -1 when there is none (the outermost loop iterates the rows of a matmul, all
  // of whose row blocks read all of B): the copy is then one pass over the whole operand.
  static int copy_location(const schedule::BlockLocation& loc, int64_t index) {
    const Block& block = *loc.block;
    std::vector<bool> read_uses(block.iter_vars.size(), false);
    for (size_t k = 0; k < block.iter_vars.size(); ++k) {
      const Var* var = block.iter_vars[k].var.get();
      auto is_iter = [var](const Var* v) { return v == var; };
      for (const Range& range : block.reads.at(index).region) {
        read_uses[k] =
            read_uses[k] || uses_var(range.min, is_iter) || uses_var(range.extent, is_iter);
      }
    }
    int location = -1;
    for (size_t l = 0; l < loc.loops.size(); ++l) {
      const Var* loop_var = loc.loops[l]->loop_var.get();
      auto is_loop_var = [loop_var](const Var* v) { return v == loop_var; };
      bool iterates = false, only_read_spatial = true;
      for (size_t k = 0; k < block.iter_vars.size(); ++k) {
        if (!uses_var(loc.realize->iter_values[k], is_loop_var)) continue;
        iterates = true;
        only_read_spatial =
            only_read_spatial && read_uses[k] && block.iter_vars[k].type == IterType::kDataPar;
      }
      if (!iterates || !only_read_spatial) break;
      if (!is_const_int(loc.loops[l]->extent, 1)) location = static_cast<int>(l);
    }
    return location;
  }

  // Moves the copy `packed` of a read of block `name` under the loop at position `location` of
  // the block's loops (copy_location), if any.
  static void place_copy(schedule::Schedule& sch, const std::string& name, const RV& packed,
                         int location) {
    if (location < 0) return;
    std::vector<RV> loops = schedule::get_loops(sch, schedule::get_block(sch, name));
    schedule::compute_at(sch, packed, loops.at(location), /*preserve_unit_loops=*/true);
  }

  // The copy of read `index` of block `name` (cache_read), laid out by `layout`: the copy's
  // indices from the operand's d0, d1, ….
  template <class Layout>
  static RV packed_copy(schedule::Schedule& sch, const std::string& name, int64_t index, int ndim,
                        Layout layout) {
    RV packed = schedule::cache_read(sch, schedule::get_block(sch, name), index, "global");
    std::vector<Ref<Var>> dims;
    std::vector<Expr> indices;
    for (int d = 0; d < ndim; ++d) {
      dims.push_back(make_var("d" + std::to_string(d)));
      indices.push_back(dims.back());
    }
    schedule::transform_layout(sch, packed,
                               std::make_pair(schedule::BufferIndexType::kWrite, int64_t{0}),
                               schedule::IndexMap(dims, layout(indices)));
    return packed;
  }

  // The copy's own loops (one per dimension of the operand, innermost last), below the loops
  // place_copy put it under.
  static std::vector<RV> own_loops(schedule::Schedule& sch, const RV& packed, int ndim) {
    std::vector<RV> loops = schedule::get_loops(sch, packed);
    return std::vector<RV>(loops.end() - ndim, loops.end());
  }

  // Step 1. The tile: the extent of the block's innermost loop, which must divide the packed
  // dimension. Step 2. The copy and its layout, made where copy_location says. Step 3. The
  // copy's innermost tile in vectors.
  static void pack_read(schedule::Schedule& sch, const std::string& name, int64_t index) {
    const schedule::BlockLocation* loc = sch.index("main").find_block(name);
    // The IR the location points into is replaced by the first primitive: keep what is needed.
    Ref<Buffer> operand = loc->block->reads.at(index).buffer;
    const int64_t* tile = as_const_int(loc->loops.back()->extent);
    const int64_t* extent = as_const_int(operand->shape.back());
    if (tile == nullptr || extent == nullptr || *tile <= 1 || *extent % *tile != 0 ||
        operand->ndim() < 2) {
      return;  // nothing to gain, or a layout transform_layout cannot make without padding
    }
    int64_t nr = *tile;
    int location = copy_location(*loc, index);
    RV packed = packed_copy(sch, name, index, operand->ndim(), [nr](const std::vector<Expr>& d) {
      Expr last = d.back();
      std::vector<Expr> finals = {floordiv(last, make_const(last->dtype, nr))};
      finals.insert(finals.end(), d.begin(), d.end() - 1);
      finals.push_back(floormod(last, make_const(last->dtype, nr)));
      return finals;
    });
    place_copy(sch, name, packed, location);
    std::vector<RV> loops = own_loops(sch, packed, operand->ndim());
    schedule::split(sch, loops.back(), {std::monostate{}, nr});
  }

  // Packs read `index` of block `name` along its dimension `dim`, cut by the extent of the
  // block's loop `tile_loop` from the innermost (1: the innermost) and that tile's elements
  // going last: [.., i // T, .., k, i % T]. The operand read along the rows of the register
  // tile (pack_rows: A of a matmul, T = MR, the second innermost loop) then gives the
  // micro-kernel MR neighbours per k step, one stream in all, where it read MR rows far apart
  // (also where MR does not divide the rows: the last slice is padded);
  // the weight of a convolution tiled along its filters (T = NR, the innermost) gives the
  // vectors of NR filters of one tap. The copy writes in order, its T elements unrolled (their
  // reads are strided: no vectors).
  static void pack_dimension(schedule::Schedule& sch, const std::string& name, int64_t index,
                             int64_t dim, size_t tile_loop) {
    const schedule::BlockLocation* loc = sch.index("main").find_block(name);
    if (loc == nullptr || loc->loops.size() < tile_loop ||
        index >= static_cast<int64_t>(loc->block->reads.size())) {
      return;
    }
    Ref<Buffer> operand = loc->block->reads.at(index).buffer;
    const int64_t* tile = as_const_int(loc->loops[loc->loops.size() - tile_loop]->extent);
    if (dim < 0 || dim + 1 >= operand->ndim()) return;
    const int64_t* extent = as_const_int(operand->shape[dim]);
    // A tile that does not divide the extent (6 rows of 1024) pads the copy's last slice
    // (transform_layout pads a buffer the function allocates); the copy's split leaves a guard.
    if (tile == nullptr || extent == nullptr || *tile <= 1) return;
    int64_t t = *tile;
    int location = copy_location(*loc, index);
    RV packed =
        packed_copy(sch, name, index, operand->ndim(), [t, dim](const std::vector<Expr>& d) {
          Expr row = d[dim];
          std::vector<Expr> finals = d;
          finals[dim] = floordiv(row, make_const(row->dtype, t));
          finals.push_back(floormod(row, make_const(row->dtype, t)));
          return finals;
        });
    place_copy(sch, name, packed, location);
    std::vector<RV> loops = own_loops(sch, packed, operand->ndim());
    std::vector<RV> halves = schedule::split(sch, loops[dim], {std::monostate{}, t});
    std::vector<RV> order;
    for (int d = 0; d < static_cast<int>(loops.size()); ++d) {
      order.push_back(d == dim ? halves[0] : loops[d]);
    }
    order.push_back(halves[1]);
    schedule::reorder(sch, order);
    schedule::unroll(sch, halves[1]);
  }
};

}  // namespace

std::unique_ptr<Postproc> make_pack_operand(const SpaceContext&) {
  return std::make_unique<PackOperand>();
}

}  // namespace kiln::autotune
