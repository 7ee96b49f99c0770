// The tuning database: the workloads kiln has tuned and the measured records of their candidate
// schedules, kept in one SQLite file that later builds consult and that several tuning processes
// may write at once. The schema, its migrations and every query live in autotune/database_sql.cc.
//
// Guarantees:
//  * A record is found only for its own workload, on the same full target string AND the same
//    device (CPU model name and features; GPU name and CUDA compute capability or OpenCL driver
//    version): records never cross targets or machines of different models.
//  * A record also carries the number of threads its kernel ran on. The tuner's lookups
//    (is_measured, measured_hashes, count) match it exactly, so that tuning for 1 thread and
//    then for 2 tunes both; best prefers it and falls back to other thread counts (see best).
//  * commit_records stores a batch in one transaction: all of it or nothing. A tuning process
//    killed with SIGKILL loses at most the batch it was committing.
//  * Two processes may tune into one file: the file is in WAL mode, a writer waits up to the busy
//    timeout for another's transaction, and a workload added by both is stored once.
//  * Records written by a kiln with another workload key version or IR format version are
//    ignored, with a warning (take_warnings), never misapplied. A row that cannot be read (a
//    malformed column after a manual edit) is skipped with a warning; it never stops a query.
//  * A corrupt file, a file that is not a SQLite database, a SQLite database of another program
//    and a tuning database of a newer schema version are refused by open with a kRuntime error
//    naming the path.
//
// Threads: one Database is used by one thread at a time. Two Database objects (in one process or
// in two) may share a file.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::autotune {

// The workload key this kiln writes and reads: version 1 is kiln::ir::structural_hash (the
// contract of kiln/ir/structural.h). A change of that contract must bump it.
constexpr int kWorkloadKeyVersion = 1;
// The IR format version this kiln writes in records and reads from them: the version of the JSON
// forms of the function and of the schedule trace. A change of either must bump it.
constexpr int kIrFormatVersion = 1;
// The version of the database schema that this kiln creates; older files are migrated to it.
int schema_version();

// How a measured candidate ended.
enum class RecordStatus {
  kOk,           // built, ran, computed the right result: its run times count
  kBuildError,   // lowering or code generation failed
  kRunError,     // the compiled function returned an error
  kWrongResult,  // ran, but its output differs from the untuned function's
  kTimeout,      // did not finish within the runner's time limit
  kCrash,        // the measuring process died (a signal such as SIGSEGV or SIGILL)
};
// The name stored in the database: "ok", "build_error", "run_error", "wrong_result", "timeout",
// "crash".
const char* status_name(RecordStatus status);
// The status of a stored name, or nothing for an unknown one.
std::optional<RecordStatus> parse_status(const std::string& name);

// A tuned function: the key (key version and structural hash) and the serialized function that
// confirms a match, since several functions may share a hash.
struct Workload {
  int64_t id = 0;
  int key_version = kWorkloadKeyVersion;
  uint64_t structural_hash = 0;
  std::string func_json;  // the serialized function, stored as given
  std::string created;    // ISO 8601 UTC, e.g. "2024-05-01T12:00:00.000Z"
};

// Where a record was measured. Every lookup matches target, device_model and device_features
// exactly; num_threads is matched exactly by the tuner's lookups and preferred by best.
struct TargetKey {
  // The canonical target string, e.g. "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver3
  // -mattr=+avx2,+fma"; its first word is the target kind.
  std::string target;
  // The device's model: the CPU model name ("AMD EPYC 7B13") or the GPU's name as its driver
  // reports it ("NVIDIA H100 80GB HBM3").
  std::string device_model;
  // The device's features as the runner reports them: the CPU's ISA features, e.g. "avx2,fma"
  // (may be empty); a CUDA GPU's compute capability ("sm_90"); an OpenCL device's driver
  // version ("driver=5.0+debian").
  std::string device_features;
  // The threads the kernel ran on (the runtime's count in the measuring process, never "the
  // default"); 0: unknown, as for the records of a database of schema version 2 or older. 1 for
  // a GPU target (kGpuKeyThreads in runner.h: one host thread launches the kernels).
  int num_threads = 0;
};

// Which thread counts Database::best considers.
enum class ThreadMatch {
  kExact,      // only records measured with the key's num_threads (the tuner's own lookups)
  kPreferred,  // those, else the records of every other thread count (a build's lookup)
};

// What the runner measured for one candidate schedule: the input of commit_records.
struct Measurement {
  int64_t workload_id = 0;
  TargetKey target;
  std::string trace_json;        // the candidate's trace (a JSON object), stored compact
  uint64_t candidate_hash = 0;   // structural hash of the scheduled function: the dedupe key
  std::vector<double> run_secs;  // every repeat, in seconds (required when status is kOk)
  RecordStatus status = RecordStatus::kOk;
  std::string error;         // why the candidate failed (empty when ok)
  std::string kiln_version;  // the kiln that measured it
  int ir_format_version = kIrFormatVersion;
  // What the search knew of the candidate (a JSON object, stored compact), e.g.
  // {"generation": 3, "predicted_score": 0.82}.
  std::string search_json = "{}";
};

