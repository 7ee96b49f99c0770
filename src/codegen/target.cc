// Parsing and validation of "llvm" target strings against LLVM's tables of triples, CPUs and
// features, the canonical form that keys the tuning database, and the properties of the vector
// unit and caches that schedules derive their tiles from.
#include "kiln/codegen/target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/TargetParser/X86TargetParser.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include "kiln/runtime/c_runtime_api.h"
#include "kiln/support/error.h"
#include "llvm_support.h"

namespace kiln::codegen {

namespace {

// The CPU targets whose parse parse_target keeps (a process builds for a few).
constexpr size_t kParsedTargetsKept = 64;

constexpr const char* kOptions =
    "-mtriple=<triple>, -mcpu=<cpu>, -mattr=<+f,-g,...>, -opt-level=<0-3>, "
    "-fp-contract=<fast|off>";

// The ISA features that decide whether compiled code runs on a CPU, by architecture.
const std::vector<std::string>& isa_feature_names(const llvm::Triple& triple) {
  static const std::vector<std::string> x86 = {
      "sse4.2",     "avx",        "avx2",       "fma",        "f16c",
      "avx512f",    "avx512cd",   "avx512dq",   "avx512bw",   "avx512vl",
      "avx512vnni", "avx512bf16", "avx512fp16", "avx512vbmi", "avxvnni",
      "amx-tile",   "amx-int8",   "amx-bf16",   "avx512ifma", "avx512vpopcntdq"};
  // Only names that /proc/cpuinfo spells the same way, which the runtime's check reads on Arm.
  static const std::vector<std::string> aarch64 = {"i8mm", "bf16", "sve", "sve2"};
  static const std::vector<std::string> none;
  if (triple.isX86()) return x86;
  if (triple.isAArch64()) return aarch64;
  return none;
}

// The feature names an -mattr entry may use; empty when the architecture has no table here.
const std::vector<std::string>& known_feature_names(const llvm::Triple& triple) {
  static const std::vector<std::string> x86 = {
#define X86_FEATURE(ENUM, STR) STR,
#include <llvm/TargetParser/X86TargetParser.def>
  };
  static const std::vector<std::string> none;
  if (triple.isX86()) return x86;
  return none;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream stream(text);
  while (std::getline(stream, item, sep)) out.push_back(item);
  return out;
}

std::string valid_cpus(const llvm::Triple& triple) {
  if (!triple.isX86()) return "see `llc -mtriple=" + triple.str() + " -mcpu=help`";
  llvm::SmallVector<llvm::StringRef, 64> names;
  llvm::X86::fillValidCPUArchList(names, triple.isArch64Bit());
  std::vector<std::string> list(names.begin(), names.end());
  return join(list, ", ");
}

std::unique_ptr<llvm::MCSubtargetInfo> subtarget_info(const llvm::Target& llvm_target,
                                                      const std::string& triple,
                                                      const std::string& cpu,
                                                      const std::string& features) {
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      llvm_target.createMCSubtargetInfo(triple, cpu, features));
  internal_check(info != nullptr) << "parse_target: LLVM has no subtarget information for "
                                  << triple;
  return info;
}

std::vector<std::string> features_in_effect(const llvm::MCSubtargetInfo& info,
                                            const llvm::Triple& triple) {
  std::vector<std::string> out;
  for (const std::string& name : isa_feature_names(triple)) {
    if (info.checkFeatures("+" + name)) out.push_back(name);
  }
  return out;
}

void parse_attrs(const std::string& value, const llvm::Triple& triple, Target* target) {
  const std::vector<std::string>& known = known_feature_names(triple);
  for (const std::string& entry : split(value, ',')) {
    user_check(entry.size() >= 2 && (entry[0] == '+' || entry[0] == '-'))
        << "parse_target: malformed -mattr entry '" << entry << "' in -mattr=" << value
        << ": expected a comma-separated list of +feature or -feature, e.g. "
           "-mattr=+avx512f,+avx512bw";
    std::string name = entry.substr(1);
    if (!known.empty()) {
      user_check(std::find(known.begin(), known.end(), name) != known.end())
          << "parse_target: unknown feature '" << name << "' in -mattr=" << value << " for "
          << triple.str() << "; the valid features are " << join(known, ", ");
    }
    target->attrs.erase(std::remove_if(target->attrs.begin(), target->attrs.end(),
                                       [&](const std::string& a) { return a.substr(1) == name; }),
                        target->attrs.end());
    target->attrs.push_back(entry);
  }
  std::sort(target->attrs.begin(), target->attrs.end(),
            [](const std::string& a, const std::string& b) { return a.substr(1) < b.substr(1); });
}

// Whether the CPU has vector fused multiply-add instructions.
bool has_vector_fma(const llvm::MCSubtargetInfo& info, const llvm::Triple& triple) {
  if (triple.isX86()) return info.checkFeatures("+fma") || info.checkFeatures("+fma4");
  if (triple.isAArch64()) return info.checkFeatures("+neon");
  return false;
}

// Fills the vector register width, the preferred width and the register count from LLVM's
// cost model. The cost model answers per function, from its "target-cpu" and "target-features"
// attributes, as it does for the code generator's functions.
void query_vector_unit(Target* target) {
  std::shared_ptr<llvm::TargetMachine> machine = detail::lease_target_machine(*target);
  llvm::LLVMContext context;
  llvm::Module module("kiln_target_query", context);
  module.setDataLayout(machine->createDataLayout());
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), false);
  auto function_of_target = [&](const char* name) {
    llvm::Function* f =
        llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, &module);
    f->addFnAttr("target-cpu", target->cpu);
    if (!target->llvm_features.empty()) f->addFnAttr("target-features", target->llvm_features);
    return f;
  };
  constexpr auto kVector = llvm::TargetTransformInfo::RGK_FixedWidthVector;

  llvm::TargetTransformInfo preferred =
      machine->getTargetTransformInfo(*function_of_target("preferred"));
  target->preferred_vector_bits =
      static_cast<int>(preferred.getRegisterBitWidth(kVector).getFixedValue());
  target->num_vector_registers =
      static_cast<int>(preferred.getNumberOfRegisters(preferred.getRegisterClassForType(true)));

  // The register width without the CPU's preference for narrower vectors: a function that
  // prefers (and needs) vectors wider than any register, as the code generator's functions
  // need the width of the explicit vectors they use.
  llvm::Function* widest = function_of_target("widest");
  widest->addFnAttr("prefer-vector-width", "65536");
  widest->addFnAttr("min-legal-vector-width", "65536");
  llvm::TargetTransformInfo registers = machine->getTargetTransformInfo(*widest);
  target->vector_register_bits =
      std::max(target->preferred_vector_bits,
               static_cast<int>(registers.getRegisterBitWidth(kVector).getFixedValue()));
}

