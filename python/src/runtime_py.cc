// Python bindings of the runtime (kiln._kiln.runtime, wrapped by the kiln.runtime package):
// devices, modules built here or loaded from files, calls and timed calls of their functions,
// and the thread pool's size.
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "bindings.h"
#include "kiln/support/error.h"
#include "runtime_py.h"

namespace py = pybind11;

namespace kiln::python {

std::string device_type_name(int32_t device_type) {
  switch (device_type) {
    case kDLCPU:
      return "cpu";
    case kDLCUDA:
      return "cuda";
    case kDLCUDAHost:
      return "cuda_host";
    case kDLOpenCL:
      return "opencl";
    case kDLVulkan:
      return "vulkan";
    case kDLMetal:
      return "metal";
    case kDLROCM:
      return "rocm";
    default:
      return "device_type_" + std::to_string(device_type);
  }
}

KilnModuleHandle RuntimeModule::handle() const {
  return built != nullptr ? built->runtime_module() : loaded.get();
}

namespace {

using Clock = std::chrono::steady_clock;

// The DLPack device type of a name; "llvm" is the CPU, as a target kind.
int32_t device_type_of(const std::string& name) {
  if (name == "cpu" || name == "llvm") return kDLCPU;
  if (name == "cuda") return kDLCUDA;
  if (name == "cuda_host") return kDLCUDAHost;
  if (name == "opencl") return kDLOpenCL;
  if (name == "vulkan") return kDLVulkan;
  if (name == "metal") return kDLMetal;
  if (name == "rocm") return kDLROCM;
  user_error(ErrorKind::kValue) << "kiln.device: unknown device '" << name
                                << "'; the devices are cpu (or llvm), cuda, cuda_host, opencl, "
                                   "vulkan, metal and rocm";
}

// Raises the runtime's last error as the class its error code names.
[[noreturn]] void raise_last_error(int32_t status) {
  raise_runtime_error(status, KilnGetLastError());
}

// One attribute of a device (KilnDeviceAttribute).
int64_t device_attribute(const Device& device, KilnDeviceAttr attr) {
  int64_t value = 0;
  int32_t status = KilnDeviceAttribute(device.device_type, device.device_id, attr, &value);
  if (status != 0) raise_last_error(status);
  return value;
}

// Waits for the work issued to a device.
void synchronize(const Device& device) {
  int32_t status = 0;
  {
    py::gil_scoped_release release;
    status = KilnDeviceSynchronize(device.device_type, device.device_id);
  }
  if (status != 0) raise_last_error(status);
}

// The GPU devices (cuda, opencl) that a call's tensors live on, each once.
std::vector<DLDevice> devices_of(const PackedArgs& packed) {
  std::vector<DLDevice> devices;
  for (int32_t i = 0; i < packed.size(); ++i) {
    if (packed.codes()[i] != kKilnDLTensorHandle || packed.values()[i].v_handle == nullptr)
      continue;
    DLDevice device = static_cast<const DLTensor*>(packed.values()[i].v_handle)->device;
    if (device.device_type != kDLCUDA && device.device_type != kDLOpenCL) continue;
    bool seen = false;
    for (const DLDevice& other : devices) {
      seen =
          seen || (other.device_type == device.device_type && other.device_id == device.device_id);
    }
    if (!seen) devices.push_back(device);
  }
  return devices;
}

std::vector<std::string> function_names(const RuntimeModule& module) {
  if (module.built != nullptr) return module.built->function_names();
  int32_t count = 0;
  const char* const* names = nullptr;
  int32_t status = KilnModuleListFunctions(module.loaded.get(), &count, &names);
  if (status != 0) raise_last_error(status);
  return std::vector<std::string>(names, names + count);
}

std::string target_of(const RuntimeModule& module) {
  if (module.built != nullptr) return module.built->target().str();
  const char* target = nullptr;
  int32_t status = KilnModuleGetTarget(module.loaded.get(), &target);
  if (status != 0) raise_last_error(status);
  return target;
}

RuntimeFunction get_function(const std::shared_ptr<RuntimeModule>& module,
                             const std::string& name) {
  KilnFunctionHandle handle = nullptr;
  int32_t status = KilnModuleGetFunction(module->handle(), name.c_str(), &handle);
  if (status != 0) raise_last_error(status);
  const KilnFuncSpec* spec = nullptr;
  status = KilnFuncGetSpec(handle, &spec);
  if (status != 0) raise_last_error(status);
  return RuntimeFunction{module, handle, spec};
}

std::shared_ptr<RuntimeModule> load_module(const std::string& path) {
  KilnModuleHandle handle = nullptr;
  int32_t status = KilnModuleLoadFromFile(path.c_str(), &handle);
  if (status != 0) raise_last_error(status);
  auto module = std::make_shared<RuntimeModule>();
  module->loaded = std::shared_ptr<KilnModule>(handle, KilnModuleFree);
  module->path = path;
  return module;
}

// The spec of a tensor extent or stride: an int, or the name of its symbolic variable.
py::object extent_spec(const KilnFuncSpec& spec, int64_t extent) {
  if (extent >= 0) return py::int_(extent);
  return py::str(spec.sym_var_names[-(extent + 1)]);
}

py::dict spec_dict(const KilnFuncSpec& spec) {
  py::list args;
  for (int32_t i = 0; i < spec.num_args; ++i) {
    const KilnArgSpec& arg = spec.args[i];
    py::dict entry;
    entry["name"] = arg.name;
    entry["kind"] = arg.kind == kKilnArgTensor ? "tensor" : "scalar";
    entry["dtype"] = dl_dtype_name(arg.dtype);
    if (arg.kind == kKilnArgTensor) {
      py::list shape;
      for (int32_t d = 0; d < arg.ndim; ++d) shape.append(extent_spec(spec, arg.shape[d]));
      entry["shape"] = py::tuple(shape);
      entry["device"] = device_type_name(arg.device_type);
      entry["alignment"] = arg.alignment;
      entry["written"] = arg.written != 0;
      entry["streaming_alignment"] = arg.streaming_alignment;
    }
    args.append(entry);
  }
  py::list sym_vars, sym_var_dtypes;
  for (int32_t k = 0; k < spec.num_sym_vars; ++k) {
    sym_vars.append(spec.sym_var_names[k]);
    sym_var_dtypes.append(dl_dtype_name(spec.sym_var_dtypes[k]));
  }
  py::dict result;
  result["name"] = spec.name;
  result["symbol"] = spec.symbol;
  result["sym_vars"] = sym_vars;
  result["sym_var_dtypes"] = sym_var_dtypes;
  result["args"] = args;
  return result;
}

// Seconds per call of `func`, one entry per repeat: after a warm-up call, each repeat times
// `number` calls, and `number` grows (for this and later repeats) until a repeat lasts at least
// min_repeat_ms. The GPUs the arguments live on are synchronized after the warm-up and at the
// end of each repeat's calls, inside the timed span, so that asynchronous launches are timed to
// their end. The GIL is released while the kernel runs.
std::vector<double> time_function(const RuntimeFunction& func, const py::tuple& args, int number,
                                  int repeat, double min_repeat_ms) {
  user_check(number >= 1) << "time_evaluator: number must be at least 1, found " << number;
  user_check(repeat >= 1) << "time_evaluator: repeat must be at least 1, found " << repeat;
  user_check(min_repeat_ms >= 0) << "time_evaluator: min_repeat_ms must not be negative, found "
                                 << min_repeat_ms;
  PackedArgs packed(*func.spec, args);
  std::vector<DLDevice> devices = devices_of(packed);
  std::vector<double> results;
  int32_t status = 0;
  std::string message;
  {
    py::gil_scoped_release release;
    auto call = [&] {
      return KilnFuncCall(func.handle, packed.values(), packed.codes(), packed.size());
    };
    auto sync = [&] {
      for (const DLDevice& device : devices) {
        if (status == 0) status = KilnDeviceSynchronize(device.device_type, device.device_id);
      }
    };
    status = call();
    sync();
    int64_t calls = number;
    for (int r = 0; r < repeat && status == 0; ++r) {
      while (status == 0) {
        Clock::time_point start = Clock::now();
        for (int64_t i = 0; i < calls && status == 0; ++i) status = call();
        sync();
        double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        if (status != 0) break;
        if (seconds * 1e3 >= min_repeat_ms) {
          results.push_back(seconds / static_cast<double>(calls));
          break;
        }
        // Aim at min_repeat_ms from the time per call seen so far, growing at least by half.
        double per_call = seconds / static_cast<double>(calls);
        double wanted = per_call > 0 ? std::ceil(min_repeat_ms * 1e-3 / per_call) : 0;
        calls =
            std::max<int64_t>(static_cast<int64_t>(std::min(wanted, 1e12)), calls + calls / 2 + 1);
      }
    }
    if (status == 0) {
      packed.copy_back();
    } else {
      message = KilnGetLastError();
    }
  }
  if (status != 0) raise_runtime_error(status, message);
  return results;
}

py::dict build_timings(const RuntimeModule& module) {
  py::dict result;
  if (module.built == nullptr) return result;
  const driver::BuildTimings& t = module.built->timings();
  result["lower_ms"] = t.lower_ms;
  result["codegen_ms"] = t.jit.codegen_ms;
  result["optimize_ms"] = t.jit.optimize_ms;
  result["emit_ms"] = t.jit.emit_ms;
  result["link_ms"] = t.jit.link_ms;
  result["total_ms"] = t.total_ms;
  result["from_cache"] = t.jit.from_cache;
  result["device_ms"] = t.device_ms;
  result["device_from_cache"] = t.device_from_cache;
  return result;
}

}  // namespace

void bind_runtime(py::module_& m) {
  py::class_<Device>(m, "Device", R"doc(
A device: a DLPack device type and an index, e.g. kiln.cpu(0). Devices compare equal when both
match, hash, and tell DLPack consumers where data lives (__dlpack_device__).)doc")
      .def(py::init([](const std::string& name, int32_t index) {
             user_check(index >= 0)
                 << "kiln.device: the index must not be negative, found " << index;
             return Device{device_type_of(name), index};
           }),
           py::arg("name"), py::arg("index") = 0, R"doc(
The device called ``name`` ("cpu" or "llvm", "cuda", "cuda_host", "opencl", "vulkan", "metal",
"rocm") with index ``index``.

Raises:
    KilnValueError: an unknown name or a negative index.)doc")
      .def_readonly("device_type", &Device::device_type, "The DLPack device type (1: cpu).")
      .def_readonly("device_id", &Device::device_id, "The device index.")
      .def_property_readonly(
          "name", [](const Device& d) { return device_type_name(d.device_type); },
          "The device kind, e.g. \"cpu\".")
      .def_property_readonly(
          "exist", [](const Device& d) { return device_attribute(d, kKilnDeviceExists) != 0; },
          "Whether the device exists here (False, not an error, without a driver).")
      .def_property_readonly(
          "device_name",
          [](const Device& d) {
            char name[256];
            int32_t status = KilnDeviceName(d.device_type, d.device_id, name, sizeof(name));
            if (status != 0) raise_last_error(status);
            return std::string(name);
          },
          R"doc(
The device's name as its driver reports it, e.g. "NVIDIA H100 80GB HBM3" ("cpu" for the CPU).

Raises:
    KilnRuntimeError: the driver is missing or the device does not exist.)doc")
      .def_property_readonly(
          "driver_version",
          [](const Device& d) {
            char version[256];
            int32_t status =
                KilnDeviceDriverVersion(d.device_type, d.device_id, version, sizeof(version));
            if (status != 0) raise_last_error(status);
            return std::string(version);
          },
          R"doc(
The version of the driver that serves the device: OpenCL's driver version (e.g. "5.0+debian"),
the CUDA driver's as "major.minor" (e.g. "12.4"), "" for the CPU. Tuning records of a GPU are
keyed by the device's name and this version (OpenCL) or compute capability (CUDA).

Raises:
    KilnRuntimeError: the driver is missing or the device does not exist.)doc")
      .def_property_readonly(
          "max_threads_per_block",
          [](const Device& d) { return device_attribute(d, kKilnDeviceMaxThreadsPerBlock); },
          "Threads per block (CUDA) or work-items per work-group (OpenCL), at most; raises "
          "KilnRuntimeError for a missing device, KilnValueError for the CPU.")
      .def_property_readonly(
          "max_shared_memory_per_block",
          [](const Device& d) { return device_attribute(d, kKilnDeviceMaxSharedMemoryPerBlock); },
          "Bytes of shared (CUDA) or local (OpenCL) memory per block, at most; raises as "
          "max_threads_per_block.")
      .def_property_readonly(
          "warp_size", [](const Device& d) { return device_attribute(d, kKilnDeviceWarpSize); },
          "Threads in lockstep: CUDA's warp size; on OpenCL the vendor's SIMD width where the "
          "device reports one, else 1. Raises as max_threads_per_block.")
      .def_property_readonly(
          "multi_processor_count",
          [](const Device& d) { return device_attribute(d, kKilnDeviceMultiprocessorCount); },
          "Multiprocessors (CUDA) or compute units (OpenCL); raises as max_threads_per_block.")
      .def_property_readonly(
          "compute_version",
          [](const Device& d) -> py::object {
            if (d.device_type != kDLCUDA) return py::none();
            int64_t version = device_attribute(d, kKilnDeviceComputeCapability);
            return py::str(std::to_string(version / 10) + "." + std::to_string(version % 10));
          },
          "The compute capability of a CUDA device, e.g. \"8.0\"; None for other devices. "
          "Raises KilnRuntimeError for a missing CUDA driver or device.")
      .def("sync", &synchronize, R"doc(
Waits until all work issued to the device (kernel launches, copies) has finished.

Raises:
    KilnRuntimeError: the driver is missing, the device does not exist, or the work failed.)doc")
      .def(
          "__eq__",
          [](const Device& a, const Device& b) {
            return a.device_type == b.device_type && a.device_id == b.device_id;
          },
          "Whether both devices have the same type and index.")
      .def(
          "__hash__", [](const Device& d) { return d.device_type * 1009 + d.device_id; },
          "A hash consistent with ==.")
      .def(
          "__dlpack_device__",
          [](const Device& d) { return py::make_tuple(d.device_type, d.device_id); },
          "The DLPack (device_type, device_id) pair.")
      .def(
          "__repr__",
          [](const Device& d) {
            return device_type_name(d.device_type) + "(" + std::to_string(d.device_id) + ")";
          },
          "The device as name(index), e.g. cpu(0).");

  py::class_<RuntimeFunction>(m, "Function", R"doc(
A compiled function of a module, from ``module["name"]``; it keeps its module alive. Call it
with the arguments its spec lists, in order: tensors (NumPy arrays, kiln.nd.NDArrays, objects
with __dlpack__) and numbers.)doc")
      .def_property_readonly(
          "name", [](const RuntimeFunction& f) { return std::string(f.spec->name); },
          "The function's name in its module.")
      .def_property_readonly(
          "spec", [](const RuntimeFunction& f) { return spec_dict(*f.spec); },
          R"doc(
What the function accepts, as a dict: "name", "symbol" (the kernel's name in the module),
"sym_vars" and "sym_var_dtypes" (the symbolic dimensions and the integer dtype each must fit),
and "args": one dict per parameter with "name", "kind" ("tensor" or "scalar") and "dtype", and
for tensors "shape" (ints and sym_var names), "device", "alignment" (bytes), "written"
(whether the function stores into it) and "streaming_alignment" (the alignment in bytes at
which it stores the tensor past the caches; 0: no streaming stores).)doc")
      .def("__call__", &call_function, R"doc(
Calls the function. Tensors are passed without a copy: the kernel reads and writes the caller's
memory (an array without the alignment a parameter requires is staged through an aligned copy,
copied back when the function writes it). The call behaves as if every input were read before
any output was written: an input that overlaps an output is copied first. An output that the
function streams past the caches (spec "streaming_alignment") but that lacks that alignment
gets the plain stores, with one kiln.error.StreamingAlignmentWarning per function.

Raises:
    KilnTypeError: the wrong number of arguments, a wrong dtype, a tensor where a number is
        expected or the reverse, or an object kiln cannot pass.
    KilnValueError: a shape, stride, device, alignment or symbolic dimension (also its range in
        its dtype) that does not match the spec; a scalar out of its dtype's range; a read-only
        array (flags.writeable False, a read-only DLPack tensor) where the function writes;
        written arguments that overlap each other.
    KilnRuntimeError: the kernel failed, or memory for a copy ran out.)doc")
      .def("_time", &time_function, py::arg("args"), py::arg("number"), py::arg("repeat"),
           py::arg("min_repeat_ms"),
           "Seconds per call, one per repeat (used by Module.time_evaluator); raises as "
           "__call__.")
      .def(
          "__repr__",
          [](const RuntimeFunction& f) {
            return "<kiln.runtime.Function " + std::string(f.spec->name) + ">";
          },
          "<kiln.runtime.Function name>.");

  py::class_<RuntimeModule, std::shared_ptr<RuntimeModule>>(
      m, "Module", "A module of compiled functions (wrapped by kiln.runtime.Module).")
      .def_property_readonly("functions", &function_names, "The function names.")
      .def_property_readonly("target", &target_of, "The canonical target string.")
      .def_property_readonly(
          "runnable",
          [](const RuntimeModule& mod) { return mod.built == nullptr || mod.built->runnable(); },
          "Whether the module's code can run in this process.")
      .def_property_readonly(
          "path",
          [](const RuntimeModule& mod) {
            return mod.built == nullptr ? py::object(py::str(mod.path)) : py::object(py::none());
          },
          "The file a loaded module came from; None for a module built in this process.")
      .def_property_readonly(
          "manifest",
          [](const RuntimeModule& mod) {
            return mod.built != nullptr ? py::object(py::str(mod.built->manifest()))
                                        : py::object(py::none());
          },
          "The manifest JSON text of a module built in this process; None for a loaded one.")
      .def_property_readonly(
          "build_timings", &build_timings,
          "Milliseconds per build phase (lower_ms, codegen_ms, optimize_ms, emit_ms, "
          "link_ms, device_ms: a GPU target's device code, total_ms), from_cache (the object "
          "came from an object cache) and device_from_cache (the CUDA binaries did); empty for "
          "a loaded module.")
      .def("get_function", &get_function, py::arg("name"), R"doc(
The function ``name`` of the module.

Raises:
    KilnIndexError: the module has no such function (the message lists the names).
    KilnRuntimeError: a module built here for a target this process cannot run.)doc")
      .def(
          "get_source",
          [](const RuntimeModule& mod, const std::string& format) {
            user_check(mod.built != nullptr)
                << "get_source: the module loaded from " << mod.path
                << " carries machine code only; the source of a module is available where it "
                   "was built";
            return mod.built->get_source(format);
          },
          py::arg("format"), R"doc(
The code as text: "ll" (optimized LLVM IR) or "asm" (assembly).

Raises:
    KilnValueError: another format, or a module loaded from a file (it holds machine code only).)doc")
      .def(
          "export_library",
          [](const RuntimeModule& mod, const std::string& path) {
            if (mod.built != nullptr) {
              mod.built->export_library(path);
              return;
            }
            std::error_code error;
            std::filesystem::copy_file(mod.path, path,
                                       std::filesystem::copy_options::overwrite_existing, error);
            runtime_check(!error) << "export_library: cannot copy " << mod.path << " to " << path
                                  << ": " << error.message();
          },
          py::arg("path"), R"doc(
Writes the module to ``path`` as a shared library with its manifest and checksum trailer (a
loaded module is copied).

Raises:
    KilnRuntimeError: linking or writing failed (the message has the linker's output).)doc");

  m.def("load_module", &load_module, py::arg("path"), R"doc(
Loads an exported module (see kiln.runtime.load_module).

Raises:
    KilnRuntimeError: the file is missing, damaged or not a kiln module, or the module cannot
        run here.)doc");
  m.def(
      "load_library",
      [](const std::string& path) {
        int32_t status = KilnLoadLibrary(path.c_str());
        if (status != 0) raise_last_error(status);
      },
      py::arg("path"), R"doc(
Opens the shared library at ``path`` (a file path, or a name the dynamic loader searches for,
e.g. "libopenblas.so.0") into the process's global scope (RTLD_GLOBAL), so that the extern
calls (tir.call_extern) of functions built, loaded or interpreted afterwards resolve its C
functions. A library exported afterwards is linked against it when it calls one of them, so
that loading the module elsewhere loads the library too. Loading it twice is harmless.

Raises:
    KilnValueError: the library cannot be opened (the loader's message says why).)doc");
  m.def(
      "set_num_threads",
      [](int32_t n) {
        int32_t status = KilnSetNumThreads(n);
        if (status != 0) raise_last_error(status);
      },
      py::arg("n"), R"doc(
Sets the number of threads of parallel loops (the caller counts as one); n <= 0 restores the
default.

Raises:
    KilnRuntimeError: called from inside a parallel task.)doc");
  m.def("get_num_threads", &KilnGetNumThreads,
        "The number of threads of parallel loops (the caller counts as one).");

  bind_ndarray(m);
}

}  // namespace kiln::python
