// Python binding of the reference interpreter (kiln._kiln.tir.interpret, re-exported as
// kiln.tir.interpret): NumPy arrays are passed in place, Python numbers as scalars; the
// keyword gpu picks the semantics of loops bound to GPU blocks and threads.
#include <pybind11/numpy.h>

#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "convert.h"
#include "kiln/interpreter/interpreter.h"
#include "kiln/support/error.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::ir;
using interpreter::Argument;

namespace {

// "argument 1 (buffer B)" / "argument 2 (scalar n)", as the interpreter's own messages say.
std::string describe_param(const PrimFunc& func, size_t i) {
  std::string what = "argument " + std::to_string(i);
  if (i >= func.params.size()) return what;
  if (Ref<Buffer> buffer = func.buffer_of(func.params[i]))
    return what + " (buffer " + buffer->name + ")";
  return what + " (scalar " + func.params[i]->name + ")";
}

// The kiln dtype of a NumPy array's elements.
DataType array_dtype(const py::array& array, const std::string& what) {
  py::dtype dtype = array.dtype();
  std::string name = py::str(dtype.attr("name")).cast<std::string>();
  std::string byteorder = py::str(dtype.attr("byteorder")).cast<std::string>();
  type_check(byteorder != ">") << "tir.interpret: " << what << ": arrays in big-endian byte order ("
                               << name << ") are not supported; convert with astype";
  if (name == "bfloat16") return DataType::bfloat16();
  int bits = static_cast<int>(dtype.itemsize()) * 8;
  switch (dtype.kind()) {
    case 'b':
      return DataType::bool_();
    case 'i':
      return DataType::int_(bits);
    case 'u':
      return DataType::uint(bits);
    case 'f':
      if (bits == 16 || bits == 32 || bits == 64) return DataType::float_(bits);
      break;
    default:
      break;
  }
  user_error(ErrorKind::kType) << "tir.interpret: " << what << ": arrays of dtype " << name
                               << " are not supported (bool, int8-64, uint8-64, float16/32/64 "
                                  "and bfloat16 are)";
}

Argument array_argument(py::array array, const std::string& what) {
  DataType dtype = array_dtype(array, what);
  std::vector<int64_t> shape, strides;
  auto itemsize = static_cast<int64_t>(array.itemsize());
  for (py::ssize_t k = 0; k < array.ndim(); ++k) {
    shape.push_back(static_cast<int64_t>(array.shape(k)));
    auto stride = static_cast<int64_t>(array.strides(k));
    user_check(stride % itemsize == 0)
        << "tir.interpret: " << what << ": stride " << stride << " bytes of dimension " << k
        << " is not a multiple of the element size " << itemsize;
    strides.push_back(stride / itemsize);
  }
  bool writable = array.writeable();
  void* data = writable ? array.mutable_data() : const_cast<void*>(array.data());
  return Argument::tensor(data, dtype, std::move(shape), std::move(strides), writable);
}

Argument to_argument(py::handle obj, const std::string& what) {
  if (py::isinstance<py::array>(obj)) return array_argument(obj.cast<py::array>(), what);
  py::module_ numpy = py::module_::import("numpy");
  if (py::isinstance<py::bool_>(obj) || py::isinstance(obj, numpy.attr("bool_"))) {
    return Argument::integer(obj.cast<bool>() ? 1 : 0);
  }
  py::object np_integer = numpy.attr("integer");
  py::object np_floating = numpy.attr("floating");
  if (py::isinstance<py::int_>(obj) || py::isinstance(obj, np_integer)) {
    py::int_ value = py::reinterpret_steal<py::int_>(PyNumber_Index(obj.ptr()));
    if (!value) throw py::error_already_set();
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    user_check(overflow == 0) << "tir.interpret: " << what << ": the integer "
                              << py::str(obj).cast<std::string>() << " does not fit in 64 bits";
    return Argument::integer(v);
  }
  if (py::isinstance<py::float_>(obj) || py::isinstance(obj, np_floating)) {
    return Argument::floating(obj.cast<double>());
  }
  user_error(ErrorKind::kType) << "tir.interpret: " << what
                               << ": expected a NumPy array or a number, found an object of type "
                               << python_type_name(obj);
}

bool is_device_kernel(const PrimFunc& func) {
  return func.attrs.count("kiln.device_kernel") != 0;
}

// The function to run: a PrimFunc, or the only (or "main") function of an IRModule or of a
// tir.Schedule's module, not counting device kernels, which go to `kernels`.
Ref<PrimFunc> to_func(py::handle obj, std::vector<Ref<PrimFunc>>* kernels) {
  FuncOrModule input = to_func_or_module(obj, "tir.interpret", "func");
  if (input.func) return input.func;
  std::vector<Ref<PrimFunc>> others;
  for (const auto& [name, func] : input.mod->functions) {
    (is_device_kernel(*func) ? *kernels : others).push_back(func);
  }
  if (others.size() == 1) return others.front();
  return input.mod->lookup("main");
}

interpreter::GpuSemantics to_gpu_semantics(py::handle gpu) {
  std::optional<bool> value = to_optional_bool(gpu, "tir.interpret", "gpu");
  if (!value) return interpreter::GpuSemantics::kAuto;
  return *value ? interpreter::GpuSemantics::kOn : interpreter::GpuSemantics::kOff;
}

}  // namespace

