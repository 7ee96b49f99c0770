// Inlining: compute_inline and reverse_compute_inline.
#include "kiln/schedule/compute_inline.h"

#include <algorithm>
#include <unordered_set>

#include "block_dependence.h"
#include "instruction_registry.h"
#include "kiln/arith/int_set.h"
#include "kiln/arith/iter_map.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "schedule_util.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// The body of `block` when it is a single BufferStore and the block has no init.
const BufferStore* single_store(const Block* block) {
  if (block->init.defined()) return nullptr;
  return block->body.as<BufferStore>();
}

// For a store whose indices are distinct iterators of `block`, all of them: the position in
// iter_vars of the iterator indexing each dimension. Empty otherwise.
std::vector<size_t> store_permutation(const Block* block, const BufferStore* store) {
  std::vector<size_t> perm;
  if (store->indices.size() != block->iter_vars.size()) return {};
  for (const Expr& index : store->indices) {
    const Var* v = index.as<Var>();
    size_t k = 0;
    while (k < block->iter_vars.size() && block->iter_vars[k].var.get() != v) ++k;
    if (k == block->iter_vars.size() || std::count(perm.begin(), perm.end(), k) != 0) return {};
    perm.push_back(k);
  }
  return perm;
}

// The first use of `buffer` other than a load or a store of one of its elements (its data
// pointer as a value, or the address of one of its elements), and its first load at vector
// indices (a tensorized block's operand, `B[v, T.Ramp(k * 4, 1, 4)]`).
class AccessFinder : public IRVisitor {
 public:
  explicit AccessFinder(const Buffer* buffer) : buffer_(buffer) {}
  const Node* opaque = nullptr;
  const BufferLoad* vector_load = nullptr;

 protected:
  using IRVisitor::visit;
  void visit(const Var* op) override {
    if (op == buffer_->data.get() && opaque == nullptr) opaque = op;
  }
  void visit(const Call* op) override {
    if (op->op == Builtin::AddressOf && opaque == nullptr) {
      for (const Expr& arg : op->args) {
        const BufferLoad* load = arg.as<BufferLoad>();
        if (load != nullptr && load->buffer.get() == buffer_) opaque = op;
      }
    }
    IRVisitor::visit(op);
  }
  void visit(const BufferLoad* op) override {
    if (op->buffer.get() == buffer_ && vector_load == nullptr) {
      for (const Expr& i : op->indices) {
        if (i->dtype.lanes() > 1) vector_load = op;
      }
    }
    IRVisitor::visit(op);
  }

 private:
  const Buffer* buffer_;
};

// Checks that `buffer` is accessed only by loads and stores and, with `scalar_loads`, only
// loaded at scalar indices: compute_inline's expression is scalar, and put at vector indices
// its iterators would become vectors inside scalar operations (a scalar condition over a ramp,
// a scalar load at vector indices), which no later pass retypes.
void check_accesses(const Ref<PrimFunc>& func, const Buffer* buffer, const char* primitive,
                    bool scalar_loads) {
  AccessFinder finder(buffer);
  finder.visit_stmt(func->body);
  if (finder.opaque != nullptr) {
    schedule_error("OpaqueAccessError", primitive,
                   "buffer '" + buffer->name +
                       "' is accessed opaquely (through its data pointer or the address of an "
                       "element), not only by loads and stores",
                   func, finder.opaque);
  }
  if (scalar_loads && finder.vector_load != nullptr) {
    schedule_error("VectorAccessError", primitive,
                   "buffer '" + buffer->name + "' is loaded with vector indices (" +
                       to_script(Expr(finder.vector_load)) +
                       ", a tensorized block's operand); only scalar loads can take the "
                       "block's expression",
                   func, finder.vector_load);
  }
}

