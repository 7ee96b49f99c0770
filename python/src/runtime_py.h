// Types shared by the runtime binding files: the storage of kiln.nd.NDArray, modules and
// functions as Python holds them, and the packing of Python call arguments into the runtime's
// calling convention (kiln/runtime/c_runtime_api.h).
#pragma once

#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "kiln/driver/build.h"
#include "kiln/runtime/c_runtime_api.h"

namespace kiln::python {

// kiln.Device: a DLPack device, e.g. kiln.cpu(0).
struct Device {
  int32_t device_type = kDLCPU;
  int32_t device_id = 0;
};

// The name of a DLPack device type ("cpu", "cuda", ...).
std::string device_type_name(int32_t device_type);

// The buffer of a kiln.nd.NDArray: compact row-major, 64-byte aligned, from the runtime's
// allocator. Shared by the array and the DLPack capsules it exports.
struct NDArrayStorage {
  NDArrayStorage(std::vector<int64_t> shape, DLDataType dtype, DLDevice device);
  ~NDArrayStorage();
  NDArrayStorage(const NDArrayStorage&) = delete;
  NDArrayStorage& operator=(const NDArrayStorage&) = delete;

  std::vector<int64_t> shape;
  size_t nbytes = 0;
  void* data = nullptr;
  DLTensor tensor{};  // the view handed to kernels and DLPack consumers
};

// DLPack 1.0's versioned tensor, which the installed DLPack 0.6 header lacks; its layout is
// fixed by the DLPack ABI. Capsules named "dltensor_versioned" hold one.
struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};
// DLManagedTensorVersioned.flags: the consumer must not write the tensor; the producer copied it.
constexpr uint64_t kDLPackFlagReadOnly = uint64_t{1} << 0;
constexpr uint64_t kDLPackFlagIsCopied = uint64_t{1} << 1;

// kiln.nd.NDArray.
struct NDArray {
  std::shared_ptr<NDArrayStorage> storage;
};

// A module as Python holds it: built and JIT-compiled in this process, or loaded from a file.
struct RuntimeModule {
  std::shared_ptr<const driver::BuiltModule> built;  // null when loaded from a file
  std::shared_ptr<KilnModule> loaded;                // null when built here
  std::string path;                                  // the file it was loaded from

  // The runtime module; a kRuntime error when a built module cannot run here.
  KilnModuleHandle handle() const;
};

// A function of a module; keeps the module (and its code) alive.
struct RuntimeFunction {
  std::shared_ptr<RuntimeModule> module;
  KilnFunctionHandle handle = nullptr;
  const KilnFuncSpec* spec = nullptr;
  // Whether a call warned that an argument lacks its streaming alignment (once per function;
  // changed only with the GIL held).
  mutable bool warned_streaming = false;
};

// The Python arguments of one call, converted for the runtime: NumPy arrays, kiln.nd.NDArrays
// and __dlpack__ objects become DLTensors over their data, Python numbers become scalars. A
// compact CPU tensor whose data does not have the alignment its parameter declares (kernels
// assume only the element's alignment unless a buffer declares more) is staged through an aligned
// copy; the copy of a tensor the function writes is copied back after the call. An array the
// function writes must be writable: a read-only NumPy array (flags.writeable False) or a DLPack
// tensor its producer marks read-only is refused before anything runs. Construct and destroy with
// the GIL held; the values may be used without it.
class PackedArgs {
 public:
  // Converts `args` for the function `spec`. Raises a kType error naming the parameter for an
  // object that is neither a tensor nor a number, and a kValue error for a read-only array
  // passed where the function writes, or for written arrays that overlap when one of them was
  // staged (the runtime, which sees the staging copy, could not tell). When the count differs
  // from the spec, the arguments are left unconverted so that the runtime reports the count.
  PackedArgs(const KilnFuncSpec& spec, const pybind11::tuple& args);
  // Releases the DLPack tensors borrowed from their producers and the staging buffers.
  ~PackedArgs();
  PackedArgs(const PackedArgs&) = delete;
  PackedArgs& operator=(const PackedArgs&) = delete;

  const KilnValue* values() const { return values_.data(); }
  const int32_t* codes() const { return codes_.data(); }
  int32_t size() const { return static_cast<int32_t>(values_.size()); }

  // Copies the staged tensors the function writes back into the caller's arrays (no GIL
  // needed).
  void copy_back() const;

 private:
  struct Staged {
    size_t arg_index;
    void* original;
    void* copy;
    size_t nbytes;
    bool write_back;
  };

  void release();
  void pack(size_t i, const KilnArgSpec* arg, pybind11::handle obj);
  // Packs a tensor; `read_only` says the caller's memory must not be written, and `what`
  // describes the object for the message that refuses it where the function writes.
  void pack_tensor(size_t i, const KilnArgSpec* arg, const DLTensor& tensor, bool read_only,
                   const std::string& what);
  void pack_dlpack(size_t i, const KilnArgSpec* arg, pybind11::handle obj);
  bool pack_number(size_t i, const KilnArgSpec* arg, pybind11::handle obj);
  void check_staged_overlaps() const;

  const KilnFuncSpec& spec_;
  std::deque<DLTensor> tensors_;             // stable addresses for the values
  std::deque<DLTensor> originals_;           // the caller's tensors of staged arguments
  std::deque<std::vector<int64_t>> shapes_;  // shapes and strides of NumPy arrays
  std::vector<DLManagedTensor*> borrowed_;   // consumed DLPack capsules
  std::vector<DLManagedTensorVersioned*> borrowed_versioned_;
  std::vector<Staged> staged_;
  std::vector<KilnValue> values_;
  std::vector<int32_t> codes_;
};

// Calls `func` with `args` with the GIL released; raises the runtime's error as the class its
// error code names (see raise_runtime_error).
void call_function(const RuntimeFunction& func, const pybind11::args& args);

// Throws the kiln::Error for a failed runtime call: kKilnErrorValue becomes kValue
// (KilnValueError), kKilnErrorType kType, kKilnErrorIndex kIndex, and every other code (a
// failing kernel, a module file or module the runtime refuses) kRuntime. `message` is the
// runtime's last error, read right after the call.
[[noreturn]] void raise_runtime_error(int32_t status, const std::string& message);

// The DLPack dtype of a kiln dtype string ("float32", "bool", "bfloat16").
DLDataType parse_dl_dtype(const std::string& text, const char* api);
// The kiln name of a DLPack dtype.
std::string dl_dtype_name(DLDataType dtype);
// The DLPack dtype of a NumPy dtype; a kType error naming `what` when kiln has no such dtype.
DLDataType numpy_dl_dtype(const pybind11::dtype& dtype, const std::string& what);
// The NumPy dtype of a DLPack dtype (ml_dtypes.bfloat16 for bfloat16).
pybind11::dtype numpy_dtype_of(DLDataType dtype);

// Binds kiln.nd.NDArray and its factories into `m` (ndarray_py.cc).
void bind_ndarray(pybind11::module_& m);

}  // namespace kiln::python
