// dtype and device names shared by the manifest reader and the argument checker.
#include "dtype.h"

#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {
namespace {

struct DeviceName {
  int32_t type;
  const char* name;
};

// DLPack's device types; 14-16 are named here because newer producers use them.
constexpr DeviceName kDevices[] = {
    {kDLCPU, "cpu"},
    {kDLCUDA, "cuda"},
    {kDLCUDAHost, "cuda_host"},
    {kDLOpenCL, "opencl"},
    {kDLVulkan, "vulkan"},
    {kDLMetal, "metal"},
    {kDLVPI, "vpi"},
    {kDLROCM, "rocm"},
    {kDLROCMHost, "rocm_host"},
    {kDLExtDev, "ext_dev"},
    {kDLCUDAManaged, "cuda_managed"},
    {14, "oneapi"},
    {15, "webgpu"},
    {16, "hexagon"},
};

// Reads a decimal in [1, 65535] from the whole of `text`.
bool parse_small_uint(const char* text, int* out) {
  if (*text < '0' || *text > '9' || (*text == '0')) return false;
  long value = 0;
  for (; *text != '\0'; ++text) {
    if (*text < '0' || *text > '9') return false;
    value = value * 10 + (*text - '0');
    if (value > 65535) return false;
  }
  *out = static_cast<int>(value);
  return true;
}

}  // namespace

bool parse_dtype(const std::string& name, DLDataType* out) {
  std::string base = name;
  int lanes = 1;
  size_t x = name.find('x');
  if (x != std::string::npos) {
    if (!parse_small_uint(name.c_str() + x + 1, &lanes)) return false;
    base = name.substr(0, x);
  }
  DLDataType dtype;
  dtype.lanes = static_cast<uint16_t>(lanes);
  if (base == "bool") {
    dtype.code = KILN_DL_BOOL;
    dtype.bits = 8;
    *out = dtype;
    return true;
  }
  const char* digits;
  if (base.compare(0, 4, "uint") == 0) {
    dtype.code = kDLUInt;
    digits = base.c_str() + 4;
  } else if (base.compare(0, 3, "int") == 0) {
    dtype.code = kDLInt;
    digits = base.c_str() + 3;
  } else if (base.compare(0, 8, "bfloat16") == 0 && base.size() == 8) {
    dtype.code = kDLBfloat;
    digits = base.c_str() + 6;
  } else if (base.compare(0, 5, "float") == 0) {
    dtype.code = kDLFloat;
    digits = base.c_str() + 5;
  } else {
    return false;
  }
  int bits;
  if (!parse_small_uint(digits, &bits)) return false;
  bool valid = false;
  switch (dtype.code) {
    case kDLInt:
    case kDLUInt:
      valid = bits == 8 || bits == 16 || bits == 32 || bits == 64;
      break;
    case kDLFloat:
      valid = bits == 16 || bits == 32 || bits == 64;
      break;
    case kDLBfloat:
      valid = bits == 16;
      break;
  }
  if (!valid) return false;
  dtype.bits = static_cast<uint8_t>(bits);
  *out = dtype;
  return true;
}

std::string dtype_name(DLDataType dtype) {
  std::string name;
  std::string bits = std::to_string(dtype.bits);
  switch (dtype.code) {
    case kDLInt:
      name = "int" + bits;
      break;
    case kDLUInt:
      name = dtype.bits == 1 ? "bool" : "uint" + bits;
      break;
    case kDLFloat:
      name = "float" + bits;
      break;
    case kDLBfloat:
      name = "bfloat" + bits;
      break;
    case KILN_DL_BOOL:
      name = dtype.bits == 8 ? "bool" : "bool" + bits;
      break;
    default:
      name = "code" + std::to_string(dtype.code) + "_bits" + bits;
      break;
  }
  if (dtype.lanes != 1) name += "x" + std::to_string(dtype.lanes);
  return name;
}

bool same_dtype(DLDataType a, DLDataType b) {
  auto is_bool = [](DLDataType t) {
    return (t.code == KILN_DL_BOOL && t.bits == 8) || (t.code == kDLUInt && t.bits == 1);
  };
  if (a.lanes != b.lanes) return false;
  if (is_bool(a) || is_bool(b)) return is_bool(a) && is_bool(b);
  return a.code == b.code && a.bits == b.bits;
}

bool parse_device_type(const std::string& name, int32_t* out) {
  for (const DeviceName& device : kDevices) {
    if (name == device.name) {
      *out = device.type;
      return true;
    }
  }
  return false;
}

std::string device_type_name(int32_t device_type) {
  for (const DeviceName& device : kDevices) {
    if (device.type == device_type) return device.name;
  }
  return "device_type" + std::to_string(device_type);
}

}  // namespace runtime
}  // namespace kiln
