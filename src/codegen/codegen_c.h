// The C-like base of the GPU code generators: device kernels (split_host_device) as C text.
// CUDA C and OpenCL C share everything here and differ only in the hooks below, implemented in
// codegen_cuda.cc and codegen_opencl.cc.
//
// The input contract: a kernel made by split_host_device from a lowered function (flat 1-D
// buffers, no blocks); vector expressions (vectorize_loops, with the lane counts of the
// language) only in stores, lets and their values; "shared" allocations have constant sizes
// (verify_gpu_code); at most one "shared.dyn" allocation per kernel, of bytes, which buffers of
// other dtypes view (merge_dynamic_shared_memory). Outside the contract, a kValue error names the
// kernel and the node.
//
// Vectors (codegen_c_vector.cc). Arithmetic is written lane by lane: lane l of a vector
// expression is the scalar expression lane_of(e, l), printed by the scalar rules, so 16-bit
// rounding, floor division, selects and math functions need nothing new. Memory is accessed with
// the language's vector types where that is correct: a load or store whose index is a ramp of
// stride 1, in "global" or "shared" memory, of a lane count and element type that have a vector
// type, at an address proven aligned to the vector's size (from the buffer's alignment and the
// modular set of the ramp's base), or, where the language has unaligned vector accesses
// (OpenCL's vloadn/vstoren), at any address. Any other access is done lane by lane, and when it
// is in global or shared memory the reason is noted (the build reports it as a warning).
#pragma once

#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/function.h"
#include "kiln/ir/functor.h"

namespace kiln::codegen {

class CodeGenC : public ir::ExprFunctor<std::string> {
 public:
  virtual ~CodeGenC() = default;
  // Appends one kernel's definition.
  void add_kernel(const ir::PrimFunc& kernel);
  // The translation unit: the preamble, then every kernel added.
  std::string finish();

 protected:
  // ---- Hooks: where CUDA C and OpenCL C differ ----
  // Text before the kernels (helper functions, pragmas); `uses_double` when a kernel uses
  // float64.
  virtual std::string preamble(bool uses_double) const = 0;
  // The functions kiln_float_to_half, kiln_half_to_float, kiln_float_to_bf16 and
  // kiln_bf16_to_float (float <-> the bits of a float16 / bfloat16, rounding to nearest even).
  virtual std::string half_section() const = 0;
  // Those of bfloat16 in software, written with `bits_of_float(x)` / `float_of_bits(u)` for
  // reinterpreting a float's bits (for languages and architectures without an instruction).
  static std::string bfloat16_in_software(const std::string& prefix, const std::string& ushort,
                                          const std::string& uint, const std::string& bits_of_float,
                                          const std::string& float_of_bits);
  // "extern \"C\" __global__ void __launch_bounds__(256)" / "__kernel void".
  virtual std::string kernel_prefix(int64_t threads_per_block) const = 0;
  // The declaration of a pointer parameter to `element` elements.
  virtual std::string pointer_param(const std::string& element, bool is_const,
                                    const std::string& name) const = 0;
  // The index of this thread or block along `tag` ("threadIdx.x", "blockIdx.y", …).
  virtual std::string thread_index(const std::string& tag) const = 0;
  // The statement that synchronizes the threads of a block over shared memory.
  virtual std::string barrier() const = 0;
  // The qualifier of a shared-memory array ("__shared__" / "__local").
  virtual std::string shared_qualifier() const = 0;
  // The C type of a scalar value of `dtype`. float16 and bfloat16 values are floats: they are
  // storage types, computed in float32 and rounded after each operation (kiln/ir/expr.h).
  virtual std::string type_name(ir::DataType dtype) const;
  // The C type of an element of a buffer of `dtype`: 16-bit floats are stored as their bits.
  virtual std::string storage_type(ir::DataType dtype) const;
  // The math function `name` (as C99 spells it for double, e.g. "exp") for `dtype`.
  virtual std::string math_call(const std::string& name, ir::DataType dtype,
                                const std::vector<std::string>& args) const = 0;
  // Reinterprets the bits of `value` (of dtype `from`) as `to`.
  virtual std::string reinterpret(const std::string& value, ir::DataType from,
                                  ir::DataType to) const = 0;
  // The suffix of a 64-bit integer literal ("ll" in CUDA C++, "l" in OpenCL C).
  virtual std::string int64_suffix() const { return "ll"; }
  // The value of the lane `offset` above this one within segments of `width` lanes of a warp.
  virtual std::string warp_shuffle_down(const std::string& value, const std::string& offset,
                                        const std::string& width) {
    unsupported("warp shuffles exist in CUDA only");
  }
  // The statement `op`, which stores the float32x4 result of a warp's tensor-core
  // multiply-accumulate `mma` (the ptx_mma builtin) into four elements; only CUDA has one.
  virtual void emit_mma_store(const ir::BufferStore* op, const ir::Call* mma) {
    unsupported("ptx_mma (a warp's tensor-core multiply-accumulate) exists in CUDA code only");
  }
  // The statement `op`, which stores the float16x8 a lane receives from a warp's ldmatrix
  // (the ptx_ldmatrix builtin) into eight elements; only CUDA has one.
  virtual void emit_ldmatrix_store(const ir::BufferStore* op, const ir::Call* ldmatrix) {
    unsupported("ptx_ldmatrix (a warp's load of 8x8 matrices) exists in CUDA code only");
  }
  // The statement `op`, a store into shared memory whose value is ptx_cp_async(load): an
  // asynchronous copy where the language has one (CUDA sm_80), else the plain copy, complete
  // at once. `async_copy_fence` emits ptx_cp_async_commit_group / _wait_group (nothing where
  // copies are plain).
  virtual void emit_async_copy_store(const ir::BufferStore* op, const ir::Call* async_copy);
  virtual void emit_async_copy_fence(const ir::Call* fence) {}
  // A float constant that is infinite or NaN.
  virtual std::string special_float(double value, ir::DataType dtype) const = 0;

