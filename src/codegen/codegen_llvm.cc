// The LLVM code generator's driver: the module, one packed function per PrimFunc and the table
// that exports them, the mapping of kiln types to LLVM types, variable bindings and the alias
// information of kiln.noalias.
#include "kiln/codegen/codegen_llvm.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>

#include "codegen_llvm_impl.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::codegen {

using namespace ir;

namespace {

bool attr_is_true(const PrimFunc& func, const char* name) {
  auto it = func.attrs.find(name);
  if (it == func.attrs.end()) return false;
  const int64_t* value = as_const_int(it->second);
  return value != nullptr && *value != 0;
}

}  // namespace

std::string function_symbol(const PrimFunc& func) {
  auto it = func.attrs.find("global_symbol");
  const StringImm* name = it == func.attrs.end() ? nullptr : it->second.as<StringImm>();
  user_check(name != nullptr && !name->value.empty())
      << "codegen: a PrimFunc has no \"global_symbol\" attribute (a string); the lowering "
         "pipeline sets it to the exported symbol name";
  return name->value;
}

CodeGenLLVM::CodeGenLLVM(const Target& target, llvm::TargetMachine& machine,
                         llvm::LLVMContext& context)
    : target_(target),
      machine_(machine),
      context_(context),
      module_(std::make_unique<llvm::Module>("kiln", context)),
      builder_(context),
      md_(context) {
  module_->setTargetTriple(machine.getTargetTriple().str());
  module_->setDataLayout(machine.createDataLayout());
}

void CodeGenLLVM::set_function_attributes(llvm::Function* function) {
  function->addFnAttr("target-cpu", target_.cpu);
  if (!target_.llvm_features.empty()) {
    function->addFnAttr("target-features", target_.llvm_features);
  }
  function->addFnAttr(llvm::Attribute::NoUnwind);
}

void CodeGenLLVM::note_vector(DataType dtype) {
  if (dtype.lanes() > 1) {
    fn_.max_vector_bits = std::max(fn_.max_vector_bits, dtype.lanes() * dtype.bits());
  }
}

void CodeGenLLVM::finish_function() {
  if (fn_.max_vector_bits > 0) {
    fn_.function->addFnAttr("min-legal-vector-width", std::to_string(fn_.max_vector_bits));
  }
  // A function whose schedule chose vectors wider than the CPU prefers (zmm where an AVX-512
  // CPU prefers ymm) gets them from LLVM's vectorizers too: a tile's initialisation left to the
  // loop vectorizer in the preferred width would store halves of the vectors the tile's loads
  // read, and SROA could not keep the tile in registers.
  int chosen = std::min(fn_.max_vector_bits, target_.vector_register_bits);
  if (chosen > target_.preferred_vector_bits) {
    fn_.function->addFnAttr("prefer-vector-width", std::to_string(chosen));
  }
}

