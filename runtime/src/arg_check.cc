// Data-driven argument checks for KilnFuncCall. The fast path allocates nothing; messages are
// composed only when a check fails.
#include "arg_check.h"

#include <cstdint>
#include <string>
#include <vector>

#include "dtype.h"
#include "error.h"

namespace kiln {
namespace runtime {
namespace {

// The value of a symbolic variable and where it was first seen.
struct Binding {
  bool bound;
  int64_t value;
  int32_t arg_index;
};

std::string type_code_description(int32_t code) {
  switch (code) {
    case kKilnInt:
      return "an int scalar (type code 0)";
    case kKilnUInt:
      return "a uint scalar (type code 1)";
    case kKilnFloat:
      return "a float scalar (type code 2)";
    case kKilnNull:
      return "null (type code 4)";
    case kKilnDLTensorHandle:
      return "a tensor (type code 7)";
  }
  return "type code " + std::to_string(code);
}

// The values an integer dtype holds, clipped to int64's (no extent or stride is larger).
void integer_range(DLDataType dtype, int64_t* low, int64_t* high) {
  int bits = dtype.bits;
  if (dtype.code == kDLUInt) {
    *low = 0;
    *high = bits >= 63 ? INT64_MAX : (int64_t{1} << bits) - 1;
  } else {
    *low = bits >= 64 ? INT64_MIN : -(int64_t{1} << (bits - 1));
    *high = bits >= 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
  }
}

std::string format_tuple(const int64_t* values, int32_t n) {
  std::string text = "(";
  for (int32_t i = 0; i < n; ++i) text += (i > 0 ? ", " : "") + std::to_string(values[i]);
  return text + ")";
}

class Checker {
 public:
  Checker(const KilnFuncSpec& spec, Binding* bindings) : spec_(spec), bindings_(bindings) {
    for (int32_t k = 0; k < spec.num_sym_vars; ++k) bindings_[k].bound = false;
  }

  int check(const KilnValue* args, const int32_t* type_codes, int32_t num_args, ByteSpan* spans) {
    if (num_args != spec_.num_args) {
      return fail(kKilnErrorType, std::string(spec_.name) + ": expected " +
                                      std::to_string(spec_.num_args) + " arguments, found " +
                                      std::to_string(num_args));
    }
    if (num_args > 0 && (args == nullptr || type_codes == nullptr)) {
      return fail(kKilnErrorValue,
                  std::string(spec_.name) + ": the argument or type code array is NULL");
    }
    for (int32_t i = 0; i < num_args; ++i) {
      const KilnArgSpec& arg = spec_.args[i];
      spans[i] = ByteSpan{0, 0};
      int status = arg.kind == kKilnArgTensor
                       ? check_tensor(arg, i, args[i], type_codes[i], &spans[i])
                       : check_scalar(arg, args[i], type_codes[i]);
      if (status != 0) return status;
    }
    return 0;
  }

 private:
  int arg_error(const KilnArgSpec& arg, const std::string& what,
                KilnErrorCode code = kKilnErrorValue) {
    return fail(code, std::string(spec_.name) + ": argument " + arg.name + ": " + what);
  }

  // Binds symbolic variable `var` to `value` if it fits the variable's dtype: the kernel computes
  // with the variable in that dtype, so a larger value would wrap inside it.
  int bind(const KilnArgSpec& arg, int32_t arg_index, const char* what, int64_t var,
           int64_t value) {
    DLDataType dtype =
        spec_.sym_var_dtypes != nullptr ? spec_.sym_var_dtypes[var] : DLDataType{kDLInt, 64, 1};
    int64_t low, high;
    integer_range(dtype, &low, &high);
    int64_t supported = spec_.sym_var_max != nullptr ? spec_.sym_var_max[var] : INT64_MAX;
    if (value <= high && value > supported) {
      return fail(kKilnErrorValue,
                  std::string(spec_.name) + ": symbolic " + what + " " + spec_.sym_var_names[var] +
                      " = " + std::to_string(value) + " of argument " + arg.name +
                      " is larger than " + std::to_string(supported) +
                      ", the largest the function supports: its " + dtype_name(dtype) +
                      " index arithmetic (e.g. a loop tiled past " + spec_.sym_var_names[var] +
                      ") would overflow; declare the dimension as int64 for such sizes");
    }
    if (value < low || value > high) {
      return fail(kKilnErrorValue, std::string(spec_.name) + ": symbolic " + what + " " +
                                       spec_.sym_var_names[var] + " = " + std::to_string(value) +
                                       " of argument " + arg.name + " does not fit " +
                                       dtype_name(dtype) + " (the function computes with " +
                                       spec_.sym_var_names[var] + " as " + dtype_name(dtype) +
                                       ", whose values are " + std::to_string(low) + " to " +
                                       std::to_string(high) + ")");
    }
    bindings_[var] = Binding{true, value, arg_index};
    return 0;
  }

