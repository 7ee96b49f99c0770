// The XGBoost booster behind CostModel, through XGBoost's C API (Debian's libxgboost). XGBoost
// reports failures as return codes with a message in XGBGetLastError; each becomes a kRuntime
// error here. Its log is silenced once per process (verbosity 0).
#include "autotune/cost_model_xgboost.h"

#include <xgboost/c_api.h>

#include <cmath>
#include <mutex>
#include <string>

#include "kiln/support/error.h"

namespace kiln::autotune::detail {

namespace {

void check(int status, const char* call) {
  if (status == 0) return;
  // XGBoost appends a stack trace of its own internals: the first line says what failed.
  const char* last = XGBGetLastError();
  std::string message = last != nullptr ? last : "(no message)";
  message = message.substr(0, message.find("\nStack trace:"));
  user_error(ErrorKind::kRuntime) << "CostModel: XGBoost's " << call << " failed: " << message;
}

void silence_xgboost() {
  static std::once_flag once;
  std::call_once(once,
                 [] { check(XGBSetGlobalConfig("{\"verbosity\": 0}"), "XGBSetGlobalConfig"); });
}

// A DMatrix that is freed whatever happens.
class Matrix {
 public:
  explicit Matrix(const DenseRows& rows) {
    check(XGDMatrixCreateFromMat(rows.data, rows.rows, rows.cols, NAN, &handle_),
          "XGDMatrixCreateFromMat");
  }
  ~Matrix() {
    if (handle_ != nullptr) XGDMatrixFree(handle_);
  }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

void set(BoosterHandle booster, const char* name, const std::string& value) {
  check(XGBoosterSetParam(booster, name, value.c_str()), "XGBoosterSetParam");
}

void set_thread_count(BoosterHandle booster, const CostModelOptions& options) {
  if (options.num_threads > 0) set(booster, "nthread", std::to_string(options.num_threads));
}

}  // namespace

Booster::~Booster() {
  if (handle_ != nullptr) XGBoosterFree(handle_);
}

Booster::Booster(Booster&& other) noexcept : handle_(other.handle_) {
  other.handle_ = nullptr;
}

Booster& Booster::operator=(Booster&& other) noexcept {
  std::swap(handle_, other.handle_);
  return *this;
}

Booster Booster::train(const DenseRows& rows, const std::vector<float>& labels,
                       const std::vector<unsigned>& group_sizes, const CostModelOptions& options) {
  silence_xgboost();
  // Step 1. The training matrix with its labels and groups.
  Matrix matrix(rows);
  check(XGDMatrixSetFloatInfo(matrix.get(), "label", labels.data(), labels.size()),
        "XGDMatrixSetFloatInfo");
  check(XGDMatrixSetUIntInfo(matrix.get(), "group", group_sizes.data(), group_sizes.size()),
        "XGDMatrixSetUIntInfo");
  // Step 2. A booster with kiln's parameters. Histograms of 32 bins and half of the features
  // per split keep a retraining on 2000 rows of ~150 features near 0.1 s on one thread; the
  // features are counts on log scales, which 32 bins resolve.
  Booster booster;
  DMatrixHandle matrices[] = {matrix.get()};
  check(XGBoosterCreate(matrices, 1, &booster.handle_), "XGBoosterCreate");
  set(booster.handle_, "verbosity", "0");
  set(booster.handle_, "objective", options.objective);
  set(booster.handle_, "max_depth", std::to_string(options.max_depth));
  set(booster.handle_, "eta", std::to_string(options.learning_rate));
  set(booster.handle_, "seed", std::to_string(options.seed));
  set(booster.handle_, "tree_method", "hist");
  set(booster.handle_, "max_bin", "32");
  set(booster.handle_, "colsample_bynode", "0.5");
  // Four pairs per row and round rank the extremes of a group better than XGBoost's one.
  set(booster.handle_, "num_pairsample", "4");
  set(booster.handle_, "min_child_weight", "0");
  set_thread_count(booster.handle_, options);
  // Step 3. Boost.
  for (int round = 0; round < options.num_rounds; ++round) {
    check(XGBoosterUpdateOneIter(booster.handle_, round, matrix.get()), "XGBoosterUpdateOneIter");
  }
  return booster;
}

Booster Booster::from_json(const std::string& json, const CostModelOptions& options) {
  silence_xgboost();
  Booster booster;
  check(XGBoosterCreate(nullptr, 0, &booster.handle_), "XGBoosterCreate");
  check(XGBoosterLoadModelFromBuffer(booster.handle_, json.data(), json.size()),
        "XGBoosterLoadModelFromBuffer");
  set(booster.handle_, "verbosity", "0");
  set_thread_count(booster.handle_, options);
  return booster;
}

std::vector<double> Booster::predict(const DenseRows& rows) const {
  internal_check(handle_ != nullptr) << "CostModel: predict without a trained booster";
  if (rows.rows == 0) return {};
  Matrix matrix(rows);
  const char* config =
      "{\"type\": 0, \"training\": false, \"iteration_begin\": 0, \"iteration_end\": 0, "
      "\"strict_shape\": false}";
  const bst_ulong* shape = nullptr;
  bst_ulong dims = 0;
  const float* result = nullptr;
  check(XGBoosterPredictFromDMatrix(handle_, matrix.get(), config, &shape, &dims, &result),
        "XGBoosterPredictFromDMatrix");
  bst_ulong count = 1;
  for (bst_ulong d = 0; d < dims; ++d) count *= shape[d];
  internal_check(count == rows.rows)
      << "CostModel: XGBoost returned " << count << " predictions for " << rows.rows << " rows";
  return std::vector<double>(result, result + count);
}

std::string Booster::to_json() const {
  internal_check(handle_ != nullptr) << "CostModel: save without a trained booster";
  bst_ulong length = 0;
  const char* buffer = nullptr;
  check(XGBoosterSaveModelToBuffer(handle_, "{\"format\": \"json\"}", &length, &buffer),
        "XGBoosterSaveModelToBuffer");
  return std::string(buffer, length);
}

}  // namespace kiln::autotune::detail