// `regions` plus `extra`: a region of a buffer already listed is merged into its entry (the
// hull of both per dimension), an equal one is dropped.
void add_region(std::vector<BufferRegion>* regions, const BufferRegion& extra,
                arith::Analyzer* analyzer) {
  for (BufferRegion& r : *regions) {
    if (!r.buffer.same_as(extra.buffer)) continue;
    for (size_t d = 0; d < r.region.size(); ++d) {
      const Range& a = r.region[d];
      const Range& b = extra.region[d];
      if (structural_equal(a.min, b.min) && structural_equal(a.extent, b.extent)) continue;
      Expr lo = analyzer->simplify(min(a.min, b.min));
      Expr end = analyzer->simplify(max(a.min + a.extent, b.min + b.extent));
      r.region[d] = Range{lo, analyzer->simplify(end - lo)};
    }
    return;
  }
  regions->push_back(extra);
}

std::vector<Range> substitute_region(const std::vector<Range>& region, const VarMap& vmap) {
  std::vector<Range> out;
  for (const Range& r : region)
    out.push_back(Range{substitute(r.min, vmap), substitute(r.extent, vmap)});
  return out;
}

// The regions `producer` reads to compute the part `consumed` of its output, given the
// iterator of each output dimension (`perm`).
std::vector<BufferRegion> reads_for(const Block* producer, const std::vector<size_t>& perm,
                                    const BufferRegion& consumed, arith::Analyzer* analyzer) {
  bool points = true;
  for (const Range& r : consumed.region) points = points && is_const_int(r.extent, 1);
  std::vector<BufferRegion> out;
  if (points) {
    VarMap vmap;
    for (size_t d = 0; d < perm.size(); ++d) {
      vmap[producer->iter_vars[perm[d]].var.get()] = consumed.region[d].min;
    }
    for (const BufferRegion& r : producer->reads) {
      out.push_back(BufferRegion{r.buffer, substitute_region(r.region, vmap)});
    }
    return out;
  }
  std::unordered_map<const Var*, Range> ranges;
  for (size_t d = 0; d < perm.size(); ++d) {
    ranges[producer->iter_vars[perm[d]].var.get()] = consumed.region[d];
  }
  arith::IntSetMap dom_map = arith::int_set_map(ranges);
  for (const BufferRegion& r : producer->reads) {
    out.push_back(
        BufferRegion{r.buffer, arith::eval_region(r.region, dom_map, analyzer, r.buffer->shape)});
  }
  return out;
}

// Substitutes the producer's expression for its loads, fixes the read regions of the blocks
// that read the buffer, and drops the buffer's allocation.
class Inliner : public IRMutator {
 public:
  Inliner(const Block* producer, const BufferStore* store, std::vector<size_t> perm)
      : producer_(producer), store_(store), buffer_(store->buffer.get()), perm_(std::move(perm)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr visit(const BufferLoad* op) override {
    Expr e = IRMutator::visit(op);
    const BufferLoad* load = e.as<BufferLoad>();
    if (load == nullptr || load->buffer.get() != buffer_) return e;
    VarMap vmap;
    for (size_t d = 0; d < perm_.size(); ++d) {
      vmap[producer_->iter_vars[perm_[d]].var.get()] = load->indices[d];
    }
    return substitute(store_->value, vmap);
  }

  Stmt visit(const Block* op) override {
    Stmt s = IRMutator::visit(op);
    const Block* b = s.as<Block>();
    bool reads = false;
    for (const BufferRegion& r : b->reads) reads |= r.buffer.get() == buffer_;
    bool allocates = false;
    for (const Ref<Buffer>& a : b->alloc_buffers) allocates |= a.get() == buffer_;
    if (!reads && !allocates) return s;
    auto n = copy(b);
    if (reads) {
      std::vector<BufferRegion> regions;
      for (const BufferRegion& r : b->reads) {
        if (r.buffer.get() != buffer_) {
          add_region(&regions, r, &analyzer_);
          continue;
        }
        for (const BufferRegion& x : reads_for(producer_, perm_, r, &analyzer_)) {
          add_region(&regions, x, &analyzer_);
        }
      }
      n->reads = std::move(regions);
    }
    if (allocates) {
      n->alloc_buffers.erase(
          std::remove_if(n->alloc_buffers.begin(), n->alloc_buffers.end(),
                         [&](const Ref<Buffer>& a) { return a.get() == buffer_; }),
          n->alloc_buffers.end());
    }
    return n;
  }

 private:
  const Block* producer_;
  const BufferStore* store_;
  const Buffer* buffer_;
  std::vector<size_t> perm_;
  arith::Analyzer analyzer_;
};

// Replaces the loads of `buffer` (all of one element) by `value`.
class LoadReplacer : public IRMutator {
 public:
  LoadReplacer(const Buffer* buffer, Expr value) : buffer_(buffer), value_(std::move(value)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const BufferLoad* op) override {
    if (op->buffer.get() == buffer_) return value_;
    return IRMutator::visit(op);
  }

