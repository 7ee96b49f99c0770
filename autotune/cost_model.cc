// CostModel: the measured rows in groups, retraining of the XGBoost ranker after each batch,
// the blend of its rank-normalized scores with the prior's, and saving and loading the model
// with its rows so that a resumed tuning run starts where it stopped.
#include "kiln/autotune/cost_model.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "autotune/cost_model_xgboost.h"
#include "kiln/support/error.h"

namespace kiln::autotune {

namespace fs = std::filesystem;

namespace {

constexpr const char* kModelFile = "cost_model.json";
constexpr const char* kRowsFile = "cost_model_rows.txt";
constexpr const char* kRowsHeader = "kiln-cost-model 1";

// FNV-1a of the feature names: a saved model is refused by a kiln with other features.
uint64_t names_hash() {
  uint64_t hash = 1469598103934665603ull;
  for (const std::string& name : feature_names()) {
    for (char ch : name + '\n') {
      hash ^= static_cast<unsigned char>(ch);
      hash *= 1099511628211ull;
    }
  }
  return hash;
}

void check_rows(const std::vector<std::vector<float>>& rows, const char* api) {
  size_t width = feature_names().size();
  for (size_t i = 0; i < rows.size(); ++i) {
    user_check(rows[i].size() == width) << api << ": row " << i << " must have " << width
                                        << " features (extract_features), found " << rows[i].size();
    for (size_t j = 0; j < width; ++j) {
      user_check(std::isfinite(rows[i][j]))
          << api << ": row " << i << " feature " << j << " (" << feature_names()[j]
          << ") must be finite, found " << rows[i][j];
    }
  }
}

std::string format_float(double value, bool single) {
  char buffer[64];
  auto result = single ? std::to_chars(buffer, buffer + sizeof(buffer), static_cast<float>(value))
                       : std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

// Writes `text` to `path` through a temporary file renamed into place.
void write_file(const fs::path& path, const std::string& text) {
  fs::path temporary = path;
  temporary += ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    runtime_check(out.good()) << "CostModel.save: cannot write " << temporary.string();
    out << text;
    out.flush();
    runtime_check(out.good()) << "CostModel.save: writing " << temporary.string() << " failed";
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  runtime_check(!error) << "CostModel.save: cannot rename " << temporary.string() << " to "
                        << path.string() << ": " << error.message();
}

}  // namespace

struct CostModel::Impl {
  CostModelOptions options;
  std::vector<float> data;  // rows of feature_names().size() floats, in arrival order
  std::vector<double> seconds;
  std::vector<int64_t> groups;
  std::map<int64_t, int64_t> group_rows;
  detail::Booster booster;

  size_t width() const { return feature_names().size(); }

  // Rows of every group with two different times, ordered by group, with their labels
  // min_seconds / seconds, and the group sizes XGBoost takes.
  bool training_set(std::vector<float>* rows, std::vector<float>* labels,
                    std::vector<unsigned>* sizes) const {
    std::map<int64_t, std::vector<size_t>> members;
    for (size_t i = 0; i < groups.size(); ++i) members[groups[i]].push_back(i);
    for (const auto& [group, indices] : members) {
      double best = std::numeric_limits<double>::infinity();
      double worst = 0;
      for (size_t i : indices) {
        best = std::min(best, seconds[i]);
        worst = std::max(worst, seconds[i]);
      }
      if (!std::isfinite(best) || best == worst) continue;  // nothing to rank
      for (size_t i : indices) {
        rows->insert(rows->end(), data.begin() + i * width(), data.begin() + (i + 1) * width());
        labels->push_back(static_cast<float>(best / seconds[i]));
      }
      sizes->push_back(static_cast<unsigned>(indices.size()));
    }
    return !sizes->empty();
  }

