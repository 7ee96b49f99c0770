// Lowering pass merge_dynamic_shared_memory: the "shared.dyn" buffers of each GPU kernel become
// views into one block of dynamic shared memory, whose size the launch gives.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// In each outermost loop nest bound to GPU blocks and threads (a kernel of split_host_device),
// every Allocate of scope "shared.dyn" goes, and its buffer becomes a view into one allocation
// of that scope: a uint8 buffer `dyn_shared` of the total bytes, allocated at the top of the
// nest's outermost loop body. The buffers are laid out one after the other in the order they
// are met, each offset rounded up to ir::kDynamicSharedAlignment bytes; an access keeps its
// buffer's dtype and shape, uses the merged data variable and has its index moved by the
// offset in elements. Nothing overlaps: the buffers live as long as the kernel's block.
// split_host_device passes the bytes to the launch; the code generators declare the block as
// CUDA's `extern __shared__` array or an OpenCL `__local` kernel argument. Runs after
// insert_barriers, which thus sees the buffers apart. Raises a kValue error naming the buffer
// for a "shared.dyn" buffer whose size is not a constant. Returns `func` itself when it has no
// such buffer.
//
//   for bx in T.thread_binding(8, "blockIdx.x"):     for bx in T.thread_binding(8, ...):
//     A_s = T.allocate([64], "float32", "shared.dyn")    dyn_shared = T.allocate([288], "uint8",
//     B_s = T.allocate([10], "float16", "shared.dyn")                           "shared.dyn")
//     ... A_s[tx] ... B_s[tx % 10] ...                     ... A_s[tx] ... B_s[tx % 10 + 128] ...
//                                                      (A_s at byte 0, B_s at byte 256, both
//                                                       with data dyn_shared)
//
// Tested by tests/cpp/tir/gpu_lowering_test.cc and tests/python/test_gpu_dynamic_shared.py.
ir::Ref<ir::PrimFunc> merge_dynamic_shared_memory(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