void CodeGenLLVM::add_function(const PrimFunc& func) {
  symbol_ = function_symbol(func);
  user_check(func.body.defined()) << "codegen: function " << symbol_ << " has no body";
  user_check(module_->getNamedValue(symbol_) == nullptr)
      << "codegen: two functions have the symbol " << symbol_;
  check_parallel_nesting(func);
  num_tasks_ = 0;

  // Buffers by data variable, in first-use order, for alignment and alias scopes.
  buffer_of_data_.clear();
  alias_info_.clear();
  allocated_.clear();
  std::vector<const Var*> data_vars;
  auto note_buffer = [&](const Buffer* buffer) {
    if (buffer_of_data_.emplace(buffer->data.get(), buffer).second) {
      data_vars.push_back(buffer->data.get());
    }
  };
  for (const auto& entry : func.buffer_map) note_buffer(entry.second.get());
  post_order_visit(func.body, [&](const Node* node) {
    switch (node->kind()) {
      case NodeKind::BufferLoad:
        note_buffer(static_cast<const BufferLoad*>(node)->buffer.get());
        break;
      case NodeKind::BufferStore:
        note_buffer(static_cast<const BufferStore*>(node)->buffer.get());
        break;
      case NodeKind::Allocate:
        note_buffer(static_cast<const Allocate*>(node)->buffer.get());
        allocated_.insert(static_cast<const Allocate*>(node)->buffer->data.get());
        break;
      default:
        break;
    }
  });
  if (attr_is_true(func, "kiln.noalias") && data_vars.size() > 1) {
    llvm::MDNode* domain = md_.createAnonymousAliasScopeDomain(symbol_);
    std::vector<llvm::Metadata*> scopes;
    for (const Var* var : data_vars) {
      llvm::MDNode* scope = md_.createAnonymousAliasScope(domain, var->name);
      scopes.push_back(scope);
      alias_info_[var].scope = llvm::MDNode::get(context_, {scope});
    }
    for (size_t i = 0; i < data_vars.size(); ++i) {
      std::vector<llvm::Metadata*> others;
      for (size_t j = 0; j < scopes.size(); ++j) {
        if (j != i) others.push_back(scopes[j]);
      }
      alias_info_[data_vars[i]].others = llvm::MDNode::get(context_, others);
    }
  }

  llvm::Type* i32 = builder_.getInt32Ty();
  llvm::Type* ptr = builder_.getPtrTy();
  llvm::FunctionType* type = llvm::FunctionType::get(i32, {ptr, ptr, i32}, false);
  // Internal: a kernel trusts its arguments, so it is reached only through the function table,
  // which the runtime reads after checking them.
  llvm::Function* function =
      llvm::Function::Create(type, llvm::Function::InternalLinkage, symbol_, module_.get());
  kernels_.push_back(function);
  function->getArg(0)->setName("args");
  function->getArg(1)->setName("type_codes");
  function->getArg(2)->setName("num_args");
  set_function_attributes(function);

  fn_ = FunctionState();
  fn_.function = function;
  fn_.entry = llvm::BasicBlock::Create(context_, "entry", function);
  fn_.packed_args = function->getArg(0);
  builder_.SetInsertPoint(fn_.entry);
  llvm::FastMathFlags flags;
  if (attr_is_true(func, "kiln.fast_math")) flags.setFast();
  builder_.setFastMathFlags(flags);

  emit_stmt(func.body);
  fence_streams();
  builder_.CreateRet(builder_.getInt32(0));
  finish_function();
}

void CodeGenLLVM::add_manifest(const std::string& manifest_json) {
  llvm::Constant* text = llvm::ConstantDataArray::getString(context_, manifest_json, true);
  auto* global = new llvm::GlobalVariable(
      *module_, text->getType(), true, llvm::GlobalValue::ExternalLinkage, text, kManifestSymbol);
  global->setVisibility(llvm::GlobalValue::DefaultVisibility);
  global->setAlignment(llvm::Align(1));
}

void CodeGenLLVM::add_function_table() {
  llvm::PointerType* ptr = builder_.getPtrTy();
  std::vector<llvm::Constant*> entries(kernels_.begin(), kernels_.end());
  entries.push_back(llvm::ConstantPointerNull::get(ptr));
  llvm::ArrayType* type = llvm::ArrayType::get(ptr, entries.size());
  auto* table =
      new llvm::GlobalVariable(*module_, type, true, llvm::GlobalValue::ExternalLinkage,
                               llvm::ConstantArray::get(type, entries), kFunctionTableSymbol);
  table->setVisibility(llvm::GlobalValue::DefaultVisibility);
}

std::unique_ptr<llvm::Module> CodeGenLLVM::finish() {
  std::string message;
  llvm::raw_string_ostream stream(message);
  if (llvm::verifyModule(*module_, &stream)) {
    stream.flush();
    internal_error << "codegen: the generated LLVM module is invalid: " << message;
  }
  return std::move(module_);
}

