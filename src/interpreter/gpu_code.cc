// GPU semantics in the reference interpreter. A loop nest bound to blockIdx/threadIdx runs as a
// grid of thread blocks, one block after another. In a block every thread runs the nest's body
// on a Frame of its own (a loop bound to a tag is the thread's index along it), and the threads
// advance in lock step from one storage_sync to the next: thread 0 runs up to its next barrier,
// then thread 1, and so on; when all of them wait at the same barrier, the block's barrier epoch
// advances and they all go on. A statement that contains a barrier is compiled to a resumable
// node (stmt_compile.cc) that keeps, per thread, where it stands in Frame::states, so that a
// thread suspended at a barrier goes on from there.
#include <algorithm>
#include <array>
#include <limits>
#include <sstream>

#include "compiler.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::interpreter {

using namespace kiln::ir;

namespace {

const char* const kTagNames[6] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                  "threadIdx.x", "threadIdx.y", "threadIdx.z"};

// The GpuTag of `tag`, or -1.
int tag_index(const std::string& tag) {
  for (int k = 0; k < 6; ++k) {
    if (tag == kTagNames[k]) return k;
  }
  return -1;
}

// The most threads of one block the interpreter runs (GPUs allow 1024).
constexpr int64_t kMaxThreadsPerBlock = int64_t{1} << 16;

// A loop bound to a GPU tag, inside a grid: the thread's index along the tag plus the loop's
// min, under the guard `index < extent` when the launch has more threads along the tag than the
// loop has iterations (as the code generators emit it).
class ThreadLoopCode final : public StmtCode {
 public:
  ThreadLoopCode(std::string name, int tag, int slot, ExprCodePtr min, ExprCodePtr extent,
                 StmtCodePtr body, int state)
      : name_(std::move(name)),
        tag_(tag),
        slot_(slot),
        min_(std::move(min)),
        extent_(std::move(extent)),
        body_(std::move(body)),
        state_(state) {}

  void exec(Frame& frame) override {
    if (enter(frame)) body_->exec(frame);
  }

  bool run(Frame& frame) override {
    if (state_ < 0) return StmtCode::run(frame);
    int64_t& entered = frame.states[state_];
    if (entered == 0) {
      if (!enter(frame)) return true;
      entered = 1;
    }
    if (!body_->run(frame)) return false;
    entered = 0;
    return true;
  }

 private:
  // Binds the loop variable; returns false when the guard excludes this thread.
  bool enter(Frame& frame) {
    const GpuThread& thread = *frame.thread;
    int64_t extent = extent_->eval(frame)[0].i;
    int64_t launch = thread.block->extent[tag_];
    user_check(extent <= launch) << "tir.interpret: loop " << name_ << " is bound to "
                                 << kTagNames[tag_] << " with the extent " << extent
                                 << ", but the grid launches only " << launch << " along it";
    int64_t index = thread.index[tag_];
    if (index >= extent) return false;
    frame.slots[slot_].i = min_->eval(frame)[0].i + index;
    return true;
  }

  std::string name_;
  int tag_;
  int slot_;
  ExprCodePtr min_, extent_;
  StmtCodePtr body_;
  int state_;  // < 0: the body has no barrier
};

// A storage_sync: the thread stops here until every thread of its block has arrived.
class BarrierCode final : public StmtCode {
 public:
  BarrierCode(std::string name, int state) : name_(std::move(name)), state_(state) {}
  void exec(Frame&) override {
    internal_error << "tir.interpret: " << name_ << " run without a resumable parent";
  }
  bool run(Frame& frame) override {
    int64_t& waiting = frame.states[state_];
    if (waiting == 0) {
      waiting = 1;
      frame.thread->barrier = this;
      return false;
    }
    waiting = 0;
    frame.thread->barrier = nullptr;
    return true;
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  int state_;
};

// A loop nest bound to GPU tags, run as a grid of thread blocks. The launch extent of a tag is
// the largest value of its expressions (1 when it has none).
class GridCode final : public StmtCode {
 public:
  using Extents = std::array<std::vector<ExprCodePtr>, 6>;
  GridCode(std::string what, Extents extents, std::vector<std::pair<int, ExprCodePtr>> params,
           StmtCodePtr body)
      : what_(std::move(what)),
        extents_(std::move(extents)),
        params_(std::move(params)),
        body_(std::move(body)) {}

