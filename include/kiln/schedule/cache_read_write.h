// Cache stages: cache_read and cache_write add a block that copies a buffer to or from a new
// buffer in another storage scope ("shared", "local", …), and point the block's accesses at the
// copy. With compute_at the copy then moves under a tile (the "pack the matrix" step of a GEMM).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// Copies the buffer that the block reads at `read_buffer_index` into a new buffer in
// `storage_scope`, and makes every block of the scope that reads it (the consumers) read the
// copy instead:
//   for i, k in T.grid(16, 8):                 A_shared = T.alloc_buffer((16, 8), scope="shared")
//     with T.block("C"): … A[vi, vk] …    ==>   for ax0, ax1 in T.grid(16, 8):
//                                                 with T.block("A_shared"):
//                                                   A_shared[v0, v1] = A[v0, v1]
//                                               for i, k in T.grid(16, 8):
//                                                 with T.block("C"): … A_shared[vi, vk] …
// The copy block ("<buffer>_<scope>") has one spatial iterator per dimension and copies the
// region the consumers read (relaxed over the loops between it and them, within the buffer).
// It goes right before the statement holding the first consumer: in the body of the innermost
// loop that holds the buffer's producer and every consumer when the scope has a producer,
// else in the body of the scope block. The scope block allocates the new buffer (with the
// original's full shape). With `consumer_blocks`, only those blocks read the copy (and decide
// its region and place); the other consumers keep reading the original. Returns the copy block.
// Preconditions:
//  1. The block reads at least read_buffer_index + 1 buffers (BufferIndexOutOfRangeError).
//  2. The scope is "global", "shared", "shared.dyn", "local" or "warp" (InvalidStorageScopeError).
//  3. The block does not also write the buffer (ReadWriteBufferError).
//  4. At most one block of the scope writes the buffer (NotSingleWriteBlockError).
//  5. The producer's statement precedes, and is apart from, the first consumer's at the place
//     of the copy (CacheLocationError).
//  6. Each of consumer_blocks reads the buffer in the block's scope (NotAConsumerError).
RV cache_read(Schedule& sch, const RV& block, int64_t read_buffer_index,
              const std::string& storage_scope, const std::vector<RV>& consumer_blocks = {});

// Makes the block write a new buffer in `storage_scope` instead of the buffer it writes at
// `write_buffer_index`, and adds a block that copies the new buffer into the original one:
//   for i, j in T.grid(16, 16):                  for i, j in T.grid(16, 16):
//     with T.block("B"): B[vi, vj] = …    ==>      with T.block("B"): B_local[vi, vj] = …
//                                                for ax0, ax1 in T.grid(16, 16):
//                                                  with T.block("B_local"):
//                                                    B[v0, v1] = B_local[v0, v1]
// Every access of the block (stores, and loads of a reduction) names the new buffer. The copy
// covers the region the block writes (relaxed over the loops between it and the block) and
// goes right before the statement holding the first block that reads the buffer, in the body
// of the innermost loop that holds the writer and every reader, or right after the writer's
// statement in the scope block when nothing reads it. Returns the copy block.
// Preconditions:
//  1. The block writes at least write_buffer_index + 1 buffers (BufferIndexOutOfRangeError).
//  2. The scope is "global", "shared", "shared.dyn", "local" or "warp" (InvalidStorageScopeError).
//  3. No other block of the scope writes the buffer (NotSingleWriteBlockError).
//  4. The writer's statement precedes, and is apart from, the first reader's at the place of
//     the copy (CacheLocationError).
RV cache_write(Schedule& sch, const RV& block, int64_t write_buffer_index,
               const std::string& storage_scope);

}  // namespace kiln::schedule