llvm::Type* CodeGenLLVM::value_type(DataType dtype) {
  llvm::Type* scalar = nullptr;
  switch (dtype.code()) {
    case DataType::kInt:
    case DataType::kUInt:
      scalar = builder_.getIntNTy(dtype.bits());
      break;
    case DataType::kBool:
      scalar = builder_.getInt1Ty();
      break;
    case DataType::kBFloat:
      scalar = builder_.getInt16Ty();
      break;
    case DataType::kFloat:
      if (dtype.bits() == 16) scalar = builder_.getHalfTy();
      if (dtype.bits() == 32) scalar = builder_.getFloatTy();
      if (dtype.bits() == 64) scalar = builder_.getDoubleTy();
      break;
    case DataType::kHandle:
      if (dtype.is_void()) return builder_.getVoidTy();
      scalar = builder_.getPtrTy();
      break;
  }
  user_check(scalar != nullptr) << "codegen: dtype " << dtype << " has no LLVM type (function "
                                << symbol_ << ")";
  if (dtype.lanes() == 1) return scalar;
  note_vector(dtype);
  return llvm::FixedVectorType::get(scalar, dtype.lanes());
}

llvm::Type* CodeGenLLVM::storage_type(DataType dtype) {
  if (dtype.is_bool()) return value_type(DataType::uint(8, dtype.lanes()));
  return value_type(dtype);
}

llvm::Value* CodeGenLLVM::lookup_var(const Var* var) {
  auto it = fn_.vars.find(var);
  user_check(it != fn_.vars.end())
      << "codegen: variable '" << var->name << "' is used in function " << symbol_
      << " but not defined there; lowered code binds every variable with a LetStmt, a Let, a "
         "For or an Allocate";
  return it->second;
}

llvm::Value* CodeGenLLVM::bind_var(const Var* var, llvm::Value* value) {
  auto it = fn_.vars.find(var);
  llvm::Value* previous = it == fn_.vars.end() ? nullptr : it->second;
  fn_.vars[var] = value;
  if (llvm::isa<llvm::Instruction>(value) && !value->hasName()) value->setName(var->name);
  return previous;
}

void CodeGenLLVM::restore_var(const Var* var, llvm::Value* previous) {
  if (previous == nullptr) {
    fn_.vars.erase(var);
  } else {
    fn_.vars[var] = previous;
  }
}

llvm::Value* CodeGenLLVM::string_constant(const std::string& text) {
  auto it = strings_.find(text);
  if (it != strings_.end()) return it->second;
  llvm::Constant* data = llvm::ConstantDataArray::getString(context_, text, true);
  auto* global = new llvm::GlobalVariable(*module_, data->getType(), true,
                                          llvm::GlobalValue::PrivateLinkage, data, ".str");
  global->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  global->setAlignment(llvm::Align(1));
  strings_.emplace(text, global);
  return global;
}

llvm::FunctionCallee CodeGenLLVM::runtime_function(const char* name, llvm::FunctionType* type) {
  llvm::FunctionCallee callee = module_->getOrInsertFunction(name, type);
  if (auto* function = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    function->addFnAttr(llvm::Attribute::NoUnwind);
  }
  return callee;
}

llvm::AllocaInst* CodeGenLLVM::entry_alloca(llvm::Type* type, llvm::Value* count, llvm::Align align,
                                            const std::string& name) {
  llvm::IRBuilder<> entry(fn_.entry, fn_.entry->begin());
  llvm::AllocaInst* alloca = entry.CreateAlloca(type, count, name);
  alloca->setAlignment(align);
  return alloca;
}

std::unique_ptr<llvm::Module> codegen_llvm(const std::vector<Ref<PrimFunc>>& funcs,
                                           const Target& target, llvm::TargetMachine& machine,
                                           llvm::LLVMContext& context,
                                           const std::string& manifest_json) {
  CodeGenLLVM codegen(target, machine, context);
  codegen.set_device_kernels(manifest_json);
  for (const Ref<PrimFunc>& func : funcs) {
    internal_check(func.defined()) << "codegen: null PrimFunc";
    codegen.add_function(*func);
  }
  codegen.add_function_table();
  if (!manifest_json.empty()) codegen.add_manifest(manifest_json);
  return codegen.finish();
}

}  // namespace kiln::codegen