  void exec(Frame& frame) override {
    // Step 1. Bind the kernel's scalar parameters; evaluate the launch extents.
    for (auto& [slot, value] : params_) frame.slots[slot] = value->eval(frame)[0];
    GpuBlock block;
    for (int tag = 0; tag < 6; ++tag) {
      int64_t extent = extents_[tag].empty() ? 1 : std::numeric_limits<int64_t>::min();
      for (const ExprCodePtr& e : extents_[tag]) extent = std::max(extent, e->eval(frame)[0].i);
      if (extent <= 0) return;
      block.extent[tag] = extent;
    }
    int64_t nx = block.extent[kThreadIdxX], ny = block.extent[kThreadIdxY];
    int64_t nz = block.extent[kThreadIdxZ];
    user_check(nx <= kMaxThreadsPerBlock && ny <= kMaxThreadsPerBlock / nx &&
               nz <= kMaxThreadsPerBlock / (nx * ny))
        << "tir.interpret: " << what_ << " launches " << nx << " x " << ny << " x " << nz
        << " threads per block; the interpreter runs at most " << kMaxThreadsPerBlock;
    int64_t count = nx * ny * nz;
    std::vector<Frame> frames(count);
    std::vector<GpuThread> threads(count);
    // Step 2. The blocks, one after another, each on fresh thread frames.
    for (int64_t bz = 0; bz < block.extent[kBlockIdxZ]; ++bz) {
      for (int64_t by = 0; by < block.extent[kBlockIdxY]; ++by) {
        for (int64_t bx = 0; bx < block.extent[kBlockIdxX]; ++bx) {
          block.serial = ++frame.blocks_started;
          block.epoch = ++frame.epochs_started;
          for (int64_t t = 0; t < count; ++t) {
            GpuThread& thread = threads[t];
            int64_t index[6] = {bx, by, bz, t % nx, t / nx % ny, t / (nx * ny)};
            std::copy(index, index + 6, thread.index);
            thread.linear = t;
            thread.block = &block;
            thread.barrier = nullptr;
            Frame& f = frames[t];
            f.slots = frame.slots;
            f.storages = frame.storages;
            f.states.assign(frame.states.size(), 0);
            f.thread = &thread;
          }
          run_block(block, frames, threads, frame);
        }
      }
    }
  }

 private:
  // Step 3. Every thread runs to its next barrier, in turn, until all have finished.
  void run_block(GpuBlock& block, std::vector<Frame>& frames, std::vector<GpuThread>& threads,
                 Frame& outer) {
    int64_t count = static_cast<int64_t>(frames.size());
    while (true) {
      int64_t finished = -1, waiting = -1;
      for (int64_t t = 0; t < count; ++t) {
        if (body_->run(frames[t])) {
          if (finished < 0) finished = t;
        } else if (waiting < 0) {
          waiting = t;
        }
      }
      if (waiting < 0) return;
      const auto* barrier = static_cast<const BarrierCode*>(threads[waiting].barrier);
      user_check(finished < 0)
          << "tir.interpret: thread " << thread_text(block, waiting) << " of block "
          << block_text(threads[waiting]) << " waits at " << barrier->name() << ", but thread "
          << thread_text(block, finished)
          << " finished without reaching it: every thread of a block must reach each barrier "
             "(a storage_sync under a condition that differs between threads deadlocks a GPU)";
      for (int64_t t = 0; t < count; ++t) {
        const auto* other = static_cast<const BarrierCode*>(threads[t].barrier);
        user_check(other == barrier)
            << "tir.interpret: thread " << thread_text(block, waiting) << " of block "
            << block_text(threads[waiting]) << " waits at " << barrier->name() << ", but thread "
            << thread_text(block, t) << " waits at " << other->name()
            << ": every thread of a block must reach the same barriers in the same order";
      }
      block.epoch = ++outer.epochs_started;
    }
  }

