// Frames and messages of the runner-worker protocol (see runner_protocol.h).
#include "autotune/runner_protocol.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kiln/support/error.h"

namespace kiln::autotune::detail {

namespace {

constexpr char kMagic[4] = {'K', 'T', 'W', '1'};
constexpr size_t kPrefixBytes = 8;  // the magic and the header length
// Limits that only a corrupt frame passes: a header is a few hundred bytes, a blob a module or
// the reference results of one function.
constexpr uint32_t kMaxHeaderBytes = 64u << 20;
constexpr uint64_t kMaxBlobBytes = uint64_t{1} << 40;

void put_u32(std::string* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint32_t get_u32(const char* p) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return value;
}

// The blob sizes a header lists, checked.
std::vector<uint64_t> blob_sizes(const Json& header) {
  std::vector<uint64_t> sizes;
  auto it = header.find("blobs");
  if (it == header.end()) return sizes;
  internal_check(it->is_array()) << "tune worker protocol: \"blobs\" is not an array";
  for (const Json& size : *it) {
    internal_check(size.is_number_unsigned() && size.get<uint64_t>() <= kMaxBlobBytes)
        << "tune worker protocol: bad blob size " << size.dump();
    sizes.push_back(size.get<uint64_t>());
  }
  return sizes;
}

// A field of a message, with a kInternal error naming it when it is missing or mistyped.
template <class T>
T field(const Message& message, const char* name) {
  auto it = message.header.find(name);
  internal_check(it != message.header.end())
      << "tune worker protocol: message " << message.header.dump() << " lacks \"" << name << "\"";
  try {
    return it->get<T>();
  } catch (const Json::exception& e) {
    internal_error << "tune worker protocol: field \"" << name << "\" of " << message.header.dump()
                   << ": " << e.what();
  }
}

Message typed(const char* type) {
  Message message;
  message.header = Json::object();
  message.header["type"] = type;
  return message;
}

void expect_type(const Message& message, const char* type) {
  internal_check(type_of(message) == type) << "tune worker protocol: expected a \"" << type
                                           << "\" message, found " << message.header.dump();
}

}  // namespace

std::string encode_frame(const Message& message) {
  Json header = message.header;
  if (!message.blobs.empty()) {
    Json sizes = Json::array();
    for (const std::string& blob : message.blobs) sizes.push_back(uint64_t{blob.size()});
    header["blobs"] = sizes;
  }
  std::string text = header.dump();
  internal_check(text.size() <= kMaxHeaderBytes) << "tune worker protocol: header too large";
  std::string frame(kMagic, sizeof(kMagic));
  put_u32(&frame, static_cast<uint32_t>(text.size()));
  frame += text;
  for (const std::string& blob : message.blobs) frame += blob;
  return frame;
}

void FrameReader::feed(const char* data, size_t size) {
  buffer_.append(data, size);
}

std::optional<Message> FrameReader::next() {
  if (buffer_.size() < kPrefixBytes) return std::nullopt;
  internal_check(std::memcmp(buffer_.data(), kMagic, sizeof(kMagic)) == 0)
      << "tune worker protocol: a frame does not start with the magic KTW1";
  uint32_t header_bytes = get_u32(buffer_.data() + 4);
  internal_check(header_bytes <= kMaxHeaderBytes) << "tune worker protocol: header too large";
  if (buffer_.size() < kPrefixBytes + header_bytes) return std::nullopt;
  Message message;
  try {
    message.header =
        Json::parse(buffer_.begin() + kPrefixBytes, buffer_.begin() + kPrefixBytes + header_bytes);
  } catch (const Json::exception& e) {
    internal_error << "tune worker protocol: unreadable header: " << e.what();
  }
  internal_check(message.header.is_object()) << "tune worker protocol: header is not an object";
  std::vector<uint64_t> sizes = blob_sizes(message.header);
  uint64_t total = kPrefixBytes + header_bytes;
  for (uint64_t size : sizes) total += size;
  if (buffer_.size() < total) return std::nullopt;
  size_t offset = kPrefixBytes + header_bytes;
  for (uint64_t size : sizes) {
    message.blobs.push_back(buffer_.substr(offset, size));
    offset += size;
  }
  message.header.erase("blobs");
  buffer_.erase(0, total);
  return message;
}

void write_message(int fd, const Message& message) {
  std::string frame = encode_frame(message);
  size_t done = 0;
  while (done < frame.size()) {
    ssize_t n = ::write(fd, frame.data() + done, frame.size() - done);
    if (n < 0 && errno == EINTR) continue;
    runtime_check(n > 0) << "tune worker: cannot write to the runner: " << std::strerror(errno);
    done += static_cast<size_t>(n);
  }
}

std::optional<Message> read_message(int fd) {
  static thread_local FrameReader reader;
  char chunk[1 << 16];
  for (;;) {
    if (std::optional<Message> message = reader.next()) return message;
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    runtime_check(n >= 0) << "tune worker: cannot read from the runner: " << std::strerror(errno);
    if (n == 0) {
      internal_check(!reader.partial()) << "tune worker protocol: the input ends inside a frame";
      return std::nullopt;
    }
    reader.feed(chunk, static_cast<size_t>(n));
  }
}

std::string type_of(const Message& message) {
  auto it = message.header.find("type");
  internal_check(it != message.header.end() && it->is_string())
      << "tune worker protocol: a message without a type: " << message.header.dump();
  return it->get<std::string>();
}

Message to_message(const TaskRequest& request) {
  Message message = typed("task");
  Json& h = message.header;
  h["target"] = request.target;
  h["device_name"] = request.device_name;
  h["seed"] = request.seed;
  h["num_threads"] = request.num_threads;
  h["flush_cache"] = request.flush_cache;
  h["vary_placement"] = request.vary_placement;
  h["object_cache_dir"] = request.object_cache_dir;
  h["check_correctness"] = request.check_correctness;
  h["rtol"] = request.rtol;
  h["atol"] = request.atol;
  h["has_reference"] = request.reference.has_value();
  h["has_reference_func"] = !request.reference_func_json.empty();
  h["restore_each_call"] = request.restore_each_call;
  h["libraries"] = request.libraries;
  Json intrinsics = Json::array();
  for (const TaskRequest::Intrinsic& intrin : request.intrinsics) {
    intrinsics.push_back({{"name", intrin.name}, {"required_features", intrin.required_features}});
  }
  h["intrinsics"] = intrinsics;
  message.blobs.push_back(request.func_json);
  if (!request.reference_func_json.empty()) message.blobs.push_back(request.reference_func_json);
  if (request.reference) message.blobs.push_back(*request.reference);
  for (const TaskRequest::Intrinsic& intrin : request.intrinsics) {
    message.blobs.push_back(intrin.desc_json);
    message.blobs.push_back(intrin.impl_json);
  }
  return message;
}

TaskRequest task_request_of(const Message& message) {
  expect_type(message, "task");
  TaskRequest request;
  request.target = field<std::string>(message, "target");
  request.device_name = field<std::string>(message, "device_name");
  request.seed = field<uint64_t>(message, "seed");
  request.num_threads = field<int>(message, "num_threads");
  request.flush_cache = field<bool>(message, "flush_cache");
  request.vary_placement = field<bool>(message, "vary_placement");
  request.object_cache_dir = field<std::string>(message, "object_cache_dir");
  request.check_correctness = field<bool>(message, "check_correctness");
  request.rtol = field<double>(message, "rtol");
  request.atol = field<double>(message, "atol");
  request.restore_each_call = field<bool>(message, "restore_each_call");
  request.libraries = field<std::vector<std::string>>(message, "libraries");
  bool has_reference = field<bool>(message, "has_reference");
  bool has_reference_func = field<bool>(message, "has_reference_func");
  Json intrinsics = field<Json>(message, "intrinsics");
  size_t first_intrinsic = 1 + (has_reference_func ? 1 : 0) + (has_reference ? 1 : 0);
  internal_check(intrinsics.is_array() &&
                 message.blobs.size() == first_intrinsic + 2 * intrinsics.size())
      << "tune worker protocol: a task message with " << message.blobs.size() << " blobs";
  request.func_json = message.blobs[0];
  if (has_reference_func) request.reference_func_json = message.blobs[1];
  if (has_reference) request.reference = message.blobs[first_intrinsic - 1];
  for (size_t i = 0; i < intrinsics.size(); ++i) {
    TaskRequest::Intrinsic intrin;
    intrin.name = intrinsics[i].at("name").get<std::string>();
    intrin.required_features =
        intrinsics[i].at("required_features").get<std::vector<std::string>>();
    intrin.desc_json = message.blobs[first_intrinsic + 2 * i];
    intrin.impl_json = message.blobs[first_intrinsic + 2 * i + 1];
    request.intrinsics.push_back(std::move(intrin));
  }
  return request;
}

namespace {

// The fields of a TimingRequest, in a candidate or a time request.
void put_timing(const TimingRequest& timing, Json* header) {
  (*header)["warmup"] = timing.warmup;
  (*header)["number"] = timing.number;
  (*header)["repeat"] = timing.repeat;
  (*header)["min_repeat_ms"] = timing.min_repeat_ms;
  (*header)["placement"] = timing.placement;
}

TimingRequest timing_fields(const Message& message) {
  TimingRequest timing;
  timing.warmup = field<int>(message, "warmup");
  timing.number = field<int>(message, "number");
  timing.repeat = field<int>(message, "repeat");
  timing.min_repeat_ms = field<double>(message, "min_repeat_ms");
  timing.placement = field<int64_t>(message, "placement");
  return timing;
}

}  // namespace

Message to_message(const CandidateRequest& request) {
  Message message = typed("candidate");
  Json& h = message.header;
  h["slot"] = request.slot;
  h["fault"] = request.fault;
  put_timing(request.timing, &h);
  message.blobs.push_back(request.module_json);
  return message;
}

CandidateRequest candidate_request_of(const Message& message) {
  expect_type(message, "candidate");
  internal_check(message.blobs.size() == 1) << "tune worker protocol: a candidate without module";
  CandidateRequest request;
  request.slot = field<int>(message, "slot");
  request.fault = field<std::string>(message, "fault");
  request.timing = timing_fields(message);
  request.module_json = message.blobs[0];
  return request;
}

Message time_request(int slot, int64_t placement) {
  Message message = typed("time");
  message.header["slot"] = slot;
  message.header["placement"] = placement;
  return message;
}

int64_t placement_of(const Message& message) {
  expect_type(message, "time");
  return field<int64_t>(message, "placement");
}

Message time_request(int slot, const TimingRequest& timing, bool keep) {
  Message message = typed("time");
  message.header["slot"] = slot;
  put_timing(timing, &message.header);
  message.header["keep"] = keep;
  return message;
}

bool keeps_candidate(const Message& message) {
  expect_type(message, "time");
  return message.header.value("keep", false);
}

std::optional<TimingRequest> timing_of(const Message& message) {
  expect_type(message, "time");
  if (!message.header.contains("repeat")) return std::nullopt;
  return timing_fields(message);
}

Message release_request() {
  return typed("release");
}

Message to_message(const MeasureResult& result) {
  Message message = typed("result");
  Json& h = message.header;
  h["status"] = status_name(result.status);
  h["run_secs"] = result.run_secs;
  h["error"] = result.error;
  h["build_ms"] = result.build_ms;
  h["build_from_cache"] = result.build_from_cache;
  h["number"] = result.number;
  return message;
}

MeasureResult measure_result_of(const Message& message) {
  expect_type(message, "result");
  MeasureResult result;
  std::string status = field<std::string>(message, "status");
  std::optional<RecordStatus> parsed = parse_status(status);
  internal_check(parsed.has_value()) << "tune worker protocol: unknown status " << status;
  result.status = *parsed;
  result.run_secs = field<std::vector<double>>(message, "run_secs");
  result.error = field<std::string>(message, "error");
  result.build_ms = field<double>(message, "build_ms");
  result.build_from_cache = field<bool>(message, "build_from_cache");
  result.number = field<int>(message, "number");
  return result;
}

Message hello_message() {
  Message message = typed("hello");
  message.header["protocol"] = kProtocolVersion;
  return message;
}

Message phase_message(const std::string& phase, double build_ms) {
  Message message = typed("phase");
  message.header["phase"] = phase;
  if (build_ms >= 0) message.header["build_ms"] = build_ms;
  return message;
}

Message to_message(const TaskReady& ready) {
  Message message = typed("task_ready");
  message.header["restore_each_call"] = ready.restore_each_call;
  message.header["num_threads"] = ready.num_threads;
  if (ready.reference) message.blobs.push_back(*ready.reference);
  return message;
}

TaskReady task_ready_of(const Message& message) {
  expect_type(message, "task_ready");
  TaskReady ready;
  ready.restore_each_call = field<bool>(message, "restore_each_call");
  ready.num_threads = field<int>(message, "num_threads");
  internal_check(message.blobs.size() <= 1) << "tune worker protocol: task_ready with 2 blobs";
  if (!message.blobs.empty()) ready.reference = message.blobs[0];
  return ready;
}

Message task_error_message(const std::string& error) {
  Message message = typed("task_error");
  message.header["error"] = error;
  return message;
}

}  // namespace kiln::autotune::detail
