// Python call arguments -> the runtime's packed arguments: NumPy arrays and kiln.nd.NDArrays as
// DLTensors over their own data, __dlpack__ objects through their capsules (consumed as the DLPack
// protocol says), numbers as scalars; and the Python exception of a failed call.
#include <pybind11/numpy.h>

#include <cstring>
#include <string>

#include "kiln/ir/dtype.h"
#include "kiln/support/error.h"
#include "runtime_py.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

// NumPy's scalar base classes, looked up once and kept for the life of the process.
PyObject* numpy_class(const char* name) {
  return py::object(py::module_::import("numpy").attr(name)).release().ptr();
}

std::string type_name(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
}

// "main: argument A" as the runtime's own messages start.
std::string describe(const KilnFuncSpec& spec, size_t i) {
  return std::string(spec.name) + ": argument " + spec.args[i].name;
}

size_t element_bytes(DLDataType dtype) {
  return (static_cast<size_t>(dtype.bits) * dtype.lanes + 7) / 8;
}

// Whether `tensor` is laid out compact row-major, as the runtime judges it.
bool is_compact(const DLTensor& tensor) {
  if (tensor.strides == nullptr) return true;
  int64_t expected = 1;
  for (int32_t d = tensor.ndim - 1; d >= 0; --d) {
    if (tensor.shape[d] != 1 && tensor.strides[d] != expected) return false;
    expected *= tensor.shape[d];
  }
  return true;
}

size_t element_count(const DLTensor& tensor) {
  size_t count = 1;
  for (int32_t d = 0; d < tensor.ndim; ++d) count *= static_cast<size_t>(tensor.shape[d]);
  return count;
}

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

PackedArgs::PackedArgs(const KilnFuncSpec& spec, const py::tuple& args)
    : spec_(spec), values_(args.size()), codes_(args.size(), kKilnNull) {
  for (KilnValue& value : values_) value.v_handle = nullptr;
  // The runtime checks the count first; with the wrong count there is nothing to convert for.
  if (static_cast<int32_t>(args.size()) != spec.num_args) return;
  try {
    for (size_t i = 0; i < args.size(); ++i) pack(i, &spec.args[i], args[i]);
  } catch (...) {
    release();
    throw;
  }
}

PackedArgs::~PackedArgs() {
  release();
}

void PackedArgs::release() {
  for (const Staged& staged : staged_) KilnFreeAligned(staged.copy);
  staged_.clear();
  for (DLManagedTensor* managed : borrowed_) {
    if (managed->deleter != nullptr) managed->deleter(managed);
  }
  borrowed_.clear();
}

void PackedArgs::copy_back() const {
  for (const Staged& staged : staged_) {
    if (staged.write_back) std::memcpy(staged.original, staged.copy, staged.nbytes);
  }
}

void PackedArgs::pack(size_t i, const KilnArgSpec* arg, py::handle obj) {
  if (py::isinstance<NDArray>(obj)) {
    pack_tensor(i, arg, obj.cast<const NDArray&>().storage->tensor, true);
    return;
  }
  if (py::isinstance<py::array>(obj)) {
    auto array = py::reinterpret_borrow<py::array>(obj);
    // A 0-d array passed for a scalar parameter is that scalar.
    if (array.ndim() == 0 && arg->kind == kKilnArgScalar && pack_number(i, arg, obj.attr("item")()))
      return;
    std::string what = describe(spec_, i);
    DLTensor tensor{};
    tensor.data = const_cast<void*>(array.data());
    tensor.device = DLDevice{kDLCPU, 0};
    tensor.ndim = static_cast<int32_t>(array.ndim());
    tensor.dtype = numpy_dl_dtype(array.dtype(), what);
    auto itemsize = static_cast<int64_t>(array.itemsize());
    std::vector<int64_t>& shape = shapes_.emplace_back();
    std::vector<int64_t>& strides = shapes_.emplace_back();
    for (py::ssize_t k = 0; k < array.ndim(); ++k) {
      shape.push_back(static_cast<int64_t>(array.shape(k)));
      auto stride = static_cast<int64_t>(array.strides(k));
      user_check(stride % itemsize == 0)
          << what << ": the stride " << stride << " bytes of dimension " << k
          << " is not a multiple of the element size " << itemsize << " bytes";
      strides.push_back(stride / itemsize);
    }
    tensor.shape = shape.data();
    tensor.strides = strides.data();
    pack_tensor(i, arg, tensor, array.writeable());
    return;
  }
  if (pack_number(i, arg, obj)) return;
  if (obj.is_none()) {
    values_[i].v_handle = nullptr;
    codes_[i] = kKilnNull;
    return;
  }
  if (py::hasattr(obj, "__dlpack__")) {
    py::object capsule = obj.attr("__dlpack__")();
    PyObject* raw = capsule.ptr();
    type_check(PyCapsule_IsValid(raw, "dltensor"))
        << describe(spec_, i) << ": " << type_name(obj)
        << ".__dlpack__() did not return an unconsumed \"dltensor\" capsule";
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(raw, "dltensor"));
    // The capsule is ours now: renamed so that its destructor leaves the tensor alone, and the
    // tensor released through its deleter after the call.
    PyCapsule_SetName(raw, "used_dltensor");
    borrowed_.push_back(managed);
    pack_tensor(i, arg, managed->dl_tensor, true);
    return;
  }
  user_error(ErrorKind::kType) << describe(spec_, i) << ": cannot pass an object of type "
                               << type_name(obj)
                               << "; expected a NumPy array, a kiln.nd.NDArray, an object with "
                                  "__dlpack__, or a number";
}