  std::string what_;
  Extents extents_;
  std::vector<std::pair<int, ExprCodePtr>> params_;
  StmtCodePtr body_;
};

// Checks that `e` depends only on variables in scope where a grid starts.
void check_launch_extent(const Compiler& compiler, const For& loop, const Expr& e) {
  post_order_visit(e, [&](const Node* node) {
    if (node->kind() != NodeKind::Var) return;
    const auto* var = static_cast<const Var*>(node);
    user_check(compiler.in_scope(var))
        << "tir.interpret: the extent of loop " << loop.loop_var->name << " (bound to "
        << loop.thread_tag << ") depends on " << var->name
        << ", which is defined inside the GPU loop nest; the launch extent of each thread tag "
           "must be known when the grid starts";
  });
}

bool is_barrier(const Stmt& s) {
  if (s->kind() != NodeKind::Evaluate) return false;
  const auto* call = static_cast<const Evaluate*>(s.get())->value.as<Call>();
  return call != nullptr && call->op == Builtin::StorageSync;
}

bool block_has_barrier(const Block& block, std::unordered_set<const Node*>* syncing) {
  bool in_init = block.init.defined() && find_barriers(block.init, syncing);
  bool in_body = find_barriers(block.body, syncing);
  if (in_init || in_body) syncing->insert(&block);
  return in_init || in_body;
}

}  // namespace

bool find_barriers(const Stmt& s, std::unordered_set<const Node*>* syncing) {
  if (!s.defined()) return false;
  bool found = false;
  switch (s->kind()) {
    case NodeKind::Evaluate:
      found = is_barrier(s);
      break;
    case NodeKind::LetStmt:
      found = find_barriers(static_cast<const LetStmt*>(s.get())->body, syncing);
      break;
    case NodeKind::AssertStmt:
      found = find_barriers(static_cast<const AssertStmt*>(s.get())->body, syncing);
      break;
    case NodeKind::Allocate:
      found = find_barriers(static_cast<const Allocate*>(s.get())->body, syncing);
      break;
    case NodeKind::For:
      found = find_barriers(static_cast<const For*>(s.get())->body, syncing);
      break;
    case NodeKind::SeqStmt:
      for (const Stmt& inner : static_cast<const SeqStmt*>(s.get())->seq) {
        found = find_barriers(inner, syncing) || found;
      }
      break;
    case NodeKind::IfThenElse: {
      const auto* op = static_cast<const IfThenElse*>(s.get());
      bool in_then = find_barriers(op->then_case, syncing);
      bool in_else = find_barriers(op->else_case, syncing);
      found = in_then || in_else;
      break;
    }
    case NodeKind::Block:
      found = block_has_barrier(*static_cast<const Block*>(s.get()), syncing);
      break;
    case NodeKind::BlockRealize:
      found = block_has_barrier(*static_cast<const BlockRealize*>(s.get())->block, syncing);
      break;
    default:
      break;
  }
  if (found) syncing->insert(s.get());
  return found;
}

StmtCodePtr compile_grid(Compiler& compiler, const For& loop) {
  // Step 1. The launch extents: the extents of every loop of the nest bound to each tag,
  // evaluated where the nest starts.
  GridCode::Extents extents;
  post_order_visit(Stmt(&loop), [&](const Node* node) {
    if (node->kind() != NodeKind::For) return;
    const auto* inner = static_cast<const For*>(node);
    if (inner->kind != ForKind::kThreadBinding) return;
    int tag = tag_index(inner->thread_tag);
    user_check(tag >= 0) << "tir.interpret: loop " << inner->loop_var->name << " is bound to '"
                         << inner->thread_tag
                         << "'; with GPU semantics, loops are bound to blockIdx.x/y/z or "
                            "threadIdx.x/y/z";
    check_launch_extent(compiler, *inner, inner->extent);
    extents[tag].push_back(compiler.expr(inner->extent));
  });
  // Step 2. The nest, run by every thread.
  ++compiler.grid_depth;
  StmtCodePtr body = compile_thread_loop(compiler, loop);
  --compiler.grid_depth;
  return std::make_unique<GridCode>("the GPU loop nest of " + loop.loop_var->name,
                                    std::move(extents), std::vector<std::pair<int, ExprCodePtr>>(),
                                    std::move(body));
}

StmtCodePtr compile_thread_loop(Compiler& compiler, const For& loop) {
  int tag = tag_index(loop.thread_tag);
  user_check(tag >= 0) << "tir.interpret: loop " << loop.loop_var->name << " is bound to '"
                       << loop.thread_tag
                       << "'; with GPU semantics, loops are bound to blockIdx.x/y/z or "
                          "threadIdx.x/y/z";
  ExprCodePtr min = compiler.expr(loop.min);
  ExprCodePtr extent = compiler.expr(loop.extent);
  ScopedVar var(compiler, loop.loop_var.get());
  int state = compiler.is_syncing(&loop) ? compiler.new_states(1) : -1;
  StmtCodePtr body = compiler.stmt(loop.body);
  return std::make_unique<ThreadLoopCode>(loop.loop_var->name, tag, var.slot(), std::move(min),
                                          std::move(extent), std::move(body), state);
}

