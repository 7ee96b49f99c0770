// Modules and functions of the C API: opening an exported library (or wrapping in-process code),
// reading and judging its manifest, resolving kernel symbols, and checked calls.
#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "arg_check.h"
#include "error.h"
#include "kiln/runtime/c_runtime_api.h"
#include "manifest.h"

// One function of a module: its spec (owned by the module's manifest) and its kernel.
struct KilnFunction {
  const KilnFuncSpec* spec;
  KilnPackedCFunc kernel;
};

// A module: its manifest, its functions, and the library it was opened from (if any).
struct KilnModule {
  std::string label;  // the path, or "in-process module", for messages
  kiln::runtime::Manifest manifest;
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
    return fail(std::string(api) + ": " + e.what());
  } catch (...) {
    return fail(std::string(api) + ": unexpected C++ exception");
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

// Parses and judges the manifest, then resolves every function's kernel. On failure returns
// -1 with the error prefixed by `context`; the module is left for the caller to discard.
int32_t init_module(const std::string& context, const char* manifest_json, void* dl_handle,
                    KilnSymbolResolver resolver, void* resolver_ctx, KilnModule* module) {
  std::string error;
  if (!parse_manifest(manifest_json, &module->manifest, &error)) {
    return fail(context + ": manifest: " + error);
  }
  std::string refusal = check_manifest_runnable(module->manifest);
  if (!refusal.empty()) return fail(context + ": " + refusal);
  for (const FunctionSpec& function : module->manifest.functions) {
    void* symbol = resolver != nullptr ? resolver(resolver_ctx, function.symbol.c_str())
                                       : dlsym(dl_handle, function.symbol.c_str());
    if (symbol == nullptr) {
      return fail(context + ": function " + function.name + ": symbol " + function.symbol +
                  " not found");
    }
    module->functions.push_back(
        KilnFunction{&function.spec, reinterpret_cast<KilnPackedCFunc>(symbol)});
    module->function_names.push_back(function.name.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace runtime
}  // namespace kiln

extern "C" {

int32_t KilnModuleLoadFromFile(const char* path, KilnModuleHandle* out) {
  using namespace kiln::runtime;
  return guarded("KilnModuleLoadFromFile", [&]() -> int32_t {
    if (path == nullptr || out == nullptr) {
      return fail("KilnModuleLoadFromFile: path and out must not be NULL");
    }
    *out = nullptr;
    std::string context = std::string("KilnModuleLoadFromFile: ") + path;
    // dlopen searches the library path for a bare file name; a module file means this one.
    std::string file = path;
    if (file.find('/') == std::string::npos) file = "./" + file;
    make_runtime_symbols_global();
    void* handle = dlopen(file.c_str(), RTLD_LOCAL | RTLD_NOW);
    if (handle == nullptr) {
      const char* reason = dlerror();
      return fail(context + ": cannot open: " + (reason != nullptr ? reason : "unknown error"));
    }
    auto module = std::make_unique<KilnModule>();
    module->label = path;
    module->dl_handle = handle;
    const char* manifest = static_cast<const char*>(dlsym(handle, "kiln_module_manifest"));
    if (manifest == nullptr) {
      return fail(context + ": not a kiln module: it defines no symbol kiln_module_manifest");
    }
    if (init_module(context, manifest, handle, nullptr, nullptr, module.get()) != 0) return -1;
    *out = module.release();
    return 0;
  });
}

int32_t KilnModuleCreate(const char* manifest_json, void* dl_handle_or_null,
                         KilnSymbolResolver resolver, void* resolver_ctx, KilnModuleHandle* out) {
  using namespace kiln::runtime;
  return guarded("KilnModuleCreate", [&]() -> int32_t {
    if (manifest_json == nullptr || out == nullptr) {
      return fail("KilnModuleCreate: manifest_json and out must not be NULL");
    }
    *out = nullptr;
    if (resolver == nullptr && dl_handle_or_null == nullptr) {
      return fail("KilnModuleCreate: needs a symbol resolver or a library handle");
    }
    auto module = std::make_unique<KilnModule>();
    module->label = "in-process module";
    if (init_module("KilnModuleCreate", manifest_json, dl_handle_or_null, resolver, resolver_ctx,
                    module.get()) != 0) {
      return -1;  // the caller keeps dl_handle_or_null
    }
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
      return fail("KilnModuleGetFunction: module, name and out must not be NULL");
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
    return fail("KilnModuleGetFunction: no function '" + std::string(name) + "' in " +
                module->label + "; available: " + (available.empty() ? "(none)" : available));
  });
}

int32_t KilnModuleListFunctions(KilnModuleHandle module, int32_t* num_out,
                                const char* const** names_out) {
  using namespace kiln::runtime;
  if (module == nullptr || num_out == nullptr || names_out == nullptr) {
    return fail("KilnModuleListFunctions: module, num_out and names_out must not be NULL");
  }
  *num_out = static_cast<int32_t>(module->function_names.size());
  *names_out = module->function_names.data();
  return 0;
}

int32_t KilnModuleGetTarget(KilnModuleHandle module, const char** out) {
  using namespace kiln::runtime;
  if (module == nullptr || out == nullptr) {
    return fail("KilnModuleGetTarget: module and out must not be NULL");
  }
  *out = module->manifest.target.c_str();
  return 0;
}

int32_t KilnFuncGetSpec(KilnFunctionHandle func, const KilnFuncSpec** out) {
  using namespace kiln::runtime;
  if (func == nullptr || out == nullptr) {
    return fail("KilnFuncGetSpec: func and out must not be NULL");
  }
  *out = func->spec;
  return 0;
}

int32_t KilnFuncCheckArgs(const KilnFuncSpec* spec, const KilnValue* args,
                          const int32_t* type_codes, int32_t num_args) {
  using namespace kiln::runtime;
  if (spec == nullptr) return fail("KilnFuncCheckArgs: spec is NULL");
  return guarded("KilnFuncCheckArgs",
                 [&] { return check_arguments(*spec, args, type_codes, num_args); });
}

int32_t KilnFuncCall(KilnFunctionHandle func, const KilnValue* args, const int32_t* type_codes,
                     int32_t num_args) {
  using namespace kiln::runtime;
  if (func == nullptr) return fail("KilnFuncCall: function handle is NULL");
  int32_t status = guarded(
      "KilnFuncCall", [&] { return check_arguments(*func->spec, args, type_codes, num_args); });
  if (status != 0) return status;
  KilnSetLastError(nullptr);
  if (func->kernel(args, type_codes, num_args) == 0) return 0;
  if (KilnGetLastError()[0] == '\0') {
    return fail(std::string(func->spec->name) + ": kernel failed without an error message");
  }
  return -1;
}

}  // extern "C"
