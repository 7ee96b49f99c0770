// Host CPU feature detection for the module target check. Known x86 features come from a table of
// cpuid bits; anything else falls back to the flags line of /proc/cpuinfo, so a new feature name
// works as soon as the kernel reports it.
#include "cpu_features.h"

#include <atomic>
#include <cstdio>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace kiln {
namespace runtime {
namespace {

#if defined(__x86_64__) || defined(__i386__)

enum Register { kEax, kEbx, kEcx, kEdx };
// Which register state the OS must save for a feature to be usable.
enum OsState { kNone, kAvxState, kAvx512State, kAmxState };

struct X86Feature {
  const char* name;
  unsigned leaf;
  unsigned subleaf;
  Register reg;
  int bit;
  OsState state;
};

constexpr X86Feature kX86Features[] = {
    {"sse", 1, 0, kEdx, 25, kNone},
    {"sse2", 1, 0, kEdx, 26, kNone},
    {"sse3", 1, 0, kEcx, 0, kNone},
    {"pclmul", 1, 0, kEcx, 1, kNone},
    {"ssse3", 1, 0, kEcx, 9, kNone},
    {"fma", 1, 0, kEcx, 12, kAvxState},
    {"cx16", 1, 0, kEcx, 13, kNone},
    {"sse4.1", 1, 0, kEcx, 19, kNone},
    {"sse4.2", 1, 0, kEcx, 20, kNone},
    {"movbe", 1, 0, kEcx, 22, kNone},
    {"popcnt", 1, 0, kEcx, 23, kNone},
    {"aes", 1, 0, kEcx, 25, kNone},
    {"xsave", 1, 0, kEcx, 26, kNone},
    {"avx", 1, 0, kEcx, 28, kAvxState},
    {"f16c", 1, 0, kEcx, 29, kAvxState},
    {"rdrnd", 1, 0, kEcx, 30, kNone},
    {"bmi", 7, 0, kEbx, 3, kNone},
    {"avx2", 7, 0, kEbx, 5, kAvxState},
    {"bmi2", 7, 0, kEbx, 8, kNone},
    {"avx512f", 7, 0, kEbx, 16, kAvx512State},
    {"avx512dq", 7, 0, kEbx, 17, kAvx512State},
    {"rdseed", 7, 0, kEbx, 18, kNone},
    {"adx", 7, 0, kEbx, 19, kNone},
    {"avx512ifma", 7, 0, kEbx, 21, kAvx512State},
    {"avx512cd", 7, 0, kEbx, 28, kAvx512State},
    {"sha", 7, 0, kEbx, 29, kNone},
    {"avx512bw", 7, 0, kEbx, 30, kAvx512State},
    {"avx512vl", 7, 0, kEbx, 31, kAvx512State},
    {"avx512vbmi", 7, 0, kEcx, 1, kAvx512State},
    {"avx512vbmi2", 7, 0, kEcx, 6, kAvx512State},
    {"gfni", 7, 0, kEcx, 8, kNone},
    {"vaes", 7, 0, kEcx, 9, kAvxState},
    {"vpclmulqdq", 7, 0, kEcx, 10, kAvxState},
    {"avx512vnni", 7, 0, kEcx, 11, kAvx512State},
    {"avx512bitalg", 7, 0, kEcx, 12, kAvx512State},
    {"avx512vpopcntdq", 7, 0, kEcx, 14, kAvx512State},
    {"avx512fp16", 7, 0, kEdx, 23, kAvx512State},
    {"amx-bf16", 7, 0, kEdx, 22, kAmxState},
    {"amx-tile", 7, 0, kEdx, 24, kAmxState},
    {"amx-int8", 7, 0, kEdx, 25, kAmxState},
    {"avxvnni", 7, 1, kEax, 4, kAvxState},
    {"avx512bf16", 7, 1, kEax, 5, kAvx512State},
    {"lzcnt", 0x80000001, 0, kEcx, 5, kNone},
    {"sse4a", 0x80000001, 0, kEcx, 6, kNone},
    {"prfchw", 0x80000001, 0, kEcx, 8, kNone},
    {"xop", 0x80000001, 0, kEcx, 11, kAvxState},
    {"fma4", 0x80000001, 0, kEcx, 16, kAvxState},
};

bool cpuid_bit(unsigned leaf, unsigned subleaf, Register reg, int bit) {
  unsigned max_leaf = __get_cpuid_max(leaf & 0x80000000u, nullptr);
  if (max_leaf < leaf) return false;
  unsigned regs[4] = {0, 0, 0, 0};
  __cpuid_count(leaf, subleaf, regs[kEax], regs[kEbx], regs[kEcx], regs[kEdx]);
  return (regs[reg] >> bit) & 1u;
}

// The register state the OS saves on context switches (XCR0), 0 when XGETBV is unavailable.
unsigned long long os_saved_state() {
  if (!cpuid_bit(1, 0, kEcx, 27)) return 0;  // OSXSAVE
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

bool os_supports(OsState state) {
  unsigned long long xcr0 = os_saved_state();
  switch (state) {
    case kNone:
      return true;
    case kAvxState:
      return (xcr0 & 0x6) == 0x6;  // SSE and AVX registers
    case kAvx512State:
      return (xcr0 & 0xE6) == 0xE6;  // plus opmask and the upper ZMM registers
    case kAmxState:
      return (xcr0 & 0x60000) == 0x60000;  // tile configuration and tile data
  }
  return false;
}

constexpr size_t kNumX86Features = sizeof(kX86Features) / sizeof(kX86Features[0]);

// Returns 1 or 0 when `name` is a known x86 feature, -1 when the table does not know it. Each
// answer is asked of the CPU once per process (every module load checks its features, and a
// cpuid instruction leaves a virtual machine for its host).
int x86_has_feature(const std::string& name) {
  static std::atomic<int> answers[kNumX86Features] = {};  // 0: not asked yet, else 1 + answer
  for (size_t i = 0; i < kNumX86Features; ++i) {
    const X86Feature& feature = kX86Features[i];
    if (name != feature.name) continue;
    int answer = answers[i].load(std::memory_order_relaxed);
    if (answer == 0) {
      answer = 1 + (cpuid_bit(feature.leaf, feature.subleaf, feature.reg, feature.bit) &&
                    os_supports(feature.state));
      answers[i].store(answer, std::memory_order_relaxed);
    }
    return answer - 1;
  }
  return -1;
}

#endif

// The flags the kernel reports for the first CPU ("flags" on x86, "Features" on Arm), each padded
// with spaces so that a word can be searched as " name ".
std::string proc_cpuinfo_flags() {
  std::FILE* file = std::fopen("/proc/cpuinfo", "r");
  if (file == nullptr) return "";
  std::string flags;
  char line[8192];
  while (std::fgets(line, sizeof(line), file) != nullptr) {
    if (std::strncmp(line, "flags", 5) == 0 || std::strncmp(line, "Features", 8) == 0) {
      const char* colon = std::strchr(line, ':');
      if (colon != nullptr) {
        flags = " " + std::string(colon + 1);
        for (char& c : flags) {
          if (c == '\n' || c == '\t') c = ' ';
        }
        flags += " ";
      }
      break;
    }
  }
  std::fclose(file);
  return flags;
}

// /proc/cpuinfo writes '_' where LLVM writes '.' or '-' ("sse4_2", "amx_tile").
bool cpuinfo_has_feature(const std::string& flags, std::string name) {
  for (char& c : name) {
    if (c == '.' || c == '-') c = '_';
  }
  return !name.empty() && flags.find(" " + name + " ") != std::string::npos;
}

}  // namespace

std::vector<std::string> missing_cpu_features(const std::vector<std::string>& required) {
  std::vector<std::string> missing;
  std::string flags;
  bool flags_read = false;
  for (const std::string& spelled : required) {
    std::string name = !spelled.empty() && spelled[0] == '+' ? spelled.substr(1) : spelled;
    int known = -1;
#if defined(__x86_64__) || defined(__i386__)
    known = x86_has_feature(name);
#endif
    if (known < 0) {
      if (!flags_read) {
        flags = proc_cpuinfo_flags();
        flags_read = true;
      }
      known = cpuinfo_has_feature(flags, name) ? 1 : 0;
    }
    if (known == 0) missing.push_back(name);
  }
  return missing;
}

std::string check_target_triple(const std::string& triple) {
#if defined(__x86_64__)
  const char* host_arch = "x86_64";
#elif defined(__aarch64__)
  const char* host_arch = "aarch64";
#elif defined(__i386__)
  const char* host_arch = "i686";
#elif defined(__riscv) && __riscv_xlen == 64
  const char* host_arch = "riscv64";
#else
  const char* host_arch = "";
#endif
  std::string arch = triple.substr(0, triple.find('-'));
  bool arch_ok = arch == host_arch || (std::strcmp(host_arch, "x86_64") == 0 && arch == "amd64") ||
                 (std::strcmp(host_arch, "aarch64") == 0 && arch == "arm64");
  if (!arch_ok) {
    return "architecture '" + arch + "' of -mtriple=" + triple + " is not this machine's (" +
           host_arch + ")";
  }
  for (const char* os : {"darwin", "macos", "ios", "windows", "win32", "freebsd", "android"}) {
    if (triple.find(os) != std::string::npos) {
      return "OS of -mtriple=" + triple + " is not this machine's (linux)";
    }
  }
  return "";
}

}  // namespace runtime
}  // namespace kiln
