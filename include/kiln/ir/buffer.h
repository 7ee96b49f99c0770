// Helpers to declare buffers and compute element offsets. The Buffer node itself is defined in
// kiln/ir/expr.h, next to the loads that name it.
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/expr.h"

namespace kiln::ir {

// The bytes the data of every tensor passed to a CUDA function is aligned to: the runtime's
// device allocations are (256 bytes), and the argument checks refuse a tensor that is not. The
// CUDA code generator relies on it for float4 and other 16-byte vector accesses.
constexpr int kCudaTensorAlignment = 16;

// The bytes a GPU kernel's block of dynamic shared memory is aligned to, and each "shared.dyn"
// buffer's offset in it (merge_dynamic_shared_memory): enough for 16-byte vector accesses.
constexpr int kDynamicSharedAlignment = 16;

// Whether buffers of `scope` live in a GPU block's shared memory: "shared" (sized when the kernel
// is compiled) or "shared.dyn" (dynamic shared memory, whose bytes the launch gives: CUDA's
// `extern __shared__`, an OpenCL __local kernel argument).
inline bool is_shared_scope(const std::string& scope) {
  return scope == "shared" || scope == "shared.dyn";
}

// A new buffer with a fresh data variable, compact strides and zero offset.
Ref<Buffer> decl_buffer(std::vector<Expr> shape, DataType dtype, std::string name,
                        std::string scope = "global");

// The element offset of `indices` in `buffer` (row-major when strides are empty).
Expr buffer_offset(const Buffer& buffer, const std::vector<Expr>& indices);

}  // namespace kiln::ir
