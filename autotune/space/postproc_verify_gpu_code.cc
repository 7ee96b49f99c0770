// The postprocessor verify_gpu_code (GPU targets): a candidate is lowered as the build would
// lower it and each kernel is checked against the target's limits, so that a candidate no GPU
// of the target could run (a block left to the host, too many threads per block, too much
// shared memory, a barrier some threads skip) is dropped before it is measured, counted under
// the reason. A tiled block's own limits (check_gpu_tiles) come first: they need no lowering.
#include <algorithm>
#include <map>
#include <unordered_set>

#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/driver/build.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/tir/pipeline.h"
#include "kiln/tir/prefetch_shared.h"
#include "kiln/tir/verify_gpu_code.h"

namespace kiln::autotune {

namespace {

using namespace ir;

constexpr const char* kName = "verify_gpu_code";

// The first block (but the root) that no loop bound to a GPU block or thread index encloses.
class UnboundBlockFinder : public IRVisitor {
 public:
  const Block* found = nullptr;

 protected:
  using IRVisitor::visit;

  void visit(const For* op) override {
    bool bound =
        op->kind == ForKind::kThreadBinding &&
        (op->thread_tag.rfind("blockIdx.", 0) == 0 || op->thread_tag.rfind("threadIdx.", 0) == 0);
    bound_ += bound ? 1 : 0;
    IRVisitor::visit(op);
    bound_ -= bound ? 1 : 0;
  }

  void visit(const BlockRealize* op) override {
    if (found == nullptr && bound_ == 0 && op->block->name != "root") found = op->block.get();
    IRVisitor::visit(op);
  }

