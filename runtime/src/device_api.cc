// The device functions of the C API: devices, memory, copies and synchronization dispatched to the
// OpenCL and CUDA back ends (kDLCPU served here), and KilnDeviceLaunch with the per-module device
// state that builds a module's code on each device on first use.
#include <cstring>
#include <string>
#include <vector>

#include "device.h"
#include "dtype.h"
#include "error.h"
#include "module_device.h"

namespace kiln {
namespace runtime {

std::string device_label(int32_t device_type, int32_t device_id) {
  return device_type_name(device_type) + "(" + std::to_string(device_id) + ")";
}

DeviceBackend* device_backend(int32_t device_type) {
  if (device_type == kDLOpenCL) return opencl_backend();
  if (device_type == kDLCUDA) return cuda_backend();
  return nullptr;
}

int32_t ModuleDeviceState::launch(int32_t kernel_index, int32_t device_type, int32_t device_id,
                                  const int64_t* launch, void* const* arg_values,
                                  const int64_t* arg_sizes, int32_t num_args) {
  if (kernel_index < 0 || static_cast<size_t>(kernel_index) >= manifest_->device_kernels.size()) {
    return fail(kKilnErrorIndex, "KilnDeviceLaunch: " + module_label_ + ": kernel index " +
                                     std::to_string(kernel_index) + " is outside its " +
                                     std::to_string(manifest_->device_kernels.size()) +
                                     " device_kernels");
  }
  DeviceProgram* program = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Loaded& loaded : loaded_) {
      if (loaded.device_type == device_type && loaded.device_id == device_id) {
        program = loaded.program.get();
        break;
      }
    }
    if (program == nullptr) {
      DeviceBackend* backend = device_backend(device_type);
      if (backend == nullptr) {
        return fail(kKilnErrorValue,
                    "KilnDeviceLaunch: kernel " + manifest_->device_kernels[kernel_index].name +
                        ": " + device_label(device_type, device_id) +
                        " is not a device kiln launches kernels on (cuda, opencl)");
      }
      std::unique_ptr<DeviceProgram> built;
      int32_t status = backend->load(device_id, *manifest_, module_label_, &built);
      if (status != 0) return status;
      program = built.get();
      loaded_.push_back(Loaded{device_type, device_id, std::move(built)});
    }
  }
  return program->launch(kernel_index, launch, arg_values, arg_sizes, num_args);
}

namespace {

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

bool is_cpu(int32_t device_type) {
  return device_type == kDLCPU || device_type == kDLCUDAHost;
}

// The backend of device_type, or a kKilnErrorValue naming the call.
int32_t backend_of(const char* api, int32_t device_type, int32_t device_id, DeviceBackend** out) {
  *out = device_backend(device_type);
  if (*out != nullptr) return 0;
  return fail(kKilnErrorValue, std::string(api) + ": " + device_label(device_type, device_id) +
                                   ": kiln's runtime serves cpu, cuda and opencl devices");
}

int32_t check_cpu_id(const char* api, int32_t device_id) {
  if (device_id == 0) return 0;
  return fail(kKilnErrorRuntime, std::string(api) + ": no device " +
                                     device_label(kDLCPU, device_id) + ": the CPU is device 0");
}

// The byte count of a compact tensor, or a kKilnErrorValue naming `side` ("from", "to").
int32_t compact_bytes(const DLTensor* tensor, const char* side, size_t* out) {
  std::string where = std::string("KilnDeviceCopy: ") + side + ": ";
  if (tensor->ndim > 0 && tensor->shape == nullptr) {
    return fail(kKilnErrorValue, where + "shape pointer is NULL");
  }
  size_t count = 1;
  int64_t expected_stride = 1;
  for (int32_t d = tensor->ndim - 1; d >= 0; --d) {
    int64_t extent = tensor->shape[d];
    if (extent < 0)
      return fail(kKilnErrorValue, where + "negative extent " + std::to_string(extent));
    if (tensor->strides != nullptr && extent != 1 && tensor->strides[d] != expected_stride) {
      return fail(kKilnErrorValue, where + "the tensor is not compact row-major (dimension " +
                                       std::to_string(d) + " has stride " +
                                       std::to_string(tensor->strides[d]) + ", expected " +
                                       std::to_string(expected_stride) + ")");
    }
    expected_stride *= extent;
    if (__builtin_mul_overflow(count, static_cast<size_t>(extent), &count)) {
      return fail(kKilnErrorValue, where + "the element count overflows");
    }
  }
  size_t element = (static_cast<size_t>(tensor->dtype.bits) * tensor->dtype.lanes + 7) / 8;
  if (__builtin_mul_overflow(count, element, out)) {
    return fail(kKilnErrorValue, where + "the byte count overflows");
  }
  return 0;
}

int32_t copy_tensors(const DLTensor* from, DLTensor* to) {
  size_t from_bytes = 0, to_bytes = 0;
  int32_t status = compact_bytes(from, "from", &from_bytes);
  if (status == 0) status = compact_bytes(to, "to", &to_bytes);
  if (status != 0) return status;
  if (from_bytes != to_bytes) {
    return fail(kKilnErrorValue, "KilnDeviceCopy: the source holds " + std::to_string(from_bytes) +
                                     " bytes and the destination " + std::to_string(to_bytes));
  }
  if (from_bytes == 0) return 0;
  if (from->data == nullptr || to->data == nullptr) {
    return fail(kKilnErrorValue, "KilnDeviceCopy: a data pointer is NULL");
  }
  DLDevice src = from->device, dst = to->device;
  size_t src_offset = static_cast<size_t>(from->byte_offset);
  size_t dst_offset = static_cast<size_t>(to->byte_offset);
  if (is_cpu(src.device_type) && is_cpu(dst.device_type)) {
    std::memmove(static_cast<char*>(to->data) + dst_offset,
                 static_cast<const char*>(from->data) + src_offset, from_bytes);
    return 0;
  }
  if (is_cpu(src.device_type)) {
    DeviceBackend* backend = nullptr;
    status = backend_of("KilnDeviceCopy", dst.device_type, dst.device_id, &backend);
    if (status != 0) return status;
    return backend->copy_to_device(dst.device_id, static_cast<const char*>(from->data) + src_offset,
                                   to->data, dst_offset, from_bytes);
  }
  if (is_cpu(dst.device_type)) {
    DeviceBackend* backend = nullptr;
    status = backend_of("KilnDeviceCopy", src.device_type, src.device_id, &backend);
    if (status != 0) return status;
    return backend->copy_to_host(src.device_id, from->data, src_offset,
                                 static_cast<char*>(to->data) + dst_offset, from_bytes);
  }
  if (src.device_type != dst.device_type) {
    return fail(kKilnErrorValue, "KilnDeviceCopy: from " +
                                     device_label(src.device_type, src.device_id) + " to " +
                                     device_label(dst.device_type, dst.device_id) +
                                     ": copies between device types go through the host");
  }
  DeviceBackend* backend = nullptr;
  status = backend_of("KilnDeviceCopy", src.device_type, src.device_id, &backend);
  if (status != 0) return status;
  if (src.device_id == dst.device_id) {
    return backend->copy_on_device(src.device_id, from->data, src_offset, to->data, dst_offset,
                                   from_bytes);
  }
  // Two devices of one type (separate OpenCL contexts): through a host buffer.
  std::vector<char> staging(from_bytes);
  status = backend->copy_to_host(src.device_id, from->data, src_offset, staging.data(), from_bytes);
  if (status != 0) return status;
  return backend->copy_to_device(dst.device_id, staging.data(), to->data, dst_offset, from_bytes);
}

}  // namespace
}  // namespace runtime
}  // namespace kiln

