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
  // Per buffer, the extent of the threadIdx.y loop around every access (the warps of a block),
  // or 0 when some access has none, another extent, a threadIdx.z loop around it, or an index
  // that is the warp loop's variable.
  std::unordered_map<const Buffer*, int64_t> warps;

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
    bool warp = op->kind == ForKind::kThreadBinding &&
                (op->thread_tag == "threadIdx.y" || op->thread_tag == "threadIdx.z");
    if (warp) warp_loops_.push_back(op);
    IRVisitor::visit(op);
    if (warp) warp_loops_.pop_back();
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
    const For* around = warp_loops_.empty() ? nullptr : warp_loops_.back();
    const int64_t* extent = around != nullptr ? as_const_int(around->extent) : nullptr;
    int64_t y = around != nullptr && around->thread_tag == "threadIdx.y" &&
                        is_const_int(around->min, 0) && extent != nullptr
                    ? *extent
                    : 0;
    for (const For* loop : warp_loops_) y = loop->thread_tag == "threadIdx.z" ? 0 : y;
    // An access that an index already separates by warp (the warp loop's variable itself)
    // needs no copy per warp.
    for (const Expr& index : indices) {
      if (around != nullptr && index.as<Var>() == around->loop_var.get()) y = 0;
    }
    auto it = warps.find(buffer);
    if (it == warps.end()) {
      warps[buffer] = y;
    } else if (it->second != y) {
      it->second = 0;
    }
  }

  std::unordered_set<const Buffer*> warp_;
  std::unordered_set<const Var*> lanes_;  // the variables of the lane loops around
  std::vector<const For*> warp_loops_;    // the threadIdx.y and threadIdx.z loops around
  int kernel_ = -1;                       // the kernel being visited, or -1 outside kernels
};

// Step 2. The new buffers, and every access, region and allocation rewritten to them.
class WarpMemoryRewriter : public IRMutator {
 public:
  std::unordered_map<const Buffer*, Ref<Buffer>> replaced;
  std::unordered_set<const Buffer*> registers;        // the new "local" buffers (lane dropped)
  std::unordered_map<const Buffer*, size_t> dropped;  // per new "local" buffer, the lane's place
  // The new "shared" buffers with a leading dimension of the warps (threadIdx.y), each warp's
  // copy indexed by the threadIdx.y loop around the access.
  std::unordered_set<const Buffer*> per_warp;

 protected:
  using IRMutator::visit;

  Ref<Buffer> mutate_buffer(const Ref<Buffer>& buffer) override {
    auto it = replaced.find(buffer.get());
    return it == replaced.end() ? buffer : it->second;
  }

  Stmt visit(const For* op) override {
    bool warp = op->kind == ForKind::kThreadBinding && op->thread_tag == "threadIdx.y";
    if (warp) warp_vars_.push_back(op->loop_var);
    Stmt visited = IRMutator::visit(op);
    if (warp) warp_vars_.pop_back();
    return visited;
  }

  Expr visit(const BufferLoad* op) override {
    Expr visited = IRMutator::visit(op);
    const auto* load = visited.as<BufferLoad>();
    if (per_warp.count(load->buffer.get()) != 0) {
      return make<BufferLoad>(load->dtype, load->buffer, with_warp(*load->buffer, load->indices));
    }
    if (registers.count(load->buffer.get()) == 0) return visited;
    return make<BufferLoad>(load->dtype, load->buffer, without_lane(*load->buffer, load->indices));
  }

  Stmt visit(const BufferStore* op) override {
    Stmt visited = IRMutator::visit(op);
    const auto* store = visited.as<BufferStore>();
    if (per_warp.count(store->buffer.get()) != 0) {
      return make<BufferStore>(store->buffer, store->value,
                               with_warp(*store->buffer, store->indices));
    }
    if (registers.count(store->buffer.get()) == 0) return visited;
    return make<BufferStore>(store->buffer, store->value,
                             without_lane(*store->buffer, store->indices));
  }

  Stmt visit(const Block* op) override {
    Stmt visited = IRMutator::visit(op);
    if (visited.same_as(Stmt(op)) && per_warp.empty()) return visited;
    auto block = copy(visited.as<Block>());
    for (auto* regions : {&block->reads, &block->writes}) {
      for (BufferRegion& region : *regions) {
        if (per_warp.count(region.buffer.get()) != 0 &&
            region.region.size() + 1 == region.buffer->shape.size()) {
          // The warp's copy where a threadIdx.y loop is around, else all of them.
          Range warps = warp_vars_.empty()
                            ? Range{make_const(DataType::int32(), 0), region.buffer->shape[0]}
                            : Range{Expr(warp_vars_.back()), make_const(DataType::int32(), 1)};
          region.region.insert(region.region.begin(), warps);
          continue;
        }
        if (registers.count(region.buffer.get()) == 0) continue;
        if (region.region.size() == region.buffer->shape.size()) continue;
        region.region.erase(region.region.begin() + dropped.at(region.buffer.get()));
      }
    }
    return block;
  }

 private:
  std::vector<Expr> with_warp(const Buffer& buffer, std::vector<Expr> indices) {
    if (indices.size() == buffer.shape.size()) return indices;
    internal_check(!warp_vars_.empty())
        << kPass << ": an access of " << buffer.name << " outside the loop of its warps";
    indices.insert(indices.begin(), Expr(warp_vars_.back()));
    return indices;
  }

  std::vector<Ref<Var>> warp_vars_;  // the threadIdx.y loops around

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
      // Shared memory: each warp of the block gets its own copy where every access is under
      // the loop of the warps (threadIdx.y); a warp that shared another's copy (two warps
      // loading the same fragment) would race with it from one step to the next.
      fresh->scope = "shared";
      int64_t warps = collector.warps.count(b) != 0 ? collector.warps.at(b) : 0;
      if (warps > 1) {
        fresh->shape.insert(fresh->shape.begin(), make_const(DataType::int32(), warps));
        if (!fresh->strides.empty()) fresh->strides.clear();
        rewriter.per_warp.insert(fresh.get());
      }
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
