// Helpers shared by the runtime tests: paths of the fake modules, a DLTensor over a vector,
// and packed-argument builders.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {
namespace testing {

// The path of a fake module variant built by runtime/tests/CMakeLists.txt ("ok", "bad_abi" ...).
inline std::string fake_module_path(const std::string& variant) {
  return std::string(KILN_FAKE_MODULE_DIR) + "/fake_module_" + variant + ".so";
}

// A DLTensor header over caller-owned data; shape and strides are owned here.
struct TensorView {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLTensor tensor{};

  TensorView(void* data, std::vector<int64_t> shape_in, DLDataType dtype)
      : shape(std::move(shape_in)) {
    tensor.data = data;
    tensor.device = DLDevice{kDLCPU, 0};
    tensor.ndim = static_cast<int>(shape.size());
    tensor.dtype = dtype;
    tensor.shape = shape.data();
  }
  TensorView(const TensorView&) = delete;
  TensorView& operator=(const TensorView&) = delete;

  void set_strides(std::vector<int64_t> values) {
    strides = std::move(values);
    tensor.strides = strides.data();
  }
};

inline DLDataType float32() {
  return DLDataType{kDLFloat, 32, 1};
}
inline DLDataType float64() {
  return DLDataType{kDLFloat, 64, 1};
}
inline DLDataType int64() {
  return DLDataType{kDLInt, 64, 1};
}

// Packed arguments built one by one.
struct PackedArgs {
  std::vector<KilnValue> values;
  std::vector<int32_t> codes;

  PackedArgs& tensor(DLTensor* t) {
    KilnValue value;
    value.v_handle = t;
    values.push_back(value);
    codes.push_back(kKilnDLTensorHandle);
    return *this;
  }
  PackedArgs& integer(int64_t v) {
    KilnValue value;
    value.v_int64 = v;
    values.push_back(value);
    codes.push_back(kKilnInt);
    return *this;
  }
  PackedArgs& floating(double v) {
    KilnValue value;
    value.v_float64 = v;
    values.push_back(value);
    codes.push_back(kKilnFloat);
    return *this;
  }
  PackedArgs& null() {
    KilnValue value;
    value.v_handle = nullptr;
    values.push_back(value);
    codes.push_back(kKilnNull);
    return *this;
  }
  int32_t size() const { return static_cast<int32_t>(values.size()); }
};

// A module handle freed at the end of the test.
class ModuleGuard {
 public:
  explicit ModuleGuard(KilnModuleHandle module = nullptr) : module_(module) {}
  ~ModuleGuard() { KilnModuleFree(module_); }
  ModuleGuard(const ModuleGuard&) = delete;
  ModuleGuard& operator=(const ModuleGuard&) = delete;
  KilnModuleHandle* out() { return &module_; }
  KilnModuleHandle get() const { return module_; }

 private:
  KilnModuleHandle module_;
};

// Aligned storage for test tensors.
template <class T>
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t count, size_t alignment = 64)
      : data_(static_cast<T*>(KilnAllocAligned(count * sizeof(T), alignment))), count_(count) {}
  ~AlignedBuffer() { KilnFreeAligned(data_); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  T* data() { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  size_t size() const { return count_; }

 private:
  T* data_;
  size_t count_;
};

}  // namespace testing
}  // namespace runtime
}  // namespace kiln