  // Checks one shape extent or stride against its spec entry, binding a symbolic variable the
  // first time it is seen.
  int check_extent(const KilnArgSpec& arg, int32_t arg_index, const char* what, int32_t dim,
                   int64_t expected, int64_t found) {
    std::string place = std::string(what) + " " + std::to_string(dim);
    if (expected >= 0) {
      if (found == expected) return 0;
      return arg_error(arg, place + ": expected " + std::to_string(expected) + ", found " +
                                std::to_string(found));
    }
    int64_t var = -(expected + 1);
    if (var >= spec_.num_sym_vars) {
      return arg_error(arg, place + " refers to symbolic variable #" + std::to_string(var) +
                                ", but the function has " + std::to_string(spec_.num_sym_vars));
    }
    Binding& binding = bindings_[var];
    if (!binding.bound) return bind(arg, arg_index, what, var, found);
    if (binding.value == found) return 0;
    return arg_error(arg, place + " is " + spec_.sym_var_names[var] + " = " +
                              std::to_string(binding.value) + " (bound by argument " +
                              spec_.args[binding.arg_index].name + "), found " +
                              std::to_string(found));
  }

  int check_tensor(const KilnArgSpec& arg, int32_t arg_index, KilnValue value, int32_t code,
                   ByteSpan* span) {
    if (code != kKilnDLTensorHandle) {
      return arg_error(arg, "expected a tensor (DLTensor*), found " + type_code_description(code),
                       kKilnErrorType);
    }
    const DLTensor* tensor = static_cast<const DLTensor*>(value.v_handle);
    if (tensor == nullptr) return arg_error(arg, "DLTensor pointer is NULL");
    if (!same_dtype(tensor->dtype, arg.dtype)) {
      return arg_error(
          arg, "expected dtype " + dtype_name(arg.dtype) + ", found " + dtype_name(tensor->dtype),
          kKilnErrorType);
    }
    if (tensor->ndim != arg.ndim) {
      return arg_error(arg, "expected ndim " + std::to_string(arg.ndim) + ", found " +
                                std::to_string(tensor->ndim));
    }
    int32_t device = tensor->device.device_type;
    bool device_ok =
        device == arg.device_type || (arg.device_type == kDLCPU && device == kDLCUDAHost);
    if (!device_ok) {
      std::string found = device_type_name(device) + ":" + std::to_string(tensor->device.device_id);
      bool gpu_expected = arg.device_type == kDLOpenCL || arg.device_type == kDLCUDA;
      if (gpu_expected && (device == kDLCPU || device == kDLCUDAHost)) {
        // The usual mistake from Python: a NumPy array where the function runs on a GPU.
        std::string name = device_type_name(arg.device_type);
        return arg_error(arg, "device: expected " + name + ", found " + found +
                                  " (host memory); pass kiln.nd.array(x, device=kiln." + name +
                                  "(0))");
      }
      return arg_error(
          arg, "device: expected " + device_type_name(arg.device_type) + ", found " + found);
    }
    // Device handles (cl_mem, CUdeviceptr) are passed to kernels as they are, without an offset.
    if ((device == kDLOpenCL || device == kDLCUDA) && tensor->byte_offset != 0) {
      return arg_error(arg, "byte_offset is " + std::to_string(tensor->byte_offset) +
                                ", but slicing device arrays is not supported (byte_offset must "
                                "be 0)");
    }
    if (arg.ndim > 0 && tensor->shape == nullptr) return arg_error(arg, "shape pointer is NULL");
    bool empty = false;
    // The product of the nonzero extents bounds every compact stride and element count below;
    // a shape whose product overflows int64 describes no memory that exists.
    int64_t product = 1;
    for (int32_t d = 0; d < arg.ndim; ++d) {
      int64_t extent = tensor->shape[d];
      if (extent < 0) {
        return arg_error(arg, "dimension " + std::to_string(d) + " has negative extent " +
                                  std::to_string(extent));
      }
      empty = empty || extent == 0;
      if (extent > 0 && __builtin_mul_overflow(product, extent, &product)) {
        return arg_error(arg, "the shape " + format_tuple(tensor->shape, arg.ndim) +
                                  " has more than 2^63 - 1 elements");
      }
    }
    for (int32_t d = 0; d < arg.ndim; ++d) {
      int status = check_extent(arg, arg_index, "dimension", d, arg.shape[d], tensor->shape[d]);
      if (status != 0) return status;
    }
    int status = check_strides(arg, arg_index, *tensor, empty);
    if (status != 0) return status;
    // A tensor without elements is never dereferenced, so its pointer may be anything.
    if (empty) return 0;
    if (tensor->data == nullptr) return arg_error(arg, "data pointer is NULL");
    uintptr_t address = reinterpret_cast<uintptr_t>(tensor->data) + tensor->byte_offset;
    if (arg.alignment > 1 && address % static_cast<uintptr_t>(arg.alignment) != 0) {
      std::string where = "data pointer " + format_pointer(tensor->data);
      if (tensor->byte_offset != 0)
        where += " + byte_offset " + std::to_string(tensor->byte_offset);
      return arg_error(arg,
                       where + " is not aligned to " + std::to_string(arg.alignment) + " bytes");
    }
    status = compute_span(arg, *tensor, span);
    // Overlaps are resolved by copying on the CPU; memory of other devices is not compared.
    if (device != kDLCPU && device != kDLCUDAHost) *span = ByteSpan{0, 0};
    return status;
  }

