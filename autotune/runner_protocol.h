// The messages between the local runner and its worker process, over one stream socket. A
// frame is the magic "KTW1", the byte length of a JSON header (uint32, little-endian), the
// header, then the blobs (module text, reference results) whose byte sizes the header lists
// under "blobs": bulky data never goes through JSON escaping.
//
// The conversation (parent -> worker, worker -> parent):
//   on start                        <- hello {protocol}
//   task {target, seed, ...} [func, reference func?, reference?, (desc, impl) per intrinsic]
//                                   <- task_ready {restore_each_call, num_threads} [reference?]
//                                      | task_error
//   candidate {slot, fault, timing} [module]
//                                   <- phase {phase} ... then result {status, run_secs, ...}
//   time {slot}                     <- result (one more round of a kept candidate)
//   time {slot, timing}             <- result (a staged candidate timed; the worker drops it)
//   release                         (drops the kept candidates; no answer)
// The worker answers one request at a time and exits at the end of its input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/autotune/runner.h"

namespace kiln::autotune::detail {

using Json = nlohmann::json;

// Bumped whenever a message changes; the parent refuses a worker that says another version.
constexpr int kProtocolVersion = 7;

struct Message {
  Json header;                     // an object with "type"
  std::vector<std::string> blobs;  // raw bytes, in order
};

// The bytes of one frame.
std::string encode_frame(const Message& message);

// Collects bytes as they arrive and cuts them into messages. A malformed frame is a kInternal
// error (both ends are kiln).
class FrameReader {
 public:
  void feed(const char* data, size_t size);
  // The next complete message, or nothing until more bytes arrive.
  std::optional<Message> next();
  // Whether bytes of an unfinished frame are waiting.
  bool partial() const { return !buffer_.empty(); }

 private:
  std::string buffer_;
};

// Blocking I/O for the worker, which has nothing else to do: write a whole frame, read the next
// one (nothing at the end of the input). EINTR is retried; other failures are kRuntime errors.
void write_message(int fd, const Message& message);
std::optional<Message> read_message(int fd);

// ---- The requests and answers ---------------------------------------------------------------

// What the worker needs to know about the task.
struct TaskRequest {
  std::string func_json;  // the untuned function (ir::save_json)
  // A schedule of it that computes the reference results instead (TuneTask::reference; empty:
  // the untuned function computes them).
  std::string reference_func_json;
  std::string target;  // canonical target string
  // A GPU target's device as the parent's records name it (TargetKey::device_model); the
  // worker measures on the device of that name or on none. Empty for a CPU target.
  std::string device_name;
  uint64_t seed = 0;
  int num_threads = 0;
  bool flush_cache = false;
  bool vary_placement = false;   // RunnerConfig::vary_placement
  std::string object_cache_dir;  // RunnerConfig::object_cache_dir
  bool check_correctness = true;
  double rtol = 0, atol = 0;
  // Given when the parent already has them (a replacement worker): the reference results and
  // whether the function needs its arguments restored before each call.
  std::optional<std::string> reference;
  bool restore_each_call = false;
  // The libraries the parent opened with KilnLoadLibrary: extern calls may need them.
  std::vector<std::string> libraries;
  // The tensor intrinsics registered in the parent (ones registered from Python included): a
  // candidate's build checks the features of those it uses, by name.
  struct Intrinsic {
    std::string name;
    std::string desc_json, impl_json;  // ir::save_json of the PrimFuncs
    std::vector<std::string> required_features;
  };
  std::vector<Intrinsic> intrinsics;
};
Message to_message(const TaskRequest& request);
TaskRequest task_request_of(const Message& message);

// The timing of a candidate: the warm-up, the calls per repeat (0: picked from min_repeat_ms),
// the repeats, and the placement of the arguments for the first repeat (the next ones take the
// next placements; see TaskArguments::place), used when the task varies placements.
struct TimingRequest {
  int warmup = 0, number = 0, repeat = 0;
  double min_repeat_ms = 0;
  int64_t placement = 0;
};

// One candidate: build, check, then timing.repeat timed repeats, or with timing.repeat -1 (and
// slot >= 0) staged: kept built under `slot`, untimed, for later `time` requests.
struct CandidateRequest {
  int slot = -1;
  std::string module_json;
  std::string fault;
  TimingRequest timing;
};
Message to_message(const CandidateRequest& request);
CandidateRequest candidate_request_of(const Message& message);

// One more round of the candidate kept in `slot` (run_interleaved, and the rounds of run after
// the first), its arguments at `placement`.
Message time_request(int slot, int64_t placement);
// The placement of a `time` request for one more round.
int64_t placement_of(const Message& message);
// The full timing of the candidate staged in `slot`, which the worker then drops, or with
// `keep` keeps for more rounds, its calls per repeat settled by this timing.
Message time_request(int slot, const TimingRequest& timing, bool keep = false);
// The timing a `time` request carries: nothing for one more round of a kept candidate.
std::optional<TimingRequest> timing_of(const Message& message);
// Whether a `time` request with a timing asks the worker to keep the candidate.
bool keeps_candidate(const Message& message);
Message release_request();

// The worker's first message, with its kProtocolVersion.
Message hello_message();
// Progress of the request in flight: "build", "check" or "measure" (for the parent's messages
// about a candidate that hangs or crashes), with the build time once it is known (>= 0), so
// that a candidate that kills the worker still has it.
Message phase_message(const std::string& phase, double build_ms = -1);

// The reference is ready; the blob is there when the worker computed it.
struct TaskReady {
  bool restore_each_call = false;
  int num_threads = 0;  // the kernel threads in effect in the worker (the default resolved)
  std::optional<std::string> reference;
};
Message to_message(const TaskReady& ready);
TaskReady task_ready_of(const Message& message);
// The untuned function failed to build or run: the worker's message (the task is unusable).
Message task_error_message(const std::string& error);

// A candidate's result as the worker reports it.
Message to_message(const MeasureResult& result);
MeasureResult measure_result_of(const Message& message);

// The type of a message ("hello", "task", ...); a kInternal error when it has none.
std::string type_of(const Message& message);

}  // namespace kiln::autotune::detail
