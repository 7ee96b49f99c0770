// The GPU verifier: refuses a device kernel that no GPU of the target could launch, or whose
// memory scopes or barriers would make it compute something else than the scheduled program.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir/function.h"

namespace kiln::tir {

// What a GPU allows one kernel (from the target, e.g. "cuda -max_threads_per_block=1024").
struct GpuLimits {
  int64_t max_threads_per_block = 1024;
  int64_t max_shared_memory_per_block = 48 * 1024;
  // The most bytes of "shared" memory (arrays sized when the kernel is compiled) where that is
  // less than the above: CUDA's 48 KiB, beyond which only dynamic shared memory ("shared.dyn")
  // goes; 0 for no such limit.
  int64_t max_static_shared_memory_per_block = 0;
  // Lanes of a warp whose threads may exchange registers (CUDA: 32); 0 where the language has
  // no warp shuffles (OpenCL C 1.2).
  int64_t warp_shuffle_width = 0;
  // The lane counts of the language's vector types (CUDA: 2 and 4; OpenCL: 2, 4, 8 and 16): a
  // vectorized loop of another extent stays a loop (vectorize_loops).
  std::vector<int> vector_lanes = {2, 4};
  // Whether copies into shared memory may be asynchronous (CUDA's cp.async, sm_80 and newer):
  // prefetch_shared double-buffers the tiles where a schedule asks for it.
  bool async_copy = false;
};

// What the GPU verifier refuses (see verify_gpu_code), as a kind that callers can count.
enum class GpuCodeViolation {
  kNone,
  kTooManyThreads,             // 1. below
  kTooMuchSharedMemory,        // 2., the sum over the limit
  kTooMuchStaticSharedMemory,  // 2., "shared" arrays over the static limit
  kSymbolicSharedMemory,       // 2., a size that is not a constant
  kDivergentBarrier,           // 3.
};

// The first violation of a kernel and verify_gpu_code's message for it ("" for kNone).
struct GpuCodeCheck {
  GpuCodeViolation violation = GpuCodeViolation::kNone;
  std::string message;
};

// The checks of verify_gpu_code, returned rather than raised (the tuner drops a candidate with
// the kind of its violation as the reason).
GpuCodeCheck check_gpu_code(const ir::PrimFunc& kernel, const GpuLimits& limits);

// Checks a kernel made by split_host_device (after insert_barriers) and raises a kValue error,
// prefixed "verify_gpu_code: kernel <name>: ", for:
//  1. more threads per block (the product of the threadIdx launch extents) than the limit;
//  2. more shared memory (the sum of its "shared" and "shared.dyn" allocations) than the limit,
//     more "shared" memory than the static limit, or a shared allocation whose size is not a
//     constant;
//  3. a barrier (storage_sync) in code that not every thread of the block reaches as often as
//     the others: under a condition on a threadIdx variable, in a loop whose bounds depend on
//     one, or in a threadIdx loop shorter than the launch extent.
// Tested by tests/cpp/tir/gpu_lowering_test.cc and tests/python/test_gpu_build.py.
void verify_gpu_code(const ir::PrimFunc& kernel, const GpuLimits& limits);

}  // namespace kiln::tir
