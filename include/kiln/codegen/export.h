// Ahead-of-time compilation: lowered PrimFuncs -> an object file -> a shared library that the
// runtime loads with KilnModuleLoadFromFile.
#pragma once

#include <string>
#include <vector>

#include "kiln/codegen/target.h"
#include "kiln/ir/function.h"

namespace kiln::codegen {

// Compiles `funcs` for `target` into an object file, links it into the shared library `path`
// with the system C compiler (`cc -shared -o path module.o -lm`) and appends the checksum
// trailer that the runtime verifies (KilnModuleFileSeal). The library exports
// `kiln_module_functions` (the function table) and `kiln_module_manifest` (the NUL-terminated
// `manifest_json`) and nothing else: the functions themselves are internal. The runtime's
// backend functions stay undefined, for the loading process (which links libkiln_runtime) to
// provide. A C function that an extern call names and that a library opened with
// KilnLoadLibrary defines links that library (a DT_NEEDED entry and its directory as run path),
// so that loading the module loads the library; functions of libc and libm need none. Raises a
// kRuntime error with the compiler's output when linking fails, and the errors of codegen_llvm.
void export_library(const std::vector<ir::Ref<ir::PrimFunc>>& funcs, const Target& target,
                    const std::string& manifest_json, const std::string& path);

// The object file of `funcs` for `target`, with the manifest (the first half of export_library).
std::string compile_object(const std::vector<ir::Ref<ir::PrimFunc>>& funcs, const Target& target,
                           const std::string& manifest_json);

// The code of `funcs` for `target` as text without running it: "ll" is the optimized LLVM IR,
// "asm" the assembly (any target LLVM knows, e.g. "llvm -mcpu=znver4" on another CPU). Any other
// format is a kValue error naming these two.
std::string compile_source(const std::vector<ir::Ref<ir::PrimFunc>>& funcs, const Target& target,
                           const std::string& format);

}  // namespace kiln::codegen
