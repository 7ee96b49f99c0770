// The C-like base of the GPU code generators: device kernels (split_host_device) as C text.
// CUDA C and OpenCL C share everything here and differ only in the hooks below, implemented in
// codegen_cuda.cc and codegen_opencl.cc.
//
// The input contract: a kernel made by split_host_device from a lowered function (flat 1-D
// buffers, no blocks); vectorized loops stay loops (the GPU pipeline does not vectorize);
// "shared" allocations have constant sizes (verify_gpu_code). Outside the contract, a kValue
// error names the kernel and the node.
#pragma once

#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

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
  // half_conversions() with this language's qualifier and bit casts.
  virtual std::string half_section() const = 0;
  // The conversions of the 16-bit float storage types (float16, bfloat16) to and from float,
  // written with `bits_of_float(x)` / `float_of_bits(u)` for reinterpreting a float's bits.
  static std::string half_conversions(const std::string& prefix, const std::string& ushort,
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
  // A float constant that is infinite or NaN.
  virtual std::string special_float(double value, ir::DataType dtype) const = 0;

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
};

}  // namespace kiln::codegen
