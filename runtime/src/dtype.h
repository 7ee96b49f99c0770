// Names of DLPack dtypes and devices as the manifest and the error messages spell them:
// "float32", "int64", "bool", "float32x4"; "cpu", "cuda:0".
#pragma once

#include <dlpack/dlpack.h>

#include <string>

namespace kiln {
namespace runtime {

// Parses a dtype name ("float32", "uint8", "bfloat16", "bool", "float32x4"). Returns false when
// the name is not one kiln uses.
bool parse_dtype(const std::string& name, DLDataType* out);

// The name of a dtype; codes kiln does not know print as "code5_bits64".
std::string dtype_name(DLDataType dtype);

// Whether two dtypes mean the same element type (bool is {6, 8} or, as older DLPack producers
// write it, {kDLUInt, 1}).
bool same_dtype(DLDataType a, DLDataType b);

// Parses a device type name ("cpu", "cuda", "opencl" ...). Returns false when unknown.
bool parse_device_type(const std::string& name, int32_t* out);

// The name of a device type ("cpu"), or "device_type<N>" when unknown.
std::string device_type_name(int32_t device_type);

}  // namespace runtime
}  // namespace kiln
