// Deploys a kiln module with the minimal runtime: loads the module named on the command line,
// allocates NDArrays from the spec of its function "main", runs it, prints the result and checks
// it against a reference when main is an element-wise add or a matmul (A, B -> C). The module's
// kernels are reached only through the runtime, which checks every argument first; a failure
// is reported with the kind its error code names. A module built for a GPU ("cuda", "opencl")
// takes its tensors in device memory: they are copied there (KilnDeviceAlloc, KilnDeviceCopy)
// before the call and the output copied back after it.
//
//   deploy MODULE.so [sym=value ...]    symbolic extents default to 1024
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/runtime/module.h"

namespace {

using kiln::runtime::Error;
using kiln::runtime::NDArray;

// What kind of failure a KilnErrorCode is, as a host would tell its users.
const char* error_kind(int32_t code) {
  switch (code) {
    case kKilnErrorValue:
      return "invalid argument value";
    case kKilnErrorType:
      return "invalid argument type";
    case kKilnErrorIndex:
      return "no such function";
    case kKilnErrorModuleFile:
      return "damaged or unreadable module file";
    case kKilnErrorModuleUnsupported:
      return "module cannot run here";
    default:
      return "runtime failure";
  }
}

double element(const NDArray& array, size_t i) {
  return array.dtype().bits == 64 ? array.data<double>()[i] : array.data<float>()[i];
}

void set_element(NDArray& array, size_t i, double value) {
  if (array.dtype().bits == 64) {
    array.data<double>()[i] = value;
  } else {
    array.data<float>()[i] = static_cast<float>(value);
  }
}

// Device memory holding a copy of a host array, freed on destruction.
class DeviceCopy {
 public:
  DeviceCopy(const NDArray& host, int32_t device_type) : tensor_(*host.tensor()) {
    tensor_.device = DLDevice{static_cast<DLDeviceType>(device_type), 0};
    tensor_.strides = nullptr;
    tensor_.byte_offset = 0;
    tensor_.data = nullptr;
    kiln::runtime::check_call(KilnDeviceAlloc(device_type, 0, host.nbytes(), 64, &tensor_.data));
    kiln::runtime::check_call(KilnDeviceCopy(host.tensor(), &tensor_));
  }
  ~DeviceCopy() { KilnDeviceFree(tensor_.device.device_type, 0, tensor_.data); }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
  DLTensor* tensor() { return &tensor_; }
  void copy_to(NDArray& host) {
    kiln::runtime::check_call(KilnDeviceCopy(&tensor_, host.tensor()));
  }