 private:
  const Buffer* buffer_;
  Expr value_;
};

// The loads of `buffer` in `e`, in evaluation order.
std::vector<const BufferLoad*> loads_of(const Expr& e, const Buffer* buffer) {
  std::vector<const BufferLoad*> loads;
  post_order_visit(e, [&](const Node* node) {
    if (node->kind() == NodeKind::BufferLoad &&
        static_cast<const BufferLoad*>(node)->buffer.get() == buffer) {
      loads.push_back(static_cast<const BufferLoad*>(node));
    }
  });
  return loads;
}

void check_pipeline(const FunctionIndex& index, const BlockLocation& block,
                    const Ref<PrimFunc>& func, const char* primitive) {
  if (block.scope == nullptr) {
    schedule_error("NotCompleteBlockError", primitive,
                   "block '" + block.block->name + "' is the root block", func, block.block);
  }
  Violation pipeline = check_stage_pipeline(index, block.scope);
  if (!pipeline.ok()) {
    schedule_error("NotStagePipelineError", primitive,
                   "the scope of block '" + block.block->name +
                       "' is not a stage pipeline: " + pipeline.reason,
                   func, pipeline.where);
  }
}

}  // namespace

BlockRewrite plan_compute_inline(Schedule& sch, const RV& block_rv, const char* primitive) {
  // Step 1. Resolve the block.
  const BlockLocation& loc = sch.block(block_rv, primitive);
  const std::string& func_name = sch.func_name(block_rv);
  Ref<PrimFunc> func = sch.func(func_name);
  FunctionIndex& index = sch.index(func_name);
  const Block* block = loc.block;
  std::string name = "'" + block->name + "'";
  // Step 2. Check the scope, the block and its body.
  check_pipeline(index, loc, func, primitive);
  if (const Buffer* out = output_buffer(loc)) {
    schedule_error("OutputBlockError", primitive,
                   "block " + name + " writes buffer '" + out->name +
                       "', which its scope does not allocate (an output); an output cannot be "
                       "inlined",
                   func, loc.realize);
  }
  std::string why = why_not_complete(index, loc);
  if (!why.empty()) {
    schedule_error("NotCompleteBlockError", primitive,
                   "block " + name + " is not a complete block: " + why, func, loc.realize);
  }
  const BufferStore* store = single_store(block);
  std::vector<size_t> perm;
  if (store != nullptr && block->writes.size() == 1 &&
      block->writes[0].buffer.same_as(store->buffer)) {
    perm = store_permutation(block, store);
  }
  if (store == nullptr || perm.empty()) {
    schedule_error("BodyAnalysisError", primitive,
                   "the body of block " + name +
                       " must be a single store `B[v0, v1, ...] = f(...)` indexed by its "
                       "iterators (each once, all of them), with no init",
                   func, block->body.defined() ? block->body.get() : block);
  }
  check_accesses(func, store->buffer.get(), primitive, /*scalar_loads=*/true);
  // Step 3. Remove the block, then substitute its expression for the loads of its buffer.
  BlockRemoval removal = plan_block_removal(loc);
  Stmt body = replace_stmt(func->body, removal.target, Stmt());
  body = Inliner(block, store, perm).mutate(body);
  return BlockRewrite{with_body(func, body), removal.loops, {block->name}};
}

