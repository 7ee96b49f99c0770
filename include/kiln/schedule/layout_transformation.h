// Layout transformation: transform_layout rewrites a buffer's shape and every access to it
// through an IndexMap, a function from the old indices to the new ones (e.g. packing a GEMM's
// B matrix as [N/16, K, 16]). Parameters may be transformed: the function then takes the new
// layout.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include "kiln/schedule/index_map.h"
#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// Which buffer of a block transform_layout changes: an entry of its reads or writes, or a
// name that the block's reads and writes use for exactly one buffer.
enum class BufferIndexType { kRead, kWrite };
using BufferSpec = std::variant<std::pair<BufferIndexType, int64_t>, std::string>;

// Rewrites a buffer that the block accesses to the layout of `index_map`: its shape becomes the
// range of the map over the old shape, and every load, store, region and declaration of it in
// the function uses the mapped indices:
//   B: T.Buffer((8, 32), "float32")            B: T.Buffer((2, 8, 16), "float32")
//   … B[vk, vj] …                       ==>    … B[vj // 16, vk, vj % 16] …
// (index_map `lambda k, j: [j // 16, k, j % 16]`). A parameter changes the function's
// signature. The new buffer is compact: strides set by storage_align are dropped.
// A buffer the function allocates (not a parameter) may be padded: a map that cuts an index by
// constants that do not divide its extent (`lambda i, k: [i // 6, k, i % 6]` over 1024 rows)
// gives the shape of the extent rounded up to their multiple ((171, 1024, 6)); the padding's
// elements are never read or written (every access goes through the map), so they have no
// value. A parameter is never padded (its shape is the caller's), nor a "warp" buffer (a
// fragment layout spreads whole tiles over the lanes of a warp).
// Preconditions:
//  1. The block has the read or write entry named by the spec (BufferIndexOutOfRangeError), or
//     accesses exactly one buffer of that name (BufferNotFoundError).
//  2. The map has one initial index per dimension of the buffer (InvalidIndexMapError).
//  3. The map is a bijection from the buffer's index space (padded as above) onto the product
//     of the ranges of its final indices, each of which starts at 0 (NonBijectiveIndexMapError).
void transform_layout(Schedule& sch, const RV& block, const BufferSpec& buffer,
                      const IndexMap& index_map);

}  // namespace kiln::schedule