 private:
  DLTensor tensor_;
};

// The extents of a tensor parameter, with symbolic ones taken from `sym_values`.
std::vector<int64_t> concrete_shape(const KilnFuncSpec& spec, const KilnArgSpec& arg,
                                    const std::map<std::string, int64_t>& sym_values) {
  std::vector<int64_t> shape;
  for (int32_t d = 0; d < arg.ndim; ++d) {
    int64_t extent = arg.shape[d];
    if (extent < 0) {
      std::string name = spec.sym_var_names[-(extent + 1)];
      auto found = sym_values.find(name);
      extent = found != sym_values.end() ? found->second : 1024;
    }
    shape.push_back(extent);
  }
  return shape;
}

// The reference result of C = A + B or C = A @ B, or an empty vector when main is neither.
std::vector<double> reference(const std::vector<NDArray>& tensors, std::string* kind) {
  if (tensors.size() != 3) return {};
  const NDArray& a = tensors[0];
  const NDArray& b = tensors[1];
  const NDArray& c = tensors[2];
  std::vector<double> expected;
  if (a.shape() == b.shape() && a.shape() == c.shape()) {
    *kind = "element-wise add";
    for (size_t i = 0; i < c.size(); ++i) expected.push_back(element(a, i) + element(b, i));
    return expected;
  }
  if (a.shape().size() == 2 && b.shape().size() == 2 && c.shape().size() == 2 &&
      a.shape()[1] == b.shape()[0] && c.shape()[0] == a.shape()[0] &&
      c.shape()[1] == b.shape()[1]) {
    *kind = "matmul";
    int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
    expected.assign(static_cast<size_t>(m * n), 0.0);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t p = 0; p < k; ++p) {
        double a_ip = element(a, static_cast<size_t>(i * k + p));
        for (int64_t j = 0; j < n; ++j) {
          expected[static_cast<size_t>(i * n + j)] +=
              a_ip * element(b, static_cast<size_t>(p * n + j));
        }
      }
    }
    return expected;
  }
  return {};
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODULE.so [sym=value ...]\n", argv[0]);
    return 2;
  }
  std::map<std::string, int64_t> sym_values;
  for (int i = 2; i < argc; ++i) {
    std::string binding = argv[i];
    size_t equals = binding.find('=');
    if (equals == std::string::npos) {
      std::fprintf(stderr, "deploy: expected sym=value, found '%s'\n", argv[i]);
      return 2;
    }
    sym_values[binding.substr(0, equals)] = std::atoll(binding.c_str() + equals + 1);
  }

  // Step 1. Load the module and look at the signature of main.
  kiln::runtime::Module module = kiln::runtime::Module::load(argv[1]);
  std::printf("module %s\n  target: %s\n  functions:", argv[1], module.target().c_str());
  for (const std::string& name : module.function_names()) std::printf(" %s", name.c_str());
  std::printf("\n");
  kiln::runtime::Function main_function = module.function("main");
  const KilnFuncSpec& spec = main_function.spec();

  // Step 2. Allocate the arguments: tensors from the spec, inputs filled, scalars set to 1.
  std::vector<NDArray> tensors;
  std::vector<KilnValue> values(spec.num_args);
  std::vector<int32_t> codes(spec.num_args);
  bool has_scalars = false;
  for (int32_t i = 0; i < spec.num_args; ++i) {
    const KilnArgSpec& arg = spec.args[i];
    if (arg.kind == kKilnArgScalar) {
      has_scalars = true;
      bool is_float = arg.dtype.code == kDLFloat;
      codes[i] = is_float ? kKilnFloat : kKilnInt;
      if (is_float) {
        values[i].v_float64 = 1.0;
      } else {
        values[i].v_int64 = 1;
      }
      continue;
    }
    if (arg.dtype.code != kDLFloat || (arg.dtype.bits != 32 && arg.dtype.bits != 64) ||
        arg.dtype.lanes != 1) {
      std::fprintf(stderr, "deploy: argument %s: this example handles float32/float64 only\n",
                   arg.name);
      return 1;
    }
    size_t alignment = arg.alignment > 64 ? static_cast<size_t>(arg.alignment) : 64;
    tensors.push_back(NDArray::empty(concrete_shape(spec, arg, sym_values), arg.dtype, alignment));
  }
  for (size_t t = 0; t < tensors.size(); ++t) {
    for (size_t i = 0; i < tensors[t].size(); ++i) {
      set_element(tensors[t], i, static_cast<double>((i * (t + 3)) % 17) * 0.25 - 2.0);
    }
  }
  // A GPU module's tensors go to device memory (device 0).
  std::vector<std::unique_ptr<DeviceCopy>> device_tensors;
  for (int32_t i = 0, t = 0; i < spec.num_args; ++i) {
    if (spec.args[i].kind != kKilnArgTensor) continue;
    if (spec.args[i].device_type != kDLCPU) {
      device_tensors.push_back(std::make_unique<DeviceCopy>(tensors[t], spec.args[i].device_type));
      values[i].v_handle = device_tensors.back()->tensor();
    } else {
      values[i].v_handle = tensors[t].tensor();
    }
    ++t;
    codes[i] = kKilnDLTensorHandle;
  }

  // Step 3. Run main and print the start of its output (the last tensor).
  main_function.call_packed(values.data(), codes.data(), spec.num_args);
  if (!device_tensors.empty()) {
    device_tensors.back()->copy_to(tensors.back());
    std::printf("ran on device type %d (DLPack), outputs copied back\n",
                static_cast<int>(spec.args[spec.num_args - 1].device_type));
  }
  if (tensors.empty()) {
    std::printf("main ran; it has no tensor output to show\n");
    return 0;
  }
  const NDArray& out = tensors.back();
  std::printf("main(");
  for (size_t t = 0; t < tensors.size(); ++t) {
    std::printf("%s[", t > 0 ? ", " : "");
    for (size_t d = 0; d < tensors[t].shape().size(); ++d) {
      std::printf("%s%lld", d > 0 ? "x" : "", static_cast<long long>(tensors[t].shape()[d]));
    }
    std::printf("]");
  }
  std::printf(") -> output starts:");
  for (size_t i = 0; i < out.size() && i < 8; ++i) std::printf(" %g", element(out, i));
  std::printf("\n");

  // Step 4. Check against the reference.
  std::string kind;
  std::vector<double> expected = has_scalars ? std::vector<double>() : reference(tensors, &kind);
  if (expected.empty()) {
    std::printf("check: skipped (main is neither an element-wise add nor a matmul of A, B)\n");
    return 0;
  }
  double max_error = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    double error = std::fabs(element(out, i) - expected[i]) / (1.0 + std::fabs(expected[i]));
    if (error > max_error) max_error = error;
  }
  bool ok = max_error <= 1e-4;
  std::printf("check (%s): %s, max relative error %g\n", kind.c_str(), ok ? "OK" : "FAILED",
              max_error);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "deploy: %s: %s\n", error_kind(e.code()), e.what());
    return 1;
  }
}
