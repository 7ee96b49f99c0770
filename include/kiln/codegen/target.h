// CPU targets of the LLVM backend, parsed from TVM-style strings: "llvm" (the host CPU),
// "llvm -mcpu=znver4", "llvm -mtriple=x86_64-pc-linux-gnu -mattr=+avx512f,+avx512bw",
// "llvm -opt-level=2", "llvm -fp-contract=off". The canonical string keys the tuning database.
#pragma once

#include <string>
#include <vector>

namespace kiln::codegen {

// A parsed, validated "llvm" target.
struct Target {
  std::string triple;              // e.g. "x86_64-pc-linux-gnu"
  std::string cpu;                 // e.g. "znver4"; the host CPU when none or "native" was given
  std::vector<std::string> attrs;  // "+feature" / "-feature", sorted: -mattr (see str())
  int opt_level = 3;               // 0-3
  // Whether a multiply feeding an add may become one fused multiply-add (one rounding), as C
  // compilers do by default: "-fp-contract=fast" (the default) or "-fp-contract=off".
  bool fp_contract = true;
  bool is_host = false;          // the CPU this process runs on (no -mcpu, or -mcpu=native)
  std::string llvm_features;     // the feature string handed to LLVM's TargetMachine
  std::vector<std::string> isa;  // ISA features in effect (see isa_features())

  // Canonical form: "llvm -mtriple=… -mcpu=… [-mattr=…] [-opt-level=N] [-fp-contract=off]".
  // For the host target
  // -mattr also lists the ISA features in which this CPU differs from the named CPU's default
  // (e.g. a virtual machine that hides AVX-512), so equal strings mean equal code.
  std::string str() const;
  // The vector and matrix ISA features in effect that decide whether code runs on a CPU, e.g.
  // {"avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512vnni", "avx512bf16"}.
  // The manifest's "host_features" carries them so that the runtime can refuse a module that
  // needs features the loading CPU lacks.
  const std::vector<std::string>& isa_features() const { return isa; }
  // Whether an ISA feature (a name as in isa_features()) is in effect.
  bool has_feature(const std::string& name) const;
};

// Parses a target string. Raises a kValue error naming the valid options for an unknown kind
// or option, an unknown -mcpu (checked against the target's CPU table), a malformed or unknown
// -mattr entry, an -opt-level outside 0-3, or an -fp-contract other than fast/off.
Target parse_target(const std::string& text);

// The target of the CPU this process runs on, parse_target("llvm"), parsed once.
const Target& host_target();

}  // namespace kiln::codegen
