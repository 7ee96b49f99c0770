// Translation of lowered PrimFuncs into one LLVM module, each function with the runtime's packed
// signature (kiln/runtime/c_runtime_api.h):
//
//   int32_t symbol(const KilnValue* args, const int32_t* type_codes, int32_t num_args)
//
// The functions trust their arguments, so they have internal linkage: the module exports them
// only through the table `kiln_module_functions` (the functions in the order given, then NULL),
// which the runtime calls after checking the arguments.
//
// The input contract, which the lowering pipeline (tir/) establishes:
//  1. No Block, BlockRealize or Reduce remains.
//  2. Every BufferLoad/BufferStore has exactly one (flattened) index, scalar or vector: a Ramp
//     of stride 1 becomes one vector load/store, any other vector index a gather/scatter.
//  3. Buffers are reached through their data Var, bound by a LetStmt (packed_arg_data for
//     arguments) or by an Allocate. Allocate takes 1-D buffers of scope "global" or "local";
//     constant sizes up to kMaxStackAllocBytes live on the stack, larger or dynamic ones come
//     from KilnBackendAllocWorkspace. "shared" is GPU-only and rejected.
//  4. For loops are kSerial, kParallel, kUnrolled or kVectorized (compiled as a serial loop);
//     kThreadBinding is GPU-only and rejected. A kParallel loop is outlined into a task of
//     KilnBackendParallelLaunch; a parallel loop inside another one is rejected (fuse them).
//  5. The arguments were checked by the runtime; the code trusts them.
// Function attributes read: "global_symbol" (StringImm, required: the function's symbol),
// "kiln.noalias" (buffers of distinct data Vars do not overlap: for arguments the runtime
// ensures it, see "Overlapping arguments" in c_runtime_api.h) and "kiln.fast_math" (float
// operations may be reassociated and contracted); both default to false.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/codegen/target.h"
#include "kiln/ir/function.h"

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
}  // namespace llvm

namespace kiln::codegen {

// Allocations of at most this many bytes with a constant size are placed on the stack.
constexpr int64_t kMaxStackAllocBytes = 16 * 1024;

// The name of the symbol of the module's manifest string (a NUL-terminated JSON text).
constexpr const char* kManifestSymbol = "kiln_module_manifest";
// The name of the symbol of a GPU module's device context, which the runtime sets when it loads
// the module and host code passes to KilnDeviceLaunch (KILN_MODULE_DEVICE_CTX_SYMBOL).
constexpr const char* kDeviceContextSymbol = "kiln_module_device_ctx";
// The name of the symbol of the module's function table (KILN_MODULE_FUNCTIONS_SYMBOL).
constexpr const char* kFunctionTableSymbol = "kiln_module_functions";

// The symbol of `func` (its "global_symbol" attribute); a kValue error when absent.
std::string function_symbol(const ir::PrimFunc& func);

// Translates `funcs` into a new module of `context` for `target`: the triple and data layout of
// `machine`, target-cpu/target-features on every function, the function table, and, when
// `manifest_json` is not empty, the manifest string as `kiln_module_manifest`. The module is
// verified but not optimized. Raises a kValue error for input outside the contract above (naming
// the function and the node).
std::unique_ptr<llvm::Module> codegen_llvm(const std::vector<ir::Ref<ir::PrimFunc>>& funcs,
                                           const Target& target, llvm::TargetMachine& machine,
                                           llvm::LLVMContext& context,
                                           const std::string& manifest_json);

}  // namespace kiln::codegen
