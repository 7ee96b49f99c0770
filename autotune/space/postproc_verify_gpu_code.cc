// The postprocessor verify_gpu_code (GPU targets): a candidate is lowered as the build would
// lower it and each kernel is checked against the target's limits, so that a candidate no GPU
// of the target could run (a block left to the host, too many threads per block, too much
// shared memory, a barrier some threads skip) is dropped before it is measured, counted under
// the reason.
#include "autotune/space/space_parts.h"
#include "kiln/driver/build.h"
#include "kiln/ir/functor.h"
#include "kiln/tir/pipeline.h"
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
    // Step 2. Lower as the build does, but check the kernels here, to name the violation.
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
    // Step 3. Each kernel within the target's limits.
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