  // The bytes the elements of a non-empty tensor occupy: from its lowest to its highest element
  // (strides may be negative), each element_bytes long. Refuses a tensor whose extent overflows
  // 64 bits or leaves the address space.
  int compute_span(const KilnArgSpec& arg, const DLTensor& tensor, ByteSpan* span) {
    int64_t element_bytes = (static_cast<int64_t>(tensor.dtype.bits) * tensor.dtype.lanes + 7) / 8;
    int64_t low = 0, high = 0, compact = 1;
    bool overflow = false;
    for (int32_t d = arg.ndim - 1; d >= 0; --d) {
      int64_t stride = tensor.strides != nullptr ? tensor.strides[d] : compact;
      int64_t step = 0;
      overflow = overflow || __builtin_mul_overflow(stride, tensor.shape[d] - 1, &step);
      if (step < 0) {
        overflow = overflow || __builtin_add_overflow(low, step, &low);
      } else {
        overflow = overflow || __builtin_add_overflow(high, step, &high);
      }
      compact *= tensor.shape[d];  // bounded by the element count checked above
    }
    int64_t low_bytes = 0, high_bytes = 0;
    overflow = overflow || __builtin_mul_overflow(low, element_bytes, &low_bytes) ||
               __builtin_add_overflow(high, int64_t{1}, &high) ||
               __builtin_mul_overflow(high, element_bytes, &high_bytes);
    uintptr_t address = reinterpret_cast<uintptr_t>(tensor.data) + tensor.byte_offset;
    uintptr_t below = uintptr_t{0} - static_cast<uintptr_t>(low_bytes);  // low_bytes <= 0
    overflow = overflow || below > address ||
               __builtin_add_overflow(address, static_cast<uintptr_t>(high_bytes), &span->end);
    if (overflow) {
      std::string strides =
          tensor.strides != nullptr ? format_tuple(tensor.strides, arg.ndim) : "compact";
      return arg_error(arg, "the shape " + format_tuple(tensor.shape, arg.ndim) + " with strides " +
                                strides + " reaches past the 64-bit address space from " +
                                format_pointer(reinterpret_cast<const void*>(address)));
    }
    span->begin = address - below;
    return 0;
  }

