// The OpenCL back end: devices of every platform (GPUs first), one context and in-order queue per
// device created on first use, buffers as cl_mem, and programs built from a module's OpenCL C.
#include <algorithm>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "device.h"
#include "error.h"
#include "opencl_driver.h"

namespace kiln {
namespace runtime {
namespace {

// Vendor queries of the SIMD width (cl_nv_device_attribute_query, cl_amd_device_attribute_query).
constexpr cl_device_info kWarpSizeNV = 0x4003;
constexpr cl_device_info kWavefrontWidthAMD = 0x4043;

struct OpenCLDevice {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  // Created on first use under the back end's lock, then never changed.
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
};

std::string label(int32_t device_id) {
  return device_label(kDLOpenCL, device_id);
}

// Keeps the variables that choose the OpenCL drivers as they were while a driver starts. A
// driver's start may rewrite them in the process (one seen: OCL_ICD_FILENAMES lost its second
// library while PoCL started), and every process started afterwards (the tuner's workers among
// them) would then see fewer platforms than this one.
class IcdEnvironmentGuard {
 public:
  IcdEnvironmentGuard() {
    for (const char* name : kNames) {
      const char* value = std::getenv(name);
      saved_.push_back(value == nullptr ? std::nullopt : std::optional<std::string>(value));
    }
  }
  ~IcdEnvironmentGuard() {
    for (size_t i = 0; i < saved_.size(); ++i) {
      const char* now = std::getenv(kNames[i]);
      if (!saved_[i].has_value()) {
        if (now != nullptr) unsetenv(kNames[i]);
      } else if (now == nullptr || *saved_[i] != now) {
        setenv(kNames[i], saved_[i]->c_str(), 1);
      }
    }
  }
  IcdEnvironmentGuard(const IcdEnvironmentGuard&) = delete;
  IcdEnvironmentGuard& operator=(const IcdEnvironmentGuard&) = delete;

 private:
  // Read by the ICD loaders (ocl-icd, Khronos).
  static constexpr const char* kNames[] = {"OCL_ICD_FILENAMES", "OCL_ICD_VENDORS"};
  std::vector<std::optional<std::string>> saved_;
};

int32_t cl_fail(KilnErrorCode code, const std::string& what, const char* call, cl_int status) {
  return fail(code, what + ": " + call + " failed: " + opencl_error_name(status));
}

// One kernel of a program, with the lock that keeps its arguments and launch together.
struct OpenCLKernel {
  std::string name;
  int32_t num_args = 0;
  cl_kernel kernel = nullptr;
  size_t max_work_group = 0;  // CL_KERNEL_WORK_GROUP_SIZE on the device
  std::mutex mutex;
};

class OpenCLProgram : public DeviceProgram {
 public:
  OpenCLProgram(const OpenCLDriver* driver, const OpenCLDevice* device, int32_t device_id)
      : driver_(driver), device_(device), device_id_(device_id) {}

  ~OpenCLProgram() override {
    for (OpenCLKernel& kernel : kernels_) {
      if (kernel.kernel != nullptr) driver_->ReleaseKernel(kernel.kernel);
    }
    if (program_ != nullptr) driver_->ReleaseProgram(program_);
  }

  int32_t build(const Manifest& manifest, const std::string& module_label) {
    std::string where = "KilnDeviceLaunch: " + module_label + " on " + label(device_id_);
    const DeviceBlob* blob = nullptr;
    for (const DeviceBlob& candidate : manifest.device_blobs) {
      if (candidate.kind == "opencl") blob = &candidate;
    }
    if (blob == nullptr) {
      return fail(kKilnErrorValue, where +
                                       ": the module carries no OpenCL code (its device "
                                       "blobs are for another device type)");
    }
    const char* source = blob->data.c_str();
    size_t length = blob->data.size();
    cl_int status = CL_SUCCESS;
    program_ = driver_->CreateProgramWithSource(device_->context, 1, &source, &length, &status);
    if (status != CL_SUCCESS)
      return cl_fail(kKilnErrorRuntime, where, "clCreateProgramWithSource", status);
    status = driver_->BuildProgram(program_, 1, &device_->device, blob->build_options.c_str(),
                                   nullptr, nullptr);
    if (status != CL_SUCCESS) {
      std::string options =
          blob->build_options.empty() ? "" : " with options \"" + blob->build_options + "\"";
      return fail(kKilnErrorRuntime, where + ": the OpenCL program does not build" + options +
                                         " (" + opencl_error_name(status) + "); build log:\n" +
                                         build_log());
    }
    for (const DeviceKernel& spec : manifest.device_kernels) {
      OpenCLKernel& kernel = kernels_.emplace_back();
      kernel.name = spec.name;
      kernel.num_args = spec.num_args;
      kernel.kernel = driver_->CreateKernel(program_, spec.name.c_str(), &status);
      if (status != CL_SUCCESS) {
        std::string hint =
            status == CL_INVALID_KERNEL_NAME ? " (the program defines no kernel of that name)" : "";
        return fail(kKilnErrorRuntime, where + ": kernel " + spec.name +
                                           ": clCreateKernel failed: " + opencl_error_name(status) +
                                           hint);
      }
      status =
          driver_->GetKernelWorkGroupInfo(kernel.kernel, device_->device, CL_KERNEL_WORK_GROUP_SIZE,
                                          sizeof(size_t), &kernel.max_work_group, nullptr);
      if (status != CL_SUCCESS) {
        return cl_fail(kKilnErrorRuntime, where + ": kernel " + spec.name,
                       "clGetKernelWorkGroupInfo", status);
      }
    }
    return 0;
  }

