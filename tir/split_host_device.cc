// split_host_device: moves each outermost GPU-bound loop nest of a function into a device kernel
// and leaves a device_launch call in its place (see the header for the contract).
#include "kiln/tir/split_host_device.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>
#include <vector>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

// The tags in launch order: grid x, y, z, then block x, y, z.
const char* const kLaunchTags[6] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                    "threadIdx.x", "threadIdx.y", "threadIdx.z"};

bool is_launch_tag(const std::string& tag) {
  for (const char* t : kLaunchTags) {
    if (tag == t) return true;
  }
  return false;
}

class HostSplitter : public IRMutator {
 public:
  HostSplitter(const PrimFunc& func, std::string name, std::vector<Ref<PrimFunc>>* kernels)
      : func_(func), name_(std::move(name)), kernels_(kernels) {
    for (size_t i = 0; i < func.params.size(); ++i) {
      if (func.buffer_of(func.params[i]).defined()) {
        device_id_ = make<Call>(DataType::int32(), Builtin::PackedArgDeviceId,
                                std::vector<Expr>{int32_const(static_cast<int64_t>(i))});
        break;
      }
    }
    if (!device_id_.defined()) device_id_ = int32_const(0);
  }

 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    if (op->kind != ForKind::kThreadBinding) return IRMutator::visit(op);
    return launch(Stmt(op));
  }
  Stmt visit(const BufferStore* op) override {
    user_check(false) << "split_host_device: function " << name_ << " stores into buffer "
                      << op->buffer->name << " outside every loop bound to a GPU block or thread, "
                      << "which a GPU target cannot run; bind the loops of the block that writes "
                      << op->buffer->name << " with sch.bind(loop, \"blockIdx.x\") and "
                      << "sch.bind(loop, \"threadIdx.x\")";
    return op;
  }
  Expr visit(const BufferLoad* op) override {
    user_check(false) << "split_host_device: function " << name_ << " reads buffer "
                      << op->buffer->name << " outside every loop bound to a GPU block or thread, "
                      << "which a GPU target cannot run; bind the loops of the block that reads it "
                      << "with sch.bind(loop, \"blockIdx.x\") and sch.bind(loop, \"threadIdx.x\")";
    return op;
  }
  Stmt visit(const Allocate* op) override {
    if (op->buffer->scope == "global") return device_allocation(op);
    user_check(false) << "split_host_device: function " << name_ << " allocates buffer "
                      << op->buffer->name << " (scope \"" << op->buffer->scope
                      << "\") outside every loop bound to a GPU block or thread; a \""
                      << op->buffer->scope << "\" buffer must live inside a kernel: compute_at "
                      << "its block under a loop bound to blockIdx (scope \"shared\") or "
                      << "threadIdx (scope \"local\")";
    return op;
  }

 private:
  // A buffer between kernels: device memory that the host side allocates around its uses.
  Stmt device_allocation(const Allocate* op) {
    const Buffer& buffer = *op->buffer;
    Expr bytes = make_const(DataType::int64(), int64_t{buffer.dtype.bytes()});
    for (const Expr& extent : buffer.shape) bytes = bytes * cast(DataType::int64(), extent);
    Stmt body = mutate(op->body);
    Expr alloc = make<Call>(DataType::handle(), Builtin::DeviceAlloc,
                            std::vector<Expr>{device_id_, analyzer_.simplify(bytes)});
    Expr release = make<Call>(DataType::int32(), Builtin::DeviceFree,
                              std::vector<Expr>{device_id_, Expr(buffer.data)});
    return make<LetStmt>(buffer.data, alloc,
                         make<SeqStmt>(std::vector<Stmt>{body, make<Evaluate>(release)}));
  }

  // The bytes of the kernel's "shared.dyn" allocations (merge_dynamic_shared_memory made them
  // one), which the launch gives it.
  int64_t dynamic_shared_bytes(const Stmt& kernel, const std::string& symbol) {
    int64_t bytes = 0;
    post_order_visit(kernel, [&](const Node* node) {
      if (node->kind() != NodeKind::Allocate) return;
      const Buffer& buffer = *static_cast<const Allocate*>(node)->buffer;
      if (buffer.scope != "shared.dyn") return;
      int64_t elements = 1;
      for (const Expr& extent : buffer.shape) {
        const int64_t* c = as_const_int(extent);
        user_check(c != nullptr) << "split_host_device: kernel " << symbol << ": buffer "
                                 << buffer.name << " (scope \"shared.dyn\") has the non-constant "
                                 << "size " << to_script(extent);
        elements *= *c;
      }
      bytes += elements * buffer.dtype.bytes();
    });
    return bytes;
  }

  // The largest extent of the loops bound to each tag in `kernel`.
  std::map<std::string, Expr> launch_extents(const Stmt& kernel, const std::string& symbol) {
    std::map<std::string, Expr> extents;
    post_order_visit(kernel, [&](const Node* node) {
      if (node->kind() != NodeKind::For) return;
      const auto* loop = static_cast<const For*>(node);
      if (loop->kind != ForKind::kThreadBinding) return;
      user_check(is_launch_tag(loop->thread_tag))
          << "split_host_device: loop " << loop->loop_var->name << " of function " << name_
          << " is bound to '" << loop->thread_tag
          << "'; the GPU targets bind blockIdx.x/y/z and threadIdx.x/y/z";
      Expr extent = loop->extent;
      if (is_thread_loop(*loop)) {
        user_check(as_const_int(extent) != nullptr)
            << "split_host_device: loop " << loop->loop_var->name << " of kernel " << symbol
            << " is bound to " << loop->thread_tag << " with the extent " << to_script(extent)
            << "; the threads of a block must be a constant number: split the loop by a "
            << "constant factor and bind the inner part";
      }
      auto it = extents.find(loop->thread_tag);
      if (it == extents.end()) {
        extents.emplace(loop->thread_tag, extent);
      } else if (!structural_equal(it->second, extent)) {
        it->second = analyzer_.simplify(max(it->second, extent));
      }
    });
    return extents;
  }

  Stmt launch(const Stmt& kernel) {
    std::string base;
    for (char c : name_) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    std::string symbol = base + "_kernel" + std::to_string(kernels_->size());
    std::map<std::string, Expr> extents = launch_extents(kernel, symbol);
    // The parameters: the data of the buffers the kernel uses, then the scalars.
    std::vector<const Var*> free = free_vars(kernel);
    std::stable_partition(free.begin(), free.end(),
                          [](const Var* v) { return v->dtype.is_handle(); });

    auto device = make<PrimFunc>();
    device->body = kernel;
    for (const Var* v : free) device->params.push_back(Ref<Var>(v));
    device->attrs["global_symbol"] = make<StringImm>(symbol);
    device->attrs["kiln.device_kernel"] = bool_const(true);
    for (const auto& [tag, extent] : extents) device->attrs["kiln.launch." + tag] = extent;
    kernels_->push_back(device);

    std::vector<Expr> args = {make<StringImm>(symbol), device_id_};
    for (const char* tag : kLaunchTags) {
      auto it = extents.find(tag);
      args.push_back(it == extents.end() ? make_const(DataType::int64(), int64_t{1})
                                         : cast(DataType::int64(), it->second));
    }
    args.push_back(make_const(DataType::int64(), dynamic_shared_bytes(kernel, symbol)));
    for (const Ref<Var>& v : device->params) args.push_back(v);
    return make<Evaluate>(make<Call>(DataType::int32(), Builtin::DeviceLaunch, std::move(args)));
  }

  const PrimFunc& func_;
  std::string name_;
  std::vector<Ref<PrimFunc>>* kernels_;
  Expr device_id_;
  arith::Analyzer analyzer_;
};

}  // namespace

Ref<PrimFunc> split_host_device(const Ref<PrimFunc>& func, const std::string& name,
                                std::vector<Ref<PrimFunc>>* kernels) {
  internal_check(kernels != nullptr) << "split_host_device: null kernel list";
  HostSplitter splitter(*func, name, kernels);
  Ref<PrimFunc> host = with_body(func, splitter.mutate(func->body));
  if (host.same_as(func)) host = copy(func.get());
  host->attrs["kiln.device_host"] = bool_const(true);
  return host;
}

}  // namespace kiln::tir
