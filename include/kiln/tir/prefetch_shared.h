// Lowering pass prefetch_shared: in a GPU kernel, the copies into shared memory of the next
// step of a loop are loaded into registers, or copied asynchronously into a second set of the
// shared tiles, while the threads compute on the current one.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// The loop annotation that asks for it (a nonzero integer), as a schedule writes it:
//   sch.annotate(k0, "kiln.prefetch_shared", 1)
// 1 asks for the registers, n >= kMinAsyncStages (2) for n stages of the tiles where the target
// copies asynchronously (else the registers).
constexpr const char* kPrefetchSharedAnnotation = "kiln.prefetch_shared";
constexpr int64_t kMinAsyncStages = 2;

// Runs on the flat program (after flatten_buffers). A serial loop annotated
// kPrefetchSharedAnnotation whose body (inside its Allocates) is a sequence of copies into
// "shared" buffers followed by statements that read them, as the GPU tilings make the outer
// reduction loop, becomes:
//
//   for k in range(n):                          A_prefetch[..] = A[.. k=0 ..]        (registers)
//     A_shared[f(i)] = A[g(k, i)]       =>      for k in range(n):
//     C = C + A_shared[..] * ..                   A_shared[f(i)] = A_prefetch[i]
//                                                 if k + 1 < n:
//                                                   A_prefetch[i] = A[g(k + 1, i)]
//                                                 C = C + A_shared[..] * ..
//
// Each thread keeps its part of the next step's tiles in a "local" buffer (one element per
// iteration of the copy's loops that are not bound to threads), so that the global loads of
// step k + 1 are in flight while the threads compute step k (insert_barriers then puts the
// barrier after the loads, before the computation). The loop's allocations move around it and
// the first step's loads (a later split of the loop does not allocate the tiles twice). A copy is a
// statement whose only store is to a "shared" buffer, under loops (constant extents, no virtual
// threads) and conditions, that reads no shared buffer; the buffers it reads must not be written in
// the loop. A loop whose body has another form is left as it is: the annotation asks, the pass
// decides.
//
// With n >= 2 and `async_copy` (CUDA sm_80: cp.async), each shared tile a copy fills
// (allocated in the loop, one-dimensional, constant size S) is allocated n times over (n S),
// and, for n = 2:
//
//   for k in range(m):                         A_shared[f(i)] = ptx_cp_async(A[g(0, i)])
//     A_shared[f(i)] = A[g(k, i)]      =>      ptx_cp_async_commit_group()
//     C = C + A_shared[h] * ..                 for k in range(m):
//                                                if k + 1 < m:
//                                                  A_shared[(k + 1) % 2 * S + f(i)] =
//                                                      ptx_cp_async(A[g(k + 1, i)])
//                                                ptx_cp_async_commit_group()
//                                                ptx_cp_async_wait_group(1)
//                                                storage_sync("shared")
//                                                C = C + A_shared[k % 2 * S + h] * ..
//
// the copies of step k + 1 in flight while the threads compute on step k, whose group the
// wait lets go (the barrier after it makes every thread's copies visible to all; insert_barriers
// puts one at the end of the body, before a step's copies overwrite the tiles the last step
// read). With n stages the first n - 1 steps' copies go before the loop (a group each), step k
// copies step k + n - 1 and waits with ptx_cp_async_wait_group(n - 1): n - 1 steps of copies in
// flight (n is at most the loop's extent: a larger one counts as that). Where a copy's tile is
// not allocated in the loop or the rest of the body writes one, the registers are used instead.
ir::Ref<ir::PrimFunc> prefetch_shared(const ir::Ref<ir::PrimFunc>& func, bool async_copy = false);

}  // namespace kiln::tir