 private:
  int bound_ = 0;
};

std::string error_class(tir::GpuCodeViolation violation) {
  switch (violation) {
    case tir::GpuCodeViolation::kTooManyThreads:
      return "GpuTooManyThreadsError";
    case tir::GpuCodeViolation::kTooMuchSharedMemory:
    case tir::GpuCodeViolation::kTooMuchStaticSharedMemory:
    case tir::GpuCodeViolation::kSymbolicSharedMemory:
      return "GpuSharedMemoryError";
    case tir::GpuCodeViolation::kDivergentBarrier:
      return "GpuDivergentBarrierError";
    case tir::GpuCodeViolation::kNone:
      break;
  }
  internal_error << "verify_gpu_code: no error class for a kernel without a violation";
}

// The extent of a loop the schedule made (a constant), or 0.
int64_t constant_extent(const For* loop) {
  const int64_t* extent = as_const_int(loop->extent);
  return extent != nullptr ? *extent : 0;
}

// The threads per block around `loc`: per threadIdx axis the largest extent of its loops.
int64_t threads_around(const schedule::BlockLocation& loc) {
  std::map<std::string, int64_t> axes;
  for (const For* loop : loc.loops) {
    if (loop->kind != ForKind::kThreadBinding || loop->thread_tag.rfind("threadIdx.", 0) != 0) {
      continue;
    }
    int64_t& extent = axes[loop->thread_tag];
    extent = std::max(extent, constant_extent(loop));
  }
  int64_t threads = 1;
  for (const auto& [tag, extent] : axes) threads *= extent;
  return threads;
}

// The outputs one thread computes: the vthread loops around the block and, inside its innermost
// threadIdx loop, the loops that bind no reduction iterator.
int64_t register_tile(const schedule::BlockLocation& loc) {
  std::unordered_set<const Var*> reduce_vars;
  for (size_t k = 0; k < loc.block->iter_vars.size(); ++k) {
    if (loc.block->iter_vars[k].type == IterType::kDataPar) continue;
    post_order_visit(loc.realize->iter_values[k], [&](const Node* node) {
      if (node->kind() == NodeKind::Var) reduce_vars.insert(static_cast<const Var*>(node));
    });
  }
  size_t inner = 0;
  for (size_t l = 0; l < loc.loops.size(); ++l) {
    const For* loop = loc.loops[l];
    if (loop->kind == ForKind::kThreadBinding && loop->thread_tag.rfind("threadIdx.", 0) == 0) {
      inner = l + 1;
    }
  }
  int64_t outputs = 1;
  for (size_t l = 0; l < loc.loops.size(); ++l) {
    const For* loop = loc.loops[l];
    bool vthread =
        loop->kind == ForKind::kThreadBinding && loop->thread_tag.rfind("vthread", 0) == 0;
    bool spatial_inside = l >= inner && reduce_vars.count(loop->loop_var.get()) == 0;
    if (vthread || spatial_inside) outputs *= constant_extent(loop);
  }
  return outputs;
}

// The bytes of the shared copies the block at `loc` reads: per block that writes a "shared"
// buffer it reads, the extents of the writer's loops that are not around it (twice over for
// two stages). (Read from the schedule's index: a check records nothing in the trace.)
int64_t shared_tile_bytes(const schedule::FunctionIndex& index, const schedule::BlockLocation& loc,
                          const tir::GpuLimits& limits) {
  std::unordered_set<const Buffer*> reads;
  for (const BufferRegion& read : loc.block->reads) {
    if (is_shared_scope(read.buffer->scope)) reads.insert(read.buffer.get());
  }
  std::unordered_set<const For*> around(loc.loops.begin(), loc.loops.end());
  int64_t bytes = 0;
  for (const std::string& name : index.block_names()) {
    const schedule::BlockLocation* writer = index.find_block(name);
    if (writer->block->writes.size() != 1 ||
        reads.count(writer->block->writes[0].buffer.get()) == 0) {
      continue;
    }
    int64_t elements = 1;
    for (const For* loop : writer->loops) {
      if (around.count(loop) == 0) elements *= constant_extent(loop);
    }
    bytes +=
        elements * writer->block->writes[0].buffer->dtype.bytes() * shared_stages(*writer, limits);
  }
  return bytes;
}

// The bytes of the shared copies for warp-level intrinsics (kiln.warp_lanes, before
// rewrite_cooperative_fetch spreads them) per kernel (its outermost loop): a copy's elements are
// the extents of its loops that the blocks it feeds (or, for a write-back with no consumer, the
// blocks that feed it) are not under. The tensorized block that reads the operands' copies
// reads them through fragments, so shared_tile_bytes does not see them.
std::map<const For*, int64_t> warp_copy_bytes(const schedule::FunctionIndex& index,
                                              const tir::GpuLimits& limits) {
  std::map<const For*, int64_t> bytes;
  for (const std::string& name : index.block_names()) {
    const schedule::BlockLocation* loc = index.find_block(name);
    if (loc->loops.empty() || loc->block->writes.size() != 1 ||
        !is_shared_scope(loc->block->writes[0].buffer->scope) ||
        annotation_or(*loc->block, kWarpLanesAnnotation, 0) == 0) {
      continue;
    }
    // Its consumers (blocks reading what it writes), else its producers, from the index: a
    // check records nothing in the trace.
    const Buffer* written = loc->block->writes[0].buffer.get();
    std::unordered_set<const Buffer*> read;
    for (const BufferRegion& r : loc->block->reads) read.insert(r.buffer.get());
    std::vector<const schedule::BlockLocation*> consumers, producers;
    for (const std::string& other : index.block_names()) {
      const schedule::BlockLocation* o = index.find_block(other);
      if (o == loc) continue;
      for (const BufferRegion& r : o->block->reads) {
        if (r.buffer.get() == written) consumers.push_back(o);
      }
      for (const BufferRegion& w : o->block->writes) {
        if (read.count(w.buffer.get()) != 0) producers.push_back(o);
      }
    }
    std::unordered_set<const For*> shared_loops;
    for (const schedule::BlockLocation* o : consumers.empty() ? producers : consumers) {
      shared_loops.insert(o->loops.begin(), o->loops.end());
    }
    int64_t elements = 1;
    for (const For* loop : loc->loops) {
      if (shared_loops.count(loop) == 0) elements *= constant_extent(loop);
    }
    bytes[loc->loops.front()] += elements * written->dtype.bytes() * shared_stages(*loc, limits);
  }
  return bytes;
}

}  // namespace

void check_gpu_tiles(schedule::Schedule& sch, const codegen::Target& target) {
  std::vector<Ref<PrimFunc>> kernels;
  tir::GpuLimits limits = driver::lower_options_for(target, &kernels).gpu_limits;
  int64_t shared_limit = limits.max_shared_memory_per_block;
  if (limits.max_static_shared_memory_per_block > 0) {
    shared_limit = std::min(shared_limit, limits.max_static_shared_memory_per_block);
  }
  const schedule::FunctionIndex& index = sch.index("main");
  for (const std::string& name : index.block_names()) {
    const schedule::BlockLocation* loc = index.find_block(name);
    int64_t low = annotation_or(*loc->block, kThreadExtentLowAnnotation, 0);
    if (low == 0) continue;
    // A block tensorized with warp-level intrinsics runs their lanes inside it.
    int64_t lanes = annotation_or(*loc->block, kWarpLanesAnnotation, 1);
    int64_t threads = threads_around(*loc) * lanes;
    if (threads < low || threads > limits.max_threads_per_block) {
      schedule::schedule_error("GpuThreadExtentError", kName,
                               "block " + name + " runs on " + std::to_string(threads) +
                                   " threads per block; its " + "tiling asks for " +
                                   std::to_string(low) + " to " +
                                   std::to_string(limits.max_threads_per_block));
    }
    int64_t outputs = register_tile(*loc) / lanes;
    int64_t most = annotation_or(*loc->block, kRegisterTileAnnotation, 0);
    if (most > 0 && outputs > most) {
      schedule::schedule_error("GpuRegisterTileError", kName,
                               "a thread of block " + name + " accumulates " +
                                   std::to_string(outputs) + " outputs; its tiling allows " +
                                   std::to_string(most));
    }
    int64_t bytes = shared_tile_bytes(index, *loc, limits);
    if (bytes > shared_limit) {
      schedule::schedule_error("GpuSharedMemoryError", kName,
                               "the shared tiles block " + name + " reads take " +
                                   std::to_string(bytes) + " bytes; the target has " +
                                   std::to_string(shared_limit) + " per block");
    }
  }
  for (const auto& [kernel, bytes] : warp_copy_bytes(index, limits)) {
    if (bytes > shared_limit) {
      schedule::schedule_error("GpuSharedMemoryError", kName,
                               "the shared tiles of the warps' fragments in kernel " +
                                   kernel->loop_var->name + " take " + std::to_string(bytes) +
                                   " bytes; the target has " + std::to_string(shared_limit) +
                                   " per block");
    }
  }
}

namespace {

class VerifyGpuCode : public Postproc {
 public:
  explicit VerifyGpuCode(const SpaceContext& context) : context_(context) {}
  const char* name() const override { return kName; }

