// The CUDA back end, through the driver API: each device's primary context (retained on first
// use and made current on the calling thread before every call), memory as CUdeviceptr, and
// modules loaded from a cubin for the device's arch or else from PTX.
#include <deque>
#include <mutex>
#include <vector>

#include "cuda_driver.h"
#include "device.h"
#include "error.h"

namespace kiln {
namespace runtime {
namespace {

// Dynamic shared memory above this needs the kernel's consent (cuFuncSetAttribute).
constexpr int64_t kDefaultDynamicSharedBytes = 48 * 1024;
constexpr size_t kAllocationAlignment = 256;

struct CudaDevice {
  CUdevice device = 0;
  CUcontext context = nullptr;  // the primary context, retained on first use
  int compute_capability = 0;   // major * 10 + minor
};

std::string label(int32_t device_id) {
  return device_label(kDLCUDA, device_id);
}

struct CudaKernel {
  std::string name;
  int32_t num_args = 0;
  CUfunction function = nullptr;
  int max_threads = 0;  // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
};

class CudaProgram : public DeviceProgram {
 public:
  CudaProgram(const CudaDriver* driver, const CudaDevice* device, int32_t device_id)
      : driver_(driver), device_(device), device_id_(device_id) {}

  ~CudaProgram() override {
    if (module_ != nullptr && driver_->CtxSetCurrent(device_->context) == CUDA_SUCCESS) {
      driver_->ModuleUnload(module_);
    }
  }

  int32_t build(const Manifest& manifest, const std::string& module_label) {
    std::string where = "KilnDeviceLaunch: " + module_label + " on " + label(device_id_);
    // Step 1. The cubin for this device's arch, else the PTX.
    std::string arch = "sm_" + std::to_string(device_->compute_capability);
    const DeviceBlob* chosen = nullptr;
    std::string available;
    for (const DeviceBlob& blob : manifest.device_blobs) {
      if (blob.kind != "cuda") continue;
      available += (available.empty() ? "" : ", ") + blob.format +
                   (blob.arch.empty() ? "" : " " + blob.arch);
      if (blob.format == "cubin" && blob.arch == arch) chosen = &blob;
    }
    for (const DeviceBlob& blob : manifest.device_blobs) {
      if (chosen == nullptr && blob.kind == "cuda" && blob.format == "ptx") chosen = &blob;
    }
    if (chosen == nullptr) {
      return fail(kKilnErrorRuntime, where + ": the module has no cubin for " + arch +
                                         " and no PTX (it has: " +
                                         (available.empty() ? "no CUDA code" : available) + ")");
    }
    // Step 2. Load it, keeping the driver's error log.
    char log[4096] = {0};
    int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof(log) - 1))};
    CUresult status = driver_->ModuleLoadDataEx(&module_, chosen->data.c_str(), 2, options, values);
    if (status != CUDA_SUCCESS) {
      module_ = nullptr;
      return fail(kKilnErrorRuntime, where + ": cuModuleLoadDataEx of the " + chosen->format +
                                         (chosen->arch.empty() ? "" : " for " + chosen->arch) +
                                         " failed: " + cuda_error_name(*driver_, status) +
                                         (log[0] != '\0' ? std::string("; log:\n") + log : ""));
    }
    // Step 3. Its kernels.
    for (const DeviceKernel& spec : manifest.device_kernels) {
      CudaKernel& kernel = kernels_.emplace_back();
      kernel.name = spec.name;
      kernel.num_args = spec.num_args;
      status = driver_->ModuleGetFunction(&kernel.function, module_, spec.name.c_str());
      if (status != CUDA_SUCCESS) {
        return fail(kKilnErrorRuntime,
                    where + ": kernel " + spec.name +
                        ": cuModuleGetFunction failed: " + cuda_error_name(*driver_, status));
      }
      status = driver_->FuncGetAttribute(&kernel.max_threads,
                                         CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernel.function);
      if (status != CUDA_SUCCESS) {
        return fail(kKilnErrorRuntime,
                    where + ": kernel " + spec.name +
                        ": cuFuncGetAttribute failed: " + cuda_error_name(*driver_, status));
      }
    }
    return 0;
  }