void PackedArgs::pack_tensor(size_t i, const KilnArgSpec* arg, const DLTensor& tensor,
                             bool writable) {
  DLTensor& copy = tensors_.emplace_back(tensor);
  values_[i].v_handle = &copy;
  codes_[i] = kKilnDLTensorHandle;
  // Stage a compact CPU tensor that lacks the alignment the kernel assumes; anything else the
  // runtime judges as it is.
  if (arg->kind != kKilnArgTensor || arg->alignment <= 1 || arg->strides != nullptr) return;
  if (copy.device.device_type != kDLCPU && copy.device.device_type != kDLCUDAHost) return;
  if (copy.data == nullptr || copy.ndim != arg->ndim) return;
  char* data = static_cast<char*>(copy.data) + copy.byte_offset;
  if (reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(arg->alignment) == 0) return;
  if (!is_compact(copy)) return;
  size_t nbytes = element_count(copy) * element_bytes(copy.dtype);
  if (nbytes == 0) return;
  void* staging = KilnAllocAligned(nbytes, static_cast<size_t>(arg->alignment));
  runtime_check(staging != nullptr) << describe(spec_, i) << ": cannot allocate " << nbytes
                                    << " aligned bytes to stage the tensor: " << KilnGetLastError();
  std::memcpy(staging, data, nbytes);
  staged_.push_back(Staged{data, staging, nbytes, writable});
  copy.data = staging;
  copy.byte_offset = 0;
}

bool PackedArgs::pack_number(size_t i, const KilnArgSpec* arg, py::handle obj) {
  static PyObject* np_bool = numpy_class("bool_");
  static PyObject* np_integer = numpy_class("integer");
  static PyObject* np_floating = numpy_class("floating");
  bool wants_float =
      arg->kind == kKilnArgScalar && (arg->dtype.code == kDLFloat || arg->dtype.code == kDLBfloat);
  if (PyBool_Check(obj.ptr()) || PyObject_IsInstance(obj.ptr(), np_bool) == 1) {
    bool value = obj.cast<bool>();
    if (wants_float) {
      values_[i].v_float64 = value ? 1.0 : 0.0;
      codes_[i] = kKilnFloat;
    } else {
      values_[i].v_int64 = value ? 1 : 0;
      codes_[i] = kKilnInt;
    }
    return true;
  }
  if (PyLong_Check(obj.ptr()) || PyObject_IsInstance(obj.ptr(), np_integer) == 1) {
    auto value = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
    if (!value) throw py::error_already_set();
    if (wants_float) {
      values_[i].v_float64 = PyLong_AsDouble(value.ptr());
      if (PyErr_Occurred()) throw py::error_already_set();
      codes_[i] = kKilnFloat;
      return true;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow == 0) {
      values_[i].v_int64 = v;
      codes_[i] = kKilnInt;
      return true;
    }
    unsigned long long u = overflow > 0 ? PyLong_AsUnsignedLongLong(value.ptr()) : 0;
    if (overflow < 0 || PyErr_Occurred()) {
      PyErr_Clear();
      user_error(ErrorKind::kValue)
          << describe(spec_, i) << ": the integer " << py::str(obj).cast<std::string>()
          << " does not fit in 64 bits";
    }
    values_[i].v_int64 = static_cast<int64_t>(u);
    codes_[i] = kKilnUInt;
    return true;
  }
  if (PyFloat_Check(obj.ptr()) || PyObject_IsInstance(obj.ptr(), np_floating) == 1) {
    values_[i].v_float64 = obj.cast<double>();
    codes_[i] = kKilnFloat;
    return true;
  }
  return false;
}

