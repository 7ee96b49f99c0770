// The host side of GPU functions in LLVM: a device_launch call (split_host_device) becomes a call
// of the runtime's KilnDeviceLaunch with the launch extents and the kernel's arguments in memory.
#include <llvm/IR/Constants.h>

#include <nlohmann/json.hpp>

#include "codegen_llvm_impl.h"
#include "kiln/codegen/codegen_llvm.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::codegen {

using namespace ir;

namespace {

// DLPack's device types of the GPU targets.
constexpr int32_t kDLCUDA = 2;
constexpr int32_t kDLOpenCL = 4;

}  // namespace

void CodeGenLLVM::set_device_kernels(const std::string& manifest_json) {
  if (manifest_json.empty()) return;
  auto manifest = nlohmann::json::parse(manifest_json, nullptr, false);
  if (!manifest.is_object() || !manifest.contains("device_kernels")) return;
  int32_t index = 0;
  for (const auto& kernel : manifest["device_kernels"]) {
    device_kernel_index_[kernel.value("name", std::string())] = index++;
  }
}

llvm::Value* CodeGenLLVM::emit_device_launch(const Call* op) {
  // Step 1. The kernel and the device.
  user_check(target_.is_gpu()) << "codegen: function " << symbol_
                               << " launches a GPU kernel; build it for a GPU target";
  internal_check(op->args.size() >= 9) << "codegen: device_launch with too few arguments";
  const auto* name = op->args[0].as<StringImm>();
  internal_check(name != nullptr) << "codegen: device_launch without a kernel name";
  auto it = device_kernel_index_.find(name->value);
  internal_check(it != device_kernel_index_.end())
      << "codegen: kernel " << name->value << " is not in the module's device_kernels";
  llvm::Type* i32 = builder_.getInt32Ty();
  llvm::Type* i64 = builder_.getInt64Ty();
  llvm::Type* ptr = builder_.getPtrTy();
  auto* context_global =
      llvm::cast<llvm::GlobalVariable>(module_->getOrInsertGlobal(kDeviceContextSymbol, ptr, [&] {
        return new llvm::GlobalVariable(*module_, ptr, false, llvm::GlobalValue::ExternalLinkage,
                                        llvm::ConstantPointerNull::get(builder_.getPtrTy()),
                                        kDeviceContextSymbol);
      }));
  llvm::Value* device_context = builder_.CreateLoad(ptr, context_global);
  llvm::Value* device_id = builder_.CreateIntCast(emit(op->args[1]), i32, true);

  // Step 2. Grid x, y, z, block x, y, z and the dynamic shared memory bytes.
  llvm::Value* launch =
      entry_alloca(llvm::ArrayType::get(i64, 7), nullptr, llvm::Align(8), "launch");
  for (int k = 0; k < 7; ++k) {
    llvm::Value* value = builder_.CreateIntCast(emit(op->args[2 + k]), i64, true);
    builder_.CreateStore(value, builder_.CreateConstGEP1_64(i64, launch, k));
  }

  // Step 3. Each argument in its own slot: device handles as pointers, scalars by value (bool
  // as int32: OpenCL kernels take no bool arguments).
  size_t num_args = op->args.size() - 9;
  llvm::Value* values = entry_alloca(llvm::ArrayType::get(ptr, std::max<size_t>(num_args, 1)),
                                     nullptr, llvm::Align(8), "launch_args");
  llvm::Value* sizes = entry_alloca(llvm::ArrayType::get(i64, std::max<size_t>(num_args, 1)),
                                    nullptr, llvm::Align(8), "launch_arg_sizes");
  for (size_t k = 0; k < num_args; ++k) {
    const Expr& arg = op->args[9 + k];
    llvm::Value* value = emit(arg);
    if (arg->dtype.is_bool()) value = builder_.CreateZExt(value, i32);
    llvm::Type* type = value->getType();
    llvm::Value* slot = entry_alloca(type, nullptr, llvm::Align(8), "launch_arg");
    builder_.CreateStore(value, slot);
    builder_.CreateStore(slot, builder_.CreateConstGEP1_64(ptr, values, k));
    uint64_t bytes = module_->getDataLayout().getTypeAllocSize(type);
    builder_.CreateStore(builder_.getInt64(bytes), builder_.CreateConstGEP1_64(i64, sizes, k));
  }

  // Step 4. The call; a failure returns its status (the runtime has set the message).
  auto* type = llvm::FunctionType::get(i32, {ptr, i32, i32, i32, ptr, ptr, ptr, i32}, false);
  llvm::FunctionCallee launch_fn = runtime_function("KilnDeviceLaunch", type);
  int32_t device_type = target_.kind == "cuda" ? kDLCUDA : kDLOpenCL;
  llvm::Value* status =
      builder_.CreateCall(launch_fn, {device_context, builder_.getInt32(it->second),
                                      builder_.getInt32(device_type), device_id, launch, values,
                                      sizes, builder_.getInt32(static_cast<int32_t>(num_args))});
  emit_check(builder_.CreateICmpEQ(status, builder_.getInt32(0)), "");
  return builder_.getInt32(0);
}

llvm::Value* CodeGenLLVM::emit_device_memory(const Call* op) {
  user_check(target_.is_gpu()) << "codegen: function " << symbol_
                               << " allocates GPU memory; build it for a GPU target";
  llvm::Type* i32 = builder_.getInt32Ty();
  llvm::Type* i64 = builder_.getInt64Ty();
  llvm::Type* ptr = builder_.getPtrTy();
  llvm::Value* device_type = builder_.getInt32(target_.kind == "cuda" ? kDLCUDA : kDLOpenCL);
  llvm::Value* device_id = builder_.CreateIntCast(emit(op->args[0]), i32, true);
  if (op->op == Builtin::DeviceAlloc) {
    llvm::Value* slot = entry_alloca(ptr, nullptr, llvm::Align(8), "device_buffer");
    auto* type = llvm::FunctionType::get(i32, {i32, i32, i64, i64, ptr}, false);
    llvm::Value* status = builder_.CreateCall(
        runtime_function("KilnDeviceAlloc", type),
        {device_type, device_id, builder_.CreateIntCast(emit(op->args[1]), i64, false),
         builder_.getInt64(256), slot});
    emit_check(builder_.CreateICmpEQ(status, builder_.getInt32(0)), "");
    return builder_.CreateLoad(ptr, slot);
  }
  auto* type = llvm::FunctionType::get(i32, {i32, i32, ptr}, false);
  llvm::Value* status = builder_.CreateCall(runtime_function("KilnDeviceFree", type),
                                            {device_type, device_id, emit(op->args[1])});
  emit_check(builder_.CreateICmpEQ(status, builder_.getInt32(0)), "");
  return builder_.getInt32(0);
}

}  // namespace kiln::codegen