BlockRewrite plan_reverse_compute_inline(Schedule& sch, const RV& block_rv, const char* primitive) {
  // Step 1. Resolve the block and its producer.
  const BlockLocation& loc = sch.block(block_rv, primitive);
  const std::string& func_name = sch.func_name(block_rv);
  Ref<PrimFunc> func = sch.func(func_name);
  FunctionIndex& index = sch.index(func_name);
  const Block* block = loc.block;
  std::string name = "'" + block->name + "'";
  // Step 2. Check the scope, the block, its producer and the load between them.
  check_pipeline(index, loc, func, primitive);
  std::string why = why_not_complete(index, loc);
  if (!why.empty()) {
    schedule_error("NotCompleteBlockError", primitive,
                   "block " + name + " is not a complete block: " + why, func, loc.realize);
  }
  const BufferStore* store = single_store(block);
  if (store == nullptr) {
    schedule_error("BodyAnalysisError", primitive,
                   "the body of block " + name + " must be a single store, with no init", func,
                   block->body.defined() ? block->body.get() : block);
  }
  std::vector<const BlockLocation*> producers = producers_of(index, loc);
  if (producers.size() != 1) {
    std::string names;
    for (const BlockLocation* p : producers) {
      names += (names.empty() ? "'" : ", '") + p->block->name + "'";
    }
    schedule_error("NonSingleProducerError", primitive,
                   "block " + name + " must have exactly one producer in its scope, found " +
                       std::to_string(producers.size()) + (names.empty() ? "" : " (" + names + ")"),
                   func, loc.realize);
  }
  const BlockLocation& producer = *producers[0];
  std::string pname = "'" + producer.block->name + "'";
  std::string why_producer = why_not_complete(index, producer);
  if (!why_producer.empty()) {
    schedule_error(
        "NonSingleProducerError", primitive,
        "the producer " + pname + " of block " + name + " is not a complete block: " + why_producer,
        func, producer.realize);
  }
  std::vector<const BlockLocation*> consumers = consumers_of(index, producer);
  if (consumers.size() != 1) {
    schedule_error("NonSingleProducerError", primitive,
                   "the producer " + pname + " of block " + name + " has " +
                       std::to_string(consumers.size()) + " consumers; block " + name +
                       " must be its only consumer",
                   func, producer.realize);
  }
  const BufferStore* pstore = single_store(producer.block);
  std::vector<size_t> perm;
  if (pstore != nullptr) perm = store_permutation(producer.block, pstore);
  if (pstore == nullptr || perm.empty()) {
    schedule_error("BodyAnalysisError", primitive,
                   "the body of the producer " + pname +
                       " must be a single store `B[w0, w1, ...] = e` indexed by its iterators "
                       "(each once, all of them), with no init",
                   func, producer.realize);
  }
  if (const Buffer* out = output_buffer(producer)) {
    schedule_error("OutputBlockError", primitive,
                   "the producer " + pname + " writes buffer '" + out->name +
                       "', which its scope does not allocate (an output); it cannot be removed",
                   func, producer.realize);
  }
  const Buffer* buffer = pstore->buffer.get();
  std::vector<const BufferLoad*> loads = loads_of(store->value, buffer);
  size_t index_loads = 0;
  for (const Expr& i : store->indices) index_loads += loads_of(i, buffer).size();
  bool same_point = !loads.empty();
  for (const BufferLoad* l : loads) {
    for (size_t d = 0; d < l->indices.size() && same_point; ++d) {
      same_point = structural_equal(l->indices[d], loads[0]->indices[d]);
    }
  }
  if (!same_point || index_loads != 0) {
    schedule_error("BodyAnalysisError", primitive,
                   "block " + name + " must read one element of buffer '" + buffer->name +
                       "' (every load at the same indices), in the value it stores; found " +
                       std::to_string(loads.size() + index_loads) +
                       " loads that do not all read the same element",
                   func, store);
  }
  check_accesses(func, buffer, primitive, /*scalar_loads=*/false);
  const BufferLoad* load = loads[0];
  arith::Analyzer analyzer;
  arith::IterRanges iters;
  for (const IterVar& iv : block->iter_vars) iters[iv.var.get()] = iv.dom;
  arith::IterMapResult map = arith::detect_iter_map(load->indices, iters, bool_const(true),
                                                    arith::IterMapLevel::kBijective, &analyzer);
  if (!map.ok()) {
    schedule_error("NotBijectiveAffineIndexError", primitive,
                   "the indices of the load of '" + buffer->name + "' in block " + name +
                       " are not a bijective affine map of its iterators: " + map.errors[0],
                   func, load);
  }
  if (!is_const_int(loc.realize->predicate, 1)) {
    arith::Analyzer pa;
    std::unordered_map<const Var*, bool> bound;
    bind_loops(loc.loops, &pa, &bound);
    Expr inside = bool_const(true);
    for (size_t k = 0; k < block->iter_vars.size(); ++k) {
      const Range& dom = block->iter_vars[k].dom;
      const Expr& value = loc.realize->iter_values[k];
      inside =
          logical_and(inside, logical_and(ge(value, dom.min), lt(value, dom.min + dom.extent)));
    }
    auto scope = pa.enter_constraint(inside);
    if (!pa.can_prove(loc.realize->predicate)) {
      schedule_error("ConsumerPredicateError", primitive,
                     "block " + name + " has the predicate " + to_script(loc.realize->predicate) +
                         ", which does not follow from its iterators being in their domains",
                     func, loc.realize);
    }
  }
  // Every iteration of the block must read an element that the producer computes: the new
  // producer runs only over the producer's iterations, and the others would be lost.
  {
    std::unordered_map<const Var*, Range> doms;
    for (const IterVar& iv : block->iter_vars) doms[iv.var.get()] = iv.dom;
    arith::IntSetMap dom_map = arith::int_set_map(doms);
    arith::Analyzer bounds;
    for (const IterVar& iv : block->iter_vars) bounds.bind(iv.var, iv.dom);
    for (size_t d = 0; d < load->indices.size(); ++d) {
      const Range& pdom = producer.block->iter_vars[perm[d]].dom;
      const Expr& i = load->indices[d];
      if (bounds.can_prove(ge(i, pdom.min)) && bounds.can_prove(lt(i, pdom.min + pdom.extent))) {
        continue;
      }
      Range read = arith::eval_set(i, dom_map, &bounds).cover_range(&bounds);
      schedule_error("RegionNotCoverableError", primitive,
                     "block " + name + " reads " + to_script(read.min) + " to " +
                         to_script(bounds.simplify(read.min + read.extent)) +
                         " (exclusive) of dimension " + std::to_string(d) + " of buffer '" +
                         buffer->name + "', but its producer " + pname + " computes only " +
                         to_script(pdom.min) + " to " +
                         to_script(bounds.simplify(pdom.min + pdom.extent)) +
                         " of it; the iterations that read the rest would be lost",
                     func, load);
    }
  }
  // Step 3. Express the block's iterators in the producer's and build the new producer.
  const Block* pblock = producer.block;
  std::vector<Expr> outputs(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) outputs[d] = pblock->iter_vars[perm[d]].var;
  VarMap inverse = arith::inverse_affine_map(map.indices, outputs, &analyzer);
  // The inverse leaves out iterators of extent 1: they are constants, their domain's minimum.
  for (const IterVar& iv : block->iter_vars) {
    if (inverse.count(iv.var.get()) == 0 && is_const_int(iv.dom.extent, 1)) {
      inverse[iv.var.get()] = iv.dom.min;
    }
  }
  Expr value = substitute(LoadReplacer(buffer, pstore->value).mutate(store->value), inverse);
  std::vector<Expr> indices;
  for (const Expr& i : store->indices) indices.push_back(substitute(i, inverse));
  auto new_block = copy(pblock);
  new_block->body = buffer_store(store->buffer, value, indices);
  new_block->writes.clear();
  for (const BufferRegion& w : block->writes) {
    new_block->writes.push_back(BufferRegion{w.buffer, substitute_region(w.region, inverse)});
  }
  for (const BufferRegion& r : block->reads) {
    if (r.buffer.get() == buffer) continue;
    add_region(&new_block->reads, BufferRegion{r.buffer, substitute_region(r.region, inverse)},
               &analyzer);
  }
  // Where the inverse leaves the block's domain, a predicate skips the producer's iteration.
  arith::Analyzer domain;
  for (const IterVar& iv : pblock->iter_vars) domain.bind(iv.var, iv.dom);
  VarMap bindings = block_bindings(producer);
  Expr predicate = producer.realize->predicate;
  auto add_condition = [&](const Expr& condition) {
    if (domain.can_prove(condition)) return;
    Expr c = domain.simplify(substitute(condition, bindings));
    predicate = is_const_int(predicate, 1) ? c : logical_and(predicate, c);
  };
  for (const IterVar& iv : block->iter_vars) {
    auto it = inverse.find(iv.var.get());
    internal_check(it != inverse.end())
        << "reverse_compute_inline: the inverse map has no value for iterator " << iv.var->name;
    const Expr& v = it->second;
    add_condition(ge(v, iv.dom.min));
    add_condition(lt(v, domain.simplify(iv.dom.min + iv.dom.extent)));
  }
  // ... and where the element it computes is not the one the block reads there: an iterator of
  // extent 1, which the inverse fixes to its minimum, reads one element of a dimension the
  // producer may compute more of (the first column of a product padded to whole panels).
  for (size_t d = 0; d < load->indices.size(); ++d) {
    add_condition(eq(substitute(load->indices[d], inverse), outputs[d]));
  }
  Stmt realize = make<BlockRealize>(producer.realize->iter_values, predicate, new_block);
  // Step 4. Replace the producer, remove the block, and drop the buffer's allocation.
  BlockRemoval removal = plan_block_removal(loc);
  Stmt scope_body = replace_stmt(loc.scope->body, producer.realize, realize);
  scope_body = replace_stmt(scope_body, removal.target, Stmt());
  auto scope = copy(loc.scope);
  scope->body = scope_body;
  scope->alloc_buffers.erase(
      std::remove_if(scope->alloc_buffers.begin(), scope->alloc_buffers.end(),
                     [&](const Ref<Buffer>& a) { return a.get() == buffer; }),
      scope->alloc_buffers.end());
  Stmt body = replace_stmt(func->body, loc.scope, scope);
  return BlockRewrite{with_body(func, body), removal.loops, {block->name}};
}