  int32_t launch(int32_t kernel_index, const int64_t* launch, void* const* arg_values,
                 const int64_t* arg_sizes, int32_t num_args) override {
    const CudaKernel& kernel = kernels_[static_cast<size_t>(kernel_index)];
    auto prefix = [&] {
      return "KilnDeviceLaunch: kernel " + kernel.name + " on " + label(device_id_);
    };
    if (num_args != kernel.num_args) {
      return fail(kKilnErrorValue, prefix() + ": expected " + std::to_string(kernel.num_args) +
                                       " arguments, found " + std::to_string(num_args));
    }
    int64_t threads = 1;
    for (int d = 0; d < 3; ++d) {
      int64_t grid = launch[d], block = launch[3 + d];
      if (grid < 0 || block < 1 || grid > UINT32_MAX || block > UINT32_MAX) {
        return fail(kKilnErrorValue, prefix() + ": launch dimension " + std::to_string(d) +
                                         " has grid " + std::to_string(grid) + " and block " +
                                         std::to_string(block));
      }
      if (grid == 0) return 0;  // no blocks: nothing to run
      threads *= block;
    }
    if (threads > kernel.max_threads) {
      return fail(kKilnErrorValue,
                  prefix() + ": block " + std::to_string(launch[3]) + " x " +
                      std::to_string(launch[4]) + " x " + std::to_string(launch[5]) + " = " +
                      std::to_string(threads) + " threads exceeds the maximum " +
                      std::to_string(kernel.max_threads) + " threads per block of this kernel");
    }
    int64_t shared = launch[6];
    if (shared < 0 || shared > INT32_MAX) {
      return fail(kKilnErrorValue,
                  prefix() + ": invalid dynamic shared memory size " + std::to_string(shared));
    }
    CUresult status = driver_->CtxSetCurrent(device_->context);
    if (status == CUDA_SUCCESS && shared > kDefaultDynamicSharedBytes) {
      status = driver_->FuncSetAttribute(kernel.function,
                                         CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         static_cast<int>(shared));
      if (status != CUDA_SUCCESS) {
        return fail(kKilnErrorValue, prefix() + ": " + std::to_string(shared) +
                                         " bytes of dynamic shared memory: cuFuncSetAttribute "
                                         "failed: " +
                                         cuda_error_name(*driver_, status));
      }
    }
    if (status == CUDA_SUCCESS) {
      status = driver_->LaunchKernel(
          kernel.function, static_cast<unsigned>(launch[0]), static_cast<unsigned>(launch[1]),
          static_cast<unsigned>(launch[2]), static_cast<unsigned>(launch[3]),
          static_cast<unsigned>(launch[4]), static_cast<unsigned>(launch[5]),
          static_cast<unsigned>(shared), nullptr, const_cast<void**>(arg_values), nullptr);
    }
    if (status == CUDA_SUCCESS) return 0;
    return fail(kKilnErrorRuntime,
                prefix() + ": cuLaunchKernel failed: " + cuda_error_name(*driver_, status) +
                    " (grid " + std::to_string(launch[0]) + " x " + std::to_string(launch[1]) +
                    " x " + std::to_string(launch[2]) + ", block " + std::to_string(launch[3]) +
                    " x " + std::to_string(launch[4]) + " x " + std::to_string(launch[5]) + ", " +
                    std::to_string(shared) + " bytes of dynamic shared memory)");
  }

 private:
  const CudaDriver* driver_;
  const CudaDevice* device_;
  int32_t device_id_;
  CUmodule module_ = nullptr;
  std::deque<CudaKernel> kernels_;
};

class CudaBackend : public DeviceBackend {
 public:
  int32_t count(const char* api, int32_t* out) override {
    std::lock_guard<std::mutex> lock(mutex_);
    int32_t status = enumerate(api);
    if (status != 0) return status;
    *out = static_cast<int32_t>(devices_.size());
    return 0;
  }

  int32_t attribute(int32_t device_id, KilnDeviceAttr attr, int64_t* out) override {
    CudaDevice* device = nullptr;
    int32_t status = find("KilnDeviceAttribute", device_id, false, &device);
    if (status != 0) return status;
    std::string where = "KilnDeviceAttribute: " + label(device_id);
    int which = -1;
    switch (attr) {
      case kKilnDeviceExists:
        *out = 1;
        return 0;
      case kKilnDeviceComputeCapability:
        *out = device->compute_capability;
        return 0;
      case kKilnDeviceMaxThreadsPerBlock:
        which = CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
        break;
      case kKilnDeviceMaxSharedMemoryPerBlock:
        which = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK;
        break;
      case kKilnDeviceWarpSize:
        which = CU_DEVICE_ATTRIBUTE_WARP_SIZE;
        break;
      case kKilnDeviceMultiprocessorCount:
        which = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
        break;
    }
    if (which < 0)
      return fail(kKilnErrorValue, where + ": unknown attribute " + std::to_string(attr));
    int value = 0;
    CUresult error = driver_->DeviceGetAttribute(&value, which, device->device);
    if (error != CUDA_SUCCESS) return cuda_fail(where, "cuDeviceGetAttribute", error);
    *out = value;
    return 0;
  }

