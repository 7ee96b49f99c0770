// kiln::autotune::Database: opening a tuning database, its workloads, committing measured
// batches and the lookups of a tuning run. Export and merge are in database_exchange.cc; the SQL
// is in database_sql.cc.
#include "kiln/autotune/database.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "autotune/database_impl.h"
#include "autotune/database_record.h"
#include "kiln/support/error.h"

namespace kiln::autotune {

int schema_version() {
  return sql::current_schema_version();
}

// ----- Impl ----------------------------------------------------------------------------------

void Database::Impl::check_open(const char* api) const {
  user_check(connection != nullptr)
      << api << ": the tuning database '" << path << "' is closed; open it again";
}

void Database::Impl::warn(const std::string& message) {
  if (warned.insert(message).second) warnings.push_back(message);
}

void Database::Impl::warn_unreadable(const char* what, std::optional<int64_t> id,
                                     const std::string& problem) {
  std::string which = id ? std::to_string(*id) : std::string("(no id)");
  warn("kiln.autotune.Database: " + std::string(what) + " " + which + " of '" + path +
       "' is skipped: " + problem);
}

std::optional<Workload> Database::Impl::find_workload(uint64_t hash, const WorkloadMatch& matches) {
  for (const sql::WorkloadRow& row :
       queries->select_workloads_with_key(options.key_version, detail::hash_text(hash))) {
    std::string problem;
    std::optional<Workload> workload = detail::workload_of_row(row, &problem);
    if (!workload) {
      warn_unreadable("workload", row.id, problem);
      continue;
    }
    if (matches(workload->func_json)) return workload;
  }
  return std::nullopt;
}

Workload Database::Impl::add_workload(uint64_t hash, const std::string& func_json,
                                      const std::string& created) {
  Workload workload;
  workload.key_version = options.key_version;
  workload.structural_hash = hash;
  workload.func_json = func_json;
  workload.created = created;
  int64_t id = queries->insert_workload(detail::row_of_workload(workload));
  // Read the row back for the creation time the database gave it.
  for (const sql::WorkloadRow& row :
       queries->select_workloads_with_key(options.key_version, detail::hash_text(hash))) {
    if (row.id == id) workload.created = row.created.value_or("");
  }
  workload.id = id;
  return workload;
}

std::vector<Record> Database::Impl::read_records(const sql::RecordSelection& selection) {
  std::vector<Record> records;
  queries->select_records(selection, [&](const sql::RecordRow& row) {
    std::string problem;
    if (std::optional<Record> record = detail::record_of_row(row, &problem)) {
      records.push_back(std::move(*record));
    } else {
      warn_unreadable("record", row.id, problem);
    }
    return true;
  });
  return records;
}

// ----- Opening -------------------------------------------------------------------------------

namespace {

// Warns once per version about the rows that a kiln of another version wrote.
void warn_about_other_versions(Database::Impl& impl) {
  for (auto [version, count] :
       impl.queries->count_workloads_of_other_versions(impl.options.key_version)) {
    impl.warn("kiln.autotune.Database: " + std::to_string(count) + " workload(s) of '" + impl.path +
              "' have workload key version " + std::to_string(version) + ", not version " +
              std::to_string(impl.options.key_version) +
              " that this kiln reads; they and their records are ignored");
  }
  for (auto [version, count] :
       impl.queries->count_records_of_other_versions(impl.options.ir_format_version)) {
    impl.warn("kiln.autotune.Database: " + std::to_string(count) + " record(s) of '" + impl.path +
              "' have IR format version " + std::to_string(version) + ", not version " +
              std::to_string(impl.options.ir_format_version) +
              " that this kiln reads; they are ignored");
  }
}

// Whether a record's search metadata is the tuner's verdict of a final interleaved round.
bool is_verdict(const std::string& search_json) {
  detail::Json search = detail::Json::parse(search_json, nullptr, false);
  if (!search.is_object()) return false;
  auto it = search.find("winner");
  return it != search.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

Database::Database(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Database::~Database() = default;

std::unique_ptr<Database> Database::open(const std::string& path, const OpenOptions& options) {
  const char* api = "kiln.autotune.Database";
  user_check(!path.empty()) << api << ": path must name a file, found an empty string";
  user_check(std::isfinite(options.busy_timeout_s) && options.busy_timeout_s >= 0)
      << api << ": busy_timeout_s must be a finite number of seconds >= 0, found "
      << options.busy_timeout_s;
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  // Step 1. Open the file and check what it is before changing anything in it.
  impl->connection = std::make_unique<sqlite::Connection>(path, false, options.busy_timeout_s);
  sqlite::Connection& connection = *impl->connection;
  sql::enable_foreign_keys(connection);
  sql::prepare_schema(connection);
  // Step 2. WAL mode, so that processes sharing the file do not wait for each other's reads, and
  // each commit is durable when it returns: kill -9 loses only an uncommitted batch.
  std::string mode = sql::enable_wal(connection);
  if (mode != "wal" && path != ":memory:") {
    impl->warn("kiln.autotune.Database: '" + path + "' could not use WAL mode (journal mode '" +
               mode + "', e.g. on a network file system); processes that share it will wait " +
               "for each other's reads and writes");
  }
  impl->queries = std::make_unique<sql::Queries>(connection);
  // Step 3. Say once which stored rows this kiln will ignore.
  warn_about_other_versions(*impl);
  return std::unique_ptr<Database>(new Database(std::move(impl)));
}

const std::string& Database::path() const {
  return impl_->path;
}

void Database::close() {
  // Statements before the connection they belong to.
  impl_->queries.reset();
  impl_->connection.reset();
}

std::vector<std::string> Database::take_warnings() {
  std::vector<std::string> warnings = std::move(impl_->warnings);
  impl_->warnings.clear();
  return warnings;
}

// ----- Workloads -----------------------------------------------------------------------------

Workload Database::commit_workload(uint64_t structural_hash, const std::string& func_json,
                                   const WorkloadMatch& matches) {
  const char* api = "kiln.autotune.Database.commit_workload";
  impl_->check_open(api);
  user_check(!func_json.empty()) << api << ": func_json must be the serialized function, found "
                                 << "an empty string";
  user_check(matches != nullptr) << api << ": matches must be a function, found none";
  // The lookup and the insert share one write transaction, so two processes that commit the
  // same function at once store it once.
  sqlite::Transaction transaction(*impl_->connection, "adding a workload to");
  std::optional<Workload> found = impl_->find_workload(structural_hash, matches);
  Workload workload = found ? *found : impl_->add_workload(structural_hash, func_json, "");
  transaction.commit();
  return workload;
}

std::optional<Workload> Database::find_workload(uint64_t structural_hash,
                                                const WorkloadMatch& matches) {
  const char* api = "kiln.autotune.Database.find_workload";
  impl_->check_open(api);
  user_check(matches != nullptr) << api << ": matches must be a function, found none";
  return impl_->find_workload(structural_hash, matches);
}

std::vector<Workload> Database::workloads() {
  impl_->check_open("kiln.autotune.Database.workloads");
  std::vector<Workload> workloads;
  for (const sql::WorkloadRow& row : impl_->queries->select_workloads(impl_->options.key_version)) {
    std::string problem;
    if (std::optional<Workload> workload = detail::workload_of_row(row, &problem)) {
      workloads.push_back(std::move(*workload));
    } else {
      impl_->warn_unreadable("workload", row.id, problem);
    }
  }
  return workloads;
}

// ----- Records -------------------------------------------------------------------------------

std::vector<int64_t> Database::commit_records(const std::vector<Measurement>& batch) {
  impl_->check_open("kiln.autotune.Database.commit_records");
  // Step 1. Check every measurement before writing anything.
  std::vector<Record> records;
  for (size_t i = 0; i < batch.size(); ++i) {
    records.push_back(detail::checked_record(batch[i], i + 1, batch.size()));
  }
  // Step 2. Insert the batch in one transaction: an error (or a kill) before the commit leaves
  // nothing of it.
  sqlite::Transaction transaction(*impl_->connection, "adding records to");
  std::set<int64_t> known_workloads;
  std::vector<int64_t> ids;
  for (size_t i = 0; i < records.size(); ++i) {
    int64_t workload_id = records[i].workload_id;
    if (!known_workloads.count(workload_id)) {
      user_check(impl_->queries->workload_exists(workload_id))
          << "kiln.autotune.Database.commit_records: measurement " << i + 1 << " of "
          << records.size() << " names workload " << workload_id << ", which is not in '"
          << impl_->path << "'; add it with commit_workload; nothing of the batch was stored";
      known_workloads.insert(workload_id);
    }
    ids.push_back(impl_->queries->insert_record(detail::row_of_record(records[i])));
  }
  transaction.commit();
  return ids;
}

std::vector<Record> Database::records(const RecordQuery& query) {
  const char* api = "kiln.autotune.Database.records";
  impl_->check_open(api);
  sql::RecordSelection selection;
  selection.workload_id = query.workload_id;
  if (query.target) {
    detail::check_target_key(api, *query.target);
    selection.target = detail::target_columns(*query.target);
  }
  if (query.status) selection.status = status_name(*query.status);
  selection.key_version = impl_->options.key_version;
  selection.ir_format_version = impl_->options.ir_format_version;
  return impl_->read_records(selection);
}

std::vector<Record> Database::best(int64_t workload_id, const TargetKey& target, int64_t k,
                                   ThreadMatch threads) {
  const char* api = "kiln.autotune.Database.best";
  impl_->check_open(api);
  detail::check_target_key(api, target);
  user_check(k >= 0) << api << ": k must be >= 0, found " << k;
  std::vector<Record> best;
  if (k == 0) return best;
  // Step 1. Every readable ok record on the target and device, pooled by thread count and
  // candidate: a candidate measured again (the tuner's final interleaved rounds) is judged on all
  // its samples, so that one lucky short measurement does not outrank many; samples of another
  // thread count are another measurement.
  std::map<std::pair<int, uint64_t>, Record> pooled;
  std::map<int, std::pair<int64_t, uint64_t>> winners;  // per thread count: latest id, hash
  bool has_same_threads = false;
  impl_->queries->select_best(
      workload_id, detail::target_columns(target), impl_->options.ir_format_version,
      [&](const sql::RecordRow& row) {
        std::string problem;
        std::optional<Record> record = detail::record_of_row(row, &problem);
        if (!record) {
          impl_->warn_unreadable("record", row.id, problem);
          return true;
        }
        has_same_threads |= record->target.num_threads == target.num_threads;
        if (is_verdict(record->search_json)) {
          auto& winner = winners[record->target.num_threads];
          if (record->id > winner.first) winner = {record->id, record->candidate_hash};
        }
        auto key = std::make_pair(record->target.num_threads, record->candidate_hash);
        auto it = pooled.find(key);
        if (it == pooled.end()) {
          pooled.emplace(key, std::move(*record));
        } else {
          Record& kept = it->second;
          std::vector<double> samples = kept.run_secs;
          samples.insert(samples.end(), record->run_secs.begin(), record->run_secs.end());
          // The record with more samples speaks for the candidate (the newer on a tie).
          if (record->run_secs.size() >= kept.run_secs.size()) kept = std::move(*record);
          kept.run_secs = std::move(samples);
        }
        return true;
      });
  // Step 2. The records of the key's thread count; without any, those of the other counts when
  // the caller accepts them.
  if (!has_same_threads && threads == ThreadMatch::kExact) return best;
  // Step 3. The k fastest by the median of their pooled samples.
  for (auto& [key, record] : pooled) {
    if (has_same_threads && key.first != target.num_threads) continue;
    std::vector<double> sorted = record.run_secs;
    std::sort(sorted.begin(), sorted.end());
    size_t n = sorted.size();
    double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    record.median = median;
    record.spread = median > 0 ? (sorted.back() - sorted.front()) / median : 0.0;
    best.push_back(std::move(record));
  }
  auto won = [&winners](const Record& r) {
    auto it = winners.find(r.target.num_threads);
    return it != winners.end() && it->second.second == r.candidate_hash;
  };
  std::sort(best.begin(), best.end(), [&won](const Record& a, const Record& b) {
    if (won(a) != won(b)) return won(a);
    return *a.median < *b.median || (*a.median == *b.median && a.id < b.id);
  });
  if (static_cast<int64_t>(best.size()) > k) best.resize(static_cast<size_t>(k));
  return best;
}

bool Database::is_measured(int64_t workload_id, const TargetKey& target, uint64_t candidate_hash) {
  const char* api = "kiln.autotune.Database.is_measured";
  impl_->check_open(api);
  detail::check_target_key(api, target);
  return impl_->queries->select_is_measured(workload_id, detail::target_columns(target),
                                            impl_->options.ir_format_version,
                                            detail::hash_text(candidate_hash));
}

std::vector<uint64_t> Database::measured_hashes(int64_t workload_id, const TargetKey& target) {
  const char* api = "kiln.autotune.Database.measured_hashes";
  impl_->check_open(api);
  detail::check_target_key(api, target);
  std::vector<uint64_t> hashes;
  for (const std::optional<std::string>& text : impl_->queries->select_measured_hashes(
           workload_id, detail::target_columns(target), impl_->options.ir_format_version)) {
    if (std::optional<uint64_t> hash = detail::parse_hash_text(text.value_or(""))) {
      hashes.push_back(*hash);
    } else {
      impl_->warn("kiln.autotune.Database: a candidate_hash '" + text.value_or("") + "' of '" +
                  impl_->path + "' is not 16 hex digits and is skipped");
    }
  }
  return hashes;
}

int64_t Database::count(int64_t workload_id, const TargetKey& target) {
  const char* api = "kiln.autotune.Database.count";
  impl_->check_open(api);
  detail::check_target_key(api, target);
  return impl_->queries->count_records(workload_id, detail::target_columns(target),
                                       impl_->options.ir_format_version);
}

int64_t Database::size() {
  impl_->check_open("kiln.autotune.Database.size");
  return impl_->queries->count_all_records();
}

}  // namespace kiln::autotune
