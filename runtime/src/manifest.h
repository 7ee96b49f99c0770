// The module manifest (format documented in kiln/runtime/c_runtime_api.h): parsed from JSON into
// function specs that own their strings and arrays, ready for the argument checker.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {

// The storage behind one KilnFuncSpec; `spec` points into the other members, so a FunctionSpec
// is built in place and never copied.
struct FunctionSpec {
  std::string name;
  std::string symbol;
  std::vector<std::string> sym_var_names;
  std::vector<const char*> sym_var_pointers;
  std::vector<DLDataType> sym_var_dtypes;
  std::vector<int64_t> sym_var_max;
  std::deque<std::string> arg_names;
  std::deque<std::vector<int64_t>> shapes;
  std::deque<std::vector<int64_t>> strides;
  std::vector<KilnArgSpec> args;
  KilnFuncSpec spec{};

  FunctionSpec() = default;
  FunctionSpec(const FunctionSpec&) = delete;
  FunctionSpec& operator=(const FunctionSpec&) = delete;
};

// One blob of device code ("device_blobs"). `kind` and `format` are kept as written, so that
// check_manifest_runnable can name one this runtime does not load.
struct DeviceBlob {
  std::string kind;           // "opencl", "cuda"
  std::string format;         // "cl" (OpenCL C), "cubin", "ptx"
  std::string arch;           // "sm_80"; "" when not given
  std::string data;           // the source text or the decoded binary
  std::string build_options;  // "opencl": the options of clBuildProgram ("" when not given)
};

// One kernel of the device code ("device_kernels").
struct DeviceKernel {
  std::string name;
  int32_t num_args = 0;
};

// A parsed manifest.
struct Manifest {
  int64_t abi_version = 0;
  std::string target;
  std::vector<std::string> host_features;
  std::deque<FunctionSpec> functions;
  std::vector<DeviceBlob> device_blobs;
  std::vector<DeviceKernel> device_kernels;
};

// Parses manifest JSON into `out`. Returns false with `error` naming the place
// ("functions[0].args[1]: unknown dtype 'float33'") when the text is not a valid manifest. The
// ABI version, target and features are read, not judged: see check_manifest_runnable.
bool parse_manifest(const char* json, Manifest* out, std::string* error);

// Checks that this runtime can run the module: ABI version, target kind and triple, CPU features
// and the kinds and formats of the device blobs. Returns "" when it can, else the reason.
std::string check_manifest_runnable(const Manifest& manifest);

}  // namespace runtime
}  // namespace kiln