// A stored record: a measurement plus what the database derived from it.
struct Record : Measurement {
  int64_t id = 0;
  std::string target_kind;       // the first word of the target: "llvm", "cuda" …
  std::optional<double> median;  // median of run_secs; empty when there are none
  std::optional<double> spread;  // (max - min) / median of run_secs; empty when there are none
  std::string created;           // ISO 8601 UTC
};

// What records() returns: the records of one workload or of all, of one target key (thread count
// included) or of all, of one status or of all, oldest first. Tuning lookups (best, is_measured,
// count) always name one workload and one target key; a query without them is for listing.
struct RecordQuery {
  std::optional<int64_t> workload_id;
  std::optional<TargetKey> target;
  std::optional<RecordStatus> status;
};

struct OpenOptions {
  // The versions this kiln reads; records and workloads of other versions are ignored.
  // Only tests and tools that read old data change them.
  int key_version = kWorkloadKeyVersion;
  int ir_format_version = kIrFormatVersion;
  // How long a write waits for another process's transaction before it fails.
  double busy_timeout_s = 10.0;
};

// What merge did.
struct MergeSummary {
  int64_t workloads_added = 0;
  int64_t records_added = 0;
  int64_t duplicates = 0;    // already present (same workload, target key, candidate, time)
  int64_t incompatible = 0;  // records of another key or IR format version (with a warning)
  int64_t unreadable = 0;    // rows or lines that could not be read (with a warning)
};

// Confirms that a stored workload's function is the one being looked up (the caller deserializes
// `stored_func_json` and compares structurally).
using WorkloadMatch = std::function<bool(const std::string& stored_func_json)>;
// Whether two serialized functions are the same workload (merge's equality).
using WorkloadEqual = std::function<bool(const std::string& a_json, const std::string& b_json)>;

class Database {
 public:
  // Opens the tuning database at `path`, creating it (and nothing else: the directory must
  // exist) when there is no file or an empty one, and migrating a file of an older schema
  // version. Raises a kRuntime error naming the path for a file that cannot be opened, is not a
  // SQLite database, is corrupt, belongs to another program or has a newer schema version.
  static std::unique_ptr<Database> open(const std::string& path, const OpenOptions& options = {});
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const;
  // Closes the file; any later call raises a kValue error. The destructor closes too.
  void close();

  // The workload of this key version with `structural_hash` whose stored function `matches`
  // confirms, added (with `func_json`) when there is none. Atomic: two processes adding the same
  // function store it once.
  Workload commit_workload(uint64_t structural_hash, const std::string& func_json,
                           const WorkloadMatch& matches);
  // The same lookup without adding.
  std::optional<Workload> find_workload(uint64_t structural_hash, const WorkloadMatch& matches);
  // Every workload of this key version, oldest first.
  std::vector<Workload> workloads();

  // Stores a measured batch in one transaction and returns the new record ids, in order. Every
  // measurement is checked first (a known workload, a target key, a JSON trace, positive finite
  // run times, run times when ok); any failure raises a kValue error naming the measurement and
  // stores nothing of the batch.
  std::vector<int64_t> commit_records(const std::vector<Measurement>& batch);

  std::vector<Record> records(const RecordQuery& query = {});
  // The k fastest candidates of `workload_id` on `target` among ok records measured with
  // target.num_threads threads: one record per candidate hash (the one with the most samples),
  // whose run_secs pool the samples of all the candidate's ok records and whose median and
  // spread are those of the pool; by median, ties by id. The candidate of the latest record
  // whose search_json says {"winner": true} (the tuner's verdict after its final interleaved
  // rounds, which timed the top candidates side by side) comes first: samples taken at other
  // times compare less well when the machine's speed moved. With ThreadMatch::kPreferred and
  // no such record, the k fastest of the records of every other thread count (unknown
  // included), pooled per candidate and thread count; each says its count in
  // target.num_threads.
  std::vector<Record> best(int64_t workload_id, const TargetKey& target, int64_t k,
                           ThreadMatch threads = ThreadMatch::kPreferred);
  // Whether a candidate with `candidate_hash` was measured (with any status) for the workload on
  // the target with its thread count: the tuner never measures a schedule twice.
  bool is_measured(int64_t workload_id, const TargetKey& target, uint64_t candidate_hash);
  // The distinct candidate hashes measured for the workload on the target with its thread
  // count, ascending.
  std::vector<uint64_t> measured_hashes(int64_t workload_id, const TargetKey& target);
  // How many trials were spent on the workload on the target with its thread count (records of
  // any status): a resumed run spends only the rest of its budget.
  int64_t count(int64_t workload_id, const TargetKey& target);
  // The number of records in the file, of every version.
  int64_t size();

  // Writes every readable workload and record (of every version) to a JSON-lines file: a header
  // line, then one line per workload, then one per record. Returns the number of records.
  int64_t export_jsonl(const std::string& path);
  // Adds the workloads and records of another tuning database file or JSON-lines export, in one
  // transaction, skipping records already present (same workload, target key and candidate
  // hash). Workloads match by key version, hash and `equal` (text equality when empty).
  MergeSummary merge(const std::string& path, const WorkloadEqual& equal = nullptr);

  // The warnings collected since the last call (ignored versions, unreadable rows), each once.
  std::vector<std::string> take_warnings();

  struct Impl;

 private:
  explicit Database(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::autotune
