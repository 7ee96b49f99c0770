// Extern calls (call_extern, call_pure_extern) in the interpreter: the C function is found by
// name as compiled code finds it (the process and the libraries of kiln.runtime.load_library)
// and called through libffi, with buffer data variables passed as pointers into the
// interpreter's memory and numbers as their C types.
#include <ffi.h>

#include <cstring>

#include "compiler.h"
#include "kiln/runtime/c_runtime_api.h"
#include "kiln/support/error.h"

namespace kiln::interpreter {

using namespace kiln::ir;

namespace {

// The libffi type of a scalar of `dtype`, or null for a dtype that C cannot take here.
ffi_type* ffi_scalar_type(DataType dtype) {
  if (dtype.lanes() != 1) return nullptr;
  if (dtype.is_bool()) return &ffi_type_uint8;
  if (dtype.is_int()) {
    switch (dtype.bits()) {
      case 8:
        return &ffi_type_sint8;
      case 16:
        return &ffi_type_sint16;
      case 32:
        return &ffi_type_sint32;
      case 64:
        return &ffi_type_sint64;
    }
  }
  if (dtype.is_uint()) {
    switch (dtype.bits()) {
      case 8:
        return &ffi_type_uint8;
      case 16:
        return &ffi_type_uint16;
      case 32:
        return &ffi_type_uint32;
      case 64:
        return &ffi_type_uint64;
    }
  }
  if (dtype.is_float() && dtype.bits() == 32) return &ffi_type_float;
  if (dtype.is_float() && dtype.bits() == 64) return &ffi_type_double;
  return nullptr;
}

// Writes the Lane `v` of a value of `type` as that C type to `out` (16 bytes, aligned).
void write_c_value(ffi_type* type, Lane v, void* out) {
  if (type == &ffi_type_float) {
    float f = static_cast<float>(v.f);
    std::memcpy(out, &f, sizeof f);
  } else if (type == &ffi_type_double) {
    std::memcpy(out, &v.f, sizeof v.f);
  } else {
    // Little-endian: the low bytes of the canonical 64-bit integer are the narrower C value.
    std::memcpy(out, &v.i, sizeof v.i);
  }
}

// The C result of `type` at `in` as a Lane of the call's dtype.
Lane read_c_result(ffi_type* type, const void* in) {
  Lane v{0};
  if (type == &ffi_type_float) {
    float f;
    std::memcpy(&f, in, sizeof f);
    v.f = f;
  } else if (type == &ffi_type_double) {
    std::memcpy(&v.f, in, sizeof v.f);
  } else if (type == &ffi_type_sint8) {
    v.i = static_cast<int8_t>(*static_cast<const ffi_sarg*>(in));
  } else if (type == &ffi_type_sint16) {
    v.i = static_cast<int16_t>(*static_cast<const ffi_sarg*>(in));
  } else if (type == &ffi_type_sint32) {
    v.i = static_cast<int32_t>(*static_cast<const ffi_sarg*>(in));
  } else if (type == &ffi_type_uint8) {
    v.i = static_cast<uint8_t>(*static_cast<const ffi_arg*>(in));
  } else if (type == &ffi_type_uint16) {
    v.i = static_cast<uint16_t>(*static_cast<const ffi_arg*>(in));
  } else if (type == &ffi_type_uint32) {
    v.i = static_cast<uint32_t>(*static_cast<const ffi_arg*>(in));
  } else {
    std::memcpy(&v.i, in, sizeof v.i);
  }
  return v;
}

class ExternCallCode final : public ResultCode {
 public:
  // One argument: a pointer to the storage `storage`, or the value of `value`.
  struct Arg {
    int storage = -1;
    ExprCodePtr value;
    ffi_type* type = nullptr;
  };

