// Helpers shared by the primitives that act on buffers (cache_read_write, buffer_scope,
// layout_transformation): picking a block's n-th accessed buffer, checking storage scopes, and
// replacing buffers throughout a statement. Private to schedule/.
#pragma once

#include <string>
#include <unordered_map>

#include "kiln/ir/function.h"
#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// The storage scopes that cache stages and set_scope accept.
bool is_valid_storage_scope(const std::string& scope);

// Throws InvalidStorageScopeError unless `scope` is "global", "shared", "shared.dyn", "local" or
// "warp" (a warp's registers, see kiln/tir/lower_warp_memory.h).
void check_storage_scope(const std::string& scope, const char* primitive,
                         const ir::Ref<ir::PrimFunc>& func, const ir::Node* mark);

// The buffer of entry `index` of the block's reads (`is_write` false) or writes. Throws
// BufferIndexOutOfRangeError when the block has no such entry.
ir::Ref<ir::Buffer> nth_accessed_buffer(const ir::Ref<ir::PrimFunc>& func,
                                        const BlockLocation& location, int64_t index, bool is_write,
                                        const char* primitive);

// Whether `buffer` is bound to a parameter of `func`.
bool is_param_buffer(const ir::PrimFunc& func, const ir::Buffer* buffer);

// Whether a region list names `buffer`.
bool accesses(const std::vector<ir::BufferRegion>& regions, const ir::Buffer* buffer);

// `stmt` with every use of a buffer in `buffers` (loads, stores, block regions and allocations)
// replaced by its image.
using BufferMap = std::unordered_map<const ir::Buffer*, ir::Ref<ir::Buffer>>;
ir::Stmt replace_buffers(const ir::Stmt& stmt, const BufferMap& buffers);

}  // namespace kiln::schedule