// "32K", "512K", "32768K", "1M" (the spelling of sysfs cache sizes) in bytes; 0 when malformed.
int64_t parse_cache_size(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 12) return 0;
  int64_t value = std::stoll(text.substr(0, digits));
  std::string unit = text.substr(digits);
  if (unit.empty()) return value;
  if (unit == "K") return value << 10;
  if (unit == "M") return value << 20;
  if (unit == "G") return value << 30;
  return 0;
}

// The size of the data (or unified) cache of `level` of this process's first CPU, from Linux's
// sysfs, else from the C library; 0 when neither says.
int64_t host_cache_bytes(int level) {
  for (int index = 0; index < 16; ++index) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(dir + "level");
    if (!level_file) break;
    int this_level = 0;
    std::string type, size;
    level_file >> this_level;
    std::ifstream(dir + "type") >> type;
    std::ifstream(dir + "size") >> size;
    if (this_level == level && (type == "Data" || type == "Unified")) {
      int64_t bytes = parse_cache_size(size);
      if (bytes > 0) return bytes;
    }
  }
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && \
    defined(_SC_LEVEL3_CACHE_SIZE)
  long bytes = sysconf(level == 1   ? _SC_LEVEL1_DCACHE_SIZE
                       : level == 2 ? _SC_LEVEL2_CACHE_SIZE
                                    : _SC_LEVEL3_CACHE_SIZE);
  if (bytes > 0) return bytes;
