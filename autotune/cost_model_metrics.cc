// Ranking metrics of the cost model: top-k recall, the quality the search logs, and the rank
// normalization that puts XGBoost's scores and the prior on one scale before they are blended.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kiln/autotune/cost_model.h"
#include "kiln/support/error.h"

namespace kiln::autotune {

namespace {

// Positions of the k largest values (ties: the earlier position first).
std::vector<size_t> top_k(const std::vector<double>& values, size_t k) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] > values[b]; });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace

double top_k_recall(const std::vector<double>& scores, const std::vector<double>& seconds, int k,
                    const char* api) {
  // Step 1. Check the inputs.
  user_check(!scores.empty()) << api << ": expected at least one candidate, found no scores";
  user_check(scores.size() == seconds.size())
      << api << ": expected one measured time per score, found " << scores.size() << " scores and "
      << seconds.size() << " times";
  user_check(k >= 1) << api << ": k must be at least 1, found " << k;
  for (size_t i = 0; i < scores.size(); ++i) {
    user_check(!std::isnan(scores[i])) << api << ": score " << i << " is NaN";
    user_check(!std::isnan(seconds[i]) && seconds[i] > 0)
        << api << ": time " << i << " must be positive seconds (+inf for a failed run), found "
        << seconds[i];
  }
  // Step 2. Intersect the k highest scores with the k shortest times.
  size_t n = std::min(static_cast<size_t>(k), scores.size());
  std::vector<double> speed(seconds.size());
  for (size_t i = 0; i < seconds.size(); ++i) speed[i] = -seconds[i];
  std::vector<size_t> predicted = top_k(scores, n), measured = top_k(speed, n);
  std::vector<size_t> common;
  std::set_intersection(predicted.begin(), predicted.end(), measured.begin(), measured.end(),
                        std::back_inserter(common));
  return static_cast<double>(common.size()) / static_cast<double>(n);
}

std::vector<double> rank_normalize(const std::vector<double>& values) {
  size_t n = values.size();
  std::vector<double> ranks(n, 0.5);
  if (n < 2) return ranks;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] < values[b]; });
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && values[order[j + 1]] == values[order[i]]) ++j;
    double mean_rank = 0.5 * static_cast<double>(i + j) / static_cast<double>(n - 1);
    for (size_t m = i; m <= j; ++m) ranks[order[m]] = mean_rank;
    i = j + 1;
  }
  return ranks;
}

}  // namespace kiln::autotune
