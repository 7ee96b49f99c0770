// The LLVM code generator's class, private to src/codegen. Its methods are split by concern:
// codegen_llvm.cc (module, functions, types, variables), codegen_llvm_expr.cc (expressions),
// codegen_llvm_builtin.cc (Call builtins), codegen_llvm_stmt.cc (statements and memory) and
// codegen_llvm_parallel.cc (outlined parallel loops).
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/codegen/target.h"
#include "kiln/ir/functor.h"

namespace llvm {
class TargetMachine;
}

namespace kiln::codegen {

// Emits PrimFuncs into one module; see kiln/codegen/codegen_llvm.h for the input contract.
class CodeGenLLVM : public ir::ExprFunctor<llvm::Value*> {
 public:
  CodeGenLLVM(const Target& target, llvm::TargetMachine& machine, llvm::LLVMContext& context);

  // Emits `func` as an exported function with the packed signature.
  void add_function(const ir::PrimFunc& func);
  // Adds the manifest string global `kiln_module_manifest`.
  void add_manifest(const std::string& manifest_json);
  // Adds `kiln_module_functions`: the functions added so far, in order, then NULL.
  void add_function_table();
  // Reads the order of the module's GPU kernels (the index KilnDeviceLaunch takes) from the
  // manifest's "device_kernels".
  void set_device_kernels(const std::string& manifest_json);
  // Verifies the module and hands it over.
  std::unique_ptr<llvm::Module> finish();

 private:
  // The state of the function being emitted; outlining a parallel loop saves and restores it.
  struct FunctionState {
    llvm::Function* function = nullptr;
    llvm::BasicBlock* entry = nullptr;   // allocas are placed here
    llvm::Value* packed_args = nullptr;  // the `args` parameter of the packed function
    std::unordered_map<const ir::Var*, llvm::Value*> vars;
    std::vector<llvm::Value*> workspaces;  // live KilnBackendAllocWorkspace results, in order
    int max_vector_bits = 0;               // for the "min-legal-vector-width" attribute
    bool unfenced_streams = false;         // non-temporal stores emitted since the last fence
  };
  // kiln.noalias: the scope of a data Var's buffer and the list of every other buffer's scope.
  struct AliasInfo {
    llvm::MDNode* scope = nullptr;
    llvm::MDNode* others = nullptr;
  };
  // The predicates of a comparison for signed integers, unsigned integers (and bool), floats.
  struct Predicates {
    llvm::CmpInst::Predicate is, iu, f;
  };

  // ---- Functions, types and variables (codegen_llvm.cc) ----
  // Attributes every emitted function carries (target CPU and features, nounwind).
  void set_function_attributes(llvm::Function* function);
  // Adds the attributes known once the current function's body is emitted.
  void finish_function();
  // Records the widest vector used, so that the backend keeps such vectors whole.
  void note_vector(ir::DataType dtype);
  // The type of a value in registers: bool is i1, bfloat16 is i16, vectors are LLVM vectors.
  llvm::Type* value_type(ir::DataType dtype);
  // The type of an element in memory: as value_type, except that bool is i8.
  llvm::Type* storage_type(ir::DataType dtype);
  llvm::Value* emit(const ir::Expr& e) { return dispatch(e); }
  // Emits a buffer index. Signed integer arithmetic in an index over loop variables, let
  // variables and constants is `nsw`: lowering keeps such arithmetic inside its type (int64
  // where int32 could overflow; the runtime refuses symbolic dimensions past what int32
  // supports, tir/index_limits.h), and the flag lets LLVM fold its constant terms into the
  // addressing (in a GEMM micro-kernel, a third fewer instructions). On a 64-bit target a
  // scalar index of such arithmetic is computed in int64 from the start (emit_wide_index): an
  // address that sign-extends an int32 sum is one LLVM's loop strength reduction cannot always
  // see through (it then keeps shifts in the inner loop and spends much of the build on them).
  llvm::Value* emit_index(const ir::Expr& index);
  // Whether an index of `dtype` is computed in int64: a scalar signed integer narrower than
  // the target's 64-bit pointers.
  bool widens_index(ir::DataType dtype) const;
  // `e` (an index over loop variables, let variables and constants) in int64: its sums,
  // differences and products `nsw`, every other term sign-extended.
  llvm::Value* emit_wide_index(const ir::Expr& e);
  // Whether arithmetic of `dtype` here is signed index arithmetic (see emit_index).
  bool signed_index(ir::DataType dtype) const { return in_index_ && dtype.is_int(); }
  // The value of a variable in the current function; a kValue error when unbound.
  llvm::Value* lookup_var(const ir::Var* var);
  // Binds `var` to `value` and returns the previous binding (null if none) for restore_var.
  llvm::Value* bind_var(const ir::Var* var, llvm::Value* value);
  void restore_var(const ir::Var* var, llvm::Value* previous);
  // A private global holding a NUL-terminated string; returns its address.
  llvm::Value* string_constant(const std::string& text);
  // Declares (once) the C function `name` of the given type.
  llvm::FunctionCallee runtime_function(const char* name, llvm::FunctionType* type);
  // An alloca in the entry block of the current function.
  llvm::AllocaInst* entry_alloca(llvm::Type* type, llvm::Value* count, llvm::Align align,
                                 const std::string& name);