#endif
  return 0;
}

std::optional<int64_t> known(int64_t bytes) {
  if (bytes > 0) return bytes;
  return std::nullopt;
}

constexpr const char* kGpuLimitOptions =
    "-max_threads_per_block=<n>, -max_shared_memory_per_block=<bytes>, -thread_warp_size=<n>, "
    "-fast-math";

int64_t parse_positive(const std::string& key, const std::string& value, const std::string& text) {
  bool digits =
      !value.empty() && value.size() <= 12 &&
      std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
  user_check(digits && std::stoll(value) > 0)
      << "parse_target: " << key << " must be a positive integer, found '" << value << "' in '"
      << text << "'";
  return std::stoll(value);
}

// The first device of `device_type` whose name contains `filter`, or -1 when there is none (or
// no driver: building for a GPU needs none); why not in `why` when given.
// The first device of `device_type` whose name contains `filter` ("" matches any) or, when
// `exact`, is `filter`; -1 when there is none or no driver, with the reason in `why` when given.
int32_t find_device(int32_t device_type, const std::string& filter, bool exact,
                    std::string* why = nullptr) {
  int32_t count = 0;
  if (KilnDeviceCount(device_type, &count) != 0) {
    if (why != nullptr) *why = KilnGetLastError();
    KilnSetLastError(nullptr);
    return -1;
  }
  std::string names;  // 'a', 'b'
  for (int32_t id = 0; id < count; ++id) {
    char name[256] = {0};
    if (KilnDeviceName(device_type, id, name, sizeof(name)) != 0) {
      KilnSetLastError(nullptr);
      continue;
    }
    bool match = exact ? filter == name
                       : filter.empty() || std::string(name).find(filter) != std::string::npos;
    if (match) return id;
    names += (names.empty() ? "'" : ", '") + std::string(name) + "'";
  }
  if (why == nullptr) return -1;
  if (exact) {
    *why = "no " + std::string(device_type == kDLCUDA ? "CUDA" : "OpenCL") + " device named '" +
           filter + "' (" + (names.empty() ? "no device" : "the devices: " + names) + ")";
  } else {
    *why = count == 0 ? "the driver finds no device"
                      : "none of the " + std::to_string(count) +
                            " devices has a name containing '" + filter + "' (-device)";
  }
  return -1;
}

// Attribute `attr` of a device, or 0 when it cannot be read.
int64_t device_attribute(int32_t device_type, int32_t id, KilnDeviceAttr attr) {
  int64_t value = 0;
  if (KilnDeviceAttribute(device_type, id, attr, &value) != 0) {
    KilnSetLastError(nullptr);
    return 0;
  }
  return value;
}

