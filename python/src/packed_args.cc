// Python call arguments -> the runtime's packed arguments: NumPy arrays and kiln.nd.NDArrays as
// DLTensors over their own data, __dlpack__ objects through their capsules (consumed as the DLPack
// protocol says, versioned when the producer supports it), numbers as scalars; the refusal of
// read-only arrays the function writes; and the Python exception of a failed call, chosen by the
// runtime's error code.
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

// The bytes [begin, end) a CPU tensor's elements occupy, as the runtime computes them; false for
// a tensor without elements or one whose extent overflows (the runtime refuses that one).
bool byte_span(const DLTensor& tensor, uintptr_t* begin, uintptr_t* end) {
  int64_t element = static_cast<int64_t>(element_bytes(tensor.dtype));
  int64_t low = 0, high = 0, compact = 1;
  bool overflow = false;
  for (int32_t d = tensor.ndim - 1; d >= 0; --d) {
    int64_t extent = tensor.shape[d];
    if (extent <= 0) return false;
    int64_t stride = tensor.strides != nullptr ? tensor.strides[d] : compact;
    int64_t step = 0;
    overflow = overflow || __builtin_mul_overflow(stride, extent - 1, &step);
    if (step < 0) {
      overflow = overflow || __builtin_add_overflow(low, step, &low);
    } else {
      overflow = overflow || __builtin_add_overflow(high, step, &high);
    }
    overflow = overflow || __builtin_mul_overflow(compact, extent, &compact);
  }
  int64_t low_bytes = 0, high_bytes = 0;
  overflow = overflow || __builtin_mul_overflow(low, element, &low_bytes) ||
             __builtin_add_overflow(high, int64_t{1}, &high) ||
             __builtin_mul_overflow(high, element, &high_bytes);
  if (overflow) return false;
  uintptr_t address = reinterpret_cast<uintptr_t>(tensor.data) + tensor.byte_offset;
  *begin = address + static_cast<uintptr_t>(low_bytes);
  *end = address + static_cast<uintptr_t>(high_bytes);
  return true;
}

// Calls obj.__dlpack__(), asking for a versioned capsule (DLPack 1.0, which can say "read-only")
// from producers that accept max_version, as the array API standard says consumers do.
py::object dlpack_capsule(py::handle obj) {
  py::object method = obj.attr("__dlpack__");
  try {
    return method(py::arg("max_version") = py::make_tuple(1, 0));
  } catch (py::error_already_set& error) {
    if (!error.matches(PyExc_TypeError)) throw;
  }
  return method();
}

}  // namespace

void raise_runtime_error(int32_t status, const std::string& message) {
  switch (status) {
    case kKilnErrorValue:
      user_error(ErrorKind::kValue) << message;
    case kKilnErrorType:
      user_error(ErrorKind::kType) << message;
    case kKilnErrorIndex:
      user_error(ErrorKind::kIndex) << message;
    default:
      // A failing kernel, a module file or a module the runtime cannot run.
      user_error(ErrorKind::kRuntime) << message;
  }
}

PackedArgs::PackedArgs(const KilnFuncSpec& spec, const py::tuple& args)
    : spec_(spec), values_(args.size()), codes_(args.size(), kKilnNull) {
  for (KilnValue& value : values_) value.v_handle = nullptr;
  // The runtime checks the count first; with the wrong count there is nothing to convert for.
  if (static_cast<int32_t>(args.size()) != spec.num_args) return;
  try {
    for (size_t i = 0; i < args.size(); ++i) pack(i, &spec.args[i], args[i]);
    check_staged_overlaps();
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
  for (DLManagedTensorVersioned* managed : borrowed_versioned_) {
    if (managed->deleter != nullptr) managed->deleter(managed);
  }
  borrowed_versioned_.clear();
}

void PackedArgs::copy_back() const {
  for (const Staged& staged : staged_) {
    if (staged.write_back) std::memcpy(staged.original, staged.copy, staged.nbytes);
  }
}

void PackedArgs::pack(size_t i, const KilnArgSpec* arg, py::handle obj) {
  if (py::isinstance<NDArray>(obj)) {
    pack_tensor(i, arg, obj.cast<const NDArray&>().storage->tensor, false, "the kiln.nd.NDArray");
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
    pack_tensor(i, arg, tensor, !array.writeable(),
                "the NumPy array passed for it is read-only (flags.writeable is False, as for "
                "np.memmap(..., mode=\"r\"), np.broadcast_to views and arrays made read-only)");
    return;
  }
  if (pack_number(i, arg, obj)) return;
  if (obj.is_none()) {
    values_[i].v_handle = nullptr;
    codes_[i] = kKilnNull;
    return;
  }
  if (py::hasattr(obj, "__dlpack__")) {
    pack_dlpack(i, arg, obj);
    return;
  }
  user_error(ErrorKind::kType) << describe(spec_, i) << ": cannot pass an object of type "
                               << type_name(obj)
                               << "; expected a NumPy array, a kiln.nd.NDArray, an object with "
                                  "__dlpack__, or a number";
}

void PackedArgs::pack_dlpack(size_t i, const KilnArgSpec* arg, py::handle obj) {
  py::object capsule = dlpack_capsule(obj);
  PyObject* raw = capsule.ptr();
  // A consumed capsule is ours: renamed so that its destructor leaves the tensor alone, and the
  // tensor released through its deleter after the call (or when packing fails).
  if (PyCapsule_IsValid(raw, "dltensor_versioned")) {
    auto* managed =
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(raw, "dltensor_versioned"));
    PyCapsule_SetName(raw, "used_dltensor_versioned");
    borrowed_versioned_.push_back(managed);
    type_check(managed->version.major == 1)
        << describe(spec_, i) << ": " << type_name(obj) << ".__dlpack__() returned a tensor of "
        << "DLPack version " << managed->version.major << "." << managed->version.minor
        << "; kiln reads DLPack 1.x";
    pack_tensor(i, arg, managed->dl_tensor, (managed->flags & kDLPackFlagReadOnly) != 0,
                "the " + type_name(obj) +
                    " tensor passed for it is read-only (its DLPack producer marks it "
                    "DLPACK_FLAG_BITMASK_READ_ONLY)");
    return;
  }
  type_check(PyCapsule_IsValid(raw, "dltensor"))
      << describe(spec_, i) << ": " << type_name(obj)
      << ".__dlpack__() did not return an unconsumed \"dltensor\" or \"dltensor_versioned\" "
         "capsule";
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(raw, "dltensor"));
  PyCapsule_SetName(raw, "used_dltensor");
  borrowed_.push_back(managed);
  // An unversioned capsule cannot say "read-only": the producer lends it for writing.
  pack_tensor(i, arg, managed->dl_tensor, false, "");
}