void compute_inline(Schedule& sch, const RV& block) {
  const char* primitive = "compute_inline";
  apply_rewrite(sch, sch.func_name(block), plan_compute_inline(sch, block, primitive), primitive);
  sch.record(Instruction{primitive, Json::array({block.name()}), Json::object(), {}, Json()});
}

void reverse_compute_inline(Schedule& sch, const RV& block) {
  const char* primitive = "reverse_compute_inline";
  apply_rewrite(sch, sch.func_name(block), plan_reverse_compute_inline(sch, block, primitive),
                primitive);
  sch.record(Instruction{primitive, Json::array({block.name()}), Json::object(), {}, Json()});
}

bool can_compute_inline(Schedule& sch, const RV& block) {
  try {
    plan_compute_inline(sch, block, "compute_inline");
    return true;
  } catch (const ScheduleError&) {
    return false;
  }
}

bool can_reverse_compute_inline(Schedule& sch, const RV& block) {
  try {
    plan_reverse_compute_inline(sch, block, "reverse_compute_inline");
    return true;
  } catch (const ScheduleError&) {
    return false;
  }
}

void register_compute_inline_instructions(std::vector<InstructionKind>* kinds) {
  kinds->push_back({"compute_inline",
                    {"block"},
                    false,
                    [](Schedule& sch, const Json& in, const Json&, const Json&) {
                      compute_inline(sch, rv_from_json(in.at(0), "compute_inline"));
                      return std::vector<RV>{};
                    }});
  kinds->push_back({"reverse_compute_inline",
                    {"block"},
                    false,
                    [](Schedule& sch, const Json& in, const Json&, const Json&) {
                      reverse_compute_inline(sch, rv_from_json(in.at(0), "reverse_compute_inline"));
                      return std::vector<RV>{};
                    }});
}

}  // namespace kiln::schedule
