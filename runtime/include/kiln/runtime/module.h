// The C++ wrapper of the runtime: kiln::runtime::Module::load(path), module.function("main"),
// fn(args...) with DLTensor*, NDArray and scalars. Header-only and thin over the C API; failures
// throw kiln::runtime::Error with the runtime's message.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/runtime/c_runtime_api.h"
#include "kiln/runtime/ndarray.h"

namespace kiln {
namespace runtime {

/*! \brief A function of a module. Keeps its module alive; copies share it. */
class Function {
 public:
  /*! \brief Wraps a function handle of `module` (see Module::function). */
  Function(std::shared_ptr<KilnModule> module, KilnFunctionHandle handle)
      : module_(std::move(module)), handle_(handle) {}

  /*! \brief The function's spec: name, symbol, arguments, symbolic variables. */
  const KilnFuncSpec& spec() const {
    const KilnFuncSpec* spec = nullptr;
    check_call(KilnFuncGetSpec(handle_, &spec));
    return *spec;
  }

  /*!
   * \brief Calls the function: integers (and bool) pass as kKilnInt, floating-point values as
   * kKilnFloat, DLTensor* and NDArray& as tensors, nullptr as kKilnNull. Throws Error when an
   * argument does not match the spec or the kernel fails.
   */
  template <class... Args>
  void operator()(Args&&... args) const {
    constexpr size_t kCount = sizeof...(Args);
    KilnValue values[kCount > 0 ? kCount : 1];
    int32_t codes[kCount > 0 ? kCount : 1];
    size_t i = 0;
    (pack(std::forward<Args>(args), &values[i], &codes[i], i), ...);
    call_packed(values, codes, static_cast<int32_t>(kCount));
  }

  /*! \brief Calls with already packed arguments. */
  void call_packed(const KilnValue* values, const int32_t* codes, int32_t num_args) const {
    check_call(KilnFuncCall(handle_, values, codes, num_args));
  }

  /*! \brief The C handle, for the C API. */
  KilnFunctionHandle handle() const { return handle_; }

 private:
  template <class T>
  static void pack(T&& arg, KilnValue* value, int32_t* code, size_t& index) {
    using U = std::decay_t<T>;
    if constexpr (std::is_same_v<U, NDArray>) {
      value->v_handle = const_cast<DLTensor*>(arg.tensor());
      *code = kKilnDLTensorHandle;
    } else if constexpr (std::is_same_v<U, DLTensor*> || std::is_same_v<U, const DLTensor*>) {
      value->v_handle = const_cast<DLTensor*>(arg);
      *code = kKilnDLTensorHandle;
    } else if constexpr (std::is_same_v<U, std::nullptr_t>) {
      value->v_handle = nullptr;
      *code = kKilnNull;
    } else if constexpr (std::is_floating_point_v<U>) {
      value->v_float64 = static_cast<double>(arg);
      *code = kKilnFloat;
    } else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 8) {
      value->v_int64 = static_cast<int64_t>(arg);
      *code = kKilnUInt;
    } else if constexpr (std::is_integral_v<U>) {
      value->v_int64 = static_cast<int64_t>(arg);
      *code = kKilnInt;
    } else {
      static_assert(std::is_integral_v<U>, "unsupported argument type for a kiln function");
    }
    ++index;
  }

  std::shared_ptr<KilnModule> module_;
  KilnFunctionHandle handle_;
};

/*! \brief A loaded module; copies share it, and it is freed with its last copy and function. */
class Module {
 public:
  /*! \brief Loads an exported module (see KilnModuleLoadFromFile). */
  static Module load(const std::string& path) {
    KilnModuleHandle handle = nullptr;
    check_call(KilnModuleLoadFromFile(path.c_str(), &handle));
    return Module(handle);
  }

  /*! \brief Takes ownership of a module handle (e.g. from KilnModuleCreate). */
  explicit Module(KilnModuleHandle handle) : module_(handle, KilnModuleFree) {}

  /*! \brief Looks up a function; throws, listing the available names, when absent. */
  Function function(const std::string& name) const {
    KilnFunctionHandle handle = nullptr;
    check_call(KilnModuleGetFunction(module_.get(), name.c_str(), &handle));
    return Function(module_, handle);
  }

  /*! \brief The function names, in manifest order. */
  std::vector<std::string> function_names() const {
    int32_t count = 0;
    const char* const* names = nullptr;
    check_call(KilnModuleListFunctions(module_.get(), &count, &names));
    return std::vector<std::string>(names, names + count);
  }

  /*! \brief The target string the module was compiled for. */
  std::string target() const {
    const char* target = nullptr;
    check_call(KilnModuleGetTarget(module_.get(), &target));
    return target;
  }

  /*! \brief The C handle, for the C API; owned by this Module. */
  KilnModuleHandle handle() const { return module_.get(); }

 private:
  std::shared_ptr<KilnModule> module_;
};

}  // namespace runtime
}  // namespace kiln
