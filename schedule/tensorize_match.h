// The two halves of tensorize behind blockize_tensorize.cc: matching a block's body against an
// intrinsic's description, which binds each description buffer to a region of an actual
// buffer, and instantiating the intrinsic's implementation on those regions. Private to
// schedule/.
#pragma once

#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/stmt.h"

namespace kiln::schedule {

// Where a buffer of an intrinsic lies in an actual buffer: the region starting at `base` (one
// index per dimension of the actual buffer), the intrinsic's dimensions aligned on the trailing
// ones; the leading dimensions have extent 1.
struct RegionBinding {
  ir::Ref<ir::Buffer> buffer;
  std::vector<ir::Expr> base;
};
using RegionBindings = std::unordered_map<const ir::Buffer*, RegionBinding>;

// Matches `block.body` against the description's root body `desc_body`: the same statements and
// expressions, where variables the description defines correspond to the block's and each
// description buffer stands for the region of an actual buffer that `block` writes or reads
// (desc[k] is actual[base + k]). Returns "" and fills `bindings` on success; otherwise says
// which part differs, showing both sides. `analyzer` knows the block's iterators.
std::string match_description(const ir::Stmt& desc_body, const ir::Block& block,
                              arith::Analyzer* analyzer, RegionBindings* bindings);

// The first access of `param` in `body` whose index leaves the tile's dimension (a flat index
// across the tile, e.g. B[0, 0:64] of a 16x4 tile), as text; "" when there is none.
std::string flat_access(const ir::Stmt& body, const ir::Buffer& param);

// The body of the implementation's root block with fresh loops, iterators, lets and block
// names (not in `names`, which receives them), each parameter buffer replaced by the region it
// is bound to in `params`; the root block's own buffers are renewed and appended to `allocs`.
ir::Stmt instantiate_impl(const ir::Block& impl_root, const RegionBindings& params,
                          std::set<std::string>* names, std::vector<ir::Ref<ir::Buffer>>* allocs);

// Messages: "B[v_j_o * 16:v_j_o * 16 + 16, 0:4]" and "[16, 4]".
std::string region_text(const ir::BufferRegion& region);
std::string shape_text(const ir::Buffer& buffer);

}  // namespace kiln::schedule
