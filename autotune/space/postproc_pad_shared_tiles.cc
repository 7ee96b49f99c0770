// The postprocessor pad_shared_tiles (GPU targets): a shared-memory copy that
// multi_level_tiling_gpu sampled to pad (for vector or for scalar reads) gets the padded row
// stride that the bank model (shared_memory_banks.h) prefers for the threads that write and
// read it, once the tiles and the copy's spread over the threads (rewrite_cooperative_fetch)
// are decided: how the threads of a warp walk a tile depends on both.
#include "autotune/space/shared_memory_banks.h"
#include "autotune/space/space_parts.h"
#include "kiln/driver/build.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/storage_align.h"
#include "kiln/schedule/annotation.h"
#include "kiln/schedule/buffer_scope.h"
#include "kiln/schedule/getters.h"
#include "kiln/tir/compact_buffer_allocation.h"
#include "kiln/tir/lower_init_block.h"
#include "kiln/tir/plan_buffer_allocation.h"
#include "kiln/tir/verify_gpu_code.h"

namespace kiln::autotune {

namespace {

using namespace ir;
using schedule::RV;

constexpr const char* kName = "pad_shared_tiles";

// Bytes of the shared buffers that blocks of `f` allocate (constant shapes; strides are those of
// compact_buffer_allocation's result); with `name`, of that buffer only.
int64_t shared_bytes(const PrimFunc& f, const std::string& name = "") {
  struct Sum : IRVisitor {
    std::string name;
    int64_t bytes = 0;
    using IRVisitor::visit;
    void visit(const Block* op) override {
      for (const Ref<Buffer>& b : op->alloc_buffers) {
        if (b->scope != "shared" || (!name.empty() && b->name != name)) continue;
        int64_t elements = 1;
        for (const Expr& extent : b->shape) {
          const int64_t* value = as_const_int(extent);
          elements *= value != nullptr ? *value : 0;
        }
        bytes += elements * b->dtype.bytes();
      }
      IRVisitor::visit(op);
    }
  } sum;
  sum.name = name;
  sum.visit_stmt(f.body);
  return sum.bytes;
}

class PadSharedTiles : public Postproc {
 public:
  explicit PadSharedTiles(const SpaceContext& context) : context_(context) {}
  const char* name() const override { return kName; }

  void apply(schedule::Schedule& sch) override {
    // The copies, their decisions and the stages of their tiles (two where prefetch_shared
    // double-buffers them).
    std::vector<Ref<PrimFunc>> kernels;
    tir::GpuLimits limits = driver::lower_options_for(context_.task->target, &kernels).gpu_limits;
    struct PaddedCopy {
      std::string name;
      int64_t pad, stages;
    };
    std::vector<PaddedCopy> copies;
    for (const std::string& name : sch.index("main").block_names()) {
      const schedule::BlockLocation* loc = sch.index("main").find_block(name);
      if (loc == nullptr) continue;
      auto it = loc->block->annotations.find(kPadSharedAnnotation);
      if (it == loc->block->annotations.end()) continue;
      const int64_t* pad = as_const_int(it->second);
      internal_check(pad != nullptr) << kName << ": block " << name << " has no decided padding";
      copies.push_back(PaddedCopy{name, *pad, shared_stages(*loc, limits)});
    }
    if (copies.empty()) return;
    // Each tile at its own shape, as lowering allocates it; a function these passes refuse keeps
    // its compact tiles (the verifier after this one names what is wrong with it).
    Ref<PrimFunc> compacted;
    try {
      compacted = tir::compact_buffer_allocation(
          tir::plan_buffer_allocation(tir::lower_init_block(sch.func("main"))));
    } catch (const Error&) {
      compacted = Ref<PrimFunc>();
    }
    int64_t limit = context_.task->target.gpu.max_shared_memory_per_block;
    int64_t bytes = compacted.defined() ? shared_bytes(*compacted) : 0;
    for (const PaddedCopy& c : copies) {
      if (compacted.defined() && c.stages > 1) {
        const Block& copy = *sch.block(schedule::get_block(sch, c.name), kName).block;
        if (copy.writes.size() != 1) continue;
        bytes += (c.stages - 1) * shared_bytes(*compacted, copy.writes[0].buffer->name);
      }
    }
    int warp = static_cast<int>(std::max<int64_t>(1, context_.task->target.gpu.thread_warp_size));
    for (const auto& [name, pad, stages] : copies) {
      RV block = schedule::get_block(sch, name);
      schedule::unannotate(sch, block, kPadSharedAnnotation);
      const Block& copy = *sch.block(block, kName).block;
      if (pad == 0 || !compacted.defined() || copy.writes.size() != 1 ||
          copy.annotations.count(kStorageAlignAnnotation) != 0) {
        continue;
      }
      SharedBankModel model(*compacted, copy.writes[0].buffer->name, warp);
      std::optional<SharedPadding> padding =
          model.best_padding(pad == 1 ? SharedReads::kVector : SharedReads::kScalar);
      if (!padding) continue;
      int64_t rows = model.shape()[0];
      int64_t added = (model.strides(padding)[0] - model.strides()[0]) * rows *
                      copy.writes[0].buffer->dtype.bytes() * stages;
      if (limit > 0 && bytes + added > limit) continue;
      bytes += added;
      schedule::storage_align(sch, block, 0, padding->axis, padding->factor, padding->offset);
    }
  }

 private:
  SpaceContext context_;
};

}  // namespace

std::unique_ptr<Postproc> make_pad_shared_tiles(const SpaceContext& context) {
  return std::make_unique<PadSharedTiles>(context);
}

}  // namespace kiln::autotune