// A "cuda" or "opencl" target: the GPU options, with the host CPU for the host code.
Target parse_gpu_target(const std::string& kind, std::istringstream& stream,
                        const std::string& text) {
  Target target = host_target();
  target.kind = kind;
  bool cuda = kind == "cuda";
  target.arch = cuda ? "sm_80" : "";
  target.gpu.max_threads_per_block = cuda ? 1024 : 256;
  target.gpu.max_shared_memory_per_block = cuda ? 48 * 1024 : 32 * 1024;
  target.gpu.thread_warp_size = cuda ? 32 : 1;
  std::string valid =
      std::string(cuda ? "-arch=sm_<XY>, " : "-device=<name substring>, ") + kGpuLimitOptions;
  std::string option;
  std::set<std::string> given;
  while (stream >> option) {
    if (option == "-fast-math") {
      target.fast_math = true;
      continue;
    }
    size_t eq = option.find('=');
    std::string key = option.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : option.substr(eq + 1);
    user_check(eq != std::string::npos && !value.empty())
        << "parse_target: malformed option '" << option << "' in '" << text
        << "': expected -name=value; the valid options of '" << kind << "' are " << valid;
    given.insert(key);
    if (cuda && key == "-arch") {
      bool digits = value.size() >= 5 && value.size() <= 7 && value.rfind("sm_", 0) == 0 &&
                    std::all_of(value.begin() + 3, value.end(),
                                [](char c) { return (c >= '0' && c <= '9') || c == 'a'; }) &&
                    value[3] != 'a';
      user_check(digits && std::stoi(value.substr(3)) >= 50)
          << "parse_target: -arch must name a CUDA architecture sm_50 or newer such as sm_80 or "
             "sm_90, found '"
          << value << "' in '" << text << "'";
      target.arch = value;
    } else if (!cuda && key == "-device") {
      target.device = value;
    } else if (key == "-max_threads_per_block") {
      target.gpu.max_threads_per_block = parse_positive(key, value, text);
    } else if (key == "-max_shared_memory_per_block") {
      target.gpu.max_shared_memory_per_block = parse_positive(key, value, text);
    } else if (key == "-thread_warp_size") {
      target.gpu.thread_warp_size = parse_positive(key, value, text);
    } else {
      user_check(false) << "parse_target: unknown option '" << option << "' in '" << text
                        << "'; the valid options of '" << kind << "' are " << valid;
    }
  }
  // What was not given comes from the device when this machine has one (the first whose name
  // contains -device), else the defaults above stand.
  int32_t device_type = target.device_type();
  int32_t id = find_device(device_type, target.device, /*exact=*/false);
  if (id >= 0) {
    auto fill = [&](const char* key, KilnDeviceAttr attr, int64_t* out) {
      int64_t value = device_attribute(device_type, id, attr);
      if (given.count(key) == 0 && value > 0) *out = value;
    };
    fill("-max_threads_per_block", kKilnDeviceMaxThreadsPerBlock,
         &target.gpu.max_threads_per_block);
    fill("-max_shared_memory_per_block", kKilnDeviceMaxSharedMemoryPerBlock,
         &target.gpu.max_shared_memory_per_block);
    fill("-thread_warp_size", kKilnDeviceWarpSize, &target.gpu.thread_warp_size);
    int64_t capability = cuda ? device_attribute(device_type, id, kKilnDeviceComputeCapability) : 0;
    if (given.count("-arch") == 0 && capability > 0) {
      target.arch = "sm_" + std::to_string(capability);
    }
  }
  return target;
}

