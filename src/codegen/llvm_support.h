// LLVM plumbing shared by the backend's files (private to src/codegen): one-time initialization,
// a TargetMachine for a Target, the optimization pipeline and machine-code emission.
#pragma once

#include <memory>
#include <string>

#include "kiln/codegen/target.h"

namespace llvm {
class Module;
class TargetMachine;
class Target;
}  // namespace llvm

namespace kiln::codegen::detail {

// Registers LLVM's targets, MC layers and asm printers; cheap after the first call, thread-safe.
void initialize_llvm();

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

// Runs the new pass manager's default pipeline of `opt_level` (0-3) with the target's cost
// model, loop and SLP vectorizers.
void optimize_module(llvm::Module& module, llvm::TargetMachine& machine, int opt_level);

enum class MachineCodeKind { kObject, kAssembly };

// The object file or assembly text of `module`. Code generation rewrites the IR of the module
// in place, so callers emit from a module they no longer need (or from a clone).
std::string emit_machine_code(llvm::Module& module, llvm::TargetMachine& machine,
                              MachineCodeKind kind);

}  // namespace kiln::codegen::detail
