// Scorer: the search's use of lowering, features, the prior and the cost model.
#include "autotune/search_scoring.h"

#include "kiln/autotune/features.h"
#include "kiln/autotune/runner.h"
#include "kiln/ir/structural.h"
#include "kiln/support/error.h"
#include "kiln/tir/pipeline.h"

namespace kiln::autotune {

Scorer::Scorer(const codegen::Target& target, int num_threads) : target_(target) {
  machine_.num_cores = num_threads;
  describe_local_gpu(target, &machine_);
}

Scored Scorer::analyze(const ir::Ref<ir::IRModule>& mod) const {
  Scored scored;
  try {
    ir::Ref<ir::PrimFunc> lowered = tir::lower(mod->lookup("main"));
    CandidateAnalysis analysis = analyze_candidate(lowered, target_, machine_);
    scored.features = std::move(analysis.features);
    scored.prior = analysis.prior;
    scored.code_hash = ir::structural_hash(lowered);
    scored.valid = true;
  } catch (const Error&) {
    scored.valid = false;
  }
  return scored;
}

void Scorer::score(const CostModel& model, int64_t group, const std::vector<Scored*>& items) const {
  if (items.empty()) return;
  std::vector<std::vector<float>> rows;
  std::vector<double> priors;
  for (const Scored* item : items) {
    rows.push_back(item->features);
    priors.push_back(item->prior);
  }
  std::vector<double> scores = model.predict(rows, priors, group);
  for (size_t i = 0; i < items.size(); ++i) items[i]->score = scores[i];
}

void Scorer::learn(CostModel& model, int64_t group, const std::vector<const Scored*>& rows,
                   const std::vector<double>& seconds) const {
  if (rows.empty()) return;
  std::vector<std::vector<float>> features;
  for (const Scored* row : rows) features.push_back(row->features);
  model.update(features, seconds, group);
}

double Scorer::recall(const std::vector<double>& scores, const std::vector<double>& seconds,
                      int k) {
  return top_k_recall(scores, seconds, k, "search");
}

}  // namespace kiln::autotune