Target parse_cpu_target(const std::string& text, std::istringstream& stream) {
  Target target;
  target.triple = llvm::sys::getProcessTriple();
  std::string mattr;
  bool has_mattr = false;
  std::string option;
  while (stream >> option) {
    size_t eq = option.find('=');
    std::string key = option.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : option.substr(eq + 1);
    user_check(eq != std::string::npos && !value.empty() &&
               (key == "-mtriple" || key == "-mcpu" || key == "-mattr" || key == "-opt-level" ||
                key == "-fp-contract"))
        << "parse_target: unknown option '" << option << "' in '" << text
        << "'; the valid options are " << kOptions;
    if (key == "-mtriple") {
      target.triple = llvm::Triple::normalize(value);
    } else if (key == "-mcpu") {
      target.cpu = value;
    } else if (key == "-mattr") {
      mattr = value;
      has_mattr = true;
    } else if (key == "-fp-contract") {
      user_check(value == "fast" || value == "off")
          << "parse_target: -fp-contract must be fast or off, found '" << value << "' in '" << text
          << "'";
      target.fp_contract = value == "fast";
    } else {
      user_check(value.size() == 1 && value[0] >= '0' && value[0] <= '3')
          << "parse_target: -opt-level must be 0, 1, 2 or 3, found '" << value << "' in '" << text
          << "'";
      target.opt_level = value[0] - '0';
    }
  }

  llvm::Triple triple(target.triple);
  const llvm::Target& llvm_target = detail::lookup_llvm_target(target.triple, "parse_target");
  if (has_mattr) parse_attrs(mattr, triple, &target);

  bool native = triple.getArch() == llvm::Triple(llvm::sys::getProcessTriple()).getArch();
  user_check(target.cpu != "native" || native)
      << "parse_target: -mcpu=native names this machine's CPU, which cannot run " << target.triple;
  if (target.cpu == "native") target.cpu.clear();
  target.is_host = target.cpu.empty() && native;
  std::vector<std::string> features;
  if (target.is_host) {
    target.cpu = llvm::sys::getHostCPUName().str();
    llvm::StringMap<bool> host;
    if (llvm::sys::getHostCPUFeatures(host)) {
      for (const auto& entry : host) {
        features.push_back((entry.getValue() ? "+" : "-") + entry.getKey().str());
      }
      std::sort(features.begin(), features.end());
    }
  } else if (target.cpu.empty()) {
    target.cpu = "generic";
  }
  features.insert(features.end(), target.attrs.begin(), target.attrs.end());
  target.llvm_features = join(features, ",");

  // The CPU table is the same for every CPU; asking a generic subtarget avoids LLVM's warning.
  user_check(subtarget_info(llvm_target, target.triple, "", "")->isCPUStringValid(target.cpu))
      << "parse_target: unknown CPU '" << target.cpu << "' (-mcpu) for " << target.triple
      << "; the valid CPUs are " << valid_cpus(triple);
  std::unique_ptr<llvm::MCSubtargetInfo> plain =
      subtarget_info(llvm_target, target.triple, target.cpu, "");
  std::unique_ptr<llvm::MCSubtargetInfo> info =
      subtarget_info(llvm_target, target.triple, target.cpu, target.llvm_features);
  target.isa = features_in_effect(*info, triple);

  if (target.is_host) {
    // Record where the host differs from the named CPU, so the canonical string says it.
    std::vector<std::string> defaults = features_in_effect(*plain, triple);
    for (const std::string& name : isa_feature_names(triple)) {
      bool on = std::find(target.isa.begin(), target.isa.end(), name) != target.isa.end();
      bool by_default = std::find(defaults.begin(), defaults.end(), name) != defaults.end();
      bool given = std::any_of(target.attrs.begin(), target.attrs.end(),
                               [&](const std::string& a) { return a.substr(1) == name; });
      if (on != by_default && !given) target.attrs.push_back((on ? "+" : "-") + name);
    }
    std::sort(target.attrs.begin(), target.attrs.end(),
              [](const std::string& a, const std::string& b) { return a.substr(1) < b.substr(1); });
  }

  // What schedules ask: the vector unit from LLVM, the caches from the system for the host.
  target.has_fma = has_vector_fma(*info, triple);
  query_vector_unit(&target);
  if (target.is_host) {
    // Read once: every build parses its target.
    static const int64_t l1d = host_cache_bytes(1), l2 = host_cache_bytes(2),
                         l3 = host_cache_bytes(3);
    target.l1d_cache_bytes = known(l1d);
    target.l2_cache_bytes = known(l2);
    target.l3_cache_bytes = known(l3);
  }
  return target;
}

}  // namespace

Target parse_target(const std::string& text) {
  detail::initialize_llvm();
  std::istringstream stream(text);
  std::string kind;
  stream >> kind;
  if (kind == "cuda" || kind == "opencl") return parse_gpu_target(kind, stream, text);
  user_check(kind == "llvm") << "parse_target: unknown target kind '" << kind << "' in '" << text
                             << "'; the valid kinds are 'llvm' (options " << kOptions
                             << "), 'cuda' and 'opencl'";
  // A CPU target's meaning depends on its text and this machine only, and every build parses
  // one (LLVM's subtarget tables are read three times in a parse): the last ones parsed are
  // kept. A text that fails raises every time.
  static std::mutex mutex;
  static std::map<std::string, Target> parsed;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = parsed.find(text);
    if (it != parsed.end()) return it->second;
  }
  Target target = parse_cpu_target(text, stream);
  std::lock_guard<std::mutex> lock(mutex);
  if (parsed.size() >= kParsedTargetsKept) parsed.clear();
  parsed.emplace(text, target);
  return target;
}