  int32_t launch(int32_t kernel_index, const int64_t* launch, void* const* arg_values,
                 const int64_t* arg_sizes, int32_t num_args) override {
    OpenCLKernel& kernel = kernels_[static_cast<size_t>(kernel_index)];
    auto prefix = [&] {
      return "KilnDeviceLaunch: kernel " + kernel.name + " on " + label(device_id_);
    };
    if (num_args != kernel.num_args) {
      return fail(kKilnErrorValue, prefix() + ": expected " + std::to_string(kernel.num_args) +
                                       " arguments, found " + std::to_string(num_args));
    }
    size_t global[3], local[3];
    size_t threads = 1;
    for (int d = 0; d < 3; ++d) {
      int64_t grid = launch[d], block = launch[3 + d];
      if (grid < 0 || block < 1) {
        return fail(kKilnErrorValue, prefix() + ": launch dimension " + std::to_string(d) +
                                         " has grid " + std::to_string(grid) + " and block " +
                                         std::to_string(block) +
                                         " (a grid >= 0 and a block >= 1 are required)");
      }
      if (grid == 0) return 0;  // no work-groups: nothing to run
      local[d] = static_cast<size_t>(block);
      if (__builtin_mul_overflow(local[d], static_cast<size_t>(grid), &global[d])) {
        return fail(kKilnErrorValue, prefix() + ": the global size of dimension " +
                                         std::to_string(d) + " overflows");
      }
      threads *= local[d];
    }
    if (launch[6] < 0) {
      return fail(kKilnErrorValue,
                  prefix() + ": negative dynamic shared memory size " + std::to_string(launch[6]));
    }
    if (threads > kernel.max_work_group) {
      return fail(kKilnErrorValue,
                  prefix() + ": block " + std::to_string(local[0]) + " x " +
                      std::to_string(local[1]) + " x " + std::to_string(local[2]) + " = " +
                      std::to_string(threads) + " work-items exceeds the maximum work-group size " +
                      std::to_string(kernel.max_work_group) + " of this kernel on the device");
    }
    std::lock_guard<std::mutex> lock(kernel.mutex);
    for (int32_t i = 0; i < num_args; ++i) {
      cl_int status = driver_->SetKernelArg(kernel.kernel, static_cast<cl_uint>(i),
                                            static_cast<size_t>(arg_sizes[i]), arg_values[i]);
      if (status != CL_SUCCESS) {
        return fail(kKilnErrorRuntime,
                    prefix() + ": argument " + std::to_string(i) + " (" +
                        std::to_string(arg_sizes[i]) +
                        " bytes): clSetKernelArg failed: " + opencl_error_name(status));
      }
    }
    if (launch[6] > 0) {
      cl_int status = driver_->SetKernelArg(kernel.kernel, static_cast<cl_uint>(num_args),
                                            static_cast<size_t>(launch[6]), nullptr);
      if (status != CL_SUCCESS) {
        return fail(kKilnErrorRuntime,
                    prefix() + ": the dynamic __local argument " + std::to_string(num_args) + " (" +
                        std::to_string(launch[6]) +
                        " bytes): clSetKernelArg failed: " + opencl_error_name(status));
      }
    }
    cl_int status = driver_->EnqueueNDRangeKernel(device_->queue, kernel.kernel, 3, nullptr, global,
                                                  local, 0, nullptr, nullptr);
    if (status != CL_SUCCESS) {
      return fail(kKilnErrorRuntime,
                  prefix() + ": clEnqueueNDRangeKernel failed: " + opencl_error_name(status) +
                      " (grid " + std::to_string(launch[0]) + " x " + std::to_string(launch[1]) +
                      " x " + std::to_string(launch[2]) + ", block " + std::to_string(local[0]) +
                      " x " + std::to_string(local[1]) + " x " + std::to_string(local[2]) + ")");
    }
    return 0;
  }

