// kiln.nd.NDArray: an array in CPU memory (a 64-byte aligned buffer from the runtime's allocator)
// or in the memory of an OpenCL or CUDA device (from KilnDeviceAlloc), copied in from and out to
// NumPy, and shared without a copy through DLPack (np.from_dlpack(nd) for a CPU array).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <vector>

#include "kiln/support/error.h"
#include "runtime_py.h"

namespace py = pybind11;

namespace kiln::python {

NDArrayStorage::NDArrayStorage(std::vector<int64_t> shape_in, DLDataType dtype, DLDevice device)
    : shape(std::move(shape_in)) {
  bool served = device.device_type == kDLCPU || device.device_type == kDLOpenCL ||
                device.device_type == kDLCUDA;
  user_check(served) << "kiln.nd: arrays live on cpu, cuda and opencl devices; found device "
                     << device_type_name(device.device_type) << "(" << device.device_id << ")";
  // The byte size, refusing a shape whose size does not fit 64 bits (it would wrap to a small
  // buffer that kernels then overrun).
  nbytes = (static_cast<size_t>(dtype.bits) * dtype.lanes + 7) / 8;
  bool overflow = false;
  for (int64_t extent : shape) {
    user_check(extent >= 0) << "kiln.nd: the shape has the negative extent " << extent;
    overflow = overflow || __builtin_mul_overflow(nbytes, static_cast<size_t>(extent), &nbytes);
  }
  if (overflow) {
    std::string extents;
    for (int64_t extent : shape) extents += (extents.empty() ? "" : ", ") + std::to_string(extent);
    user_error(ErrorKind::kValue) << "kiln.nd: an array of shape (" << extents << ") and dtype "
                                  << dl_dtype_name(dtype) << " would have more than 2^64 bytes";
  }
  if (device.device_type == kDLCPU) {
    data = KilnAllocAligned(nbytes, 64);
    runtime_check(data != nullptr) << "kiln.nd: " << KilnGetLastError();
  } else {
    // NULL for zero bytes; a missing driver or device raises here.
    int32_t status = KilnDeviceAlloc(device.device_type, device.device_id, nbytes, 0, &data);
    if (status != 0) raise_runtime_error(status, std::string("kiln.nd: ") + KilnGetLastError());
  }
  tensor.data = data;
  tensor.device = device;
  tensor.ndim = static_cast<int32_t>(shape.size());
  tensor.dtype = dtype;
  tensor.shape = shape.data();
  tensor.strides = nullptr;
  tensor.byte_offset = 0;
}

NDArrayStorage::~NDArrayStorage() {
  if (tensor.device.device_type == kDLCPU) {
    KilnFreeAligned(data);
  } else {
    KilnDeviceFree(tensor.device.device_type, tensor.device.device_id, data);
  }
}

namespace {

// What a DLPack capsule of an NDArray owns: the tensor description and a share of the storage.
struct ExportedTensor {
  DLManagedTensor managed{};
  DLManagedTensorVersioned versioned{};
  std::shared_ptr<NDArrayStorage> storage;
};

void delete_exported(DLManagedTensor* managed) {
  delete static_cast<ExportedTensor*>(managed->manager_ctx);
}

void delete_exported_versioned(DLManagedTensorVersioned* managed) {
  delete static_cast<ExportedTensor*>(managed->manager_ctx);
}

// Frees a capsule that no consumer took; a consumed one was renamed "used_dltensor" (or
// "used_dltensor_versioned").
void capsule_destructor(PyObject* capsule) {
  bool legacy = PyCapsule_IsValid(capsule, "dltensor");
  if (!legacy && !PyCapsule_IsValid(capsule, "dltensor_versioned")) return;
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  if (legacy) {
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  } else {
    auto* managed =
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  }
  PyErr_Restore(type, value, traceback);
}

std::vector<int64_t> to_extents(py::handle obj, const char* api) {
  std::vector<int64_t> shape;
  if (PyLong_Check(obj.ptr())) {
    shape.push_back(obj.cast<int64_t>());
    return shape;
  }
  type_check(py::isinstance<py::sequence>(obj) && !py::isinstance<py::str>(obj))
      << api << ": the shape must be an int or a sequence of ints, found "
      << py::str(obj).cast<std::string>();
  for (py::handle extent : obj.cast<py::sequence>()) {
    type_check(PyLong_Check(extent.ptr()) || py::hasattr(extent, "__index__"))
        << api << ": the shape must be a sequence of ints, found "
        << py::str(obj).cast<std::string>();
    shape.push_back(extent.cast<int64_t>());
  }
  return shape;
}

std::string format_shape(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

py::tuple shape_tuple(const std::vector<int64_t>& shape) {
  py::tuple result(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) result[i] = py::int_(shape[i]);
  return result;
}

NDArray make_array(const std::vector<int64_t>& shape, DLDataType dtype, const Device& device) {
  return NDArray{std::make_shared<NDArrayStorage>(
      shape, dtype, DLDevice{static_cast<DLDeviceType>(device.device_type), device.device_id})};
}

// A DLTensor over host memory of `storage`'s shape and dtype.
DLTensor host_tensor(const NDArrayStorage& storage, void* data) {
  DLTensor host = storage.tensor;
  host.data = data;
  host.device = DLDevice{kDLCPU, 0};
  host.byte_offset = 0;
  return host;
}

// KilnDeviceCopy with the GIL released (a copy to the host waits for the device's work).
void device_copy(const DLTensor& from, DLTensor& to, const char* api) {
  int32_t status = 0;
  {
    py::gil_scoped_release release;
    status = KilnDeviceCopy(&from, &to);
  }
  if (status != 0) raise_runtime_error(status, std::string(api) + ": " + KilnGetLastError());
}

bool on_cpu(const NDArrayStorage& storage) {
  return storage.tensor.device.device_type == kDLCPU;
}

// Copies `source` (anything NumPy reads as an array, cast to the array's dtype, or an NDArray of
// the same dtype on any device) into `array`.
void copy_from(const NDArray& array, py::handle source) {
  const NDArrayStorage& storage = *array.storage;
  if (py::isinstance<NDArray>(source)) {
    const NDArrayStorage& other = *source.cast<const NDArray&>().storage;
    DLDataType a = other.tensor.dtype, b = storage.tensor.dtype;
    if (a.code == b.code && a.bits == b.bits && a.lanes == b.lanes) {
      user_check(other.shape == storage.shape)
          << "NDArray.copyfrom: the source has shape " << format_shape(other.shape)
          << " but the array has shape " << format_shape(storage.shape);
      if (storage.nbytes > 0) device_copy(other.tensor, array.storage->tensor, "NDArray.copyfrom");
      return;
    }
  }
  py::dtype dtype = numpy_dtype_of(storage.tensor.dtype);
  // asarray with order "C", not ascontiguousarray, which turns a 0-d array into a 1-d one.
  auto contiguous =
      py::module_::import("numpy").attr("asarray")(source, dtype, py::arg("order") = "C");
  auto data = contiguous.cast<py::array>();
  std::vector<int64_t> shape(data.shape(), data.shape() + data.ndim());
  user_check(shape == storage.shape)
      << "NDArray.copyfrom: the source has shape " << format_shape(shape)
      << " but the array has shape " << format_shape(storage.shape);
  if (storage.nbytes == 0) return;
  if (on_cpu(storage)) {
    std::memcpy(storage.data, data.data(), storage.nbytes);
    return;
  }
  DLTensor host = host_tensor(storage, const_cast<void*>(data.data()));
  device_copy(host, array.storage->tensor, "NDArray.copyfrom");
}

py::array to_numpy(const NDArray& array) {
  const NDArrayStorage& storage = *array.storage;
  py::array result(numpy_dtype_of(storage.tensor.dtype), storage.shape);
  if (storage.nbytes == 0) return result;
  if (on_cpu(storage)) {
    std::memcpy(result.mutable_data(), storage.data, storage.nbytes);
  } else {
    DLTensor host = host_tensor(storage, result.mutable_data());
    device_copy(storage.tensor, host, "NDArray.numpy");
  }
  return result;
}

py::capsule to_dlpack(const NDArray& array, py::object stream, py::object max_version,
                      py::object dl_device, py::object copy) {
  if (!dl_device.is_none()) {
    auto device = dl_device.cast<std::pair<int32_t, int32_t>>();
    if (device.first != array.storage->tensor.device.device_type ||
        device.second != array.storage->tensor.device.device_id) {
      std::string message = "NDArray.__dlpack__: the array lives on " +
                            device_type_name(array.storage->tensor.device.device_type) + "(" +
                            std::to_string(array.storage->tensor.device.device_id) +
                            ") and cannot be exported to another device";
      PyErr_SetString(PyExc_BufferError, message.c_str());
      throw py::error_already_set();
    }
  }
  std::shared_ptr<NDArrayStorage> storage = array.storage;
  if (!copy.is_none() && copy.cast<bool>()) {
    storage = std::make_shared<NDArrayStorage>(array.storage->shape, array.storage->tensor.dtype,
                                               array.storage->tensor.device);
    if (storage->nbytes > 0)
      device_copy(array.storage->tensor, storage->tensor, "NDArray.__dlpack__");
  }
  bool copied = storage != array.storage;
  auto* exported = new ExportedTensor();
  exported->storage = storage;
  // A consumer that reads version 1 gets a versioned capsule (writable in NumPy); any other
  // gets the unversioned one, as the protocol says. stream has no meaning on the CPU.
  bool versioned = !max_version.is_none() && max_version.cast<py::tuple>()[0].cast<int>() >= 1;
  PyObject* capsule = nullptr;
  if (versioned) {
    DLManagedTensorVersioned& managed = exported->versioned;
    managed.version = DLPackVersion{1, 0};
    managed.manager_ctx = exported;
    managed.deleter = &delete_exported_versioned;
    managed.flags = copied ? kDLPackFlagIsCopied : 0;
    managed.dl_tensor = storage->tensor;
    capsule = PyCapsule_New(&managed, "dltensor_versioned", &capsule_destructor);
  } else {
    DLManagedTensor& managed = exported->managed;
    managed.manager_ctx = exported;
    managed.deleter = &delete_exported;
    managed.dl_tensor = storage->tensor;
    capsule = PyCapsule_New(&managed, "dltensor", &capsule_destructor);
  }
  if (capsule == nullptr) {
    delete exported;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

}  // namespace

void bind_ndarray(py::module_& m) {
  py::class_<NDArray>(m, "NDArray", R"doc(
An array that kernels read and write in place, compact row-major, allocated by kiln's runtime in
CPU memory (64-byte aligned) or in the memory of a GPU (kiln.cuda(0), kiln.opencl(0)). Create one
with kiln.nd.array or kiln.nd.empty; .numpy() copies it out (waiting for the device's work),
np.from_dlpack(nd) shares a CPU array without a copy.)doc")
      .def_property_readonly(
          "shape", [](const NDArray& a) { return shape_tuple(a.storage->shape); },
          "The extents, a tuple of ints.")
      .def_property_readonly(
          "dtype", [](const NDArray& a) { return dl_dtype_name(a.storage->tensor.dtype); },
          "The element dtype, e.g. \"float32\".")
      .def_property_readonly(
          "device",
          [](const NDArray& a) {
            return Device{a.storage->tensor.device.device_type, a.storage->tensor.device.device_id};
          },
          "The device the data lives on.")
      .def_property_readonly(
          "ndim", [](const NDArray& a) { return a.storage->shape.size(); },
          "The number of dimensions.")
      .def_property_readonly(
          "nbytes", [](const NDArray& a) { return a.storage->nbytes; }, "The size in bytes.")
      .def("numpy", &to_numpy, R"doc(
A NumPy copy of the array (bfloat16 arrays come back as ml_dtypes.bfloat16). For an array on a
GPU the copy waits until the work issued to the device before it has finished.

Raises:
    KilnTypeError: a vector dtype, which NumPy has no dtype for.
    KilnRuntimeError: the copy from the device failed (the message has the driver's error).)doc")
      .def(
          "copyfrom",
          [](const NDArray& a, py::handle source) {
            copy_from(a, source);
            return a;
          },
          py::arg("source"), R"doc(
Copies ``source`` (a NumPy array or anything np.asarray takes, cast to this array's dtype, or a
kiln.nd.NDArray on any device) into the array and returns the array.

Raises:
    KilnValueError: the source's shape differs from the array's.
    KilnRuntimeError: the copy to the device failed.)doc")
      .def(
          "__array__",
          [](const NDArray& a, py::object dtype, py::object copy) {
            py::array result = to_numpy(a);
            return dtype.is_none() ? py::object(result) : result.attr("astype")(dtype);
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none(),
          "A NumPy copy of the array (np.asarray(nd)), cast to ``dtype`` when given.")
      .def("__dlpack__", &to_dlpack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
           py::arg("copy") = py::none(),
           R"doc(
A DLPack capsule that shares the array's memory (the array stays alive while it is used):
versioned (DLPack 1.0, writable) when ``max_version`` is at least (1, 0), else unversioned.
``copy=True`` exports a copy on the same device; ``stream`` is ignored (kiln issues all work on
the device's default stream or queue). A GPU array exports its device handle (a CUdeviceptr, a
cl_mem) with its device type, which consumers such as NumPy refuse.

Raises:
    BufferError: ``dl_device`` names another device.)doc")
      .def(
          "__dlpack_device__",
          [](const NDArray& a) {
            return py::make_tuple(static_cast<int>(a.storage->tensor.device.device_type),
                                  a.storage->tensor.device.device_id);
          },
          "The DLPack (device_type, device_id) of the array's memory.")
      .def(
          "__repr__",
          [](const NDArray& a) {
            return "<kiln.nd.NDArray shape=" + format_shape(a.storage->shape) +
                   ", dtype=" + dl_dtype_name(a.storage->tensor.dtype) + ", " +
                   device_type_name(a.storage->tensor.device.device_type) + "(" +
                   std::to_string(a.storage->tensor.device.device_id) + ")>\n" +
                   py::repr(to_numpy(a)).cast<std::string>();
          },
          "The shape, dtype and device, then the values as NumPy prints them.");

  m.def(
      "nd_empty",
      [](py::handle shape, const std::string& dtype, const Device& device) {
        return make_array(to_extents(shape, "kiln.nd.empty"),
                          parse_dl_dtype(dtype, "kiln.nd.empty"), device);
      },
      py::arg("shape"), py::arg("dtype"), py::arg("device"),
      "An uninitialized array (see kiln.nd.empty, which documents the errors).");
  m.def(
      "nd_array",
      [](const py::array& source, const Device& device) {
        std::vector<int64_t> shape(source.shape(), source.shape() + source.ndim());
        NDArray array = make_array(shape, numpy_dl_dtype(source.dtype(), "kiln.nd.array"), device);
        copy_from(array, source);
        return array;
      },
      py::arg("source"), py::arg("device"),
      "A copy of a NumPy array (see kiln.nd.array, which documents the errors).");
}

}  // namespace kiln::python
