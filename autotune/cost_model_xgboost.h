// A small owner of an XGBoost booster over its C API: train a ranking model from dense rows in
// groups, predict scores, and save or load its JSON model. Every call is checked: a failure is a
// kRuntime error naming the XGBoost call and XGBoost's message. Private to kiln_autotune.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kiln/autotune/cost_model.h"

namespace kiln::autotune::detail {

// Row-major rows of `cols` floats.
struct DenseRows {
  const float* data = nullptr;
  size_t rows = 0;
  size_t cols = 0;
};

class Booster {
 public:
  Booster() = default;
  ~Booster();
  Booster(Booster&& other) noexcept;
  Booster& operator=(Booster&& other) noexcept;
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;

  // Trains options.num_rounds rounds from scratch. `group_sizes` are the lengths of consecutive
  // runs of rows that form one group; `labels` one per row (higher = better).
  static Booster train(const DenseRows& rows, const std::vector<float>& labels,
                       const std::vector<unsigned>& group_sizes, const CostModelOptions& options);
  // The model saved by to_json(), with the thread count of `options`.
  static Booster from_json(const std::string& json, const CostModelOptions& options);

  // One score per row (higher = better).
  std::vector<double> predict(const DenseRows& rows) const;
  std::string to_json() const;
  bool defined() const { return handle_ != nullptr; }

 private:
  void* handle_ = nullptr;
};

}  // namespace kiln::autotune::detail