  // ---- Expressions (codegen_llvm_expr.cc) ----
  // Converts `value` of dtype `from` to `to` (the semantics of a Cast node).
  llvm::Value* cast_value(llvm::Value* value, ir::DataType from, ir::DataType to);
  // float16/bfloat16 values widened to float32 for arithmetic, and narrowed back (round to
  // nearest even, NaN kept a NaN). Other types pass through.
  llvm::Value* widen_float(llvm::Value* value, ir::DataType dtype);
  llvm::Value* narrow_float(llvm::Value* value, ir::DataType dtype);
  // The dtype the arithmetic of `dtype` is done in (float32 for the 16-bit floats).
  static ir::DataType compute_dtype(ir::DataType dtype);
  // A float binary operation `op`, in float32 for the 16-bit float types.
  template <class F>
  llvm::Value* float_binary(ir::DataType dtype, llvm::Value* a, llvm::Value* b, F op);
  llvm::Value* compare(const ir::BinaryNode* op, Predicates predicates);
  // Whether `e` may be evaluated unconditionally: no loads, no calls but cheap exact ones, no
  // integer division by a non-constant.
  static bool is_cheap_and_safe(const ir::Expr& e);

  using ir::ExprFunctor<llvm::Value*>::visit;
  llvm::Value* visit(const ir::IntImm* op) override;
  llvm::Value* visit(const ir::FloatImm* op) override;
  llvm::Value* visit(const ir::StringImm* op) override;
  llvm::Value* visit(const ir::Var* op) override;
  llvm::Value* visit(const ir::Add* op) override;
  llvm::Value* visit(const ir::Sub* op) override;
  llvm::Value* visit(const ir::Mul* op) override;
  llvm::Value* visit(const ir::Div* op) override;
  llvm::Value* visit(const ir::Mod* op) override;
  llvm::Value* visit(const ir::FloorDiv* op) override;
  llvm::Value* visit(const ir::FloorMod* op) override;
  llvm::Value* visit(const ir::Min* op) override;
  llvm::Value* visit(const ir::Max* op) override;
  llvm::Value* visit(const ir::EQ* op) override;
  llvm::Value* visit(const ir::NE* op) override;
  llvm::Value* visit(const ir::LT* op) override;
  llvm::Value* visit(const ir::LE* op) override;
  llvm::Value* visit(const ir::GT* op) override;
  llvm::Value* visit(const ir::GE* op) override;
  llvm::Value* visit(const ir::And* op) override;
  llvm::Value* visit(const ir::Or* op) override;
  llvm::Value* visit(const ir::Not* op) override;
  llvm::Value* visit(const ir::Select* op) override;
  llvm::Value* visit(const ir::Cast* op) override;
  llvm::Value* visit(const ir::Call* op) override;
  llvm::Value* visit(const ir::Ramp* op) override;
  llvm::Value* visit(const ir::Broadcast* op) override;
  llvm::Value* visit(const ir::Let* op) override;
  llvm::Value* visit(const ir::BufferLoad* op) override;  // in codegen_llvm_stmt.cc
  // The load `op`; with a `mask` (a vector of i1), only its lanes where the mask is set are
  // loaded (a masked load or gather), the others taken from `passthru` (undefined when null).
  llvm::Value* emit_load(const ir::BufferLoad* op, llvm::Value* mask, llvm::Value* passthru);
  llvm::Value* visit(const ir::Reduce* op) override;

  // ---- Builtins (codegen_llvm_builtin.cc) ----
  llvm::Value* emit_builtin(const ir::Call* op);
  llvm::Value* emit_float_math(const ir::Call* op);
  // Calls libm's `name` (with the "f" suffix for float32) on each lane of `x`.
  llvm::Value* emit_libm_call(const char* name, llvm::Value* x, ir::DataType dtype);
  llvm::Value* emit_if_then_else(const ir::Call* op);
  // if_then_else with a condition that varies across lanes: each arm on every lane, but an arm
  // that is a load loads only on the lanes that pick it.
  llvm::Value* emit_lanewise_if_then_else(const ir::Call* op, llvm::Value* condition);
  llvm::Value* emit_extern_call(const ir::Call* op);
  llvm::Value* emit_packed_arg(const ir::Call* op);

