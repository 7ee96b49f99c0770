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
// emits the statement streaming_point names twice: a streaming copy, run when every streamed
// buffer's data is aligned to kStreamingAlignment bytes (checked where the statement starts;
// the stores are then aligned to their vector), and the plain statement otherwise. A memory
// fence follows the streaming stores before the function returns, before it starts a parallel
// loop, and at the end of each thread's chunk of a parallel loop, so that the results are
// visible to whoever reads them next. A loop the lowering unrolls into copies loses the
// annotation; GPU code generators ignore it.
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

// The statement under `loop` (non-empty `streamed`) whose code is emitted twice, the streaming
// and the plain copy: the smallest that holds every streaming store, found by descending into
// the only statement of a sequence that holds any, and through a loop, let or allocation when
// that leaves out some statement below it (a softmax's row loop: only the nest that writes the
// output row, not the row's max and sum; a matmul's tile: only the write-back of the
// accumulators, not the reduction); `loop` itself when nothing would be left out (an
// element-wise nest: one check, not one per row).
const ir::StmtNode* streaming_point(const ir::For& loop,
                                    const std::vector<const ir::Var*>& streamed);

}  // namespace kiln::tir