  int32_t name(int32_t device_id, std::string* out) override {
    CudaDevice* device = nullptr;
    int32_t status = find("KilnDeviceName", device_id, false, &device);
    if (status != 0) return status;
    char buffer[256] = {0};
    CUresult error = driver_->DeviceGetName(buffer, sizeof(buffer) - 1, device->device);
    if (error != CUDA_SUCCESS) {
      return cuda_fail("KilnDeviceName: " + label(device_id), "cuDeviceGetName", error);
    }
    *out = buffer;
    return 0;
  }

  int32_t driver_version(int32_t device_id, std::string* out) override {
    CudaDevice* device = nullptr;
    int32_t status = find("KilnDeviceDriverVersion", device_id, false, &device);
    if (status != 0) return status;
    int version = 0;  // 1000 * major + 10 * minor
    CUresult error = driver_->DriverGetVersion(&version);
    if (error != CUDA_SUCCESS) {
      return cuda_fail("KilnDeviceDriverVersion: " + label(device_id), "cuDriverGetVersion", error);
    }
    *out = std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
    return 0;
  }

  int32_t alloc(int32_t device_id, size_t nbytes, size_t alignment, void** out) override {
    std::string where = "KilnDeviceAlloc: " + label(device_id);
    if (alignment > kAllocationAlignment) {
      return fail(kKilnErrorValue, where + ": alignment " + std::to_string(alignment) +
                                       " exceeds the 256 bytes of CUDA allocations");
    }
    CudaDevice* device = nullptr;
    int32_t status = find("KilnDeviceAlloc", device_id, true, &device);
    if (status != 0) return status;
    CUdeviceptr ptr = 0;
    CUresult error = driver_->MemAlloc(&ptr, nbytes);
    if (error != CUDA_SUCCESS) {
      return cuda_fail(where + ": " + std::to_string(nbytes) + " bytes", "cuMemAlloc", error);
    }
    *out = reinterpret_cast<void*>(static_cast<uintptr_t>(ptr));
    return 0;
  }

  int32_t free(int32_t device_id, void* ptr) override {
    CudaDevice* device = nullptr;
    int32_t status = find("KilnDeviceFree", device_id, true, &device);
    if (status != 0) return status;
    CUresult error = driver_->MemFree(handle(ptr));
    if (error == CUDA_SUCCESS) return 0;
    return cuda_fail("KilnDeviceFree: " + label(device_id), "cuMemFree", error);
  }

  int32_t copy_to_device(int32_t device_id, const void* host, void* device_handle, size_t offset,
                         size_t nbytes) override {
    CudaDevice* device = nullptr;
    int32_t status = find("KilnDeviceCopy", device_id, true, &device);
    if (status != 0) return status;
    CUresult error = driver_->MemcpyHtoD(handle(device_handle) + offset, host, nbytes);
    if (error == CUDA_SUCCESS) return 0;
    return cuda_fail("KilnDeviceCopy: to " + label(device_id), "cuMemcpyHtoD", error);
  }

  int32_t copy_to_host(int32_t device_id, const void* device_handle, size_t offset, void* host,
                       size_t nbytes) override {
    CudaDevice* device = nullptr;
    int32_t status = find("KilnDeviceCopy", device_id, true, &device);
    if (status != 0) return status;
    CUresult error = driver_->MemcpyDtoH(host, handle(device_handle) + offset, nbytes);
    if (error == CUDA_SUCCESS) return 0;
    return cuda_fail("KilnDeviceCopy: from " + label(device_id), "cuMemcpyDtoH", error);
  }

  int32_t copy_on_device(int32_t device_id, const void* from, size_t from_offset, void* to,
                         size_t to_offset, size_t nbytes) override {
    CudaDevice* device = nullptr;
    int32_t status = find("KilnDeviceCopy", device_id, true, &device);
    if (status != 0) return status;
    CUresult error =
        driver_->MemcpyDtoD(handle(to) + to_offset, handle(from) + from_offset, nbytes);
    if (error == CUDA_SUCCESS) return 0;
    return cuda_fail("KilnDeviceCopy: on " + label(device_id), "cuMemcpyDtoD", error);
  }

