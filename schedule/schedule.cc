// The schedule's state: handles, the index of each function's blocks and loops, replacement of
// functions by primitives, and the random state of sampling.
#include "kiln/schedule/schedule.h"

#include <chrono>

#include "kiln/ir/functor.h"

namespace kiln::schedule {

using namespace kiln::ir;

// ---------------------------------------------------------------------------------------------
// FunctionIndex

namespace {

class IndexBuilder : public IRVisitor {
 public:
  IndexBuilder(std::unordered_map<std::string, BlockLocation>* blocks,
               std::unordered_map<const Var*, LoopLocation>* loops,
               std::unordered_map<const StmtNode*, const StmtNode*>* parents,
               std::vector<std::string>* block_names)
      : blocks_(blocks), loops_(loops), parents_(parents), block_names_(block_names) {}

  void run(const Stmt& body) { visit_child(body); }

 protected:
  using IRVisitor::visit;

  void visit_child(const Stmt& s) {
    if (!s.defined()) return;
    (*parents_)[s.get()] = parent_;
    const StmtNode* saved = parent_;
    parent_ = s.get();
    visit_stmt(s);
    parent_ = saved;
  }

  void visit(const For* op) override {
    (*loops_)[op->loop_var.get()] = LoopLocation{op, scope_};
    loop_stack_.push_back(op);
    visit_child(op->body);
    loop_stack_.pop_back();
  }

  void visit(const BlockRealize* op) override {
    const Block* block = op->block.get();
    (*parents_)[block] = op;
    BlockLocation location{op, block, scope_, loop_stack_};
    auto inserted = blocks_->emplace(block->name, location);
    internal_check(inserted.second) << "schedule: two blocks are named '" << block->name
                                    << "'; block names must be unique within a function";
    block_names_->push_back(block->name);
    const Block* saved_scope = scope_;
    std::vector<const For*> saved_loops;
    saved_loops.swap(loop_stack_);
    scope_ = block;
    const StmtNode* saved_parent = parent_;
    parent_ = block;
    visit_child(block->init);
    visit_child(block->body);
    parent_ = saved_parent;
    scope_ = saved_scope;
    loop_stack_.swap(saved_loops);
  }

  void visit(const SeqStmt* op) override {
    for (const Stmt& s : op->seq) visit_child(s);
  }
  void visit(const IfThenElse* op) override {
    visit_child(op->then_case);
    visit_child(op->else_case);
  }
  void visit(const LetStmt* op) override { visit_child(op->body); }
  void visit(const AssertStmt* op) override { visit_child(op->body); }
  void visit(const Allocate* op) override { visit_child(op->body); }
  void visit(const Block* op) override {
    internal_error << "schedule: block '" << op->name << "' is not inside a BlockRealize";
  }

