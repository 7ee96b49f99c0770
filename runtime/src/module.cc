// Modules and functions of the C API: checking and opening an exported library (or wrapping
// in-process code), reading and judging its manifest, reading its kernel table, and checked
// calls.
#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "aliasing.h"
#include "arg_check.h"
#include "error.h"
#include "kiln/runtime/c_runtime_api.h"
#include "manifest.h"
#include "module_device.h"
#include "module_file.h"

// One function of a module: its spec (owned by the module's manifest) and its kernel.
struct KilnFunction {
  const KilnFuncSpec* spec;
  KilnPackedCFunc kernel;
};

// A module: its manifest, its functions, and the library it was opened from (if any).
struct KilnModule {
  std::string label;  // the path, or "in-process module", for messages
  kiln::runtime::Manifest manifest;
  // The device code's state when the module has device blobs; declared after the manifest it
  // reads, so that it is destroyed first.
  std::unique_ptr<kiln::runtime::ModuleDeviceState> device_state;
  std::vector<KilnFunction> functions;
  std::vector<const char*> function_names;
  void* dl_handle = nullptr;

  ~KilnModule() {
    if (dl_handle != nullptr) dlclose(dl_handle);
  }
};

namespace kiln {
namespace runtime {
namespace {

// Runs a C API body, turning an escaping C++ exception (out of memory) into an error return.
template <class Body>
int32_t guarded(const char* api, Body body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return fail(kKilnErrorRuntime, std::string(api) + ": " + e.what());
  } catch (...) {
    return fail(kKilnErrorRuntime, std::string(api) + ": unexpected C++ exception");
  }
}

// A module refers to the runtime's Kiln* functions as undefined symbols. They resolve only
// against libraries in the global scope, so the runtime puts itself there, in case it was itself
// opened with RTLD_LOCAL (as by a Python extension).
void make_runtime_symbols_global() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&KilnSetLastError), &info) != 0 &&
        info.dli_fname != nullptr) {
      dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
    }
  });
}

// Parses and judges the manifest, then takes every function's kernel from the module's table.
// On failure returns the error code with the message prefixed by `context`; the module is left
// for the caller to discard. `broken` is the code of a module that is not intact
// (kKilnErrorModuleFile for a file, kKilnErrorValue for code handed over in process).
int32_t init_module(const std::string& context, KilnErrorCode broken, const char* manifest_json,
                    void* dl_handle, KilnSymbolResolver resolver, void* resolver_ctx,
                    KilnModule* module) {
  std::string error;
  if (!parse_manifest(manifest_json, &module->manifest, &error)) {
    return fail(broken, context + ": manifest: " + error);
  }
  std::string refusal = check_manifest_runnable(module->manifest);
  if (!refusal.empty()) return fail(kKilnErrorModuleUnsupported, context + ": " + refusal);
  void* table_symbol = resolver != nullptr ? resolver(resolver_ctx, KILN_MODULE_FUNCTIONS_SYMBOL)
                                           : dlsym(dl_handle, KILN_MODULE_FUNCTIONS_SYMBOL);
  if (table_symbol == nullptr) {
    std::string abi = std::to_string(KILN_RUNTIME_ABI_VERSION);
    return fail(broken, context + ": the module defines no kernel table " +
                            KILN_MODULE_FUNCTIONS_SYMBOL + "; it is not a module of runtime ABI " +
                            "version " + abi);
  }
  // The table ends with NULL, so a manifest that lists more functions than the table holds is
  // caught here instead of reading past its end.
  const auto* table = static_cast<const KilnPackedCFunc*>(table_symbol);
  size_t count = module->manifest.functions.size();
  for (size_t i = 0; i < count; ++i) {
    if (table[i] == nullptr) {
      return fail(broken, context + ": the manifest lists " + std::to_string(count) +
                              " functions but the kernel table " + KILN_MODULE_FUNCTIONS_SYMBOL +
                              " holds " + std::to_string(i) + " (function " +
                              module->manifest.functions[i].name + " has no kernel)");
    }
  }
  if (table[count] != nullptr) {
    return fail(broken, context + ": the kernel table " + KILN_MODULE_FUNCTIONS_SYMBOL +
                            " holds more kernels than the " + std::to_string(count) +
                            " functions of the manifest");
  }
  for (size_t i = 0; i < count; ++i) {
    const FunctionSpec& function = module->manifest.functions[i];
    module->functions.push_back(KilnFunction{&function.spec, table[i]});
    module->function_names.push_back(function.name.c_str());
  }
  if (module->manifest.device_blobs.empty()) return 0;
  // Device code: host functions find the module's device state through its context symbol.
  void* ctx_symbol = resolver != nullptr ? resolver(resolver_ctx, KILN_MODULE_DEVICE_CTX_SYMBOL)
                                         : dlsym(dl_handle, KILN_MODULE_DEVICE_CTX_SYMBOL);
  if (ctx_symbol == nullptr) {
    return fail(broken, context + ": the module carries device code but defines no " +
                            KILN_MODULE_DEVICE_CTX_SYMBOL +
                            " symbol, through which its host functions launch kernels");
  }
  module->device_state = std::make_unique<ModuleDeviceState>(&module->manifest, module->label);
  *static_cast<void**>(ctx_symbol) = module->device_state.get();
  return 0;
}

