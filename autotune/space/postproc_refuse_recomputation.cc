// The postprocessor refuse_recomputation: a candidate in which a reduction block runs each of
// its iterations twice or more is refused. random_compute_location samples among every
// location where a block can go, and under a loop of its consumer that its result does not
// depend on (a row sum under the loop over columns) a reduction is computed over and over:
// never faster, and orders of magnitude slower to measure. A reduction under a loop that
// iterates another block's reduction (rfactor's partial result under the loop over the partial
// results) is refused too: it is produced one lane at a time instead of as a vector.
#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"

namespace kiln::autotune {

namespace {

class RefuseRecomputation : public Postproc {
 public:
  const char* name() const override { return "refuse_recomputation"; }

  void apply(schedule::Schedule& sch) override {
    for (const std::string& block : sch.index("main").block_names()) {
      if (in_another_reduction_loop(sch, block)) {
        schedule::schedule_error("ReductionInReductionLoopError", name(),
                                 "block '" + block +
                                     "' would be computed under a loop that iterates the "
                                     "reduction of another block");
      }
      if (!recomputes_reduction(sch, block)) continue;
      schedule::schedule_error("RecomputedReductionError", name(),
                               "block '" + block +
                                   "' would run each of its iterations twice or more: its "
                                   "compute location is under a loop its result does not "
                                   "depend on");
    }
  }
};

}  // namespace

std::unique_ptr<Postproc> make_refuse_recomputation(const SpaceContext&) {
  return std::make_unique<RefuseRecomputation>();
}

}  // namespace kiln::autotune
