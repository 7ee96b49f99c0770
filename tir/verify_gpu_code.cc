// verify_gpu_code: the launch limits, memory scopes and barrier placement of one device kernel.
#include "kiln/tir/verify_gpu_code.h"

#include <sstream>
#include <unordered_set>

#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

class KernelChecker : public IRVisitor {
 public:
  KernelChecker(const PrimFunc& kernel, const GpuLimits& limits)
      : kernel_(kernel), limits_(limits) {
    auto it = kernel.attrs.find("global_symbol");
    const auto* s = it == kernel.attrs.end() ? nullptr : it->second.as<StringImm>();
    name_ = s != nullptr ? s->value : "?";
  }

  GpuCodeCheck check() {
    // Step 1. Threads per block.
    int64_t threads = 1;
    for (const char* tag : {"threadIdx.x", "threadIdx.y", "threadIdx.z"}) {
      const Expr* extent = launch_extent(tag);
      if (extent == nullptr) continue;
      const int64_t* c = as_const_int(*extent);
      internal_check(c != nullptr) << "verify_gpu_code: kernel " << name_ << ": " << tag
                                   << " has a non-constant launch extent";
      threads *= *c;
    }
    if (threads > limits_.max_threads_per_block) {
      fail(GpuCodeViolation::kTooManyThreads)
          << threads
          << " threads per block (the product of the threadIdx extents) exceed the target's "
             "limit "
          << limits_.max_threads_per_block << " (-max_threads_per_block); bind fewer threads";
      return result_;
    }
    // Step 2. Scopes and barriers, walking the body.
    visit_stmt(kernel_.body);
    if (result_.violation == GpuCodeViolation::kNone &&
        shared_bytes_ > limits_.max_shared_memory_per_block) {
      fail(GpuCodeViolation::kTooMuchSharedMemory)
          << shared_bytes_ << " bytes of shared memory exceed the target's limit "
          << limits_.max_shared_memory_per_block
          << " (-max_shared_memory_per_block); use smaller shared tiles";
    }
    int64_t static_limit = limits_.max_static_shared_memory_per_block;
    if (result_.violation == GpuCodeViolation::kNone && static_limit != 0 &&
        static_bytes_ > static_limit) {
      fail(GpuCodeViolation::kTooMuchStaticSharedMemory)
          << static_bytes_ << " bytes of \"shared\" memory exceed the " << static_limit
          << " bytes that shared arrays sized when the kernel is compiled may have; put the "
             "larger buffers in \"shared.dyn\" (dynamic shared memory, up to "
             "-max_shared_memory_per_block) or use smaller shared tiles";
    }
    return result_;
  }

 protected:
  using IRVisitor::visit;

  void visit(const For* op) override {
    if (!is_thread_loop(*op)) {
      // A loop whose bounds depend on the thread runs a different number of times per thread.
      bool divergent = uses_any(op->min, thread_vars_) || uses_any(op->extent, thread_vars_);
      if (divergent) ++divergent_;
      IRVisitor::visit(op);
      if (divergent) --divergent_;
      return;
    }
    thread_vars_.insert(op->loop_var.get());
    const Expr* launch = launch_extent(op->thread_tag);
    bool guarded = launch == nullptr || !structural_equal(*launch, op->extent);
    int saved_divergent = divergent_;
    if (guarded) ++divergent_;
    IRVisitor::visit(op);
    divergent_ = saved_divergent;
  }

  void visit(const IfThenElse* op) override {
    visit_expr(op->condition);
    bool divergent = uses_any(op->condition, thread_vars_);
    if (divergent) ++divergent_;
    visit_stmt(op->then_case);
    if (op->else_case.defined()) visit_stmt(op->else_case);
    if (divergent) --divergent_;
  }

  void visit(const Allocate* op) override {
    const Buffer& buffer = *op->buffer;
    if (is_shared_scope(buffer.scope)) {
      int64_t elements = 1;
      for (const Expr& extent : buffer.shape) {
        const int64_t* c = as_const_int(extent);
        if (c == nullptr) {
          fail(GpuCodeViolation::kSymbolicSharedMemory)
              << "shared buffer " << buffer.name << " has the non-constant size "
              << to_script(extent) << "; shared memory is sized when the kernel is compiled";
          return;
        }
        elements *= *c;
      }
      shared_bytes_ += elements * buffer.dtype.bytes();
      if (buffer.scope == "shared") static_bytes_ += elements * buffer.dtype.bytes();
    }
    IRVisitor::visit(op);
  }

  void visit(const Call* op) override {
    if (op->op == Builtin::StorageSync) {
      if (divergent_ != 0) {
        fail(GpuCodeViolation::kDivergentBarrier)
            << "a barrier (storage_sync) is in code that not every thread of the block reaches "
               "(under a condition on a threadIdx variable, in a loop whose bounds depend on one, "
               "or in a threadIdx loop shorter than the block); threads that skip it leave the "
               "others waiting forever. Make the "
               "loops that pass values through shared memory span the whole block";
      }
    }
    IRVisitor::visit(op);
  }

 private:
  const Expr* launch_extent(const std::string& tag) const {
    auto it = kernel_.attrs.find("kiln.launch." + tag);
    return it == kernel_.attrs.end() ? nullptr : &it->second;
  }

  // Records the first violation; the message is streamed into what it returns.
  class Failure {
   public:
    Failure(GpuCodeCheck* result, bool first) : result_(result), first_(first) {}
    ~Failure() {
      if (first_) result_->message += out_.str();
    }
    template <class T>
    Failure& operator<<(const T& value) {
      out_ << value;
      return *this;
    }

   private:
    GpuCodeCheck* result_;
    bool first_;
    std::ostringstream out_;
  };
  Failure fail(GpuCodeViolation violation) {
    bool first = result_.violation == GpuCodeViolation::kNone;
    if (first) {
      result_.violation = violation;
      result_.message = "verify_gpu_code: kernel " + name_ + ": ";
    }
    return Failure(&result_, first);
  }

  const PrimFunc& kernel_;
  const GpuLimits& limits_;
  GpuCodeCheck result_;
  std::string name_;
  std::unordered_set<const Var*> thread_vars_;
  int divergent_ = 0;
  int64_t shared_bytes_ = 0;
  int64_t static_bytes_ = 0;  // of "shared" buffers
};

}  // namespace

GpuCodeCheck check_gpu_code(const PrimFunc& kernel, const GpuLimits& limits) {
  return KernelChecker(kernel, limits).check();
}

void verify_gpu_code(const PrimFunc& kernel, const GpuLimits& limits) {
  GpuCodeCheck check = check_gpu_code(kernel, limits);
  user_check(check.violation == GpuCodeViolation::kNone) << check.message;
}

}  // namespace kiln::tir
