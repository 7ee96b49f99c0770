// Lowering pass prefetch_shared: in a GPU kernel, the copies into shared memory of the next
// step of a loop are loaded into registers while the threads compute on the current one.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// The loop annotation that asks for it (a nonzero integer), as a schedule writes it:
//   sch.annotate(k0, "kiln.prefetch_shared", 1)
constexpr const char* kPrefetchSharedAnnotation = "kiln.prefetch_shared";

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
ir::Ref<ir::PrimFunc> prefetch_shared(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
