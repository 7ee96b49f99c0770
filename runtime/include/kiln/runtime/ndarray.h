// kiln::runtime::NDArray: a CPU tensor that owns an aligned buffer and exposes it as a DLTensor,
// for hosts that call compiled functions from C++. Header-only over the C API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {

/*! \brief The error every C++ wrapper of the runtime throws; what() is the runtime's message and
 * code() the KilnErrorCode of the failed call (e.g. kKilnErrorValue for a wrong argument). */
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, int32_t code = kKilnErrorRuntime)
      : std::runtime_error(message), code_(code) {}
  /*! \brief The KilnErrorCode of the failure. */
  int32_t code() const { return code_; }

 private:
  int32_t code_;
};

/*! \brief Throws Error with the thread's last-error message and the call's code when a C API
 * call failed. */
inline void check_call(int32_t status) {
  if (status != 0) throw Error(KilnGetLastError(), status);
}

/*!
 * \brief A compact row-major CPU array with an owned, aligned buffer. Movable, not copyable;
 * tensor() stays valid for the array's lifetime, across moves.
 */
class NDArray {
 public:
  /*! \brief Allocates an uninitialized array; alignment is in bytes (a power of two). */
  static NDArray empty(const std::vector<int64_t>& shape, DLDataType dtype, size_t alignment = 64) {
    if (dtype.bits == 0 || dtype.bits % 8 != 0) {
      throw Error("NDArray::empty: dtype bits must be a positive multiple of 8, found " +
                      std::to_string(dtype.bits),
                  kKilnErrorValue);
    }
    // The byte size, refusing a shape whose size does not fit 64 bits.
    size_t nbytes = static_cast<size_t>(dtype.bits / 8) * dtype.lanes;
    for (int64_t extent : shape) {
      if (extent < 0) {
        throw Error("NDArray::empty: negative extent " + std::to_string(extent), kKilnErrorValue);
      }
      if (__builtin_mul_overflow(nbytes, static_cast<size_t>(extent), &nbytes)) {
        throw Error("NDArray::empty: the shape's size in bytes does not fit 64 bits",
                    kKilnErrorValue);
      }
    }
    NDArray array;
    array.state_ = std::make_unique<State>();
    State& state = *array.state_;
    state.shape = shape;
    state.nbytes = nbytes;
    state.data = KilnAllocAligned(state.nbytes, alignment);
    if (state.data == nullptr) throw Error(KilnGetLastError(), kKilnErrorRuntime);
    state.tensor.data = state.data;
    state.tensor.device = DLDevice{kDLCPU, 0};
    state.tensor.ndim = static_cast<int>(shape.size());
    state.tensor.dtype = dtype;
    state.tensor.shape = state.shape.data();
    state.tensor.strides = nullptr;
    state.tensor.byte_offset = 0;
    return array;
  }

  /*! \brief An array without a buffer; only assignment and destruction are valid on it. */
  NDArray() = default;
  NDArray(NDArray&&) = default;
  NDArray& operator=(NDArray&&) = default;

  /*! \brief The DLTensor view to pass to compiled functions. */
  DLTensor* tensor() { return &state_->tensor; }
  const DLTensor* tensor() const { return &state_->tensor; }
  /*! \brief The buffer as elements of T (the caller picks T to match the dtype). */
  template <class T>
  T* data() {
    return static_cast<T*>(state_->data);
  }
  template <class T>
  const T* data() const {
    return static_cast<const T*>(state_->data);
  }
  /*! \brief Shape, dtype and byte size of the buffer. */
  const std::vector<int64_t>& shape() const { return state_->shape; }
  DLDataType dtype() const { return state_->tensor.dtype; }
  /*! \brief Number of elements. */
  size_t size() const {
    size_t count = 1;
    for (int64_t extent : state_->shape) count *= static_cast<size_t>(extent);
    return count;
  }
  size_t nbytes() const { return state_->nbytes; }

 private:
  struct State {
    std::vector<int64_t> shape;
    size_t nbytes = 0;
    void* data = nullptr;
    DLTensor tensor{};
    ~State() { KilnFreeAligned(data); }
  };
  std::unique_ptr<State> state_;
};

}  // namespace runtime
}  // namespace kiln