  // ---- Hooks of vector code (see "Vectors" above) ----
  // The vector type of `lanes` elements of the C type `element` (a storage type), or "" when
  // the language has none.
  virtual std::string vector_type(const std::string& element, int lanes) const = 0;
  // The bytes the data of `buffer`, a pointer parameter of a kernel, is known to be aligned to.
  virtual int64_t parameter_alignment(const ir::Buffer& buffer) const { return buffer.alignment(); }
  // Whether vector loads and stores may be at addresses aligned to the element only.
  virtual bool has_unaligned_vector_access() const { return false; }
  // The load of a `type` vector of `lanes` elements at `address` (a pointer to the first
  // element, in memory of `scope`); `aligned` when the address is a multiple of its size.
  virtual std::string vector_load(const std::string& type, int lanes, const std::string& address,
                                  const std::string& scope, bool aligned) const = 0;
  // The statement that stores `value` (of `type`) at `address`, as vector_load.
  virtual std::string vector_store(const std::string& type, int lanes, const std::string& address,
                                   const std::string& scope, bool aligned,
                                   const std::string& value) const = 0;
  // A `type` vector value of the components `lanes`.
  virtual std::string make_vector(const std::string& type,
                                  const std::vector<std::string>& lanes) const = 0;
  // Component `lane` of the vector variable `vector`.
  virtual std::string vector_component(const std::string& vector, int lane) const = 0;
  // The declaration, at kernel scope, of `name`, the block of dynamic shared memory (bytes,
  // aligned to `alignment`): CUDA's `extern __shared__` array; in OpenCL a `__local` kernel
  // parameter that the runtime appends after the others, added to `params`.
  virtual std::string declare_dynamic_shared(const std::string& name, int64_t alignment,
                                             std::vector<std::string>* params) = 0;
  // The pointer type to `element` in memory of `scope` ("float*", "__local float*").
  virtual std::string pointer_type(const std::string& element, const std::string& scope) const {
    return element + "*";
  }
  // The array declaration `declaration` ("float A[64]") aligned to `bytes`.
  virtual std::string align_array(const std::string& declaration, int64_t bytes) const = 0;
  // The text of the vector expression `e` written with the language's vector operators, or ""
  // where the language has none for some part of it (then `e` is computed lane by lane). It may
  // read the variables of hoisted_vector_names_ and vector_let_names_.
  virtual std::string vector_expression(const ir::Expr& e) { return ""; }

  // ---- Expressions (codegen_c.cc) ----
  using ir::ExprFunctor<std::string>::visit;
  std::string visit(const ir::IntImm* op) override;
  std::string visit(const ir::FloatImm* op) override;
  std::string visit(const ir::StringImm* op) override;
  std::string visit(const ir::Var* op) override;
  std::string visit(const ir::Add* op) override;
  std::string visit(const ir::Sub* op) override;
  std::string visit(const ir::Mul* op) override;
  std::string visit(const ir::Div* op) override;
  std::string visit(const ir::Mod* op) override;
  std::string visit(const ir::FloorDiv* op) override;
  std::string visit(const ir::FloorMod* op) override;
  std::string visit(const ir::Min* op) override;
  std::string visit(const ir::Max* op) override;
  std::string visit(const ir::EQ* op) override;
  std::string visit(const ir::NE* op) override;
  std::string visit(const ir::LT* op) override;
  std::string visit(const ir::LE* op) override;
  std::string visit(const ir::GT* op) override;
  std::string visit(const ir::GE* op) override;
  std::string visit(const ir::And* op) override;
  std::string visit(const ir::Or* op) override;
  std::string visit(const ir::Not* op) override;
  std::string visit(const ir::Select* op) override;
  std::string visit(const ir::Cast* op) override;
  std::string visit(const ir::Call* op) override;
  std::string visit(const ir::Ramp* op) override;
  std::string visit(const ir::Broadcast* op) override;
  std::string visit(const ir::Let* op) override;
  std::string visit(const ir::BufferLoad* op) override;
  std::string visit(const ir::Reduce* op) override;