// Calls the kernel of a checked call, with copies of the read-only tensors that overlap a
// written one.
int32_t run_kernel(const KilnFunction& func, const KilnValue* args, const int32_t* type_codes,
                   int32_t num_args, const ByteSpan* spans) {
  const KilnFuncSpec& spec = *func.spec;
  CallArguments call(args);
  int32_t status = resolve_overlaps(spec, num_args, spans, &call);
  if (status != 0) return status;
  KilnSetLastError(nullptr);
  if (func.kernel(call.values(), type_codes, num_args) == 0) return 0;
  if (KilnGetLastError()[0] == '\0') {
    return fail(kKilnErrorRuntime,
                std::string(spec.name) + ": kernel failed without an error message");
  }
  return kKilnErrorRuntime;
}

// Spans for the arguments of one call: on the stack for the usual few arguments.
class SpanStorage {
 public:
  explicit SpanStorage(int32_t num_args) {
    if (num_args > kInline) heap_.resize(static_cast<size_t>(num_args));
  }
  ByteSpan* data() { return heap_.empty() ? inline_ : heap_.data(); }

 private:
  static constexpr int32_t kInline = 16;
  ByteSpan inline_[kInline];
  std::vector<ByteSpan> heap_;
};

}  // namespace
}  // namespace runtime
}  // namespace kiln