  void retrain() {
    std::vector<float> rows, labels;
    std::vector<unsigned> sizes;
    if (!training_set(&rows, &labels, &sizes)) {
      booster = detail::Booster();
      return;
    }
    detail::DenseRows dense{rows.data(), labels.size(), width()};
    booster = detail::Booster::train(dense, labels, sizes, options);
  }
};

namespace {

std::vector<float> flatten(const std::vector<std::vector<float>>& rows) {
  std::vector<float> flat;
  flat.reserve(rows.size() * feature_names().size());
  for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
  return flat;
}

}  // namespace

CostModel::CostModel(CostModelOptions options) : impl_(std::make_unique<Impl>()) {
  user_check(options.num_rounds >= 1 && options.max_depth >= 1 && options.learning_rate > 0 &&
             options.num_threads >= 0 && options.half_weight_rows >= 0 &&
             options.min_group_rows >= 1 && options.recall_k >= 1)
      << "CostModel: options must have num_rounds, max_depth, min_group_rows and recall_k of at "
      << "least 1, a positive learning_rate, and num_threads and half_weight_rows of at least 0; "
      << "found num_rounds=" << options.num_rounds << ", max_depth=" << options.max_depth
      << ", learning_rate=" << options.learning_rate << ", num_threads=" << options.num_threads
      << ", half_weight_rows=" << options.half_weight_rows
      << ", min_group_rows=" << options.min_group_rows << ", recall_k=" << options.recall_k;
  user_check(options.objective == "rank:pairwise" || options.objective == "rank:ndcg")
      << "CostModel: objective must be 'rank:pairwise' or 'rank:ndcg', found '" << options.objective
      << "'";
  impl_->options = std::move(options);
}

CostModel::~CostModel() = default;
CostModel::CostModel(CostModel&&) noexcept = default;
CostModel& CostModel::operator=(CostModel&&) noexcept = default;

UpdateResult CostModel::update(const std::vector<std::vector<float>>& rows,
                               const std::vector<double>& seconds, int64_t group) {
  const char* api = "CostModel.update";
  // Step 1. Check everything before anything changes.
  user_check(!rows.empty()) << api << ": expected at least one measured row, found none";
  user_check(rows.size() == seconds.size())
      << api << ": expected one time per row, found " << rows.size() << " rows and "
      << seconds.size() << " times";
  check_rows(rows, api);
  bool any_success = false;
  for (size_t i = 0; i < seconds.size(); ++i) {
    user_check(!std::isnan(seconds[i]) && seconds[i] > 0)
        << api << ": time " << i << " must be positive seconds (+inf for a failed run), found "
        << seconds[i];
    any_success |= std::isfinite(seconds[i]);
  }
  Impl& m = *impl_;
  UpdateResult result;
  // Step 2. The batch is held out: how well did the model trained without it rank it?
  result.holdout_recall = std::numeric_limits<double>::quiet_NaN();
  if (m.booster.defined() && any_success) {
    std::vector<float> flat = flatten(rows);
    std::vector<double> scores = m.booster.predict({flat.data(), rows.size(), m.width()});
    int k = std::min<int>(m.options.recall_k, static_cast<int>(rows.size()));
    result.holdout_recall = top_k_recall(scores, seconds, k, api);
  }
  // Step 3. Store the rows and retrain from scratch (labels change as faster times arrive).
  for (size_t i = 0; i < rows.size(); ++i) {
    m.data.insert(m.data.end(), rows[i].begin(), rows[i].end());
    m.seconds.push_back(seconds[i]);
    m.groups.push_back(group);
  }
  m.group_rows[group] += static_cast<int64_t>(rows.size());
  auto start = std::chrono::steady_clock::now();
  m.retrain();
  result.train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.trained = m.booster.defined();
  result.rows = num_rows();
  return result;
}

std::vector<double> CostModel::predict_model(const std::vector<std::vector<float>>& rows) const {
  check_rows(rows, "CostModel.predict");
  if (!impl_->booster.defined()) return {};
  std::vector<float> flat = flatten(rows);
  return impl_->booster.predict({flat.data(), rows.size(), impl_->width()});
}

std::vector<double> CostModel::predict(const std::vector<std::vector<float>>& rows,
                                       const std::vector<double>& priors,
                                       std::optional<int64_t> group) const {
  const char* api = "CostModel.predict";
  check_rows(rows, api);
  user_check(priors.empty() || priors.size() == rows.size())
      << api << ": expected one prior per row (or none), found " << rows.size() << " rows and "
      << priors.size() << " priors";
  for (size_t i = 0; i < priors.size(); ++i) {
    user_check(!std::isnan(priors[i])) << api << ": prior " << i << " is NaN";
  }
  std::vector<double> scores(rows.size(), 0.5);
  if (rows.empty()) return scores;
  double weight = xgboost_weight(group);
  if (!priors.empty()) scores = rank_normalize(priors);
  if (weight > 0) {
    std::vector<double> model = rank_normalize(predict_model(rows));
    if (priors.empty()) return model;
    for (size_t i = 0; i < scores.size(); ++i) {
      scores[i] = weight * model[i] + (1 - weight) * scores[i];
    }
  }
  return scores;
}

double CostModel::xgboost_weight(std::optional<int64_t> group) const {
  if (!impl_->booster.defined()) return 0;
  double n = static_cast<double>(group.has_value() ? num_rows(*group) : num_rows());
  if (n < impl_->options.min_group_rows) return 0;
  return n / (n + impl_->options.half_weight_rows);
}

int64_t CostModel::num_rows() const {
  return static_cast<int64_t>(impl_->seconds.size());
}

int64_t CostModel::num_rows(int64_t group) const {
  auto it = impl_->group_rows.find(group);
  return it == impl_->group_rows.end() ? 0 : it->second;
}

bool CostModel::trained() const {
  return impl_->booster.defined();
}

const CostModelOptions& CostModel::options() const {
  return impl_->options;
}

void CostModel::save(const std::string& dir) const {
  const Impl& m = *impl_;
  std::error_code error;
  fs::create_directories(dir, error);
  runtime_check(!error) << "CostModel.save: cannot create directory " << dir << ": "
                        << error.message();
  const CostModelOptions& o = m.options;
  std::ostringstream text;
  text << kRowsHeader << "\n";
  text << "options " << o.num_rounds << " " << o.max_depth << " "
       << format_float(o.learning_rate, false) << " " << o.num_threads << " " << o.seed << " "
       << o.objective << " " << format_float(o.half_weight_rows, false) << " " << o.min_group_rows
       << " " << o.recall_k << "\n";
  text << "features " << m.width() << " " << names_hash() << "\n";
  text << "booster " << (m.booster.defined() ? 1 : 0) << "\n";
  text << "rows " << m.seconds.size() << "\n";
  for (size_t i = 0; i < m.seconds.size(); ++i) {
    text << m.groups[i] << " " << format_float(m.seconds[i], false);
    for (size_t j = 0; j < m.width(); ++j)
      text << " " << format_float(m.data[i * m.width() + j], true);
    text << "\n";
  }
  // The booster first: a rows file never names a model that is not there.
  if (m.booster.defined()) write_file(fs::path(dir) / kModelFile, m.booster.to_json());
  write_file(fs::path(dir) / kRowsFile, text.str());
}

namespace {

// Reads the rows file line by line, with errors that name the file and the line.
class RowsReader {
 public:
  explicit RowsReader(const fs::path& path) : path_(path), in_(path) {
    user_check(in_.good()) << "CostModel.load: cannot read " << path_.string()
                           << " (no saved cost model there)";
  }

