// LLVM plumbing shared by the backend's files (private to src/codegen): one-time initialization,
// a TargetMachine for a Target, the optimization pipeline and machine-code emission.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/codegen/target.h"
#include "kiln/ir/function.h"

namespace llvm {
class Module;
class TargetMachine;
class Target;
}  // namespace llvm

namespace kiln::codegen::detail {

// Registers LLVM's targets, MC layers and asm printers and installs kiln's handler of LLVM's
// fatal errors (see LLVMErrorScope); cheap after the first call, thread-safe.
void initialize_llvm();

// While one is alive on a thread, a fatal error that LLVM reports on that thread (e.g. an
// instruction the target cannot select: "Do not know how to split the result of this
// operator!") throws a kInternal kiln::Error naming `what` instead of ending the process. The
// TargetMachine leased during such a compilation is not reused. Outside every scope LLVM's
// fatal errors keep their usual behaviour (message, then exit), for other users of LLVM in
// the process. Tested by tests/cpp/codegen/codegen_errors_test.cc.
// "functions kiln_main, kiln_f for target llvm -mtriple=…", what an LLVMErrorScope names.
std::string describe_functions(const std::vector<ir::Ref<ir::PrimFunc>>& funcs,
                               const Target& target);

class LLVMErrorScope {
 public:
  explicit LLVMErrorScope(std::string what);
  ~LLVMErrorScope();
  LLVMErrorScope(const LLVMErrorScope&) = delete;
  LLVMErrorScope& operator=(const LLVMErrorScope&) = delete;

 private:
  std::string previous_;
};

// The registered LLVM target of `triple`; a kValue error naming the registered ones otherwise.
const llvm::Target& lookup_llvm_target(const std::string& triple, const char* api);

// A TargetMachine for `target`: its triple, CPU and features, position-independent code, and
// the code generation level of its opt_level.
std::unique_ptr<llvm::TargetMachine> create_target_machine(const Target& target);

// A TargetMachine for `target` lent from a process-wide pool; it goes back when the last copy
// of the pointer is released. Building one (and its subtarget, on first use) costs more than a
// small kernel's code generation, and one must not serve two threads at once: the pool reuses
// them without sharing.
std::shared_ptr<llvm::TargetMachine> lease_target_machine(const Target& target);

// Runs the optimization pipeline of `opt_level` with the target's cost model: LLVM's default
// O0, O1 or O2 pipeline for 0-2, and for 3 kiln's own passes (llvm_support.cc,
// run_kiln_pipeline), which leave out the parts of O3 that kiln's scheduled code does not
// need. Tested by tests/python/test_build_pipeline.py.
void optimize_module(llvm::Module& module, llvm::TargetMachine& machine, int opt_level);

// The passes optimize_module runs at `opt_level`, as text (part of an ObjectCache key).
std::string optimization_pipeline(int opt_level);

enum class MachineCodeKind { kObject, kAssembly };

// The object file or assembly text of `module`. Code generation rewrites the IR of the module
// in place, so callers emit from a module they no longer need (or from a clone).
std::string emit_machine_code(llvm::Module& module, llvm::TargetMachine& machine,
                              MachineCodeKind kind);

}  // namespace kiln::codegen::detail