  int check_strides(const KilnArgSpec& arg, int32_t arg_index, const DLTensor& tensor, bool empty) {
    int32_t ndim = arg.ndim;
    if (arg.strides == nullptr) {
      // Compact row-major; a dimension of extent 1 never moves the address, so its stride is
      // free, and an empty tensor is compact whatever its strides.
      if (tensor.strides == nullptr || empty) return 0;
      int64_t expected = 1;
      for (int32_t d = ndim - 1; d >= 0; --d) {
        if (tensor.shape[d] != 1 && tensor.strides[d] != expected) {
          return arg_error(arg, "expected a compact row-major tensor, found strides " +
                                    format_tuple(tensor.strides, ndim) + " for shape " +
                                    format_tuple(tensor.shape, ndim));
        }
        expected *= tensor.shape[d];
      }
      return 0;
    }
    int64_t compact = 1;
    for (int32_t d = ndim - 1; d >= 0; --d) {
      int64_t found = tensor.strides != nullptr ? tensor.strides[d] : compact;
      int status = check_extent(arg, arg_index, "stride", d, arg.strides[d], found);
      if (status != 0) return status;
      compact *= tensor.shape[d];
    }
    return 0;
  }

  int check_scalar(const KilnArgSpec& arg, KilnValue value, int32_t code) {
    const DLDataType dtype = arg.dtype;
    bool is_float = dtype.code == kDLFloat || dtype.code == kDLBfloat;
    bool is_unsigned = dtype.code == kDLUInt && dtype.bits != 1;
    bool code_ok =
        is_float ? code == kKilnFloat : (code == kKilnInt || (is_unsigned && code == kKilnUInt));
    if (!code_ok) {
      return arg_error(
          arg, "expected a " + dtype_name(dtype) + " scalar, found " + type_code_description(code),
          kKilnErrorType);
    }
    if (is_float) return 0;
    // Integer scalars travel as 64 bits; the value must fit the parameter's dtype.
    int bits = dtype.bits;
    bool fits;
    std::string shown;
    if (code == kKilnUInt) {
      uint64_t v = static_cast<uint64_t>(value.v_int64);
      fits = bits >= 64 || v < (uint64_t{1} << bits);
      shown = std::to_string(v);
    } else {
      int64_t v = value.v_int64;
      shown = std::to_string(v);
      if (dtype.code == KILN_DL_BOOL || (dtype.code == kDLUInt && dtype.bits == 1)) {
        fits = v == 0 || v == 1;
      } else if (is_unsigned) {
        fits = v >= 0 && (bits >= 63 || v < (int64_t{1} << bits));
      } else {
        fits = bits >= 64 || (v >= -(int64_t{1} << (bits - 1)) && v < (int64_t{1} << (bits - 1)));
      }
    }
    if (!fits) return arg_error(arg, "value " + shown + " does not fit in " + dtype_name(dtype));
    return 0;
  }

  const KilnFuncSpec& spec_;
  Binding* bindings_;
};

}  // namespace

int check_arguments(const KilnFuncSpec& spec, const KilnValue* args, const int32_t* type_codes,
                    int32_t num_args, ByteSpan* spans) {
  constexpr int32_t kInlineBindings = 16;
  Binding inline_bindings[kInlineBindings];
  std::vector<Binding> heap_bindings;
  Binding* bindings = inline_bindings;
  if (spec.num_sym_vars > kInlineBindings) {
    heap_bindings.resize(spec.num_sym_vars);
    bindings = heap_bindings.data();
  }
  Checker checker(spec, bindings);
  return checker.check(args, type_codes, num_args, spans);
}

}  // namespace runtime
}  // namespace kiln
