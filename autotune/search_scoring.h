// What the search asks of the cost model, in one place (private to autotune/): a candidate
// lowered and analyzed once (features and the analytical prior), scores for many candidates,
// training on a measured batch and the recall of its ranking.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/autotune/cost_model.h"
#include "kiln/codegen/target.h"
#include "kiln/ir/function.h"

namespace kiln::autotune {

// A candidate as the cost model sees it.
struct Scored {
  bool valid = false;  // it lowered (a candidate that does not is dropped)
  std::vector<float> features;
  double prior = 0;  // analytical_prior
  double score = 0;  // the blended score, higher = faster
  // The structural hash of the lowered function: two schedules that lower to the same code
  // run the same, and the search measures one of them.
  uint64_t code_hash = 0;
};

class Scorer {
 public:
  Scorer(const codegen::Target& target, int num_threads);

  // Lowers the module's "main" and analyzes it.
  Scored analyze(const ir::Ref<ir::IRModule>& mod) const;
  // Sets the score of each item from `model` (group: the task).
  void score(const CostModel& model, int64_t group, const std::vector<Scored*>& items) const;
  // Trains `model` on measured candidates (seconds; +inf for a failed run).
  void learn(CostModel& model, int64_t group, const std::vector<const Scored*>& rows,
             const std::vector<double>& seconds) const;
  // top_k_recall of `scores` against `seconds`.
  static double recall(const std::vector<double>& scores, const std::vector<double>& seconds,
                       int k);

 private:
  codegen::Target target_;
  MachineOptions machine_;
};

}  // namespace kiln::autotune
