// The rule auto_inline: injective spatial blocks that are not outputs are computed where they
// are used (compute_inline), so that no intermediate buffer is written and read back. A padding
// block (a read guarded by if_then_else) also keeps a sketch where it stays a stage of its own:
// inlined, the guard is tested in the consumer's innermost loop (a masked load where that loop
// is vectorized), while a padded copy costs one pass over the input. So
// does a block that calls an expensive math function (exp, tanh, ...) and has two or more
// consumers (the exp of a softmax, read by the sum and by the division): inlined, it is
// computed once per consumer; kept, random_compute_location can put it by its consumers, in a
// buffer of one row. Likewise one whose single consumer iterates more often than it does (a
// table of RoPE's cosines, read by every head): inlined, it is computed again for each use. (On a
// GPU, where a kept stage is a kernel of its own and writes its result to global memory, it is
// always inlined.) A copy into "shared" or "local" memory, which a tiling made, stays.
#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/schedule/compute_inline.h"
#include "kiln/schedule/getters.h"

namespace kiln::autotune {

namespace {

class AutoInline : public ScheduleRule {
 public:
  explicit AutoInline(const SpaceContext& context) : gpu_(context.task->target.is_gpu()) {}
  const char* name() const override { return "auto_inline"; }

  std::vector<schedule::Schedule> apply(const schedule::Schedule& sch,
                                        const std::string& block_name) override {
    schedule::Schedule result = sch.copy();
    if (result.index("main").find_block(block_name) == nullptr) return {sch};
    BlockAnalysis analysis = analyze_block(result, block_name);
    if (!analysis.injective || analysis.writes_output) return {sch};
    // A copy into another memory (a tiling's "shared" or "local" stage) is there on purpose.
    const ir::Block& block = *result.index("main").find_block(block_name)->block;
    for (const ir::BufferRegion& write : block.writes) {
      if (write.buffer->scope != "global") return {sch};
    }
    try {
      schedule::RV block = schedule::get_block(result, block_name);
      if (!schedule::can_compute_inline(result, block)) return {sch};
      schedule::compute_inline(result, block);
    } catch (const schedule::ScheduleError&) {
      return {sch};
    }
    if (analysis.guarded_read && !gpu_) return {result, sch};
    if (analysis.expensive && !gpu_) {
      schedule::Schedule probe = sch.copy();
      std::vector<schedule::RV> consumers =
          schedule::get_consumers(probe, schedule::get_block(probe, block_name));
      if (consumers.size() >= 2) return {result, sch};
      if (consumers.size() == 1) {
        std::optional<double> own = loop_runs(probe, block_name);
        std::optional<double> theirs =
            loop_runs(probe, probe.block(consumers[0], "auto_inline").block->name);
        if (own && theirs && *theirs > *own) return {result, sch};
      }
    }
    return {result};
  }

 private:
  bool gpu_;
};

}  // namespace

std::unique_ptr<ScheduleRule> make_auto_inline(const SpaceContext& context) {
  return std::make_unique<AutoInline>(context);
}

}  // namespace kiln::autotune
