// Opens libcuda.so.1 once, resolves every function of CudaDriver and calls cuInit, so that a
// machine without a CUDA driver (or without a GPU) gets a message that names what is missing.
#include "cuda_driver.h"

#include <dlfcn.h>

namespace kiln {
namespace runtime {
namespace {

constexpr char kLibrary[] = "libcuda.so.1";

struct LoadedDriver {
  CudaDriver table{};
  std::string error;  // "" when the driver is usable
};

template <class Function>
bool resolve(void* library, const char* name, Function* out, std::string* error) {
  *out = reinterpret_cast<Function>(dlsym(library, name));
  if (*out != nullptr) return true;
  *error = std::string("CUDA: the driver library ") + kLibrary + " lacks the function " + name +
           "; the driver is too old";
  return false;
}

LoadedDriver load() {
  LoadedDriver loaded;
  void* library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* reason = dlerror();
    loaded.error = std::string("CUDA: cannot load the driver library ") + kLibrary + " (" +
                   (reason != nullptr ? reason : "unknown error") +
                   "): no CUDA driver is installed";
    return loaded;
  }
  CudaDriver& t = loaded.table;
  std::string& e = loaded.error;
  bool ok = resolve(library, "cuInit", &t.Init, &e) &&
            resolve(library, "cuGetErrorName", &t.GetErrorName, &e) &&
            resolve(library, "cuDriverGetVersion", &t.DriverGetVersion, &e) &&
            resolve(library, "cuDeviceGetCount", &t.DeviceGetCount, &e) &&
            resolve(library, "cuDeviceGet", &t.DeviceGet, &e) &&
            resolve(library, "cuDeviceGetName", &t.DeviceGetName, &e) &&
            resolve(library, "cuDeviceGetAttribute", &t.DeviceGetAttribute, &e) &&
            resolve(library, "cuDevicePrimaryCtxRetain", &t.DevicePrimaryCtxRetain, &e) &&
            resolve(library, "cuCtxSetCurrent", &t.CtxSetCurrent, &e) &&
            resolve(library, "cuCtxSynchronize", &t.CtxSynchronize, &e) &&
            resolve(library, "cuMemAlloc_v2", &t.MemAlloc, &e) &&
            resolve(library, "cuMemFree_v2", &t.MemFree, &e) &&
            resolve(library, "cuMemcpyHtoD_v2", &t.MemcpyHtoD, &e) &&
            resolve(library, "cuMemcpyDtoH_v2", &t.MemcpyDtoH, &e) &&
            resolve(library, "cuMemcpyDtoD_v2", &t.MemcpyDtoD, &e) &&
            resolve(library, "cuModuleLoadDataEx", &t.ModuleLoadDataEx, &e) &&
            resolve(library, "cuModuleUnload", &t.ModuleUnload, &e) &&
            resolve(library, "cuModuleGetFunction", &t.ModuleGetFunction, &e) &&
            resolve(library, "cuFuncGetAttribute", &t.FuncGetAttribute, &e) &&
            resolve(library, "cuFuncSetAttribute", &t.FuncSetAttribute, &e) &&
            resolve(library, "cuLaunchKernel", &t.LaunchKernel, &e);
  if (!ok) {
    dlclose(library);
    return loaded;
  }
  CUresult status = t.Init(0);
  if (status != CUDA_SUCCESS) {
    // CUDA_ERROR_NO_DEVICE is the usual reason: a driver without a GPU.
    e = "CUDA: cuInit failed: " + cuda_error_name(t, status);
  }
  // The library stays open for the life of the process: contexts and memory outlive any caller.
  return loaded;
}

}  // namespace

const CudaDriver* cuda_driver(std::string* error) {
  static const LoadedDriver loaded = load();
  if (!loaded.error.empty()) {
    *error = loaded.error;
    return nullptr;
  }
  return &loaded.table;
}

std::string cuda_error_name(const CudaDriver& driver, CUresult code) {
  const char* name = nullptr;
  if (driver.GetErrorName != nullptr && driver.GetErrorName(code, &name) == CUDA_SUCCESS &&
      name != nullptr) {
    return name;
  }
  return "CUDA error " + std::to_string(code);
}

}  // namespace runtime
}  // namespace kiln