extern "C" {

int32_t KilnDeviceCount(int32_t device_type, int32_t* out) {
  using namespace kiln::runtime;
  if (out == nullptr) return fail(kKilnErrorValue, "KilnDeviceCount: out is NULL");
  return guarded("KilnDeviceCount", [&]() -> int32_t {
    *out = 0;
    if (is_cpu(device_type)) {
      *out = 1;
      return 0;
    }
    DeviceBackend* backend = nullptr;
    int32_t status = backend_of("KilnDeviceCount", device_type, 0, &backend);
    if (status != 0) return status;
    return backend->count("KilnDeviceCount", out);
  });
}

int32_t KilnDeviceAttribute(int32_t device_type, int32_t device_id, KilnDeviceAttr attr,
                            int64_t* out) {
  using namespace kiln::runtime;
  if (out == nullptr) return fail(kKilnErrorValue, "KilnDeviceAttribute: out is NULL");
  return guarded("KilnDeviceAttribute", [&]() -> int32_t {
    *out = 0;
    if (attr == kKilnDeviceExists) {
      // Never fails: a missing driver or device is "does not exist".
      int32_t count = 0;
      std::string saved = KilnGetLastError();
      if (KilnDeviceCount(device_type, &count) != 0) count = 0;
      KilnSetLastError(saved.c_str());
      *out = device_id >= 0 && device_id < count ? 1 : 0;
      return 0;
    }
    if (is_cpu(device_type)) {
      return fail(kKilnErrorValue, "KilnDeviceAttribute: attribute " + std::to_string(attr) +
                                       " is defined for cuda and opencl devices, not the CPU");
    }
    DeviceBackend* backend = nullptr;
    int32_t status = backend_of("KilnDeviceAttribute", device_type, device_id, &backend);
    if (status != 0) return status;
    return backend->attribute(device_id, attr, out);
  });
}

namespace {

// A string of a device (its name, its driver's version) into buf: `cpu_value` for kDLCPU, else
// what `get` of the device's back end says.
int32_t device_string(const char* api, int32_t device_type, int32_t device_id, char* buf,
                      size_t len, const char* cpu_value,
                      int32_t (kiln::runtime::DeviceBackend::*get)(int32_t, std::string*)) {
  using namespace kiln::runtime;
  if (buf == nullptr || len == 0) {
    return fail(kKilnErrorValue,
                std::string(api) + ": buf must not be NULL and len must be positive");
  }
  return guarded(api, [&]() -> int32_t {
    buf[0] = '\0';
    std::string value;
    int32_t status = 0;
    if (is_cpu(device_type)) {
      status = check_cpu_id(api, device_id);
      value = cpu_value;
    } else {
      DeviceBackend* backend = nullptr;
      status = backend_of(api, device_type, device_id, &backend);
      if (status == 0) status = (backend->*get)(device_id, &value);
    }
    if (status != 0) return status;
    size_t n = std::min(len - 1, value.size());
    std::memcpy(buf, value.data(), n);
    buf[n] = '\0';
    return 0;
  });
}

}  // namespace

int32_t KilnDeviceName(int32_t device_type, int32_t device_id, char* buf, size_t len) {
  return device_string("KilnDeviceName", device_type, device_id, buf, len, "cpu",
                       &kiln::runtime::DeviceBackend::name);
}

int32_t KilnDeviceDriverVersion(int32_t device_type, int32_t device_id, char* buf, size_t len) {
  return device_string("KilnDeviceDriverVersion", device_type, device_id, buf, len, "",
                       &kiln::runtime::DeviceBackend::driver_version);
}

int32_t KilnDeviceAlloc(int32_t device_type, int32_t device_id, size_t nbytes, size_t alignment,
                        void** out) {
  using namespace kiln::runtime;
  if (out == nullptr) return fail(kKilnErrorValue, "KilnDeviceAlloc: out is NULL");
  return guarded("KilnDeviceAlloc", [&]() -> int32_t {
    *out = nullptr;
    if ((alignment & (alignment - 1)) != 0) {
      return fail(kKilnErrorValue, "KilnDeviceAlloc: alignment " + std::to_string(alignment) +
                                       " is not a power of two");
    }
    if (is_cpu(device_type)) {
      int32_t status = check_cpu_id("KilnDeviceAlloc", device_id);
      if (status != 0 || nbytes == 0) return status;
      *out = KilnAllocAligned(nbytes, alignment);
      return *out != nullptr ? 0 : kKilnErrorRuntime;
    }
    DeviceBackend* backend = nullptr;
    int32_t status = backend_of("KilnDeviceAlloc", device_type, device_id, &backend);
    if (status != 0) return status;
    if (nbytes == 0) {
      // Nothing to allocate, but the device must exist.
      int32_t count = 0;
      status = backend->count("KilnDeviceAlloc", &count);
      if (status == 0 && (device_id < 0 || device_id >= count)) {
        return fail(kKilnErrorRuntime, "KilnDeviceAlloc: no device " +
                                           device_label(device_type, device_id) + ": " +
                                           std::to_string(count) + " found");
      }
      return status;
    }
    return backend->alloc(device_id, nbytes, alignment, out);
  });
}

int32_t KilnDeviceFree(int32_t device_type, int32_t device_id, void* ptr) {
  using namespace kiln::runtime;
  if (ptr == nullptr) return 0;
  return guarded("KilnDeviceFree", [&]() -> int32_t {
    if (is_cpu(device_type)) {
      KilnFreeAligned(ptr);
      return 0;
    }
    DeviceBackend* backend = nullptr;
    int32_t status = backend_of("KilnDeviceFree", device_type, device_id, &backend);
    if (status != 0) return status;
    return backend->free(device_id, ptr);
  });
}

int32_t KilnDeviceCopy(const DLTensor* from, DLTensor* to) {
  using namespace kiln::runtime;
  if (from == nullptr || to == nullptr) {
    return fail(kKilnErrorValue, "KilnDeviceCopy: from and to must not be NULL");
  }
  return guarded("KilnDeviceCopy", [&] { return copy_tensors(from, to); });
}

int32_t KilnDeviceSynchronize(int32_t device_type, int32_t device_id) {
  using namespace kiln::runtime;
  return guarded("KilnDeviceSynchronize", [&]() -> int32_t {
    if (is_cpu(device_type)) return check_cpu_id("KilnDeviceSynchronize", device_id);
    DeviceBackend* backend = nullptr;
    int32_t status = backend_of("KilnDeviceSynchronize", device_type, device_id, &backend);
    if (status != 0) return status;
    return backend->synchronize(device_id);
  });
}

int32_t KilnDeviceLaunch(void* module_device_ctx, int32_t kernel_index, int32_t device_type,
                         int32_t device_id, const int64_t* launch, void* const* arg_values,
                         const int64_t* arg_sizes, int32_t num_args) {
  using namespace kiln::runtime;
  if (module_device_ctx == nullptr) {
    return fail(kKilnErrorValue,
                "KilnDeviceLaunch: the module's device context is NULL (kiln_module_device_ctx was "
                "not set: the module was not created by kiln's runtime)");
  }
  if (launch == nullptr || (num_args > 0 && (arg_values == nullptr || arg_sizes == nullptr))) {
    return fail(kKilnErrorValue,
                "KilnDeviceLaunch: launch, arg_values and arg_sizes must not be NULL");
  }
  return guarded("KilnDeviceLaunch", [&] {
    return static_cast<ModuleDeviceState*>(module_device_ctx)
        ->launch(kernel_index, device_type, device_id, launch, arg_values, arg_sizes, num_args);
  });
}

}  // extern "C"
