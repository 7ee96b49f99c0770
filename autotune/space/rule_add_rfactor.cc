// The rule add_rfactor: a reduction whose spatial iterations are too few to keep the threads
// busy (a sum over a long vector, a dot product, a row reduction with few rows) gets two more
// sketches in which its reduction loop is split in two and one half becomes a dimension of a
// partial result (rfactor): the outer half, whose partial sums can run in parallel, or the inner
// half, whose partial sums are a vector. A reduction along the rows of its input that has
// enough rows for the threads (a row sum, a softmax's maximum and sum, a norm's sum of squares,
// a matrix-vector product) gets one more sketch: its innermost reduction loop split by a multiple
// of the vector lanes (of whole registers, the last vector partial, where no vector divides the
// row), the inner half the vector of partial results, so that its loads and its arithmetic are
// vectors (a reduction loop is never vectorized). The block as it is stays a sketch
// too.
#include <algorithm>

#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/schedule/reduction.h"
#include "kiln/schedule/sampling.h"

namespace kiln::autotune {

namespace {

using schedule::RV;

class AddRFactor : public ScheduleRule {
 public:
  explicit AddRFactor(const SpaceContext& context) : context_(context) {}
  const char* name() const override { return "add_rfactor"; }

  std::vector<schedule::Schedule> apply(const schedule::Schedule& sch,
                                        const std::string& block_name) override {
    schedule::Schedule base = sch.copy();
    if (base.index("main").find_block(block_name) == nullptr) return {sch};
    // Step 1. A reduction as te.create_prim_func makes it (spatial loops, then reduction
    // loops) that lacks spatial parallelism.
    BlockAnalysis a = analyze_block(base, block_name);
    if (!a.has_init || !a.trivial_bindings) return {sch};
    if (!lacks_parallelism(base, block_name, a)) return along_rows(sch, block_name, a);
    std::vector<schedule::Schedule> results = {sch};
    try {
      // Step 2. One reduction loop (the reduction loops fused), split in two.
      RV block = schedule::get_block(base, block_name);
      std::vector<RV> loops = schedule::get_loops(base, block);
      std::vector<RV> reduce_loops;
      for (size_t l = 0; l < loops.size(); ++l) {
        if (a.is_reduce[a.loop_iter[l]]) reduce_loops.push_back(loops[l]);
      }
      RV reduce = reduce_loops.size() == 1 ? reduce_loops[0] : schedule::fuse(base, reduce_loops);
      std::vector<RV> factors =
          schedule::sample_perfect_tile(base, reduce, 2, context_.config.max_innermost_factor);
      std::vector<RV> halves = schedule::split(
          base, reduce, std::vector<schedule::SplitFactor>(factors.begin(), factors.end()));
      // Step 3. One sketch per half: the half indexes the last dimension of the partial result,
      // so that the partial sums of one output element are contiguous.
      int factor_axis =
          base.index("main").find_block(block_name)->block->writes.at(0).buffer->ndim();
      for (const RV& half : halves) {
        schedule::Schedule result = base.copy();
        schedule::rfactor(result, half, factor_axis);
        results.push_back(result);
      }
    } catch (const schedule::ScheduleError&) {
      return {sch};
    }
    // Where no vector divides the reduction (a softmax over a vocabulary of 50257 logits), the
    // halves of its perfect splits are no whole vectors: the sketch along the rows comes besides.
    std::vector<schedule::Schedule> rows = along_rows(sch, block_name, a, /*only_partial=*/true);
    if (rows.size() == 2) results.push_back(rows[1]);
    return results;
  }

 private:
  // The sketch of a reduction along contiguous rows (see the top of the file), with `sch`, or
  // `sch` alone when the block is not one: its innermost loop is the last one bound to a
  // reduction iterator that the last index of a read is (with the loops outside it that run
  // along the same contiguous row, fused: row_loops), their extent at least four vectors, and
  // no read leaves out a spatial iterator (a block with reuse is multi_level_tiling's) unless the
  // block streams an operand (streams_an_operand). With `only_partial`, only where no vector
  // divides the row.
  std::vector<schedule::Schedule> along_rows(const schedule::Schedule& sch,
                                             const std::string& block_name, const BlockAnalysis& a,
                                             bool only_partial = false) const {
    schedule::Schedule result = sch.copy();
    const schedule::BlockLocation* loc = result.index("main").find_block(block_name);
    const codegen::Target& target = context_.task->target;
    ir::DataType dtype = loc->block->writes.at(0).buffer->dtype;
    int factor_axis = static_cast<int>(loc->block->writes.at(0).buffer->ndim());
    if (loc->loops.empty() || target.vector_register_bits <= 0 || !dtype.is_scalar()) return {sch};
    int inner = a.loop_iter.back();
    if (inner < 0 || !a.is_reduce[inner]) return {sch};
    size_t row = row_loops(*loc, a);
    if (row == 0 || (has_operand_reuse(a) && !streams_an_operand(a, inner))) return {sch};
    int64_t extent = 1;
    for (size_t l = loc->loops.size() - row; l < loc->loops.size(); ++l) {
      const int64_t* e = ir::as_const_int(loc->loops[l]->extent);
      if (e == nullptr) return {sch};  // a symbolic extent: no lanes to divide it
      extent *= *e;
    }
    // Where no vector divides the row (197 scores per row of a ViT's attention, a vocabulary
    // of 50257 logits), whole registers with a masked last vector.
    int64_t lanes = target.vector_lanes_dividing(dtype, extent);
    bool partial = lanes < 2;
    if (only_partial && !partial) return {sch};
    if (partial) lanes = target.vector_lanes(dtype);
    if (lanes < 2 || extent < 4 * lanes) return {sch};
    std::vector<int64_t> widths;
    for (int64_t width = lanes; width <= 8 * lanes && width * 2 <= extent; width *= 2) {
      if (partial || extent % width == 0) widths.push_back(width);
    }
    try {
      RV block = schedule::get_block(result, block_name);
      std::vector<RV> loops = schedule::get_loops(result, block);
      std::vector<RV> row_part(loops.end() - static_cast<std::ptrdiff_t>(row), loops.end());
      RV loop = row == 1 ? row_part[0] : schedule::fuse(result, row_part);
      RV width =
          schedule::sample_categorical(result, widths, std::vector<double>(widths.size(), 1.0));
      std::vector<RV> halves =
          schedule::split(result, loop, {schedule::SplitFactor(), schedule::SplitFactor(width)});
      schedule::rfactor(result, halves.back(), factor_axis);
    } catch (const schedule::ScheduleError&) {
      return {sch};
    }
    return {sch, result};
  }