  ExternCallCode(DataType dtype, void* function, ffi_type* result, std::vector<Arg> args)
      : ResultCode(dtype), function_(function), result_(result), args_(std::move(args)) {
    for (const Arg& a : args_) types_.push_back(a.type);
    values_.resize(args_.size());
    pointers_.resize(args_.size());
    ffi_status status = ffi_prep_cif(&cif_, FFI_DEFAULT_ABI, static_cast<unsigned>(args_.size()),
                                     result_, types_.data());
    internal_check(status == FFI_OK) << "tir.interpret: libffi could not prepare a call";
  }

  const Lane* eval(Frame& frame) override {
    for (size_t i = 0; i < args_.size(); ++i) {
      Arg& a = args_[i];
      if (a.storage >= 0) {
        void* data = frame.storages[a.storage].data;
        std::memcpy(&values_[i], &data, sizeof data);
      } else {
        write_c_value(a.type, a.value->eval(frame)[0], &values_[i]);
      }
      pointers_[i] = &values_[i];
    }
    alignas(16) unsigned char result[16] = {};
    ffi_call(&cif_, FFI_FN(function_), result, pointers_.data());
    if (result_ != &ffi_type_void) this->out()[0] = read_c_result(result_, result);
    return this->out();
  }

 private:
  struct alignas(16) Slot {
    unsigned char bytes[16];
  };
  void* function_;
  ffi_type* result_;
  std::vector<Arg> args_;
  std::vector<ffi_type*> types_;
  std::vector<Slot> values_;
  std::vector<void*> pointers_;
  ffi_cif cif_{};
};

}  // namespace

ExprCodePtr compile_extern_call(Compiler& compiler, const Call& call) {
  std::string text = to_script(Expr(&call));
  const char* api = builtin_name(call.op);
  // Step 1. The C function, found as compiled code would find it.
  const auto* name = call.args.empty() ? nullptr : call.args[0].as<StringImm>();
  user_check(name != nullptr) << "tir.interpret: " << api
                              << " expects the function name (a string) as its first argument, "
                                 "in "
                              << text;
  void* function = nullptr;
  const char* library = nullptr;
  KilnFindExternSymbol(name->value.c_str(), &function, &library);
  user_check(function != nullptr)
      << "tir.interpret: " << api << ": the C function '" << name->value
      << "' is not defined in this process nor in a library opened with "
         "kiln.runtime.load_library (in "
      << text << ")";
  // Step 2. The C signature: pointers to buffers, numbers as their C types.
  ffi_type* result = call.dtype.is_void() ? &ffi_type_void : ffi_scalar_type(call.dtype);
  user_check(result != nullptr && !call.dtype.is_handle())
      << "tir.interpret: " << api << ": the interpreter cannot call a C function returning "
      << call.dtype << " (void, bool, integers, float32 and float64 are supported) in " << text;
  std::vector<ExternCallCode::Arg> args;
  for (size_t i = 1; i < call.args.size(); ++i) {
    const Expr& a = call.args[i];
    ExternCallCode::Arg arg;
    if (a->dtype.is_handle()) {
      const auto* data = a.as<Var>();
      arg.storage = data != nullptr ? compiler.storage_of_data(data) : -1;
      user_check(arg.storage >= 0)
          << "tir.interpret: " << api << ": argument " << i << " (" << to_script(a)
          << ") is a pointer that is not the data of a buffer in scope; the interpreter passes "
             "buffer data pointers (buffer.data, buffer.access_ptr) only, in "
          << text;
      arg.type = &ffi_type_pointer;
    } else {
      arg.type = ffi_scalar_type(a->dtype);
      user_check(arg.type != nullptr)
          << "tir.interpret: " << api << ": argument " << i << " (" << to_script(a)
          << ") has dtype " << a->dtype
          << ", which the interpreter cannot pass to C (bool, integers, float32, float64 and "
             "buffer pointers are supported), in "
          << text;
      arg.value = compiler.expr(a);
    }
    args.push_back(std::move(arg));
  }
  return std::make_unique<ExternCallCode>(call.dtype, function, result, std::move(args));
}

}  // namespace kiln::interpreter