  void apply(schedule::Schedule& sch) override {
    Ref<PrimFunc> func = sch.mod()->lookup("main");
    // Step 1. Every block runs in a kernel: under a loop bound to blockIdx or threadIdx.
    UnboundBlockFinder finder;
    finder.visit_stmt(func->body);
    if (finder.found != nullptr) {
      schedule::schedule_error("UnboundBlockError", kName,
                               "block " + finder.found->name +
                                   " is under no loop bound to blockIdx or threadIdx: a GPU "
                                   "function runs only bound loops",
                               func, finder.found);
    }
    // Step 2. The limits of the tiled blocks, before the costlier lowering.
    check_gpu_tiles(sch, context_.task->target);
    // Step 3. Lower as the build does, but check the kernels here, to name the violation.
    std::vector<Ref<PrimFunc>> kernels;
    tir::LowerOptions options = driver::lower_options_for(context_.task->target, &kernels);
    options.verify_gpu_kernels = false;
    try {
      tir::lower(func, options);
    } catch (const Error& e) {
      schedule::schedule_error(
          "GpuLoweringError", kName,
          std::string("the candidate does not lower for the target: ") + e.what());
    }
    // Step 4. Each kernel within the target's limits.
    for (const Ref<PrimFunc>& kernel : kernels) {
      tir::GpuCodeCheck check = tir::check_gpu_code(*kernel, options.gpu_limits);
      if (check.violation != tir::GpuCodeViolation::kNone) {
        schedule::schedule_error(error_class(check.violation), kName, check.message);
      }
    }
  }

 private:
  SpaceContext context_;
};

}  // namespace

std::unique_ptr<Postproc> make_verify_gpu_code(const SpaceContext& context) {
  return std::make_unique<VerifyGpuCode>(context);
}

}  // namespace kiln::autotune