StmtCodePtr compile_barrier(Compiler& compiler, const Call& call) {
  user_check(compiler.in_grid())
      << "tir.interpret: storage_sync outside every loop bound to a GPU block or thread; a "
         "barrier synchronizes the threads of a block";
  std::ostringstream name;
  name << "storage_sync";
  if (!call.args.empty()) {
    if (const auto* scope = call.args[0].as<StringImm>()) name << "(\"" << scope->value << "\")";
  }
  name << " #" << ++compiler.num_barriers;
  if (!compiler.conditions.empty()) {
    name << " under `";
    for (size_t k = 0; k < compiler.conditions.size(); ++k) {
      name << (k > 0 ? " and " : "") << compiler.conditions[k];
    }
    name << "`";
  }
  return std::make_unique<BarrierCode>(name.str(), compiler.new_states(1));
}

StmtCodePtr compile_device_launch(Compiler& compiler, const Call& call) {
  // device_launch(symbol, device, grid x, y, z, block x, y, z, shared bytes, params...)
  const auto* symbol = call.args.empty() ? nullptr : call.args[0].as<StringImm>();
  user_check(symbol != nullptr && call.args.size() >= 9)
      << "tir.interpret: a device_launch call needs the kernel's name, the device, six launch "
         "extents and the dynamic shared memory size";
  auto it = compiler.kernels.find(symbol->value);
  user_check(it != compiler.kernels.end())
      << "tir.interpret: device_launch of kernel " << symbol->value
      << ", which is not among the kernels given; interpret the IRModule that "
         "tir.lower(func, target=...) returns, which holds the host function and its kernels";
  const PrimFunc& kernel = *it->second;
  user_check(!compiler.in_grid()) << "tir.interpret: device_launch of kernel " << symbol->value
                                  << " inside a GPU loop nest";
  user_check(call.args.size() == 9 + kernel.params.size())
      << "tir.interpret: device_launch of kernel " << symbol->value << " passes "
      << call.args.size() - 9 << " arguments; the kernel has " << kernel.params.size()
      << " parameters";
  // Step 1. The launch extents, from the call.
  GridCode::Extents extents;
  for (int tag = 0; tag < 6; ++tag) extents[tag].push_back(compiler.expr(call.args[2 + tag]));
  // Step 2. The parameters: buffer data are the caller's own data variables (split_host_device
  // passes them so), scalars take the values of their arguments.
  std::vector<std::pair<int, ExprCodePtr>> params;
  std::vector<std::unique_ptr<ScopedVar>> scoped;
  for (size_t k = 0; k < kernel.params.size(); ++k) {
    const Ref<Var>& param = kernel.params[k];
    const Expr& arg = call.args[9 + k];
    if (param->dtype.is_handle()) {
      user_check(arg.get() == param.get())
          << "tir.interpret: device_launch of kernel " << symbol->value << " passes "
          << to_script(arg) << " for the buffer data " << param->name
          << "; the interpreter runs kernels whose buffer parameters are the caller's own data "
             "variables, as split_host_device writes them";
      continue;
    }
    ExprCodePtr value = compiler.expr(arg);
    scoped.push_back(std::make_unique<ScopedVar>(compiler, param.get()));
    params.emplace_back(scoped.back()->slot(), std::move(value));
  }
  // Step 3. The kernel's body, run by every thread.
  find_barriers(kernel.body, &compiler.syncing);
  ++compiler.grid_depth;
  StmtCodePtr body = compiler.stmt(kernel.body);
  --compiler.grid_depth;
  return std::make_unique<GridCode>("kernel " + symbol->value, std::move(extents),
                                    std::move(params), std::move(body));
}

std::string thread_text(const GpuBlock& block, int64_t linear) {
  int64_t nx = block.extent[kThreadIdxX], ny = block.extent[kThreadIdxY];
  std::ostringstream text;
  text << "(" << linear % nx << ", " << linear / nx % ny << ", " << linear / (nx * ny) << ")";
  return text.str();
}

std::string block_text(const GpuThread& thread) {
  std::ostringstream text;
  text << "(" << thread.index[kBlockIdxX] << ", " << thread.index[kBlockIdxY] << ", "
       << thread.index[kBlockIdxZ] << ")";
  return text.str();
}

}  // namespace kiln::interpreter
