// Non-temporal (streaming) stores: the loop annotation that asks for them and the rule that
// says which stores under such a loop stream. The LLVM code generator emits them; the tuner's
// features read the same rule.
#pragma once

#include <functional>
#include <vector>

#include "kiln/ir/stmt.h"

namespace kiln::tir {

// "pragma_nontemporal" = 1 on a loop: the contiguous vector stores under it to a buffer that the
// function receives (not one it allocates) and that nothing under the loop reads go past the
// caches (LLVM's !nontemporal: vmovntps on x86, stnp on AArch64). An output written once and
// larger than the caches then costs one memory write per line instead of a read for ownership
// and a write back, and does not evict the data the kernel still reads. The LLVM code generator
// emits the loop twice: a streaming copy, run when every streamed buffer's data is aligned to
// kStreamingAlignment bytes (checked once where the loop starts; the stores are then aligned to
// their vector), and the plain loop otherwise; a memory fence ends the streaming copy (and each
// thread's chunk of a parallel loop under it), so that the results are visible to whoever
// reads them next. A loop the lowering unrolls into copies loses the annotation; GPU code
// generators ignore it.
constexpr const char* kNontemporalAnnotation = "pragma_nontemporal";
// The alignment the streaming copy of a loop asks of the streamed buffers: a cache line.
constexpr int kStreamingAlignment = 64;

// The data variables of the buffers whose stores under `loop` stream, in first-store order
// (empty when `loop` is not annotated kNontemporalAnnotation = 1): those stored with contiguous
// vectors under it, not read under it, for which `is_allocated` (the function allocates the
// storage) is false.
std::vector<const ir::Var*> streamed_buffers(
    const ir::For& loop, const std::function<bool(const ir::Var*)>& is_allocated);

// Whether `store` (under a loop whose streamed_buffers are `streamed`) is one that streams: a
// contiguous vector store to one of them.
bool is_streaming_store(const ir::BufferStore& store, const std::vector<const ir::Var*>& streamed);

}  // namespace kiln::tir