 private:
  std::string build_log() {
    size_t size = 0;
    if (driver_->GetProgramBuildInfo(program_, device_->device, CL_PROGRAM_BUILD_LOG, 0, nullptr,
                                     &size) != CL_SUCCESS) {
      return "(the build log cannot be read)";
    }
    std::string log(size, '\0');
    driver_->GetProgramBuildInfo(program_, device_->device, CL_PROGRAM_BUILD_LOG, size, log.data(),
                                 nullptr);
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
  }

  const OpenCLDriver* driver_;
  const OpenCLDevice* device_;
  int32_t device_id_;
  cl_program program_ = nullptr;
  std::deque<OpenCLKernel> kernels_;
};

class OpenCLBackend : public DeviceBackend {
 public:
  int32_t count(const char* api, int32_t* out) override {
    std::lock_guard<std::mutex> lock(mutex_);
    int32_t status = enumerate(api);
    if (status != 0) return status;
    *out = static_cast<int32_t>(devices_.size());
    return 0;
  }

  int32_t attribute(int32_t device_id, KilnDeviceAttr attr, int64_t* out) override {
    OpenCLDevice* device = nullptr;
    int32_t status = find("KilnDeviceAttribute", device_id, false, &device);
    if (status != 0) return status;
    std::string where = "KilnDeviceAttribute: " + label(device_id);
    switch (attr) {
      case kKilnDeviceExists:
        *out = 1;
        return 0;
      case kKilnDeviceMaxThreadsPerBlock: {
        size_t value = 0;
        status = info(where, device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(value), &value);
        *out = static_cast<int64_t>(value);
        return status;
      }
      case kKilnDeviceMaxSharedMemoryPerBlock: {
        cl_ulong value = 0;
        status = info(where, device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(value), &value);
        *out = static_cast<int64_t>(value);
        return status;
      }
      case kKilnDeviceWarpSize: {
        cl_uint value = 0;
        *out = 1;
        if (driver_->GetDeviceInfo(device->device, kWarpSizeNV, sizeof(value), &value, nullptr) ==
                CL_SUCCESS ||
            driver_->GetDeviceInfo(device->device, kWavefrontWidthAMD, sizeof(value), &value,
                                   nullptr) == CL_SUCCESS) {
          if (value > 0) *out = value;
        }
        return 0;
      }
      case kKilnDeviceComputeCapability:
        return fail(kKilnErrorValue,
                    where + ": the compute capability is an attribute of CUDA devices only");
      case kKilnDeviceMultiprocessorCount: {
        cl_uint value = 0;
        status = info(where, device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(value), &value);
        *out = value;
        return status;
      }
    }
    return fail(kKilnErrorValue, where + ": unknown attribute " + std::to_string(attr));
  }

  int32_t name(int32_t device_id, std::string* out) override {
    OpenCLDevice* device = nullptr;
    int32_t status = find("KilnDeviceName", device_id, false, &device);
    if (status != 0) return status;
    char buffer[256] = {0};
    status = info("KilnDeviceName: " + label(device_id), device, CL_DEVICE_NAME, sizeof(buffer) - 1,
                  buffer);
    *out = buffer;
    return status;
  }

  int32_t driver_version(int32_t device_id, std::string* out) override {
    OpenCLDevice* device = nullptr;
    int32_t status = find("KilnDeviceDriverVersion", device_id, false, &device);
    if (status != 0) return status;
    char buffer[256] = {0};
    status = info("KilnDeviceDriverVersion: " + label(device_id), device, CL_DRIVER_VERSION,
                  sizeof(buffer) - 1, buffer);
    *out = buffer;
    return status;
  }