  std::istringstream line(const char* what) {
    std::string text;
    ++number_;
    user_check(static_cast<bool>(std::getline(in_, text)))
        << "CostModel.load: " << path_.string() << " ends at line " << number_ << ", expected "
        << what;
    return std::istringstream(text);
  }

  [[noreturn]] void fail(const std::string& what) {
    user_error(ErrorKind::kValue) << "CostModel.load: " << path_.string() << " line " << number_
                                  << ": " << what;
  }

  template <class T>
  T number(std::istringstream& in, const char* what) {
    std::string token;
    in >> token;
    T value{};
    auto result = std::from_chars(token.data(), token.data() + token.size(), value);
    if (token.empty() || result.ec != std::errc() || result.ptr != token.data() + token.size()) {
      // from_chars does not read "inf", which a failed run's time is.
      if constexpr (std::is_floating_point_v<T>) {
        if (token == "inf") return std::numeric_limits<T>::infinity();
      }
      fail(std::string("expected ") + what + ", found '" + token + "'");
    }
    return value;
  }

 private:
  fs::path path_;
  std::ifstream in_;
  int number_ = 0;
};

}  // namespace

void CostModel::load(const std::string& dir) {
  // Step 1. The rows file: header, options, features, rows.
  RowsReader reader(fs::path(dir) / kRowsFile);
  std::string word;
  {
    std::istringstream header = reader.line("the header");
    std::string text = header.str();
    if (text != kRowsHeader) {
      reader.fail("expected '" + std::string(kRowsHeader) + "', found '" + text + "'");
    }
  }
  CostModelOptions o;
  {
    std::istringstream in = reader.line("the options");
    in >> word;
    if (word != "options") reader.fail("expected 'options', found '" + word + "'");
    o.num_rounds = reader.number<int>(in, "num_rounds");
    o.max_depth = reader.number<int>(in, "max_depth");
    o.learning_rate = reader.number<double>(in, "learning_rate");
    o.num_threads = reader.number<int>(in, "num_threads");
    o.seed = reader.number<int>(in, "seed");
    in >> o.objective;
    o.half_weight_rows = reader.number<double>(in, "half_weight_rows");
    o.min_group_rows = reader.number<int>(in, "min_group_rows");
    o.recall_k = reader.number<int>(in, "recall_k");
  }
  Impl loaded;
  {
    CostModel checked(o);  // the saved options pass the constructor's checks
    loaded.options = checked.options();
  }
  {
    std::istringstream in = reader.line("the features");
    in >> word;
    if (word != "features") reader.fail("expected 'features', found '" + word + "'");
    size_t count = reader.number<size_t>(in, "the feature count");
    uint64_t hash = reader.number<uint64_t>(in, "the feature hash");
    if (count != feature_names().size() || hash != names_hash()) {
      reader.fail("the model was saved with other features (" + std::to_string(count) +
                  ", this kiln has " + std::to_string(feature_names().size()) +
                  "): train a new model");
    }
  }
  bool has_booster = false;
  {
    std::istringstream in = reader.line("the booster flag");
    in >> word;
    if (word != "booster") reader.fail("expected 'booster', found '" + word + "'");
    has_booster = reader.number<int>(in, "0 or 1") == 1;
  }
  size_t rows = 0;
  {
    std::istringstream in = reader.line("the row count");
    in >> word;
    if (word != "rows") reader.fail("expected 'rows', found '" + word + "'");
    rows = reader.number<size_t>(in, "the row count");
  }
  size_t width = feature_names().size();
  for (size_t i = 0; i < rows; ++i) {
    std::istringstream in = reader.line("a row");
    int64_t group = reader.number<int64_t>(in, "a group id");
    double seconds = reader.number<double>(in, "a time in seconds");
    if (!(seconds > 0)) reader.fail("a time must be positive, found " + std::to_string(seconds));
    loaded.groups.push_back(group);
    loaded.seconds.push_back(seconds);
    loaded.group_rows[group] += 1;
    for (size_t j = 0; j < width; ++j) {
      float value = reader.number<float>(in, "a feature value");
      if (!std::isfinite(value)) reader.fail("a feature value is not finite");
      loaded.data.push_back(value);
    }
  }
  // Step 2. The booster, as saved (retraining could differ in the last bit).
  if (has_booster) {
    fs::path model_path = fs::path(dir) / kModelFile;
    std::ifstream in(model_path, std::ios::binary);
    user_check(in.good()) << "CostModel.load: cannot read " << model_path.string() << ", which "
                          << kRowsFile << " says holds the trained model";
    std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      loaded.booster = detail::Booster::from_json(json, loaded.options);
    } catch (const Error& e) {
      user_error(ErrorKind::kValue) << "CostModel.load: " << model_path.string()
                                    << " is not a model XGBoost can read: " << e.what();
    }
  }
  // Step 3. Replace this model.
  *impl_ = std::move(loaded);
}

}  // namespace kiln::autotune