void bind_interpreter(py::module_& tir) {
  tir.def(
      "interpret",
      [](py::handle func_obj, const py::args& args, py::handle gpu) {
        interpreter::Options options;
        options.gpu = to_gpu_semantics(gpu);
        Ref<PrimFunc> func = to_func(func_obj, &options.kernels);
        std::vector<Argument> arguments;
        for (size_t i = 0; i < args.size(); ++i) {
          arguments.push_back(to_argument(args[i], describe_param(*func, i)));
        }
        interpreter::interpret(*func, arguments, options);
      },
      py::arg("func"), py::kw_only(), py::arg("gpu") = py::none(),
      R"doc(Runs a PrimFunc with kiln's reference interpreter, without a code generator.

Arguments are passed in destination-passing style: one NumPy array per buffer parameter (read
and written in place; bfloat16 arrays use ml_dtypes.bfloat16) and a Python number per scalar
parameter. Every load and store is bounds-checked, memory allocated by the function starts as
garbage (NaN / 0xCD bytes), and loops run sequentially, except with GPU semantics. Errors raise
kiln exceptions whose message starts with "tir.interpret:".

GPU semantics: each outermost loop nest bound to blockIdx/threadIdx runs as a grid of thread
blocks, one block after another; every thread of a block runs the nest (a loop bound to a tag is
the thread's index along it, guarded when shorter than the launch), and the threads advance in
lock step from one storage_sync to the next. "shared" allocations exist once per block, others
inside the nest once per thread. A missing barrier (a thread accesses an element of a shared
buffer that another thread wrote since the last barrier, or writes one another thread read) and
a barrier that not every thread of a block reaches are errors. Scheduled TensorIR keeps the
serial meaning by default: its thread-bound loops behave as if run one after the other, and
lowering inserts the barriers that give them this meaning on a GPU (see tir.lower with target).

Args:
    func (PrimFunc, IRModule or tir.Schedule): the function; for a module (or a schedule's
        module), its only function or its function "main", not counting device kernels: those
        run where the function launches them (the module of tir.lower(func, target="cuda")).
    *args: one NumPy array per buffer parameter, one number per scalar parameter.
    gpu (bool, optional, keyword only): True runs loops bound to GPU blocks and threads with
        GPU semantics, False serially; None (the default) picks GPU semantics for a function
        that contains storage_sync. Device kernels always run with GPU semantics.

Raises:
    KilnIndexError: the number of arguments differs from the number of parameters, or an
        access is out of bounds (the message names the buffer and the index).
    KilnTypeError: an argument is not a NumPy array or a number, or its dtype differs from the
        parameter's.
    KilnValueError: a shape does not match the parameter's (symbolic dimensions are bound by
        the first array that has them), or an array the function stores into is read-only.
    KilnRuntimeError: an integer division by zero, a failed assertion of the function, or with
        GPU semantics a missing or divergent barrier (the message names the threads, their
        block, the buffer and the index).

Example:
    a = np.random.rand(1024).astype("float32")
    b = np.empty_like(a)
    tir.interpret(func, a, b)
    np.testing.assert_allclose(b, a * 2 + 1)
    tir.interpret(tir.lower(sch, target="cuda"), a, b)  # the GPU program, with barriers)doc");
}

}  // namespace kiln::python