  int32_t synchronize(int32_t device_id) override {
    CudaDevice* device = nullptr;
    int32_t status = find("KilnDeviceSynchronize", device_id, true, &device);
    if (status != 0) return status;
    CUresult error = driver_->CtxSynchronize();
    if (error == CUDA_SUCCESS) return 0;
    return cuda_fail("KilnDeviceSynchronize: " + label(device_id), "cuCtxSynchronize", error);
  }

  int32_t load(int32_t device_id, const Manifest& manifest, const std::string& module_label,
               std::unique_ptr<DeviceProgram>* out) override {
    CudaDevice* device = nullptr;
    int32_t status = find("KilnDeviceLaunch", device_id, true, &device);
    if (status != 0) return status;
    auto program = std::make_unique<CudaProgram>(driver_, device, device_id);
    status = program->build(manifest, module_label);
    if (status != 0) return status;
    *out = std::move(program);
    return 0;
  }

 private:
  static CUdeviceptr handle(const void* ptr) {
    return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr));
  }

  int32_t cuda_fail(const std::string& where, const char* call, CUresult error) {
    return fail(kKilnErrorRuntime,
                where + ": " + call + " failed: " + cuda_error_name(*driver_, error));
  }

  // Loads the driver and lists the devices once (under mutex_).
  int32_t enumerate(const char* api) {
    if (enumerated_) return 0;
    std::string error;
    driver_ = cuda_driver(&error);
    if (driver_ == nullptr) return fail(kKilnErrorRuntime, std::string(api) + ": " + error);
    int count = 0;
    CUresult status = driver_->DeviceGetCount(&count);
    if (status != CUDA_SUCCESS) return cuda_fail(api, "cuDeviceGetCount", status);
    for (int i = 0; i < count; ++i) {
      CudaDevice& device = devices_.emplace_back();
      int major = 0, minor = 0;
      status = driver_->DeviceGet(&device.device, i);
      if (status == CUDA_SUCCESS) {
        status = driver_->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                             device.device);
      }
      if (status == CUDA_SUCCESS) {
        status = driver_->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                             device.device);
      }
      if (status != CUDA_SUCCESS) {
        devices_.clear();
        return cuda_fail(std::string(api) + ": " + label(i), "cuDeviceGet", status);
      }
      device.compute_capability = major * 10 + minor;
    }
    enumerated_ = true;
    return 0;
  }

  // The device `device_id`; with `open`, its primary context is retained and made current on the
  // calling thread.
  int32_t find(const char* api, int32_t device_id, bool open, CudaDevice** out) {
    CudaDevice* device = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      int32_t status = enumerate(api);
      if (status != 0) return status;
      if (device_id < 0 || static_cast<size_t>(device_id) >= devices_.size()) {
        return fail(kKilnErrorRuntime, std::string(api) + ": no device " + label(device_id) + ": " +
                                           std::to_string(devices_.size()) + " CUDA device" +
                                           (devices_.size() == 1 ? "" : "s") + " found");
      }
      device = &devices_[static_cast<size_t>(device_id)];
      if (open && device->context == nullptr) {
        CUresult error = driver_->DevicePrimaryCtxRetain(&device->context, device->device);
        if (error != CUDA_SUCCESS) {
          device->context = nullptr;
          return cuda_fail(std::string(api) + ": " + label(device_id), "cuDevicePrimaryCtxRetain",
                           error);
        }
      }
    }
    if (open) {
      CUresult error = driver_->CtxSetCurrent(device->context);
      if (error != CUDA_SUCCESS) {
        return cuda_fail(std::string(api) + ": " + label(device_id), "cuCtxSetCurrent", error);
      }
    }
    *out = device;
    return 0;
  }

  std::mutex mutex_;
  bool enumerated_ = false;
  const CudaDriver* driver_ = nullptr;
  std::deque<CudaDevice> devices_;  // stable addresses: programs keep pointers
};

}  // namespace

DeviceBackend* cuda_backend() {
  static CudaBackend* backend = new CudaBackend();  // lives as long as the driver's objects
  return backend;
}

}  // namespace runtime
}  // namespace kiln