  // ---- GPU launches from host code (codegen_llvm_device.cc) ----
  llvm::Value* emit_device_launch(const ir::Call* op);
  // device_alloc / device_free through the runtime's KilnDeviceAlloc / KilnDeviceFree.
  llvm::Value* emit_device_memory(const ir::Call* op);

  // ---- Statements and memory (codegen_llvm_stmt.cc) ----
  void emit_stmt(const ir::Stmt& s);
  // The store `op`; with a `mask` (a vector of i1), only its lanes where the mask is set.
  void emit_store(const ir::BufferStore* op, llvm::Value* mask = nullptr);
  void emit_allocate(const ir::Allocate* op);
  void emit_for(const ir::For* op);
  // A loop as it is: parallel (a task function) or serial.
  void emit_loop(const ir::For* op);
  // A loop whose stores stream (kiln/tir/nontemporal.h), emitted with the streaming and the
  // plain copy of its streaming_point; false (nothing emitted) when no store under it streams.
  bool emit_streaming(const ir::For* op);
  // The alignment check of the `streamed` pointers, then `emit_code` twice: with their
  // contiguous vector stores streaming, and plain.
  void emit_streaming_versions(const std::vector<const ir::Var*>& streamed,
                               const std::function<void()>& emit_code);
  // A fence after the streaming stores of the current function, if any since the last one:
  // before it returns or starts a parallel loop, at the end of a parallel task.
  void fence_streams();
  // What a loop asks of LLVM: nothing (its unroller and loop vectorizer decide), a full
  // unrolling, or to be left as it is (neither unrolled nor vectorized: the schedule decided).
  enum class LoopUnroll { kLlvmDecides, kFull, kNever };
  // A serial loop over [begin, end) binding `var`.
  void emit_serial_loop(const ir::Var* var, llvm::Value* begin, llvm::Value* end,
                        const ir::Stmt& body, LoopUnroll unroll);
  // The address of element `index` of `buffer` (a vector of addresses for a vector index).
  llvm::Value* element_address(const ir::Buffer& buffer, llvm::Value* index,
                               ir::DataType index_dtype);
  // The alignment provable for an access at `index` of `buffer` from its data alignment.
  llvm::Align access_alignment(const ir::Buffer& buffer, const ir::Expr& index);
  // Tells LLVM that `pointer` is `alignment`-byte aligned, where that says more than the
  // alignment of its `element` type (LLVM's AlignmentFromAssumptions visits every user of the
  // pointer for each assumption: after unrolling, a large share of the build for nothing).
  void assume_alignment(llvm::Value* pointer, int64_t alignment, const ir::DataType& element);
  // Tags a load, store, gather or scatter with the buffer's alias scopes (kiln.noalias).
  void add_alias_info(llvm::Instruction* inst, const ir::Buffer& buffer);
  // Continues when `ok` holds; otherwise sets `message` (unless empty: the runtime has set one),
  // frees the live workspaces and returns -1.
  void emit_check(llvm::Value* ok, const std::string& message);
  void emit_error_return(const std::string& message);
  llvm::Value* emit_free_workspace(llvm::Value* pointer);

  // ---- Parallel loops (codegen_llvm_parallel.cc) ----
  // Rejects a parallel loop nested inside another one, before any code is emitted.
  void check_parallel_nesting(const ir::PrimFunc& func);
  void emit_parallel_for(const ir::For* op);

  const Target& target_;
  llvm::TargetMachine& machine_;
  llvm::LLVMContext& context_;
  std::unique_ptr<llvm::Module> module_;
  llvm::IRBuilder<> builder_;
  llvm::MDBuilder md_;
  std::string symbol_;                    // the symbol of the PrimFunc being emitted
  std::vector<llvm::Function*> kernels_;  // the packed functions, in the order they were added
  FunctionState fn_;
  int num_tasks_ = 0;      // parallel tasks outlined from the current PrimFunc
  bool in_index_ = false;  // emitting a buffer index (emit_index)
  std::unordered_map<const ir::Var*, AliasInfo> alias_info_;
  // Data Var -> a Buffer that uses it (for the alignment of the pointer bound to it).
  std::unordered_map<const ir::Var*, const ir::Buffer*> buffer_of_data_;
  // The data Vars the current PrimFunc allocates (the rest are its arguments').
  std::unordered_set<const ir::Var*> allocated_;
  // The buffers whose contiguous vector stores stream, in the streaming copy of a loop.
  std::vector<const ir::Var*> streamed_;
  // Under a loop whose stores stream: the statement to emit in two copies, and the buffers.
  const ir::StmtNode* streaming_point_ = nullptr;
  std::vector<const ir::Var*> point_streamed_;
  std::map<std::string, llvm::Value*> strings_;
  std::map<std::string, int32_t> device_kernel_index_;  // kernel name -> KilnDeviceLaunch index
};

}  // namespace kiln::codegen
