// In-process compilation: lowered PrimFuncs -> LLVM IR -> optimized machine code loaded by LLVM's
// ORC JIT. The runtime serves the result through KilnModuleCreate with JitModule::resolve.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/codegen/target.h"
#include "kiln/ir/function.h"

namespace kiln::codegen {

// How long the phases of one compile_jit took, in milliseconds.
struct JitTimings {
  double codegen_ms = 0;   // PrimFuncs -> LLVM IR
  double optimize_ms = 0;  // the optimization pipeline
  double emit_ms = 0;      // machine code (object file)
  double link_ms = 0;      // loading into the JIT and resolving the symbols
  double total_ms = 0;
  double cpu_ms = 0;  // CPU time of the calling thread over the whole compile (immune to load)
  bool from_cache = false;  // the object came from the object cache (no optimize, no emit)
};

// Compiled functions living in this process. The code stays valid until the JitModule is
// destroyed. Not copyable or movable: its address is the context of `resolve`.
class JitModule {
 public:
  ~JitModule();
  JitModule(const JitModule&) = delete;
  JitModule& operator=(const JitModule&) = delete;

  // The address of the packed function named `symbol` (a KilnPackedCFunc, which checks none of
  // its arguments: hosts call it through the runtime), or nullptr when the module has no such
  // function.
  void* get_function(const std::string& symbol) const;
  // The functions' symbols, in the order the PrimFuncs were given (the order of the table).
  const std::vector<std::string>& function_symbols() const;
  const std::string& manifest() const;
  const Target& target() const;
  const JitTimings& timings() const;
  // The module's code as text: "ll" is the optimized LLVM IR, "asm" the assembly. Any other
  // format is a kValue error naming these two.
  std::string get_source(const std::string& format) const;

  // A KilnSymbolResolver: kiln_module_functions and kiln_module_manifest of the JitModule passed
  // as `jit_module`, NULL for other names (the functions are not exported). Use it as
  //   KilnModuleCreate(m->manifest().c_str(), nullptr, &JitModule::resolve, m.get(), &out)
  // and keep the JitModule alive until KilnModuleFree.
  static void* resolve(void* jit_module, const char* symbol);

  struct Impl;

 private:
  explicit JitModule(std::unique_ptr<Impl> impl);
  friend std::unique_ptr<JitModule> compile_jit(const std::vector<ir::Ref<ir::PrimFunc>>&,
                                                const Target&, const std::string&,
                                                const std::map<std::string, void*>&,
                                                const std::string&);
  std::unique_ptr<Impl> impl_;
};

// Compiles `funcs` for `target` and loads them into this process. The code calls the runtime's
// backend functions (KilnSetLastError, KilnBackendParallelLaunch, KilnBackendAllocWorkspace,
// KilnBackendFreeWorkspace) of the runtime library linked into this process, and libm.
// `extra_symbols` defines further names (an extern function of the host program) or overrides
// those. `manifest_json` is embedded as kiln_module_manifest when not empty. Raises a kValue
// error when the target is not for this CPU (another architecture, or ISA features this CPU
// lacks), and the errors of codegen_llvm.
// With `object_cache_dir`, the object file is looked up there by a hash of the generated LLVM
// IR, the target and the optimization pipeline before LLVM optimizes and compiles it, and
// stored there after (see src/codegen/object_cache.h; timings().from_cache tells which).
std::unique_ptr<JitModule> compile_jit(const std::vector<ir::Ref<ir::PrimFunc>>& funcs,
                                       const Target& target, const std::string& manifest_json,
                                       const std::map<std::string, void*>& extra_symbols = {},
                                       const std::string& object_cache_dir = "");

}  // namespace kiln::codegen
