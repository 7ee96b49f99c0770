// The rule transpose_tiling: a spatial block that reads a buffer across the rows it writes (a
// transpose, a layout change such as NCHW -> NHWC) steps through that buffer a whole row at a
// time, one cache line per element, and by the time it comes back for the next element of a
// line the line is gone. A second sketch tiles the two loops involved: the loop along the read's
// rows (the iterator of its last index) and the loop along the written rows, each split in two
// by sample_perfect_tile (the inner part at most kMaxTransposeTile), the two tile loops
// innermost, the written rows' inside. A tile reads and writes whole cache lines and keeps
// them while it runs; the parallel_vectorize_unroll postprocessor parallelizes the outer loops
// and vectorizes along the written rows. The block as it is stays a sketch (small rows fit the
// cache untiled):
// (T[i, j] = X[j, i]: the read's rows run along i, l1; the written rows along j, l2)
//   v3, v4 = sch.sample_perfect_tile(loop=l1, n=2, max_innermost_factor=32)
//   l5, l6 = sch.split(loop=l1, factors=[v3, v4])
//   v7, v8 = sch.sample_perfect_tile(loop=l2, n=2, max_innermost_factor=32)
//   l9, l10 = sch.split(loop=l2, factors=[v7, v8])
//   sch.reorder(l5, l9, l6, l10)
#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/loop_transformation.h"

namespace kiln::autotune {

namespace {

using schedule::RV;

// Loops shorter than this are left alone: their rows fit the cache as they are.
constexpr int64_t kMinTransposeExtent = 8;

class TransposeTiling : public ScheduleRule {
 public:
  const char* name() const override { return "transpose_tiling"; }

  std::vector<schedule::Schedule> apply(const schedule::Schedule& sch,
                                        const std::string& block_name) override {
    schedule::Schedule result = sch.copy();
    const schedule::BlockLocation* loc = result.index("main").find_block(block_name);
    if (loc == nullptr) return {sch};
    // Step 1. A spatial block as te.create_prim_func makes it, whose written rows run along
    // iterator w, and a read whose rows run along another iterator r while it uses w in an
    // earlier index (not a broadcast, which leaves w out).
    BlockAnalysis a = analyze_block(result, block_name);
    if (!a.spatial || !a.trivial_bindings || a.write_last_iter < 0) return {sch};
    int w = a.write_last_iter;
    int r = -1;
    for (size_t k = 0; k < a.read_uses.size() && r < 0; ++k) {
      if (a.read_last_iter[k] >= 0 && a.read_last_iter[k] != w && a.read_uses[k][w]) {
        r = a.read_last_iter[k];
      }
    }
    if (r < 0) return {sch};
    int read_loop = a.iter_loop[r], write_loop = a.iter_loop[w];
    for (int l : {read_loop, write_loop}) {
      if (*ir::as_const_int(loc->loops[l]->extent) < kMinTransposeExtent) return {sch};
    }
    // Step 2. Both loops split in two, the other loops outside in their order, then the two
    // outer parts, then the two tile loops.
    try {
      RV block = schedule::get_block(result, block_name);
      std::vector<RV> loops = schedule::get_loops(result, block);
      std::vector<RV> read_parts = split_perfect(result, loops[read_loop], 2, kMaxTransposeTile);
      std::vector<RV> write_parts = split_perfect(result, loops[write_loop], 2, kMaxTransposeTile);
      std::vector<RV> order;
      for (size_t l = 0; l < loops.size(); ++l) {
        if (static_cast<int>(l) != read_loop && static_cast<int>(l) != write_loop) {
          order.push_back(loops[l]);
        }
      }
      order.insert(order.end(), {read_parts[0], write_parts[0], read_parts[1], write_parts[1]});
      schedule::reorder(result, order);
    } catch (const schedule::ScheduleError&) {
      return {sch};
    }
    return {sch, result};
  }
};

}  // namespace

std::unique_ptr<ScheduleRule> make_transpose_tiling() {
  return std::make_unique<TransposeTiling>();
}

}  // namespace kiln::autotune