int32_t Target::device_type() const {
  return kind == "cuda" ? kDLCUDA : kind == "opencl" ? kDLOpenCL : kDLCPU;
}

int32_t find_gpu_device(const Target& target, std::string* why) {
  user_check(target.is_gpu()) << "find_gpu_device: expected a GPU target, found '" << target.str()
                              << "'";
  return find_device(target.device_type(), target.device, /*exact=*/false, why);
}

int32_t find_named_gpu_device(const Target& target, const std::string& name, std::string* why) {
  user_check(target.is_gpu()) << "find_named_gpu_device: expected a GPU target, found '"
                              << target.str() << "'";
  return find_device(target.device_type(), name, /*exact=*/true, why);
}

int64_t gpu_device_attribute(const Target& target, int32_t id, int32_t attribute) {
  return device_attribute(target.device_type(), id, static_cast<KilnDeviceAttr>(attribute));
}

int Target::compute_capability() const {
  if (kind != "cuda" || arch.size() < 5) return 0;
  return std::stoi(arch.substr(3));
}

std::string Target::str() const {
  if (is_gpu()) {
    std::string out = kind;
    if (!arch.empty()) out += " -arch=" + arch;
    if (!device.empty()) out += " -device=" + device;
    out += " -max_threads_per_block=" + std::to_string(gpu.max_threads_per_block);
    out += " -max_shared_memory_per_block=" + std::to_string(gpu.max_shared_memory_per_block);
    out += " -thread_warp_size=" + std::to_string(gpu.thread_warp_size);
    if (fast_math) out += " -fast-math";
    return out;
  }
  std::string out = "llvm -mtriple=" + triple + " -mcpu=" + cpu;
  if (!attrs.empty()) out += " -mattr=" + join(attrs, ",");
  if (opt_level != 3) out += " -opt-level=" + std::to_string(opt_level);
  if (!fp_contract) out += " -fp-contract=off";
  return out;
}

bool Target::has_feature(const std::string& name) const {
  return std::find(isa.begin(), isa.end(), name) != isa.end();
}

std::vector<std::string> Target::intrinsic_features() const {
  if (kind == "llvm") return isa;
  if (kind != "cuda") return {};
  // The architectures NVRTC knows, oldest first; an architecture includes the instructions of
  // every older one (not of the arch-specific "a" variants).
  static const int levels[] = {50, 52, 53, 60, 61,  62,  70,  72,  75,  80,
                               86, 87, 89, 90, 100, 101, 103, 110, 120, 121};
  int capability = compute_capability();
  std::vector<std::string> features;
  for (int level : levels) {
    if (level <= capability) features.push_back("sm_" + std::to_string(level));
  }
  std::string own = "sm_" + std::to_string(capability);
  if (std::find(features.begin(), features.end(), own) == features.end()) features.push_back(own);
  if (arch != own) features.push_back(arch);
  return features;
}

int Target::vector_lanes(const ir::DataType& dtype) const {
  user_check(dtype.is_scalar() && !dtype.is_handle())
      << "Target.vector_lanes: expected a scalar element dtype such as float32, found "
      << dtype.str() << " (target " << str() << ")";
  return std::max(1, vector_register_bits / dtype.bits());
}

int Target::vector_lanes_dividing(const ir::DataType& dtype, int64_t extent) const {
  int lanes = vector_lanes(dtype);
  while (lanes > 1) {
    if (extent > 0 && extent % lanes == 0) return lanes;
    if (lanes * dtype.bits() <= 256) break;
    lanes /= 2;
  }
  return 1;
}

const Target& host_target() {
  static const Target host = parse_target("llvm");
  return host;
}

}  // namespace kiln::codegen