  int32_t alloc(int32_t device_id, size_t nbytes, size_t alignment, void** out) override {
    OpenCLDevice* device = nullptr;
    int32_t status = find("KilnDeviceAlloc", device_id, true, &device);
    if (status != 0) return status;
    cl_int error = CL_SUCCESS;
    cl_mem buffer =
        driver_->CreateBuffer(device->context, CL_MEM_READ_WRITE, nbytes, nullptr, &error);
    if (error != CL_SUCCESS) {
      return cl_fail(
          kKilnErrorRuntime,
          "KilnDeviceAlloc: " + label(device_id) + ": " + std::to_string(nbytes) + " bytes",
          "clCreateBuffer", error);
    }
    *out = buffer;
    return 0;
  }

  int32_t free(int32_t device_id, void* ptr) override {
    std::string error;
    const OpenCLDriver* driver = opencl_driver(&error);
    if (driver == nullptr) return fail(kKilnErrorRuntime, "KilnDeviceFree: " + error);
    cl_int status = driver->ReleaseMemObject(static_cast<cl_mem>(ptr));
    if (status != CL_SUCCESS) {
      return cl_fail(kKilnErrorRuntime, "KilnDeviceFree: " + label(device_id), "clReleaseMemObject",
                     status);
    }
    return 0;
  }

  int32_t copy_to_device(int32_t device_id, const void* host, void* device_handle, size_t offset,
                         size_t nbytes) override {
    OpenCLDevice* device = nullptr;
    int32_t status = find("KilnDeviceCopy", device_id, true, &device);
    if (status != 0) return status;
    cl_int error = driver_->EnqueueWriteBuffer(device->queue, static_cast<cl_mem>(device_handle),
                                               CL_TRUE, offset, nbytes, host, 0, nullptr, nullptr);
    if (error == CL_SUCCESS) return 0;
    return cl_fail(kKilnErrorRuntime, "KilnDeviceCopy: to " + label(device_id),
                   "clEnqueueWriteBuffer", error);
  }

  int32_t copy_to_host(int32_t device_id, const void* device_handle, size_t offset, void* host,
                       size_t nbytes) override {
    OpenCLDevice* device = nullptr;
    int32_t status = find("KilnDeviceCopy", device_id, true, &device);
    if (status != 0) return status;
    cl_mem buffer = static_cast<cl_mem>(const_cast<void*>(device_handle));
    cl_int error = driver_->EnqueueReadBuffer(device->queue, buffer, CL_TRUE, offset, nbytes, host,
                                              0, nullptr, nullptr);
    if (error == CL_SUCCESS) return 0;
    return cl_fail(kKilnErrorRuntime, "KilnDeviceCopy: from " + label(device_id),
                   "clEnqueueReadBuffer", error);
  }

  int32_t copy_on_device(int32_t device_id, const void* from, size_t from_offset, void* to,
                         size_t to_offset, size_t nbytes) override {
    OpenCLDevice* device = nullptr;
    int32_t status = find("KilnDeviceCopy", device_id, true, &device);
    if (status != 0) return status;
    cl_int error = driver_->EnqueueCopyBuffer(
        device->queue, static_cast<cl_mem>(const_cast<void*>(from)), static_cast<cl_mem>(to),
        from_offset, to_offset, nbytes, 0, nullptr, nullptr);
    if (error == CL_SUCCESS) return 0;
    return cl_fail(kKilnErrorRuntime, "KilnDeviceCopy: on " + label(device_id),
                   "clEnqueueCopyBuffer", error);
  }

  int32_t synchronize(int32_t device_id) override {
    OpenCLDevice* device = nullptr;
    int32_t status = find("KilnDeviceSynchronize", device_id, false, &device);
    if (status != 0) return status;
    cl_command_queue queue = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue = device->queue;
    }
    if (queue == nullptr) return 0;  // nothing was ever issued to the device
    cl_int error = driver_->Finish(queue);
    if (error == CL_SUCCESS) return 0;
    return cl_fail(kKilnErrorRuntime, "KilnDeviceSynchronize: " + label(device_id), "clFinish",
                   error);
  }

  int32_t load(int32_t device_id, const Manifest& manifest, const std::string& module_label,
               std::unique_ptr<DeviceProgram>* out) override {
    OpenCLDevice* device = nullptr;
    int32_t status = find("KilnDeviceLaunch", device_id, true, &device);
    if (status != 0) return status;
    auto program = std::make_unique<OpenCLProgram>(driver_, device, device_id);
    status = program->build(manifest, module_label);
    if (status != 0) return status;
    *out = std::move(program);
    return 0;
  }