void call_function(const RuntimeFunction& func, const py::args& args) {
  PackedArgs packed(*func.spec, args);
  int32_t status = 0;
  std::string message;
  {
    py::gil_scoped_release release;
    status = KilnFuncCall(func.handle, packed.values(), packed.codes(), packed.size());
    if (status == 0) {
      packed.copy_back();
    } else {
      message = KilnGetLastError();
    }
  }
  if (status != 0) raise_call_error(*func.spec, packed, message);
}

void raise_call_error(const KilnFuncSpec& spec, const PackedArgs& args,
                      const std::string& message) {
  // The same arguments checked again tell an argument error from a failure inside the kernel.
  bool argument_error = KilnFuncCheckArgs(&spec, args.values(), args.codes(), args.size()) != 0;
  ErrorKind kind = ErrorKind::kRuntime;
  if (argument_error) {
    bool wrong_kind =
        contains(message, " arguments, found") || contains(message, ": expected dtype") ||
        contains(message, ": expected a tensor") || contains(message, " scalar, found");
    kind = wrong_kind ? ErrorKind::kType : ErrorKind::kValue;
  }
  user_error(kind) << message;
}

DLDataType parse_dl_dtype(const std::string& text, const char* api) {
  ir::DataType dtype = ir::DataType::parse(text, api);
  type_check(!dtype.is_handle() && !dtype.is_void())
      << api << ": dtype " << text << " is not an element type";
  return DLDataType{static_cast<uint8_t>(dtype.code()), static_cast<uint8_t>(dtype.bits()),
                    static_cast<uint16_t>(dtype.lanes())};
}

std::string dl_dtype_name(DLDataType dtype) {
  switch (dtype.code) {
    case kDLInt:
    case kDLUInt:
    case kDLFloat:
    case kDLBfloat:
    case KILN_DL_BOOL:
      return ir::DataType(static_cast<ir::DataType::Code>(dtype.code), dtype.bits, dtype.lanes)
          .str();
    default:
      return "dtype(code=" + std::to_string(dtype.code) + ", bits=" + std::to_string(dtype.bits) +
             ", lanes=" + std::to_string(dtype.lanes) + ")";
  }
}

DLDataType numpy_dl_dtype(const py::dtype& dtype, const std::string& what) {
  // The descriptor's fields, read directly: dtype.name is computed in Python and would cost
  // more than the whole rest of a call.
  auto bits = static_cast<uint8_t>(dtype.itemsize() * 8);
  auto name = [&] { return py::str(dtype.attr("name")).cast<std::string>(); };
  type_check(dtype.byteorder() != '>') << what << ": arrays in big-endian byte order (" << name()
                                       << ") are not supported; convert with astype";
  switch (dtype.kind()) {
    case 'b':
      return DLDataType{KILN_DL_BOOL, 8, 1};
    case 'i':
      return DLDataType{kDLInt, bits, 1};
    case 'u':
      return DLDataType{kDLUInt, bits, 1};
    case 'f':
      if (bits == 16 || bits == 32 || bits == 64) return DLDataType{kDLFloat, bits, 1};
      break;
    case 'V':
      if (bits == 16 && name() == "bfloat16") return DLDataType{kDLBfloat, 16, 1};
      break;
    default:
      break;
  }
  user_error(ErrorKind::kType) << what << ": NumPy arrays of dtype " << name()
                               << " are not supported (bool, int8-64, uint8-64, float16/32/64 "
                                  "and bfloat16 are)";
}

py::dtype numpy_dtype_of(DLDataType dtype) {
  type_check(dtype.lanes == 1) << "kiln.nd: NumPy has no dtype for the vector dtype "
                               << dl_dtype_name(dtype);
  if (dtype.code == kDLBfloat) {
    return py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
  }
  if (dtype.code == KILN_DL_BOOL) return py::dtype("bool");
  return py::dtype(dl_dtype_name(dtype));
}

}  // namespace kiln::python