  std::string binary(const ir::BinaryNode* op, const char* symbol);
  // `value` (a float) rounded to `dtype` when that is a 16-bit float type; else itself.
  std::string rounded(ir::DataType dtype, const std::string& value);
  std::string emit_builtin(const ir::Call* op);

  // ---- Vectors (codegen_c_vector.cc) ----
  // How one vector access of a buffer is done.
  struct VectorAccess {
    bool whole = false;    // one access of the vector type; else lane by lane
    bool aligned = false;  // whole: the address is a multiple of the vector's size
    std::string type;      // whole: the vector type
    ir::Expr base;         // whole: the index of the first element
    std::string why;       // lane by lane in global or shared memory: the reason
  };
  VectorAccess plan_vector_access(const ir::Buffer& buffer, const ir::Expr& index);
  // Lane `lane` of `e` as a scalar expression (e itself when it is scalar).
  ir::Expr lane_of(const ir::Expr& e, int lane);
  // Declares each vector load of `e` that plan_vector_access does whole as a vector variable,
  // which lane_of then reads component by component. Loads under an if_then_else arm stay
  // where they are (the arm may be out of bounds when not taken).
  void hoist_vector_loads(const ir::Expr& e);
  void emit_vector_store(const ir::BufferStore* op);
  void emit_vector_let(const ir::LetStmt* op);
  // The array of `buffer`'s elements: its data variable, cast to a pointer to its element type
  // when the array was declared of another (a view into the dynamic shared block).
  std::string data_of(const ir::Buffer& buffer);
  // The pointer text to element `index` of buffer `buffer`.
  std::string element_address(const ir::Buffer& buffer, const ir::Expr& index);
  // The alignment that add_kernel gives each shared array with whole vector accesses.
  void plan_array_alignment(const ir::Stmt& body);

  // ---- Statements ----
  void emit_stmt(const ir::Stmt& s);
  void emit_for(const ir::For* op);
  void emit_allocate(const ir::Allocate* op);
  std::ostream& line();  // the stream, indented to the current depth

  // ---- Names ----
  // The C identifier of a variable (sanitized, unique in the kernel).
  std::string name_of(const ir::Var* var);
  [[noreturn]] void unsupported(const std::string& what);

  std::ostringstream body_;  // the kernels so far
  std::ostringstream* out_ = nullptr;
  int indent_ = 0;
  std::string kernel_name_;
  const ir::PrimFunc* kernel_ = nullptr;
  bool uses_double_ = false;
  bool uses_half_ = false;  // a kernel uses float16 or bfloat16
  std::unordered_map<const ir::Var*, std::string> names_;
  std::unordered_set<std::string> used_names_;
  std::vector<std::string> shared_decls_;  // the current kernel's shared arrays
  // Let-bound variables of expressions: substituted by their value's text.
  std::unordered_map<const ir::Var*, std::string> let_values_;
  // Index facts of the kernel (loop ranges, let values) for the alignment of vector accesses.
  std::unique_ptr<arith::Analyzer> analyzer_;
  // The C element type each array allocated in the kernel was declared with.
  std::unordered_map<const ir::Var*, std::string> array_element_;
  // The name of the kernel's block of dynamic shared memory ("" when it has none).
  std::string dynamic_shared_;
  // The bytes each buffer's data (a parameter or an array) is aligned to.
  std::unordered_map<const ir::Var*, int64_t> data_alignment_;
  // Vector loads declared by hoist_vector_loads (in the current statement): their components.
  std::unordered_map<const ir::Node*, std::vector<ir::Ref<ir::Var>>> hoisted_loads_;
  // ... and the names of those vector variables, unless they hold 16-bit floats' bits.
  std::unordered_map<const ir::Node*, std::string> hoisted_vector_names_;
  // The scalar variables of each lane of a vector let.
  std::unordered_map<const ir::Var*, std::vector<ir::Ref<ir::Var>>> vector_lets_;
  // The vector variable of a vector let computed with vector operators (vector_expression).
  std::unordered_map<const ir::Var*, std::string> vector_let_names_;
  int vector_temps_ = 0;  // vector variables declared so far in the kernel
  // Why accesses were done lane by lane, one sentence each (see notes()).
  std::set<std::string> notes_set_;
  std::vector<std::string> notes_;

 public:
  // What the generated code does other than the schedule asked: one sentence per vector access
  // done lane by lane in global or shared memory, naming the kernel, the buffer and the reason.
  const std::vector<std::string>& notes() const { return notes_; }
};

}  // namespace kiln::codegen