 private:
  // Lists the devices once (under mutex_): GPUs, then accelerators, then the rest.
  int32_t enumerate(const char* api) {
    if (enumerated_) return 0;
    std::string error;
    driver_ = opencl_driver(&error);
    if (driver_ == nullptr) return fail(kKilnErrorRuntime, std::string(api) + ": " + error);
    IcdEnvironmentGuard environment;
    cl_uint num_platforms = 0;
    cl_int status = driver_->GetPlatformIDs(0, nullptr, &num_platforms);
    // The ICD loader answers CL_PLATFORM_NOT_FOUND_KHR (-1001) when no driver is installed.
    if (status != CL_SUCCESS || num_platforms == 0) num_platforms = 0;
    std::vector<cl_platform_id> platforms(num_platforms);
    if (num_platforms > 0) driver_->GetPlatformIDs(num_platforms, platforms.data(), nullptr);
    std::vector<std::pair<int, OpenCLDevice>> found;
    for (cl_platform_id platform : platforms) {
      cl_uint num_devices = 0;
      if (driver_->GetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &num_devices) !=
              CL_SUCCESS ||
          num_devices == 0) {
        continue;
      }
      std::vector<cl_device_id> ids(num_devices);
      driver_->GetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, num_devices, ids.data(), nullptr);
      for (cl_device_id id : ids) {
        cl_device_type type = 0;
        driver_->GetDeviceInfo(id, CL_DEVICE_TYPE, sizeof(type), &type, nullptr);
        int rank = (type & CL_DEVICE_TYPE_GPU) ? 0 : (type & CL_DEVICE_TYPE_ACCELERATOR) ? 1 : 2;
        OpenCLDevice device;
        device.platform = platform;
        device.device = id;
        found.emplace_back(rank, device);
      }
    }
    std::stable_sort(found.begin(), found.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& entry : found) devices_.push_back(entry.second);
    enumerated_ = true;
    return 0;
  }

  // The device `device_id`, with its context and queue when `open` is set.
  int32_t find(const char* api, int32_t device_id, bool open, OpenCLDevice** out) {
    std::lock_guard<std::mutex> lock(mutex_);
    int32_t status = enumerate(api);
    if (status != 0) return status;
    if (device_id < 0 || static_cast<size_t>(device_id) >= devices_.size()) {
      return fail(kKilnErrorRuntime,
                  std::string(api) + ": no device " + label(device_id) + ": " +
                      std::to_string(devices_.size()) + " OpenCL device" +
                      (devices_.size() == 1 ? "" : "s") + " found" +
                      (devices_.empty() ? " (no OpenCL platform is installed; Debian: "
                                          "pocl-opencl-icd runs OpenCL on the CPU)"
                                        : ""));
    }
    OpenCLDevice& device = devices_[static_cast<size_t>(device_id)];
    if (open && device.queue == nullptr) {
      std::string where = std::string(api) + ": " + label(device_id);
      cl_int error = CL_SUCCESS;
      if (device.context == nullptr) {
        IcdEnvironmentGuard environment;
        cl_context_properties properties[] = {
            CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(device.platform), 0};
        device.context =
            driver_->CreateContext(properties, 1, &device.device, nullptr, nullptr, &error);
        if (error != CL_SUCCESS) {
          device.context = nullptr;
          return cl_fail(kKilnErrorRuntime, where, "clCreateContext", error);
        }
      }
      cl_command_queue queue =
          driver_->CreateCommandQueue(device.context, device.device, 0, &error);
      if (error != CL_SUCCESS)
        return cl_fail(kKilnErrorRuntime, where, "clCreateCommandQueue", error);
      device.queue = queue;
    }
    *out = &device;
    return 0;
  }

  int32_t info(const std::string& where, const OpenCLDevice* device, cl_device_info what,
               size_t size, void* value) {
    cl_int error = driver_->GetDeviceInfo(device->device, what, size, value, nullptr);
    if (error == CL_SUCCESS) return 0;
    return cl_fail(kKilnErrorRuntime, where, "clGetDeviceInfo", error);
  }

  std::mutex mutex_;
  bool enumerated_ = false;
  const OpenCLDriver* driver_ = nullptr;
  std::deque<OpenCLDevice> devices_;  // stable addresses: programs keep pointers
};

}  // namespace

DeviceBackend* opencl_backend() {
  static OpenCLBackend* backend = new OpenCLBackend();  // lives as long as the driver's objects
  return backend;
}

}  // namespace runtime
}  // namespace kiln