void PackedArgs::pack_tensor(size_t i, const KilnArgSpec* arg, const DLTensor& tensor,
                             bool read_only, const std::string& what) {
  // Step 1. A read-only array where the function stores would fault (a memmap opened for
  // reading) or be overwritten behind its owner's back.
  user_check(!read_only || arg->kind != kKilnArgTensor || arg->written == 0)
      << describe(spec_, i) << " is written by the function, but " << what
      << "; pass a writable array";
  DLTensor& copy = tensors_.emplace_back(tensor);
  values_[i].v_handle = &copy;
  codes_[i] = kKilnDLTensorHandle;
  // Step 2. Stage a compact CPU tensor that lacks the alignment the kernel assumes; anything
  // else the runtime judges as it is.
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
  staged_.push_back(Staged{i, data, staging, nbytes, arg->written != 0});
  originals_.push_back(tensor);
  copy.data = staging;
  copy.byte_offset = 0;
}

void PackedArgs::check_staged_overlaps() const {
  // The runtime refuses written tensors that overlap, but it sees a staged tensor's copy, not
  // the caller's array that the copy is written back to: compare those here.
  bool any_written_staged = false;
  for (const Staged& staged : staged_) any_written_staged |= staged.write_back;
  if (!any_written_staged) return;
  auto original = [&](size_t i) -> const DLTensor* {
    for (size_t k = 0; k < staged_.size(); ++k) {
      if (staged_[k].arg_index == i) return &originals_[k];
    }
    return static_cast<const DLTensor*>(values_[i].v_handle);
  };
  for (size_t i = 0; i < values_.size(); ++i) {
    if (codes_[i] != kKilnDLTensorHandle || spec_.args[i].written == 0) continue;
    uintptr_t begin_i, end_i;
    if (!byte_span(*original(i), &begin_i, &end_i)) continue;
    for (size_t j = i + 1; j < values_.size(); ++j) {
      if (codes_[j] != kKilnDLTensorHandle || spec_.args[j].written == 0) continue;
      uintptr_t begin_j, end_j;
      if (!byte_span(*original(j), &begin_j, &end_j)) continue;
      user_check(end_i <= begin_j || end_j <= begin_i)
          << spec_.name << ": arguments " << spec_.args[i].name << " and " << spec_.args[j].name
          << " overlap in memory and the function writes both; pass separate arrays (the "
             "result would depend on the order of the writes)";
    }
  }
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

namespace {

// Warns (kiln.error.StreamingAlignmentWarning, once per function) when a tensor that the
// function streams past the caches lacks the alignment the streaming stores need: the plain
// stores run, correct but slower on an output larger than the caches.
void warn_unaligned_streams(const RuntimeFunction& func, const PackedArgs& packed) {
  const KilnFuncSpec& spec = *func.spec;
  for (int32_t i = 0; i < spec.num_args && i < packed.size(); ++i) {
    const KilnArgSpec& arg = spec.args[i];
    if (arg.kind != kKilnArgTensor || arg.streaming_alignment <= 1 ||
        packed.codes()[i] != kKilnDLTensorHandle) {
      continue;
    }
    const auto* tensor = static_cast<const DLTensor*>(packed.values()[i].v_handle);
    uintptr_t address = reinterpret_cast<uintptr_t>(tensor->data) + tensor->byte_offset;
    uintptr_t past = address % static_cast<uintptr_t>(arg.streaming_alignment);
    if (past == 0) continue;
    func.warned_streaming = true;
    std::string message =
        "kiln.runtime.Function " + std::string(spec.name) + ": argument " + std::to_string(i) +
        " (" + arg.name + ") is " + std::to_string(past) + " bytes past a multiple of " +
        std::to_string(arg.streaming_alignment) +
        "; the function stores it past the caches "
        "(streaming stores) only at that alignment, so the plain stores run, slower for data "
        "larger than the caches: allocate it with kiln.nd.empty or kiln.nd.array (aligned to " +
        std::to_string(arg.streaming_alignment) + " bytes). Warned once per function.";
    py::object category = py::module_::import("kiln.error").attr("StreamingAlignmentWarning");
    if (PyErr_WarnEx(category.ptr(), message.c_str(), 1) != 0) throw py::error_already_set();
    return;
  }
}

}  // namespace

void call_function(const RuntimeFunction& func, const py::args& args) {
  PackedArgs packed(*func.spec, args);
  if (!func.warned_streaming) warn_unaligned_streams(func, packed);
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
  if (status != 0) raise_runtime_error(status, message);
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