 private:
  std::unordered_map<std::string, BlockLocation>* blocks_;
  std::unordered_map<const Var*, LoopLocation>* loops_;
  std::unordered_map<const StmtNode*, const StmtNode*>* parents_;
  std::vector<std::string>* block_names_;
  const StmtNode* parent_ = nullptr;
  const Block* scope_ = nullptr;
  std::vector<const For*> loop_stack_;
};

}  // namespace

FunctionIndex::FunctionIndex(const Ref<PrimFunc>& func) : func_(func) {
  IndexBuilder(&blocks_, &loops_, &parents_, &block_names_).run(func->body);
}

const BlockLocation* FunctionIndex::find_block(const std::string& name) const {
  auto it = blocks_.find(name);
  return it == blocks_.end() ? nullptr : &it->second;
}

const LoopLocation* FunctionIndex::find_loop(const Var* loop_var) const {
  auto it = loops_.find(loop_var);
  return it == loops_.end() ? nullptr : &it->second;
}

const StmtNode* FunctionIndex::parent(const StmtNode* stmt) const {
  auto it = parents_.find(stmt);
  return it == parents_.end() ? nullptr : it->second;
}

// ---------------------------------------------------------------------------------------------
// Schedule

namespace {

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

}  // namespace

Schedule::Schedule(Ref<IRModule> mod, std::optional<uint64_t> seed) : mod_(std::move(mod)) {
  user_check(mod_.defined() && !mod_->functions.empty())
      << "tir.Schedule: expected a PrimFunc or an IRModule with at least one function";
  uint64_t s =
      seed.has_value()
          ? *seed
          : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  this->seed(s);
}

void Schedule::seed(uint64_t value) {
  uint64_t state = value;
  for (uint64_t& word : rng_) word = splitmix64(&state);
}

uint64_t Schedule::next_random() {
  uint64_t result = rotl(rng_[1] * 5, 7) * 9;
  uint64_t t = rng_[1] << 17;
  rng_[2] ^= rng_[0];
  rng_[3] ^= rng_[1];
  rng_[1] ^= rng_[2];
  rng_[0] ^= rng_[3];
  rng_[2] ^= t;
  rng_[3] = rotl(rng_[3], 45);
  return result;
}

RV Schedule::new_block_rv(const std::string& func_name, const std::string& block_name) {
  RV rv{RVKind::kBlock, next_id_++};
  Handle h;
  h.kind = RVKind::kBlock;
  h.func_name = func_name;
  h.block_name = block_name;
  handles_[rv.id] = std::move(h);
  return rv;
}

RV Schedule::new_loop_rv(const std::string& func_name, const Ref<Var>& loop_var) {
  RV rv{RVKind::kLoop, next_id_++};
  Handle h;
  h.kind = RVKind::kLoop;
  h.func_name = func_name;
  h.loop_var = loop_var;
  handles_[rv.id] = std::move(h);
  return rv;
}

RV Schedule::new_expr_rv(const Expr& value) {
  RV rv{RVKind::kExpr, next_id_++};
  Handle h;
  h.kind = RVKind::kExpr;
  h.value = value;
  handles_[rv.id] = std::move(h);
  return rv;
}

namespace {
const char* rv_kind_name(RVKind kind) {
  switch (kind) {
    case RVKind::kBlock:
      return "a block handle (BlockRV)";
    case RVKind::kLoop:
      return "a loop handle (LoopRV)";
    case RVKind::kExpr:
      return "a value handle (ExprRV)";
  }
  return "?";
}
}  // namespace

const Schedule::Handle& Schedule::handle(const RV& rv, const char* primitive) const {
  auto it = handles_.find(rv.id);
  user_check(it != handles_.end())
      << primitive << ": handle " << rv.name() << " does not belong to this schedule";
  type_check(it->second.kind == rv.kind)
      << primitive << ": handle " << rv.name() << " is " << rv_kind_name(it->second.kind);
  return it->second;
}

FunctionIndex& Schedule::index(const std::string& func_name) {
  auto it = indices_.find(func_name);
  if (it == indices_.end()) {
    it = indices_.emplace(func_name, std::make_shared<FunctionIndex>(func(func_name))).first;
  }
  return *it->second;
}

const BlockLocation& Schedule::block(const RV& rv, const char* primitive) {
  type_check(rv.kind == RVKind::kBlock)
      << primitive << ": expected a block handle (BlockRV), found " << rv_kind_name(rv.kind);
  const Handle& h = handle(rv, primitive);
  if (!h.removed_by.empty()) {
    schedule_error("StaleHandleError", primitive,
                   "the block handle " + rv.name() + " (block '" + h.block_name +
                       "') is stale: the block was removed by " + h.removed_by);
  }
  const BlockLocation* location = index(h.func_name).find_block(h.block_name);
  if (location == nullptr) {
    schedule_error("StaleHandleError", primitive,
                   "the block handle " + rv.name() + " names block '" + h.block_name +
                       "', which is no longer in function '" + h.func_name + "'");
  }
  return *location;
}

const LoopLocation& Schedule::loop(const RV& rv, const char* primitive) {
  type_check(rv.kind == RVKind::kLoop)
      << primitive << ": expected a loop handle (LoopRV), found " << rv_kind_name(rv.kind);
  const Handle& h = handle(rv, primitive);
  if (!h.removed_by.empty()) {
    schedule_error("StaleHandleError", primitive,
                   "the loop handle " + rv.name() + " (loop '" + h.loop_var->name +
                       "') is stale: the loop was removed by " + h.removed_by);
  }
  const LoopLocation* location = index(h.func_name).find_loop(h.loop_var.get());
  if (location == nullptr) {
    schedule_error("StaleHandleError", primitive,
                   "the loop handle " + rv.name() + " names loop '" + h.loop_var->name +
                       "', which is no longer in function '" + h.func_name + "'");
  }
  return *location;
}

Expr Schedule::expr(const RV& rv, const char* primitive) const {
  type_check(rv.kind == RVKind::kExpr)
      << primitive << ": expected a value handle (ExprRV), found " << rv_kind_name(rv.kind);
  return handle(rv, primitive).value;
}

const std::string& Schedule::func_name(const RV& rv) const {
  return handle(rv, "schedule").func_name;
}

void Schedule::replace(const std::string& func_name, Ref<PrimFunc> new_func, const char* primitive,
                       const std::vector<const Var*>& removed_loops,
                       const std::vector<std::string>& removed_blocks) {
  auto mod = ir::copy(mod_.get());
  mod->functions[func_name] = std::move(new_func);
  mod_ = mod;
  indices_.erase(func_name);
  for (auto& [id, h] : handles_) {
    if (h.func_name != func_name || !h.removed_by.empty()) continue;
    if (h.kind == RVKind::kLoop) {
      for (const Var* v : removed_loops) {
        if (h.loop_var.get() == v) h.removed_by = primitive;
      }
    } else if (h.kind == RVKind::kBlock) {
      for (const std::string& name : removed_blocks) {
        if (h.block_name == name) h.removed_by = primitive;
      }
    }
  }
}

}  // namespace kiln::schedule
