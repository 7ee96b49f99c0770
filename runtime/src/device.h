// The GPU back ends behind the device functions of the C API (KilnDevice*): one DeviceBackend per
// device type (OpenCL, CUDA), and the DeviceProgram a back end makes of a module's device code on
// one device, which KilnDeviceLaunch launches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kiln/runtime/c_runtime_api.h"
#include "manifest.h"

namespace kiln {
namespace runtime {

// A module's device code built for one device: its kernels, in "device_kernels" order.
class DeviceProgram {
 public:
  virtual ~DeviceProgram() = default;
  // Launches kernel `kernel_index` (already range-checked) as KilnDeviceLaunch documents.
  virtual int32_t launch(int32_t kernel_index, const int64_t* launch, void* const* arg_values,
                         const int64_t* arg_sizes, int32_t num_args) = 0;
};

// The devices of one type. Every method returns 0 or a KilnErrorCode after setting the last
// error, whose message starts with `api` (the C API function's name) where one is taken. A
// missing driver or a device index past the devices found is kKilnErrorRuntime.
class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual int32_t count(const char* api, int32_t* out) = 0;
  virtual int32_t attribute(int32_t device_id, KilnDeviceAttr attr, int64_t* out) = 0;
  virtual int32_t name(int32_t device_id, std::string* out) = 0;
  // The driver's version (see KilnDeviceDriverVersion).
  virtual int32_t driver_version(int32_t device_id, std::string* out) = 0;
  virtual int32_t alloc(int32_t device_id, size_t nbytes, size_t alignment, void** out) = 0;
  virtual int32_t free(int32_t device_id, void* ptr) = 0;
  // Copies between host memory and device memory at a byte offset of a device handle.
  virtual int32_t copy_to_device(int32_t device_id, const void* host, void* device_handle,
                                 size_t offset, size_t nbytes) = 0;
  virtual int32_t copy_to_host(int32_t device_id, const void* device_handle, size_t offset,
                               void* host, size_t nbytes) = 0;
  // Copies between two buffers of the same device.
  virtual int32_t copy_on_device(int32_t device_id, const void* from, size_t from_offset, void* to,
                                 size_t to_offset, size_t nbytes) = 0;
  virtual int32_t synchronize(int32_t device_id) = 0;
  // Builds the module's device code for the device (see KilnDeviceLaunch); `module_label` names
  // the module in messages.
  virtual int32_t load(int32_t device_id, const Manifest& manifest, const std::string& module_label,
                       std::unique_ptr<DeviceProgram>* out) = 0;
};

// The back end of kDLOpenCL or kDLCUDA (created on first use, never destroyed); nullptr for
// other device types.
DeviceBackend* device_backend(int32_t device_type);

DeviceBackend* opencl_backend();
DeviceBackend* cuda_backend();

// "opencl(0)", for messages.
std::string device_label(int32_t device_type, int32_t device_id);

}  // namespace runtime
}  // namespace kiln
