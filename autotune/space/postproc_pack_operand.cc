// The postprocessor pack_operand: a block that multi_level_tiling annotated with
// kiln.pack_read = 1 reads its operand from a packed copy, laid out so that the innermost tile
// it reads along is contiguous ([n // NR, …, n % NR]); the copy is made with vectors.
#include "autotune/space/space_parts.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/cache_read_write.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/index_map.h"
#include "kiln/schedule/layout_transformation.h"
#include "kiln/schedule/loop_transformation.h"

namespace kiln::autotune {

namespace {

using namespace ir;
using schedule::RV;

const int64_t* annotation_int(const Block& block, const char* key) {
  auto it = block.annotations.find(key);
  return it == block.annotations.end() ? nullptr : as_const_int(it->second);
}

class PackOperand : public Postproc {
 public:
  const char* name() const override { return "pack_operand"; }

  void apply(schedule::Schedule& sch) override {
    std::vector<std::string> names = sch.index("main").block_names();
    for (const std::string& name : names) {
      const schedule::BlockLocation* loc = sch.index("main").find_block(name);
      if (loc == nullptr) continue;
      const int64_t* pack = annotation_int(*loc->block, kPackReadAnnotation);
      const int64_t* index = annotation_int(*loc->block, kPackIndexAnnotation);
      if (pack == nullptr || *pack != 1 || index == nullptr || loc->loops.empty()) continue;
      pack_read(sch, name, *index);
    }
  }

 private:
  // Step 1. The tile: the extent of the block's innermost loop, which must divide the packed
  // dimension. Step 2. The copy and its layout. Step 3. The copy's innermost tile in vectors.
  static void pack_read(schedule::Schedule& sch, const std::string& name, int64_t index) {
    const schedule::BlockLocation* loc = sch.index("main").find_block(name);
    // The IR the location points into is replaced by the first primitive: keep what is needed.
    Ref<Buffer> operand = loc->block->reads.at(index).buffer;
    const int64_t* tile = as_const_int(loc->loops.back()->extent);
    const int64_t* extent = as_const_int(operand->shape.back());
    if (tile == nullptr || extent == nullptr || *tile <= 1 || *extent % *tile != 0 ||
        operand->ndim() < 2) {
      return;  // nothing to gain, or a layout transform_layout cannot make without padding
    }
    int64_t nr = *tile;
    RV block = schedule::get_block(sch, name);
    RV packed = schedule::cache_read(sch, block, index, "global");
    std::vector<Ref<Var>> dims;
    for (int d = 0; d < operand->ndim(); ++d) dims.push_back(make_var("d" + std::to_string(d)));
    Expr last = dims.back();
    std::vector<Expr> finals = {floordiv(last, make_const(last->dtype, nr))};
    for (size_t d = 0; d + 1 < dims.size(); ++d) finals.push_back(dims[d]);
    finals.push_back(floormod(last, make_const(last->dtype, nr)));
    schedule::transform_layout(sch, packed,
                               std::make_pair(schedule::BufferIndexType::kWrite, int64_t{0}),
                               schedule::IndexMap(dims, finals));
    std::vector<RV> loops = schedule::get_loops(sch, packed);
    schedule::split(sch, loops.back(), {std::monostate{}, nr});
  }
};

}  // namespace

std::unique_ptr<Postproc> make_pack_operand(const SpaceContext&) {
  return std::make_unique<PackOperand>();
}

}  // namespace kiln::autotune