extern "C" {

int32_t KilnModuleLoadFromFile(const char* path, KilnModuleHandle* out) {
  using namespace kiln::runtime;
  return guarded("KilnModuleLoadFromFile", [&]() -> int32_t {
    if (path == nullptr || out == nullptr) {
      return fail(kKilnErrorValue, "KilnModuleLoadFromFile: path and out must not be NULL");
    }
    *out = nullptr;
    std::string context = std::string("KilnModuleLoadFromFile: ") + path;
    // dlopen searches the library path for a bare file name; a module file means this one.
    std::string file = path;
    if (file.find('/') == std::string::npos) file = "./" + file;
    // Step 1. The file itself, before the loader maps it: a truncated file would fault there.
    std::string damage = check_module_file(file);
    if (!damage.empty()) return fail(kKilnErrorModuleFile, context + ": " + damage);
    // Step 2. Open it; the runtime's symbols must be visible to it.
    make_runtime_symbols_global();
    void* handle = dlopen(file.c_str(), RTLD_LOCAL | RTLD_NOW);
    if (handle == nullptr) {
      const char* reason = dlerror();
      return fail(kKilnErrorModuleFile,
                  context + ": cannot open: " + (reason != nullptr ? reason : "unknown error"));
    }
    auto module = std::make_unique<KilnModule>();
    module->label = path;
    module->dl_handle = handle;
    // Step 3. Its manifest and kernel table.
    const char* manifest = static_cast<const char*>(dlsym(handle, KILN_MODULE_MANIFEST_SYMBOL));
    if (manifest == nullptr) {
      return fail(kKilnErrorModuleFile, context + ": not a kiln module: it defines no symbol " +
                                            KILN_MODULE_MANIFEST_SYMBOL);
    }
    int32_t status = init_module(context, kKilnErrorModuleFile, manifest, handle, nullptr, nullptr,
                                 module.get());
    if (status != 0) return status;
    *out = module.release();
    return 0;
  });
}

int32_t KilnModuleCreate(const char* manifest_json, void* dl_handle_or_null,
                         KilnSymbolResolver resolver, void* resolver_ctx, KilnModuleHandle* out) {
  using namespace kiln::runtime;
  return guarded("KilnModuleCreate", [&]() -> int32_t {
    if (manifest_json == nullptr || out == nullptr) {
      return fail(kKilnErrorValue, "KilnModuleCreate: manifest_json and out must not be NULL");
    }
    *out = nullptr;
    if (resolver == nullptr && dl_handle_or_null == nullptr) {
      return fail(kKilnErrorValue, "KilnModuleCreate: needs a symbol resolver or a library handle");
    }
    auto module = std::make_unique<KilnModule>();
    module->label = "in-process module";
    int32_t status = init_module("KilnModuleCreate", kKilnErrorValue, manifest_json,
                                 dl_handle_or_null, resolver, resolver_ctx, module.get());
    if (status != 0) return status;  // the caller keeps dl_handle_or_null
    module->dl_handle = dl_handle_or_null;
    *out = module.release();
    return 0;
  });
}

int32_t KilnModuleFree(KilnModuleHandle module) {
  delete module;
  return 0;
}

int32_t KilnModuleGetFunction(KilnModuleHandle module, const char* name, KilnFunctionHandle* out) {
  using namespace kiln::runtime;
  return guarded("KilnModuleGetFunction", [&]() -> int32_t {
    if (module == nullptr || name == nullptr || out == nullptr) {
      return fail(kKilnErrorValue, "KilnModuleGetFunction: module, name and out must not be NULL");
    }
    for (const KilnFunction& function : module->functions) {
      if (std::strcmp(function.spec->name, name) == 0) {
        *out = &function;
        return 0;
      }
    }
    std::string available;
    for (const char* function_name : module->function_names) {
      available += (available.empty() ? "" : ", ") + std::string(function_name);
    }
    return fail(kKilnErrorIndex, "KilnModuleGetFunction: no function '" + std::string(name) +
                                     "' in " + module->label +
                                     "; available: " + (available.empty() ? "(none)" : available));
  });
}

int32_t KilnModuleListFunctions(KilnModuleHandle module, int32_t* num_out,
                                const char* const** names_out) {
  using namespace kiln::runtime;
  if (module == nullptr || num_out == nullptr || names_out == nullptr) {
    return fail(kKilnErrorValue,
                "KilnModuleListFunctions: module, num_out and names_out must not be NULL");
  }
  *num_out = static_cast<int32_t>(module->function_names.size());
  *names_out = module->function_names.data();
  return 0;
}

int32_t KilnModuleGetTarget(KilnModuleHandle module, const char** out) {
  using namespace kiln::runtime;
  if (module == nullptr || out == nullptr) {
    return fail(kKilnErrorValue, "KilnModuleGetTarget: module and out must not be NULL");
  }
  *out = module->manifest.target.c_str();
  return 0;
}

int32_t KilnFuncGetSpec(KilnFunctionHandle func, const KilnFuncSpec** out) {
  using namespace kiln::runtime;
  if (func == nullptr || out == nullptr) {
    return fail(kKilnErrorValue, "KilnFuncGetSpec: func and out must not be NULL");
  }
  *out = func->spec;
  return 0;
}

int32_t KilnFuncCheckArgs(const KilnFuncSpec* spec, const KilnValue* args,
                          const int32_t* type_codes, int32_t num_args) {
  using namespace kiln::runtime;
  if (spec == nullptr) return fail(kKilnErrorValue, "KilnFuncCheckArgs: spec is NULL");
  return guarded("KilnFuncCheckArgs", [&] {
    SpanStorage spans(num_args);
    int32_t status = check_arguments(*spec, args, type_codes, num_args, spans.data());
    if (status != 0) return status;
    return resolve_overlaps(*spec, num_args, spans.data(), nullptr);
  });
}

int32_t KilnFuncCall(KilnFunctionHandle func, const KilnValue* args, const int32_t* type_codes,
                     int32_t num_args) {
  using namespace kiln::runtime;
  if (func == nullptr) return fail(kKilnErrorValue, "KilnFuncCall: function handle is NULL");
  return guarded("KilnFuncCall", [&] {
    SpanStorage spans(num_args);
    int32_t status = check_arguments(*func->spec, args, type_codes, num_args, spans.data());
    if (status != 0) return status;
    return run_kernel(*func, args, type_codes, num_args, spans.data());
  });
}

int32_t KilnModuleFileSeal(const char* path) {
  using namespace kiln::runtime;
  if (path == nullptr) return fail(kKilnErrorValue, "KilnModuleFileSeal: path is NULL");
  return guarded("KilnModuleFileSeal", [&]() -> int32_t {
    std::string error = seal_module_file(path);
    if (error.empty()) return 0;
    return fail(kKilnErrorModuleFile, std::string("KilnModuleFileSeal: ") + path + ": " + error);
  });
}

}  // extern "C"