  // How many of the block's innermost loops run along one contiguous row of a read, 0 for none:
  // the innermost loop bound to the reduction iterator of the read's last index, and each loop
  // outside it bound to the reduction iterator of the index before while the dimensions inside
  // are whole (a global pooling's height and width: rows of height x width). The most of any
  // read.
  static size_t row_loops(const schedule::BlockLocation& loc, const BlockAnalysis& a) {
    size_t best = 0;
    size_t loops = loc.loops.size();
    for (size_t r = 0; r < loc.block->reads.size(); ++r) {
      if (a.read_last_iter[r] != a.loop_iter.back()) continue;
      const ir::BufferRegion& read = loc.block->reads[r];
      size_t dims = read.region.size(), count = 1;
      while (count < loops && count < dims) {
        // The dimension counted last is whole, and the next loop out indexes the one before.
        const int64_t* inside = ir::as_const_int(loc.loops[loops - count]->extent);
        const int64_t* whole = ir::as_const_int(read.buffer->shape[dims - count]);
        int k = a.loop_iter[loops - 1 - count];
        const ir::Range& next = read.region[dims - 1 - count];
        const auto* v = next.min.as<ir::Var>();
        if (inside == nullptr || whole == nullptr || *inside != *whole || k < 0 ||
            !a.is_reduce[k] || !ir::is_const_int(next.extent, 1) || v == nullptr ||
            v != loc.block->iter_vars[k].var.get()) {
          break;
        }
        ++count;
      }
      best = std::max(best, count);
    }
    return best;
  }

  // Whether the block streams an operand along its reduction: a read that uses every iterator
  // but those of one value (no tile of the output reuses it) with `inner` as its last index, while
  // no read runs along the output's rows (a matrix-vector product; the scores of one query against
  // the keys). multi_level_tiling's vectors along the output would gather that operand across its
  // rows; partial results along its rows load it as vectors.
  static bool streams_an_operand(const BlockAnalysis& a, int inner) {
    bool streamed = false;
    for (size_t r = 0; r < a.read_uses.size(); ++r) {
      if (a.write_last_iter >= 0 && a.read_last_iter[r] == a.write_last_iter) return false;
      bool uses_all = true;  // but iterators of one value
      for (size_t k = 0; k < a.read_uses[r].size(); ++k) {
        uses_all = uses_all && (a.read_uses[r][k] || a.is_unit[k]);
      }
      streamed = streamed || (uses_all && a.read_last_iter[r] == inner);
    }
    return streamed;
  }

  // Whether the block's spatial iterations number fewer than the threads can share
  // (num_threads x max_jobs_per_thread) and fewer than its reduction steps, and the reduction
  // has more steps than there are threads. Its reduction loops must be its innermost loops.
  bool lacks_parallelism(schedule::Schedule& sch, const std::string& block_name,
                         const BlockAnalysis& a) const {
    const schedule::BlockLocation* loc = sch.index("main").find_block(block_name);
    int64_t spatial = 1, reduce = 1;
    bool seen_reduce = false;
    for (size_t l = 0; l < loc->loops.size(); ++l) {
      int64_t extent = *ir::as_const_int(loc->loops[l]->extent);
      if (a.is_reduce[a.loop_iter[l]]) {
        reduce *= extent;
        seen_reduce = true;
      } else {
        if (seen_reduce) return false;  // a spatial loop inside a reduction loop
        spatial *= extent;
      }
    }
    int64_t threads = context_.num_threads;
    return seen_reduce && reduce > threads && spatial < reduce &&
           spatial < threads * context_.config.max_jobs_per_thread;
  }

  SpaceContext context_;
};

}  // namespace

std::unique_ptr<ScheduleRule> make_add_rfactor(const SpaceContext& context) {
  return std::make_unique<AddRFactor>(context);
}

}  // namespace kiln::autotune
