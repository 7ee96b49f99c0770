// lower_warp_memory: "warp" buffers become each thread's registers when every access is to the
// thread's own lane, else shared memory (see the header for the contract).
#include "kiln/tir/lower_warp_memory.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

constexpr int64_t kWarpLanes = 32;
const char* kPass = "lower_warp_memory";

// The position of the lane in the indices of a "warp" buffer.
size_t lane_dimension(const Buffer& buffer) {
  return buffer.shape.size() - 2;
}

// Step 1. Which "warp" buffers are accessed only at the accessing thread's own lane, and the
// threadIdx.x extents of the kernels that access them.
class WarpAccessCollector : public IRVisitor {
 public:
  std::vector<const Buffer*> buffers;            // the allocated "warp" buffers, in order
  std::unordered_set<const Buffer*> cross_lane;  // some access is to another lane
  std::unordered_map<const Buffer*, std::unordered_set<int>> kernels;  // the kernels accessing it
  std::vector<std::vector<Expr>> lane_extents;  // per kernel, its threadIdx.x loop extents

 protected:
  using IRVisitor::visit;

  void visit(const Block* op) override {
    for (const Ref<Buffer>& b : op->alloc_buffers) {
      if (b->scope != "warp") continue;
      size_t n = b->shape.size();
      const int64_t* lanes = n >= 2 ? as_const_int(b->shape[n - 2]) : nullptr;
      user_check(lanes != nullptr && *lanes == kWarpLanes)
          << kPass << ": the \"warp\" buffer " << b->name << " has the shape " << shape_text(*b)
          << "; a warp buffer's second-to-last dimension is its " << kWarpLanes
          << " lanes ([..., 32, elements per lane])";
      buffers.push_back(b.get());
      warp_.insert(b.get());
    }
    IRVisitor::visit(op);
  }

  void visit(const For* op) override {
    bool opens_kernel = kernel_ < 0 && op->kind == ForKind::kThreadBinding;
    if (opens_kernel) {
      kernel_ = static_cast<int>(lane_extents.size());
      lane_extents.emplace_back();
    }
    bool lane = op->kind == ForKind::kThreadBinding && op->thread_tag == "threadIdx.x";
    if (lane) lane_extents[kernel_].push_back(op->extent);
    bool is_lane_loop = lane && is_const_int(op->min, 0) && is_const_int(op->extent, kWarpLanes);
    if (is_lane_loop) lanes_.insert(op->loop_var.get());
    IRVisitor::visit(op);
    if (is_lane_loop) lanes_.erase(op->loop_var.get());
    if (opens_kernel) kernel_ = -1;
  }

  void visit(const BufferLoad* op) override {
    access(op->buffer.get(), op->indices);
    IRVisitor::visit(op);
  }

  void visit(const BufferStore* op) override {
    access(op->buffer.get(), op->indices);
    IRVisitor::visit(op);
  }

 private:
  static std::string shape_text(const Buffer& b) {
    std::string out;
    for (const Expr& e : b.shape) out += (out.empty() ? "" : ", ") + to_script(e);
    return "(" + out + ")";
  }

  void access(const Buffer* buffer, const std::vector<Expr>& indices) {
    if (warp_.count(buffer) == 0) return;
    const auto* lane = indices[lane_dimension(*buffer)].as<Var>();
    if (lane == nullptr || lanes_.count(lane) == 0) cross_lane.insert(buffer);
    if (kernel_ >= 0) kernels[buffer].insert(kernel_);
  }

  std::unordered_set<const Buffer*> warp_;
  std::unordered_set<const Var*> lanes_;  // the variables of the lane loops around
  int kernel_ = -1;                       // the kernel being visited, or -1 outside kernels
};

// Step 2. The new buffers, and every access, region and allocation rewritten to them.
class WarpMemoryRewriter : public IRMutator {
 public:
  std::unordered_map<const Buffer*, Ref<Buffer>> replaced;
  std::unordered_set<const Buffer*> registers;        // the new "local" buffers (lane dropped)
  std::unordered_map<const Buffer*, size_t> dropped;  // per new "local" buffer, the lane's place

 protected:
  using IRMutator::visit;

  Ref<Buffer> mutate_buffer(const Ref<Buffer>& buffer) override {
    auto it = replaced.find(buffer.get());
    return it == replaced.end() ? buffer : it->second;
  }

  Expr visit(const BufferLoad* op) override {
    Expr visited = IRMutator::visit(op);
    const auto* load = visited.as<BufferLoad>();
    if (registers.count(load->buffer.get()) == 0) return visited;
    return make<BufferLoad>(load->dtype, load->buffer, without_lane(*load->buffer, load->indices));
  }

  Stmt visit(const BufferStore* op) override {
    Stmt visited = IRMutator::visit(op);
    const auto* store = visited.as<BufferStore>();
    if (registers.count(store->buffer.get()) == 0) return visited;
    return make<BufferStore>(store->buffer, store->value,
                             without_lane(*store->buffer, store->indices));
  }

  Stmt visit(const Block* op) override {
    Stmt visited = IRMutator::visit(op);
    if (visited.same_as(Stmt(op))) return visited;
    auto block = copy(visited.as<Block>());
    for (auto* regions : {&block->reads, &block->writes}) {
      for (BufferRegion& region : *regions) {
        if (registers.count(region.buffer.get()) == 0) continue;
        if (region.region.size() == region.buffer->shape.size()) continue;
        region.region.erase(region.region.begin() + dropped.at(region.buffer.get()));
      }
    }
    return block;
  }

 private:
  std::vector<Expr> without_lane(const Buffer& buffer, std::vector<Expr> indices) {
    size_t lane = dropped.at(&buffer);
    if (indices.size() == buffer.shape.size()) return indices;
    indices.erase(indices.begin() + lane);
    return indices;
  }
};

}  // namespace

Ref<PrimFunc> lower_warp_memory(const Ref<PrimFunc>& func) {
  for (const auto& [param, buffer] : func->buffer_map) {
    user_check(buffer->scope != "warp")
        << kPass << ": parameter " << buffer->name
        << " is in the \"warp\" scope; a warp's registers are allocated inside the function";
  }
  WarpAccessCollector collector;
  collector.visit_stmt(func->body);
  if (collector.buffers.empty()) return func;
  WarpMemoryRewriter rewriter;
  for (const Buffer* b : collector.buffers) {
    auto fresh = copy(b);
    if (collector.cross_lane.count(b) != 0) {
      fresh->scope = "shared";
    } else {
      // Step 3. Registers: the kernels that use them must launch whole warps along threadIdx.x.
      for (int kernel : collector.kernels[b]) {
        for (const Expr& extent : collector.lane_extents[kernel]) {
          const int64_t* n = as_const_int(extent);
          user_check(n != nullptr && *n % kWarpLanes == 0)
              << kPass << ": the \"warp\" buffer " << b->name
              << " is held in the registers of each lane (threadIdx.x), but its kernel also binds "
                 "threadIdx.x to a loop of extent "
              << to_script(extent)
              << "; every threadIdx.x loop of the kernel must have a constant extent that is a "
                 "multiple of 32, so that each warp is 32 consecutive threadIdx.x";
        }
      }
      fresh->scope = "local";
      size_t lane = lane_dimension(*b);
      fresh->shape.erase(fresh->shape.begin() + lane);
      if (!fresh->strides.empty()) fresh->strides.clear();
      rewriter.registers.insert(fresh.get());
      rewriter.dropped[fresh.get()] = lane;
    }
    rewriter.replaced[b] = fresh;
  }
  return with_body(func, rewriter.mutate(func->body));
}

}  // namespace kiln::tir
