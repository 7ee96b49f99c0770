// Targets, parsed from TVM-style strings. CPU targets of the LLVM backend: "llvm" (the host CPU),
// "llvm -mcpu=znver4", "llvm -mtriple=x86_64-pc-linux-gnu -mattr=+avx512f,+avx512bw",
// "llvm -opt-level=2", "llvm -fp-contract=off". GPU targets: "cuda -arch=sm_90" (CUDA C through
// NVRTC) and "opencl -device=pocl" (OpenCL C), whose host code (argument checks, launches) is
// LLVM code for the CPU this process runs on. The canonical string keys the tuning database.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/ir/dtype.h"

namespace kiln::codegen {

// The limits of a GPU that decide whether a kernel can be launched on it.
struct GpuLimits {
  int64_t max_threads_per_block = 0;        // threads (work-items) in one block (work-group)
  int64_t max_shared_memory_per_block = 0;  // bytes of "shared" (CUDA) / __local (OpenCL) memory
  int64_t thread_warp_size = 0;             // threads that run in lock step: 32 on NVIDIA GPUs
};

// A parsed, validated target.
struct Target {
  // "llvm" (CPU code), "cuda" or "opencl" (device code; the CPU fields below then describe the
  // host, which runs the argument checks and the launches).
  std::string kind = "llvm";
  // For "cuda": the virtual architecture the code is compiled for, e.g. "sm_80" (-arch).
  std::string arch;
  // For "opencl": a substring of the device name that picks the device (-device); "" for the
  // first device of the first platform.
  std::string device;
  GpuLimits gpu;  // for "cuda" and "opencl"
  // For GPU targets: "-fast-math" lets float32 math functions be the fast approximations
  // (CUDA's __expf, __logf, __sinf, ... and NVRTC's --use_fast_math; OpenCL's native_exp, ...
  // and -cl-fast-relaxed-math). Off by default: IEEE results as kiln/ir/expr.h defines them.
  bool fast_math = false;
  // Whether the target is a GPU ("cuda" or "opencl").
  bool is_gpu() const { return kind != "llvm"; }
  // For "cuda": the compute capability of `arch` as major * 10 + minor (80 for sm_80); else 0.
  int compute_capability() const;
  // The DLPack device type the target's code runs on: kDLCUDA, kDLOpenCL, or kDLCPU for "llvm".
  int32_t device_type() const;

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

  // Canonical form: "llvm -mtriple=… -mcpu=… [-mattr=…] [-opt-level=N] [-fp-contract=off]";
  // for GPUs "cuda -arch=sm_80 -max_threads_per_block=1024 -max_shared_memory_per_block=49152
  // -thread_warp_size=32 [-fast-math]" and "opencl [-device=…] -max_threads_per_block=… …".
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
  // The features a tensor intrinsic may require of this target's code (TensorIntrin's
  // required_features): for "llvm" the ISA features; for "cuda" the architecture levels whose
  // instructions code for -arch can use, "sm_50" up to the arch itself ({"sm_50", ..., "sm_80",
  // "sm_86"} for sm_86; an arch-specific "sm_90a" adds itself to those of sm_90); for "opencl"
  // none. A GPU target's host CPU features are not among them: intrinsics run in kernels.
  std::vector<std::string> intrinsic_features() const;

  // What schedules need to know about the vector unit, from LLVM's cost model
  // (TargetTransformInfo) of this CPU with these features; properties of the target, not of
  // the machine that compiles (-mcpu=znver4 reports AVX-512's registers on any host).
  //
  // The widest vector register in bits: 512 with AVX-512, 256 with AVX, 128 with SSE or NEON,
  // 0 without vector registers. Explicit vectors of a schedule get this width in the generated
  // code (the code generator asks for it with "min-legal-vector-width").
  int vector_register_bits = 0;
  // The width LLVM's own vectorizers use, in bits. Smaller than vector_register_bits on CPUs
  // tuned to prefer narrower vectors (e.g. skylake-avx512 prefers 256 bits: 512-bit
  // instructions lower its clock).
  int preferred_vector_bits = 0;
  // The number of vector registers: 32 with AVX-512, 16 with SSE or AVX on x86-64, 32 on
  // AArch64.
  int num_vector_registers = 0;
  // Whether the CPU has vector fused multiply-add instructions (x86 "fma", every AArch64 CPU).
  // They are used for `a * b + c` only when fp_contract is set.
  bool has_fma = false;
  // Data cache sizes in bytes (per core for L1d and L2, per L3 for L3), read from the operating
  // system for the host target only; empty for other targets and where the system does not say.
  std::optional<int64_t> l1d_cache_bytes;
  std::optional<int64_t> l2_cache_bytes;
  std::optional<int64_t> l3_cache_bytes;

  // How many elements of the scalar `dtype` one vector register holds
  // (vector_register_bits / bits, at least 1): vector_lanes(float32) is 16 with AVX-512, 8 with
  // AVX2, 4 with SSE or NEON. A vector or handle dtype is a kValue error.
  int vector_lanes(const ir::DataType& dtype) const;

  // The lanes of the widest vector of `dtype` whose lanes divide `extent`: a whole register, or
  // where that does not divide, a half of it while the half is 256 bits or more (an AVX-512
  // register's ymm half: 8 float32 for 56 columns); 1 where none divides.
  int vector_lanes_dividing(const ir::DataType& dtype, int64_t extent) const;
};

// Parses a target string and asks LLVM for the vector unit's properties (see Target). Raises a
// kValue error naming the valid options for an unknown kind or option, an unknown -mcpu (checked
// against the target's CPU table), a malformed or unknown -mattr entry, an -opt-level outside 0-3,
// or an -fp-contract other than fast/off. For "cuda": -arch=sm_XY (default sm_80; sm_50 or
// newer) and the limits -max_threads_per_block, -max_shared_memory_per_block, -thread_warp_size
// (defaults: those every GPU of the architecture has, 1024 threads, 48 KiB, 32); for "opencl":
// -device=<name substring> and the same limits (defaults: 256 threads, 32 KiB, warp 1, which
// common OpenCL GPUs offer); for both, the flag -fast-math. A positive integer is expected for each
// limit. What is not given comes from the device when this machine has one (for "opencl" the first
// whose name contains -device; for "cuda" device 0, whose compute capability also gives -arch),
// else the defaults.
Target parse_target(const std::string& text);

// The device of this machine that a GPU target stands for: the first device of its kind
// (target.device_type()) whose name contains -device ("" matches any), the one parse_target
// read the limits from; -1 when there is none or no driver, with the reason in `why` when given.
// Raises a kValue error for a CPU target.
int32_t find_gpu_device(const Target& target, std::string* why = nullptr);

// The device of a GPU target's kind named exactly `name` (the device_model of the tuner's
// target key), or -1 with `why` naming the devices there are. The tuner's workers measure on the
// device their parent keys its records by, not on whichever their driver lists first. Raises a
// kValue error for a CPU target.
int32_t find_named_gpu_device(const Target& target, const std::string& name,
                              std::string* why = nullptr);

// Attribute `attribute` (a KilnDeviceAttr of kiln/runtime/c_runtime_api.h) of device `id` of a
// GPU target's kind (as find_gpu_device returns it), or 0 when it cannot be read.
int64_t gpu_device_attribute(const Target& target, int32_t id, int32_t attribute);

// The target of the CPU this process runs on, parse_target("llvm"), parsed once.
const Target& host_target();

}  // namespace kiln::codegen
