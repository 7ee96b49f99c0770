// Lowering pass split_host_device: a GPU function becomes a host function that launches device
// kernels, and the kernels themselves.
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/function.h"

namespace kiln::tir {

// Each outermost loop bound to a GPU block or thread index (blockIdx.*, threadIdx.*) is a
// kernel: its subtree moves into a new PrimFunc, and the host function launches it in its place:
//
//   def main(A, B, n):                              def main(A, B, n):           # host
//     for bx in T.thread_binding(n / 64, "blockIdx.x"):    device_launch("main_kernel0",
//       for tx in T.thread_binding(64, "threadIdx.x"):       packed_arg_device_id(0),
//         B[bx * 64 + tx] = A[bx * 64 + tx]                  n / 64, 1, 1, 64, 1, 1, 0,
//                                                            A_data, B_data, n)
//                                                    def main_kernel0(A_data, B_data, n):
//                                                      for bx in T.thread_binding(...): ...
//
// A kernel's parameters are the variables its subtree uses but does not define: the data
// variables of the buffers it reads and writes (first, in order of first use), then the scalars
// (symbolic dimensions, scalar parameters, host loop variables). Its launch extent per thread
// tag is the largest extent of the loops bound to that tag; a loop with a smaller extent runs
// under a guard (the code generators emit it). Each kernel carries the attributes
// "global_symbol" (`name` + "_kernel" + k, k counted from 0 in the function), "kiln.device_kernel"
// (true) and "kiln.launch.<tag>" (the launch extent of each tag used). The device_launch call
// passes the device of the first tensor parameter (0 when there is none) and the bytes of the
// kernel's "shared.dyn" allocations as its dynamic shared memory.
//
// Host code keeps loops, lets, conditions and assertions around the kernels. A "global" buffer
// allocated outside the kernels (an intermediate that passes from one kernel to the next) becomes
// device memory: `data = device_alloc(device, bytes)` before its uses, `device_free(device,
// data)` after them. Errors (kValue, naming the function): a buffer access outside every bound
// loop (the message asks for sch.bind), a "shared" or "local" allocation outside every kernel,
// and a threadIdx extent that is not a constant.
// `kernels` receives the kernels in launch order. Tested by tests/cpp/tir/gpu_lowering_test.cc and
// tests/python/test_gpu_build.py.
ir::Ref<ir::PrimFunc> split_host_device(const ir::Ref<ir::PrimFunc>& func, const std::string& name,
                                        std::vector<ir::Ref<ir::PrimFunc>>* kernels);

}  // namespace kiln::tir
