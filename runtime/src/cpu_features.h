// What the host CPU can run: the CPU features a module's manifest asks for (LLVM spelling, e.g.
// "avx512f", "sse4.2") and the architecture and OS of a target triple.
#pragma once

#include <string>
#include <vector>

namespace kiln {
namespace runtime {

// The features of `required` this CPU lacks (or that the runtime cannot confirm), in order. x86
// features are read with cpuid, including the OS's consent to save AVX / AVX-512 state; other
// names are looked up in /proc/cpuinfo's flags. A leading '+' is ignored.
std::vector<std::string> missing_cpu_features(const std::vector<std::string>& required);

// Checks an LLVM target triple ("x86_64-pc-linux-gnu") against this machine: its architecture
// must be the host's and its OS, when one is named, Linux. Returns "" when it matches, else why.
std::string check_target_triple(const std::string& triple);

}  // namespace runtime
}  // namespace kiln
