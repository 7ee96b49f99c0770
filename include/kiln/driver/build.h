// The build driver: scheduled TensorIR functions -> the lowering pipeline -> LLVM machine code in
// this process, served by the runtime as a module with a manifest; and the same functions
// exported as a shared library that the minimal runtime loads elsewhere.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/codegen/jit.h"
#include "kiln/codegen/target.h"
#include "kiln/ir/function.h"
#include "kiln/runtime/c_runtime_api.h"
#include "kiln/tir/pipeline.h"

namespace kiln::driver {

// Sets what lowering needs to know of a GPU target in `options`: the kernels go to `kernels`,
// the device kind, the limits verify_gpu_code checks, warp shuffles (CUDA) and the lane counts
// of the language's vector types. build() and tir.lower(target=...) both use it.
void set_gpu_lower_options(const codegen::Target& target,
                           std::vector<ir::Ref<ir::PrimFunc>>* kernels, tir::LowerOptions* options);

// Options of build().
struct BuildOptions {
  // When not empty, the IR after each lowering pass is written there (see tir::LowerOptions;
  // the environment variable KILN_DUMP_IR is used when this is empty).
  std::string dump_dir;
  // When not empty, a directory of compiled objects: a function built before for the same
  // target (the same LLVM IR) skips LLVM's optimization and code generation (see
  // codegen::compile_jit; timings().jit.from_cache), and CUDA C compiled before skips NVRTC
  // (codegen::compile_cuda; timings().device_from_cache).
  std::string object_cache_dir;
};

// How long the phases of one build took, in milliseconds.
struct BuildTimings {
  double lower_ms = 0;             // the lowering pipeline, all functions
  double device_ms = 0;            // GPU targets: device code generation and NVRTC
  bool device_from_cache = false;  // CUDA: the binaries came from the object cache
  codegen::JitTimings jit;         // code generation and JIT loading (zero when not JIT-compiled)
  double total_ms = 0;
};

// A built module: the lowered functions, the manifest that describes them, and, when the target
// runs on this CPU, their machine code loaded in this process and served by a runtime module.
// Not copyable; the runtime module and the code it calls live exactly as long as this object.
class BuiltModule {
 public:
  ~BuiltModule();
  BuiltModule(const BuiltModule&) = delete;
  BuiltModule& operator=(const BuiltModule&) = delete;

  // The function names, in manifest order.
  const std::vector<std::string>& function_names() const { return names_; }
  const codegen::Target& target() const { return target_; }
  // The manifest JSON text (kiln/runtime/c_runtime_api.h, "The module manifest").
  const std::string& manifest() const { return manifest_; }
  // The lowered functions, in manifest order.
  const std::vector<ir::Ref<ir::PrimFunc>>& lowered() const { return lowered_; }
  const BuildTimings& timings() const { return timings_; }
  // What the build could not do as the schedule asked, one sentence per item naming the
  // function, the loop and the reason, e.g. "function main: loop i_1 is not vectorized (it runs
  // serially): ...", then what the GPU code generators noted ("kernel main_kernel0: the vector
  // load of A (4 lanes) is done lane by lane: ..."). The manifest carries them as "warnings";
  // the Python front end raises each as a kiln.error.VectorizeFallbackWarning.
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Whether the code runs in this process: false when the target is for another architecture
  // or needs CPU features this CPU lacks (such a module can still be exported).
  bool runnable() const { return runtime_module_ != nullptr; }
  // The runtime module serving the JIT-compiled code; a kRuntime error naming the reason when
  // the module is not runnable here.
  KilnModuleHandle runtime_module() const;

  // The code as text: "ll" (optimized LLVM IR) or "asm" (assembly) of the CPU code (for GPU
  // targets: the host side); for "cuda" targets also "cuda" (the CUDA C) and "ptx", for
  // "opencl" targets "opencl" (the OpenCL C). Another format is a kValue error naming these.
  std::string get_source(const std::string& format) const;
  // Compiles the lowered functions to an object file and links the shared library `path`,
  // which embeds the manifest (see codegen::export_library).
  void export_library(const std::string& path) const;

 private:
  BuiltModule() = default;
  friend std::unique_ptr<BuiltModule> build(const ir::Ref<ir::IRModule>&, const std::string&,
                                            const BuildOptions&);

  std::vector<std::string> names_;
  codegen::Target target_;
  std::string manifest_;
  std::vector<ir::Ref<ir::PrimFunc>> lowered_;
  BuildTimings timings_;
  std::vector<std::string> warnings_;
  std::string not_runnable_reason_;
  std::unique_ptr<codegen::JitModule> jit_;
  KilnModuleHandle runtime_module_ = nullptr;
  std::map<std::string, std::string> device_sources_;  // "cuda", "ptx", "opencl"
};

// The name a PrimFunc is built under when it is built alone: its "global_symbol" attribute, or
// "main" when it has none.
std::string default_function_name(const ir::Ref<ir::PrimFunc>& func);

// Builds every function of `mod` for `target` (a target string, see codegen::parse_target):
//  1. each function is lowered with its module key as its name and "kiln_unchecked_" + key as
//     its symbol (the "global_symbol" attribute is set to it; the module does not export it);
//  2. the manifest lists the functions' argument specs ("kiln.arg_spec", written by the last
//     lowering pass), the canonical target string, the ISA features the code needs, and the
//     "warnings" (see BuiltModule::warnings: each vectorized loop that stayed serial);
//  3. for a GPU target ("cuda", "opencl"), each function is split into device kernels and its
//     host side (tir/split_host_device); the kernels become CUDA C compiled by NVRTC to PTX and
//     a cubin for the target's -arch, or OpenCL C, which the runtime compiles when it loads the
//     module; the manifest carries them as "device_blobs" and lists "device_kernels";
//  4. when the target runs on this CPU (for GPU targets: the host code), the functions are
//     JIT-compiled and a runtime module is created over them with KilnModuleCreate.
// Raises a kValue error for an empty module, an unknown target, and the errors of lowering and
// code generation. Tested by tests/python/test_build*.py and tests/cpp/driver/build_test.cc.
std::unique_ptr<BuiltModule> build(const ir::Ref<ir::IRModule>& mod, const std::string& target,
                                   const BuildOptions& options = {});

// Builds one PrimFunc as the function `name` (default_function_name(func) when empty).
std::unique_ptr<BuiltModule> build(const ir::Ref<ir::PrimFunc>& func, const std::string& target,
                                   const std::string& name = "", const BuildOptions& options = {});

// The lowering options build() uses for the functions of `target` (before its dump directory,
// name and packed entry point): for a GPU target, set_gpu_lower_options's; for a CPU target, the
// defaults. The tuner lowers its candidates with the same options.
tir::LowerOptions lower_options_for(const codegen::Target& target,
                                    std::vector<ir::Ref<ir::PrimFunc>>* kernels);

}  // namespace kiln::driver
