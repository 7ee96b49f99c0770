// The CUDA driver API, loaded rather than linked: the few types and functions kiln calls, declared
// here (so that the runtime builds without a CUDA toolkit) and taken from libcuda.so.1 with
// dlopen on first use. Values and signatures follow the driver's ABI (cuda.h).
#pragma once

#include <cstddef>
#include <string>

namespace kiln {
namespace runtime {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // NOLINT: the driver's type
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;

constexpr CUresult CUDA_SUCCESS = 0;

// CUdevice_attribute values kiln reads.
enum CUdeviceAttribute : int {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

// CUfunction_attribute values kiln reads or sets.
enum CUfunctionAttribute : int {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

// CUjit_option values kiln passes to cuModuleLoadDataEx.
enum CUjitOption : int {
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

// The driver functions kiln uses, one pointer per function (the _v2 entry points where the
// driver has them, as cuda.h selects).
struct CudaDriver {
  CUresult (*Init)(unsigned int flags);
  CUresult (*GetErrorName)(CUresult error, const char** name);
  CUresult (*DriverGetVersion)(int* version);
  CUresult (*DeviceGetCount)(int* count);
  CUresult (*DeviceGet)(CUdevice* device, int ordinal);
  CUresult (*DeviceGetName)(char* name, int len, CUdevice device);
  CUresult (*DeviceGetAttribute)(int* value, int attribute, CUdevice device);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext* context, CUdevice device);
  CUresult (*CtxSetCurrent)(CUcontext context);
  CUresult (*CtxSynchronize)();
  CUresult (*MemAlloc)(CUdeviceptr* ptr, size_t bytes);
  CUresult (*MemFree)(CUdeviceptr ptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void* src, size_t bytes);
  CUresult (*MemcpyDtoH)(void* dst, CUdeviceptr src, size_t bytes);
  CUresult (*MemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
  CUresult (*ModuleLoadDataEx)(CUmodule* module, const void* image, unsigned int num_options,
                               int* options, void** option_values);
  CUresult (*ModuleUnload)(CUmodule module);
  CUresult (*ModuleGetFunction)(CUfunction* function, CUmodule module, const char* name);
  CUresult (*FuncGetAttribute)(int* value, int attribute, CUfunction function);
  CUresult (*FuncSetAttribute)(CUfunction function, int attribute, int value);
  CUresult (*LaunchKernel)(CUfunction function, unsigned int grid_x, unsigned int grid_y,
                           unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                           unsigned int block_z, unsigned int shared_bytes, CUstream stream,
                           void** params, void** extra);
};

// The driver, loaded and initialized (cuInit) once; nullptr with `error` saying why when
// libcuda.so.1 cannot be opened, lacks a function or fails cuInit ("CUDA: cannot load the driver
// library libcuda.so.1 (...): no CUDA driver is installed").
const CudaDriver* cuda_driver(std::string* error);

// The name of a CUDA error ("CUDA_ERROR_INVALID_VALUE"), from the driver when it knows it.
std::string cuda_error_name(const CudaDriver& driver, CUresult code);

}  // namespace runtime
}  // namespace kiln
