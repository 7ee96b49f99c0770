// The postprocessor partial_result_lanes: a reduction block whose innermost loops are its own
// (compute_at made them, in the order of its iterators) and whose innermost loop is a reduction
// gets the spatial loop of its lanes moved innermost, where it can be a vector. The lanes are the
// iterator that the last index of its write is and the last index of a read uses: the partial
// result of add_rfactor's row sketch, B_rf[i, lane] += A[i, k_0 * L + lane], which compute_at
// lays out as `for lane: for k_0:` (rfactor puts the factor iterator first).
#include "autotune/space/space_parts.h"
#include "kiln/ir/functor.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/loop_transformation.h"

namespace kiln::autotune {

namespace {

using namespace ir;

// The position in `loc`'s loops of the loop of its lanes, or -1.
int lane_loop(const schedule::BlockLocation& loc) {
  const Block& block = *loc.block;
  if (!block.init.defined() || loc.realize == nullptr || loc.loops.empty() ||
      block.writes.size() != 1 || block.writes[0].region.empty()) {
    return -1;
  }
  // The block's own loops: the innermost ones, each the whole body of the one around it.
  size_t own = loc.loops.size() - 1;
  if (loc.loops[own]->body.get() != loc.realize) return -1;
  while (own > 0 && loc.loops[own - 1]->body.get() == loc.loops[own]) --own;
  // The iterator each own loop is the whole binding of.
  auto iterator_of = [&](const For* loop) {
    for (size_t k = 0; k < block.iter_vars.size(); ++k) {
      const auto* var = loc.realize->iter_values[k].as<Var>();
      if (var == loop->loop_var.get()) return static_cast<int>(k);
    }
    return -1;
  };
  int innermost = iterator_of(loc.loops.back());
  if (innermost < 0 || block.iter_vars[innermost].type == IterType::kDataPar) return -1;
  const Var* write_last = block.writes[0].region.back().min.as<Var>();
  for (size_t l = own; l + 1 < loc.loops.size(); ++l) {
    int k = iterator_of(loc.loops[l]);
    if (k < 0 || block.iter_vars[k].type != IterType::kDataPar) continue;
    const Var* lane = block.iter_vars[k].var.get();
    if (write_last != lane) continue;
    for (const BufferRegion& read : block.reads) {
      if (read.region.empty()) continue;
      if (uses_var(read.region.back().min, [lane](const Var* v) { return v == lane; })) {
        return static_cast<int>(l);
      }
    }
  }
  return -1;
}

class PartialResultLanes : public Postproc {
 public:
  const char* name() const override { return "partial_result_lanes"; }

  void apply(schedule::Schedule& sch) override {
    for (const std::string& name : sch.index("main").block_names()) {
      const schedule::BlockLocation* loc = sch.index("main").find_block(name);
      if (loc == nullptr) continue;
      int lane = lane_loop(*loc);
      if (lane < 0) continue;
      schedule::RV block = schedule::get_block(sch, name);
      std::vector<schedule::RV> loops = schedule::get_loops(sch, block);
      // The loops from the lanes' inward, the lanes' last.
      std::vector<schedule::RV> order(loops.begin() + lane + 1, loops.end());
      order.push_back(loops[lane]);
      schedule::reorder(sch, order);
    }
  }
};

}  // namespace

std::unique_ptr<Postproc> make_partial_result_lanes(const SpaceContext&) {
  return std::make_unique<PartialResultLanes>();
}

}  // namespace kiln::autotune
