// Compute location: compute_at, reverse_compute_at and sample_compute_location.
#include "kiln/schedule/compute_at.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <unordered_set>

#include "block_dependence.h"
#include "instruction_registry.h"
#include "kiln/arith/int_set.h"
#include "kiln/arith/iter_map.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "schedule_util.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// The decisions of sample_compute_location that name no loop.
constexpr int64_t kRootMark = -1;
constexpr int64_t kInlineMark = -2;

// The coefficient of `v` in `e` when e is a sum (+, -) of terms in which v appears only as
// c * v (c an integer constant, through nested products and sums); nothing when v appears in
// any other way (a division, a modulus, a product of two variables, a cast).
std::optional<int64_t> linear_coefficient(const Expr& e, const Var* v) {
  if (e.get() == v) return 1;
  if (e.is<IntImm>()) return 0;
  const auto* bin = e.as<BinaryNode>();
  if (bin != nullptr && (e.is<Add>() || e.is<Sub>())) {
    std::optional<int64_t> a = linear_coefficient(bin->a, v), b = linear_coefficient(bin->b, v);
    if (!a || !b) return std::nullopt;
    return e.is<Add>() ? *a + *b : *a - *b;
  }
  if (bin != nullptr && e.is<Mul>()) {
    for (const auto& [factor, other] : {std::pair{bin->a, bin->b}, std::pair{bin->b, bin->a}}) {
      const int64_t* c = as_const_int(factor);
      if (c == nullptr) continue;
      std::optional<int64_t> inner = linear_coefficient(other, v);
      if (!inner) return std::nullopt;
      return *c * *inner;
    }
  }
  if (!uses_var(e, [v](const Var* u) { return u == v; })) return 0;
  return std::nullopt;
}

// kRootMark or kInlineMark when `loop` is such a location handle, else 0. A handle's meaning is
// found where it was made: the sample_compute_location instruction that output it.
int64_t location_mark(const Schedule& sch, const RV& loop) {
  if (loop.kind != RVKind::kLoop) return 0;
  for (const Instruction& inst : sch.trace().instructions()) {
    if (inst.kind != "sample_compute_location" || inst.outputs.empty()) continue;
    if (inst.outputs[0] == loop && inst.decision.is_number_integer()) {
      int64_t decision = inst.decision.get<int64_t>();
      return decision < 0 ? decision : 0;
    }
  }
  return 0;
}

std::string names_of(const std::vector<const BlockLocation*>& blocks) {
  std::string out;
  for (const BlockLocation* b : blocks) out += (out.empty() ? "'" : ", '") + b->block->name + "'";
  return out;
}

bool contains(const std::vector<const Block*>& blocks, const Block* block) {
  return std::find(blocks.begin(), blocks.end(), block) != blocks.end();
}

// `v + c` (or `v`, `c + v`, `v - c`) with v one of `iters` and c free of them: v and c.
bool match_iter_offset(const Expr& e, const std::unordered_set<const Var*>& iters, const Var** var,
                       Expr* offset) {
  auto is_iter = [&](const Expr& x) { return x.as<Var>() != nullptr && iters.count(x.as<Var>()); };
  auto free = [&](const Expr& x) {
    return !uses_var(x, [&](const Var* v) { return iters.count(v) != 0; });
  };
  if (is_iter(e)) {
    *var = e.as<Var>();
    *offset = make_zero(e->dtype);
    return true;
  }
  if (const Add* add = e.as<Add>()) {
    if (is_iter(add->a) && free(add->b)) {
      *var = add->a.as<Var>();
      *offset = add->b;
      return true;
    }
    if (is_iter(add->b) && free(add->a)) {
      *var = add->b.as<Var>();
      *offset = add->a;
      return true;
    }
  }
  if (const Sub* sub = e.as<Sub>()) {
    if (is_iter(sub->a) && free(sub->b)) {
      *var = sub->a.as<Var>();
      *offset = neg(sub->b);
      return true;
    }
  }
  return false;
}

// `floordiv(v, c)` or `floormod(v, c)` (as `kind` says) with v one of `iters` and c a positive
// integer constant: v and c. A layout's split dimension (transform_layout's [i // 64, k, i % 64]).
template <typename Kind>
bool match_iter_split(const Expr& e, const std::unordered_set<const Var*>& iters, const Var** var,
                      int64_t* divisor) {
  const Kind* split = e.as<Kind>();
  if (split == nullptr) return false;
  const auto* v = split->a.template as<Var>();
  const int64_t* c = as_const_int(split->b);
  if (v == nullptr || iters.count(v) == 0 || c == nullptr || *c <= 0) return false;
  *var = v;
  *divisor = *c;
  return true;
}

// The statements of a loop body, one per subtree.
std::vector<Stmt> body_stmts(const Stmt& body) {
  if (const SeqStmt* s = body.as<SeqStmt>()) return s->seq;
  return {body};
}

// Which of the two primitives is planned: compute_at, or reverse_compute_at (`reverse`).
struct Move {
  bool reverse = false;
  const char* primitive = "compute_at";
};

// Plans compute_at or reverse_compute_at of one block under one loop: checks every
// precondition and builds the new function, changing nothing.
class ComputeAtPlanner {
 public:
  ComputeAtPlanner(Schedule& sch, const std::string& func_name, const BlockLocation& block,
                   const LoopLocation& loop, bool preserve_unit_loops, Move move)
      : func_(sch.func(func_name)),
        index_(sch.index(func_name)),
        block_(block),
        loop_(loop),
        preserve_unit_loops_(preserve_unit_loops),
        move_(move) {}

  BlockRewrite plan() {
    check_scope();
    check_block();
    std::vector<const BlockLocation*> required = check_required_blocks();
    size_t position = insertion_point();
    std::vector<Range> doms = iterator_domains(required);
    return build(doms, position);
  }

 private:
  [[noreturn]] void fail(const std::string& error_class, const std::string& message,
                         const Node* mark) {
    schedule_error(error_class, move_.primitive, message, func_, mark);
  }

  std::string block_name() const { return "'" + block_.block->name + "'"; }
  std::string loop_name() const { return "'" + loop_.loop->loop_var->name + "'"; }

  // Step 2. Check that the block and the loop are in one scope, and that scope is a pipeline.
  void check_scope() {
    if (loop_.scope != block_.scope) {
      std::string loop_scope = loop_.scope ? "'" + loop_.scope->name + "'" : "none";
      std::string block_scope = block_.scope ? "'" + block_.scope->name + "'" : "none";
      fail("NotInSameScopeError",
           "block " + block_name() + " and loop " + loop_name() +
               " are not in the same scope: the block is in the scope of block " + block_scope +
               ", the loop in that of block " + loop_scope,
           loop_.loop);
    }
    for (const StmtNode* s :
         {static_cast<const StmtNode*>(block_.realize), static_cast<const StmtNode*>(loop_.loop)}) {
      if (!in_init(s)) continue;
      fail("NotInSameScopeError",
           std::string(s == loop_.loop ? "loop " + loop_name() : "block " + block_name()) +
               " is in the init of block '" + block_.scope->name +
               "'; only the blocks and loops of a scope's body move",
           s);
    }
    if (loop_depth(block_, loop_.loop) < block_.loops.size()) {
      fail("NotInSameScopeError",
           "loop " + loop_name() + " is an ancestor of block " + block_name() +
               "; the block must move under a loop outside of its own loop nest",
           loop_.loop);
    }
    Violation pipeline = check_stage_pipeline(index_, block_.scope);
    if (!pipeline.ok()) {
      fail("NotStagePipelineError",
           "the scope of block " + block_name() + " is not a stage pipeline: " + pipeline.reason,
           pipeline.where);
    }
  }

  // The new loops run the block's iterators over their domains, with no other condition: a
  // predicate that says more than those domains (the tail of a split reduction, where several
  // iterators sum past the end) would be lost.
  void check_predicate() {
    const Expr& predicate = block_.realize->predicate;
    if (!predicate.defined() || is_const_int(predicate, 1)) return;
    arith::Analyzer analyzer;
    for (const For* loop : block_.loops) {
      analyzer.bind(loop->loop_var, Range{loop->min, loop->extent});
    }
    Expr in_domains = bool_const(true);
    for (size_t k = 0; k < block_.block->iter_vars.size(); ++k) {
      const Range& dom = block_.block->iter_vars[k].dom;
      const Expr& value = block_.realize->iter_values[k];
      in_domains =
          logical_and(in_domains, logical_and(ge(value, dom.min), lt(value, dom.min + dom.extent)));
    }
    arith::ConstraintScope known(&analyzer, in_domains);
    if (analyzer.can_prove(predicate)) return;
    fail("BlockPredicateError",
         "block " + block_name() + " has the predicate " + to_script(predicate) +
             ", which its iterators' domains do not imply; the block's new loops would run "
             "where the predicate is false",
         block_.realize);
  }

  // A producer whose predicate may be false for a whole iteration of the loop (the tail of a
  // split above the loop) writes nothing there. That is harmless where the loops of the
  // predicate also index what the producer writes (the block's domain then follows the written
  // point, and leaves the buffer with it); otherwise the block would still read.
  void check_producer_runs(const BlockLocation& producer, const BufferRegion& region,
                           size_t depth) {
    const Expr& predicate = producer.realize->predicate;
    if (!predicate.defined() || is_const_int(predicate, 1)) return;
    arith::Analyzer analyzer;
    VarMap at_minimum;
    std::unordered_set<const Var*> outer_loops;
    for (size_t k = 0; k < producer.loops.size(); ++k) {
      const For* loop = producer.loops[k];
      if (k < depth) {
        analyzer.bind(loop->loop_var, Range{loop->min, loop->extent});
        outer_loops.insert(loop->loop_var.get());
      } else {
        at_minimum[loop->loop_var.get()] = loop->min;
      }
    }
    Expr outer_predicate = substitute(predicate, at_minimum);
    if (analyzer.can_prove(outer_predicate)) return;
    VarMap bindings = block_bindings(producer);
    std::unordered_set<const Var*> indexing;
    for (const Range& r : region.region) {
      post_order_visit(substitute(r.min, bindings), [&](const Node* n) {
        if (n->kind() == NodeKind::Var) indexing.insert(static_cast<const Var*>(n));
      });
    }
    bool followed = !uses_var(outer_predicate, [&](const Var* v) {
      return outer_loops.count(v) != 0 && indexing.count(v) == 0;
    });
    if (followed) return;
    fail("RegionNotCoverableError",
         "block '" + producer.block->name + "' is guarded by " + to_script(predicate) +
             ", which may be false for a whole iteration of loop " + loop_name() + "; block " +
             block_name() + " would read there what was not written",
         producer.realize);
  }

  // The consumer of a reverse_compute_at reads the hull of what a producer writes in one
  // iteration of the loop; a producer that writes with a stride there (rows i_0 * 2 + i_1 over
  // i_0) leaves holes in that hull, which the consumer would read before they are written.
  void check_contiguous(const BlockLocation& producer, const BufferRegion& region, size_t depth) {
    VarMap bindings = block_bindings(producer);
    arith::IterRanges relaxed;
    for (size_t k = depth; k < producer.loops.size(); ++k) {
      relaxed[producer.loops[k]->loop_var.get()] =
          Range{producer.loops[k]->min, producer.loops[k]->extent};
    }
    for (size_t d = 0; d < region.region.size(); ++d) {
      Expr index = substitute(region.region[d].min, bindings);
      std::unordered_set<const Var*> used;
      post_order_visit(index, [&](const Node* n) {
        if (n->kind() != NodeKind::Var) return;
        const auto* var = static_cast<const Var*>(n);
        if (relaxed.count(var) != 0) used.insert(var);
      });
      if (used.empty()) continue;
      const int64_t* width = as_const_int(region.region[d].extent);
      if (width != nullptr && fused_without_holes(index, used, relaxed, *width)) continue;
      arith::Analyzer analyzer;
      arith::IterMapResult map = arith::detect_iter_map(
          {index}, relaxed, bool_const(true), arith::IterMapLevel::kSurjective, &analyzer);
      // Steps of `scale` elements, each writing `width` of them, leave no hole when
      // scale <= width.
      const int64_t* scale = map.ok() && !map.indices[0].args.empty()
                                 ? as_const_int(map.indices[0].args[0].scale)
                                 : nullptr;
      bool contiguous = map.ok() && (map.indices[0].args.empty() ||
                                     (width != nullptr && scale != nullptr && *scale <= *width));
      if (contiguous) continue;
      fail("RegionNotCoverableError",
           "in one iteration of loop " + loop_name() + ", block '" + producer.block->name +
               "' writes dimension " + std::to_string(d) + " of buffer '" + region.buffer->name +
               "' at " + to_script(index) + ", which does not cover a contiguous range; block " +
               block_name() + " would read the values in between before they are written",
           producer.realize);
    }
  }

  // The common cases of check_contiguous, decided without the iterator map: `index` is a sum
  // of c_k * v_k over the relaxed loops it uses, and either one loop steps by c_1 > 0 or several
  // of constant extents e_k fuse into one iterator (sorted by c_k: c_1 > 0, c_k+1 = c_k * e_k,
  // the iterator map's surjective case); steps of c_1 no wider than the `width` written each
  // time leave no hole. Anything else goes to the iterator map.
  static bool fused_without_holes(const Expr& index, const std::unordered_set<const Var*>& used,
                                  const arith::IterRanges& relaxed, int64_t width) {
    std::vector<std::pair<int64_t, int64_t>> splits;  // (coefficient, extent)
    for (const Var* v : used) {
      std::optional<int64_t> c = linear_coefficient(index, v);
      if (!c || *c <= 0) return false;
      // One loop of any extent steps by c; several need their extents to fuse.
      const int64_t* extent = as_const_int(relaxed.at(v).extent);
      if (used.size() == 1) return *c <= width;
      if (extent == nullptr || *extent < 1) return false;
      if (*extent > 1) splits.emplace_back(*c, *extent);
    }
    std::sort(splits.begin(), splits.end());
    for (size_t k = 1; k < splits.size(); ++k) {
      int64_t next = 0;
      if (__builtin_mul_overflow(splits[k - 1].first, splits[k - 1].second, &next) ||
          splits[k].first != next) {
        return false;
      }
    }
    return splits.empty() || splits[0].first <= width;
  }

  // Whether a statement of the scope lies in the scope block's init rather than its body.
  bool in_init(const StmtNode* stmt) const {
    const Block* scope = block_.scope;
    if (scope == nullptr || !scope->init.defined()) return false;
    const StmtNode* s = stmt;
    while (s != nullptr && index_.parent(s) != scope) s = index_.parent(s);
    return s == scope->init.get();
  }

  // Step 3. Check the block itself and the loop nest it leaves.
  void check_block() {
    std::string complete = why_not_complete(index_, block_);
    if (!complete.empty()) {
      std::string reduction = why_not_reduction(index_, block_);
      if (!reduction.empty()) {
        fail("NotCompleteOrReductionBlockError",
             "block " + block_name() + " is neither a complete block (" + complete +
                 ") nor a reduction block (" + reduction + ")",
             block_.realize);
      }
    }
    if (!block_.loops.empty()) {
      const For* outer = block_.loops[0];
      for (const BlockLocation* other : scope_blocks(index_, block_.scope)) {
        if (other->loops.empty() || other->loops[0] != outer || other == &block_) continue;
        std::string complete_other = why_not_complete(index_, *other);
        if (complete_other.empty()) continue;
        std::string reduction_other = why_not_reduction(index_, *other);
        if (reduction_other.empty()) continue;
        fail("NotCompactDataflowError",
             "block '" + other->block->name + "', in the loop nest of block " + block_name() +
                 " under loop '" + outer->loop_var->name + "', is neither a complete block (" +
                 complete_other + ") nor a reduction block (" + reduction_other + ")",
             other->realize);
      }
    }
    check_predicate();
    if (!move_.reverse) {
      if (const Buffer* out = output_buffer(block_)) {
        fail("OutputBlockError",
             "block " + block_name() + " writes buffer '" + out->name +
                 "', which its scope does not allocate (an output); compute_at computes only "
                 "the region that consumers read, which would leave the rest of it unwritten",
             block_.realize);
      }
    }
  }

  // Step 4. Every consumer (producer, for the reverse) must be under the loop.
  std::vector<const BlockLocation*> check_required_blocks() {
    std::vector<const BlockLocation*> required =
        move_.reverse ? producers_of(index_, block_) : consumers_of(index_, block_);
    std::vector<const Block*> under = blocks_under(loop_.loop->body);
    std::vector<const BlockLocation*> missing;
    for (const BlockLocation* b : required) {
      if (!contains(under, b->block)) missing.push_back(b);
    }
    if (!missing.empty()) {
      const char* relation = move_.reverse ? "producer" : "consumer";
      fail("NotAllRequiredBlocksAreVisitedError",
           std::string("every ") + relation + " of block " + block_name() + " must be under loop " +
               loop_name() + ", but " + std::to_string(missing.size()) + " of them " +
               (missing.size() == 1 ? "is" : "are") + " not: " + names_of(missing),
           loop_.loop);
    }
    // The blocks on the other side must stay on their side of the loop: producers before it,
    // consumers after it. For compute_at the stage pipeline guarantees it; a consumer before
    // the loop is possible for the reverse, when the block moves past it.
    for (const BlockLocation* b :
         move_.reverse ? consumers_of(index_, block_) : producers_of(index_, block_)) {
      if (contains(under, b->block)) continue;
      bool before = comes_before(block_.scope, b->realize, loop_.loop);
      if (!move_.reverse) {
        internal_check(before) << move_.primitive << ": block '" << b->block->name
                               << "', a producer of block " << block_name() << ", comes after loop "
                               << loop_name();
      } else if (before) {
        fail("ConsumerBeforeLoopError",
             "block '" + b->block->name + "', a consumer of block " + block_name() +
                 ", comes before loop " + loop_name() +
                 ", so the block would be computed after it is read",
             b->realize);
      }
    }
    return required;
  }

  // Step 5. The place among the loop's statements: before the first consumer, after every
  // producer.
  size_t insertion_point() {
    std::vector<const BlockLocation*> producers = producers_of(index_, block_);
    std::vector<const BlockLocation*> consumers = consumers_of(index_, block_);
    std::vector<Stmt> stmts = body_stmts(loop_.loop->body);
    size_t first_consumer = stmts.size();
    int last_producer = -1;
    const BlockLocation* late_producer = nullptr;
    const BlockLocation* early_consumer = nullptr;
    for (size_t k = 0; k < stmts.size(); ++k) {
      std::vector<const Block*> blocks = blocks_under(stmts[k]);
      for (const BlockLocation* c : consumers) {
        if (contains(blocks, c->block) && first_consumer == stmts.size()) {
          first_consumer = k;
          early_consumer = c;
        }
      }
      for (const BlockLocation* p : producers) {
        if (contains(blocks, p->block)) {
          last_producer = static_cast<int>(k);
          late_producer = p;
        }
      }
    }
    // A producer after a consumer would mean that the block outside the loop reads what a later
    // block writes, or is read before it writes: a write after read, which the stage pipeline
    // check has excluded.
    internal_check(last_producer < static_cast<int>(first_consumer))
        << move_.primitive << ": under loop " << loop_name() << ", block '"
        << late_producer->block->name << "' (a producer of block " << block_name()
        << ") comes after block '" << early_consumer->block->name << "' (a consumer of it)";
    return first_consumer;
  }

  // Step 6. The domain of each iterator of the block: what one iteration of the loop needs.
  std::vector<Range> iterator_domains(const std::vector<const BlockLocation*>& required_blocks) {
    std::unordered_map<const Var*, bool> bound;
    for (const BlockLocation* b : required_blocks) bind_loops(b->loops, &analyzer_, &bound);
    // The region the required blocks need (or produce) under the loop, by buffer.
    const std::vector<BufferRegion>& provided =
        move_.reverse ? block_.block->reads : block_.block->writes;
    std::unordered_map<const Buffer*, std::vector<arith::IntSet>> required;
    for (const BlockLocation* b : required_blocks) {
      size_t depth = loop_depth(*b, loop_.loop) + 1;
      const std::vector<BufferRegion>& regions = move_.reverse ? b->block->writes : b->block->reads;
      for (const BufferRegion& r : regions) {
        bool wanted = false;
        for (const BufferRegion& p : provided) wanted |= p.buffer.same_as(r.buffer);
        if (!wanted) continue;
        if (move_.reverse) {
          check_producer_runs(*b, r, depth);
          check_contiguous(*b, r, depth);
        }
        std::vector<Range> relaxed = relaxed_region(*b, r, depth, &analyzer_, r.buffer->scope);
        std::vector<arith::IntSet>& sets = required[r.buffer.get()];
        if (sets.empty()) sets.assign(relaxed.size(), arith::IntSet::nothing());
        for (size_t d = 0; d < relaxed.size(); ++d) {
          sets[d] = arith::union_sets({sets[d], arith::IntSet::from_range(relaxed[d])}, &analyzer_);
        }
      }
    }
    // Each dimension `v + c` of what the block provides bounds v by that dimension. For
    // compute_at, whose producer may compute more than is needed, a dimension `v // c` bounds v
    // by whole blocks of c values too, and `v % c` leaves v to the other dimensions.
    std::unordered_set<const Var*> iters;
    for (const IterVar& iv : block_.block->iter_vars) iters.insert(iv.var.get());
    std::unordered_map<const Var*, std::vector<arith::IntSet>> constraints;
    std::unordered_set<const Var*> unconstrained;
    for (const BufferRegion& p : provided) {
      auto it = required.find(p.buffer.get());
      if (it == required.end()) continue;
      for (size_t d = 0; d < p.region.size(); ++d) {
        const Var* v = nullptr;
        Expr offset;
        int64_t c = 0;
        bool point = is_const_int(p.region[d].extent, 1);
        if (point && match_iter_offset(p.region[d].min, iters, &v, &offset)) {
          const arith::IntSet& need = it->second[d];
          constraints[v].push_back(arith::IntSet::interval(
              analyzer_.simplify(need.min() - offset), analyzer_.simplify(need.max() - offset)));
        } else if (point && !move_.reverse &&
                   match_iter_split<FloorDiv>(p.region[d].min, iters, &v, &c)) {
          const arith::IntSet& need = it->second[d];
          Expr divisor = make_const(v->dtype, c);
          constraints[v].push_back(
              arith::IntSet::interval(analyzer_.simplify(need.min() * divisor),
                                      analyzer_.simplify((need.max() + 1) * divisor - 1)));
        } else if (point && !move_.reverse &&
                   match_iter_split<FloorMod>(p.region[d].min, iters, &v, &c)) {
          continue;
        } else {
          for (const Expr& e : {p.region[d].min, p.region[d].extent}) {
            post_order_visit(e, [&](const Node* n) {
              if (n->kind() == NodeKind::Var && iters.count(static_cast<const Var*>(n))) {
                unconstrained.insert(static_cast<const Var*>(n));
              }
            });
          }
        }
      }
    }
    std::vector<Range> doms;
    for (const IterVar& iv : block_.block->iter_vars) {
      const Var* v = iv.var.get();
      auto it = constraints.find(v);
      bool constrained = it != constraints.end() && (move_.reverse || unconstrained.count(v) == 0);
      if (!constrained) {
        doms.push_back(iv.dom);
        continue;
      }
      arith::IntSet set = move_.reverse ? arith::intersect_sets(it->second, &analyzer_)
                                        : arith::union_sets(it->second, &analyzer_);
      if (set.is_nothing() || !set.has_lower_bound() || !set.has_upper_bound()) {
        doms.push_back(iv.dom);
        continue;
      }
      Expr min = analyzer_.simplify(set.min());
      doms.push_back(Range{min, analyzer_.simplify(set.max() - min + 1)});
      if (move_.reverse && iv.type != IterType::kDataPar) check_whole_domain(iv, doms.back());
      if (move_.reverse && iv.type == IterType::kDataPar) check_covered(iv, doms.back());
    }
    if (move_.reverse) check_reads_covered(doms, required);
    return doms;
  }

  void check_whole_domain(const IterVar& iv, const Range& dom) {
    Expr end = dom.min + dom.extent;
    Expr whole_end = iv.dom.min + iv.dom.extent;
    if (analyzer_.can_prove(le(dom.min, iv.dom.min)) && analyzer_.can_prove(ge(end, whole_end))) {
      return;
    }
    fail("PartialReductionError",
         "reduction iterator '" + iv.var->name + "' of block " + block_name() + " would cover [" +
             to_script(dom.min) + ", " + to_script(analyzer_.simplify(end)) + ") of its domain [" +
             to_script(iv.dom.min) + ", " + to_script(analyzer_.simplify(whole_end)) +
             ") in one iteration of loop " + loop_name() +
             "; a reduction cannot be split across iterations of the loop",
         block_.realize);
  }

  // Over all iterations of the loop and the loops around it, a spatial iterator of a consumer
  // must still take every value of its domain: the values its producers do not write (the
  // border of a padding block) would otherwise never be computed.
  void check_covered(const IterVar& iv, const Range& dom) {
    std::unordered_map<const Var*, Range> loops;
    for (const StmtNode* s = loop_.loop; s != nullptr && s != loop_.scope; s = index_.parent(s)) {
      if (s->kind() != NodeKind::For) continue;
      const auto* f = static_cast<const For*>(s);
      loops[f->loop_var.get()] = Range{f->min, f->extent};
    }
    arith::IntSetMap dom_map = arith::int_set_map(loops);
    arith::IntSet first = arith::eval_set(dom.min, dom_map, &analyzer_);
    arith::IntSet last = arith::eval_set(dom.min + dom.extent, dom_map, &analyzer_);
    Expr whole_end = iv.dom.min + iv.dom.extent;
    if (first.has_lower_bound() && last.has_upper_bound() &&
        analyzer_.can_prove(le(first.min(), iv.dom.min)) &&
        analyzer_.can_prove(ge(last.max(), whole_end))) {
      return;
    }
    fail("RegionNotCoverableError",
         "spatial iterator '" + iv.var->name + "' of block " + block_name() + " would take [" +
             to_script(dom.min) + ", " + to_script(analyzer_.simplify(dom.min + dom.extent)) +
             ") under loop " + loop_name() + ", which never reaches all of its domain [" +
             to_script(iv.dom.min) + ", " + to_script(analyzer_.simplify(whole_end)) +
             "): its producers do not write what it would compute there",
         block_.realize);
  }

  // The block must read, in one iteration, only what its producers wrote in that iteration.
  void check_reads_covered(
      const std::vector<Range>& doms,
      const std::unordered_map<const Buffer*, std::vector<arith::IntSet>>& produced) {
    std::unordered_map<const Var*, Range> ranges;
    for (size_t k = 0; k < doms.size(); ++k) {
      ranges[block_.block->iter_vars[k].var.get()] = doms[k];
    }
    arith::IntSetMap dom_map = arith::int_set_map(ranges);
    for (const BufferRegion& r : block_.block->reads) {
      auto it = produced.find(r.buffer.get());
      if (it == produced.end()) continue;
      std::vector<Range> reads = arith::eval_region(r.region, dom_map, &analyzer_, r.buffer->shape);
      for (size_t d = 0; d < reads.size(); ++d) {
        const std::vector<Expr>& shape = r.buffer->shape;
        arith::IntSet in_bounds = arith::IntSet::interval(make_zero(shape[d]->dtype), shape[d] - 1);
        arith::IntSet read = arith::IntSet::from_range(reads[d]);
        if (arith::can_prove_subset(read, it->second[d], &analyzer_)) continue;
        // Reads outside the buffer are guarded ones (padding) and need no producer.
        arith::IntSet needed = arith::intersect_sets({read, in_bounds}, &analyzer_);
        if (arith::can_prove_subset(needed, it->second[d], &analyzer_)) continue;
        std::ostringstream message;
        message << "in one iteration of loop " << loop_name() << ", block " << block_name()
                << " would read " << needed << " of dimension " << d << " of buffer '"
                << r.buffer->name << "', but its producers write only " << it->second[d]
                << " of it there";
        fail("RegionNotCoverableError", message.str(), block_.realize);
      }
    }
  }

  // Step 7. Build the new loops and block realize, insert them, and remove the old ones.
  BlockRewrite build(const std::vector<Range>& doms, size_t position) {
    const Block* block = block_.block;
    std::vector<Ref<Var>> loop_vars;
    std::vector<Expr> extents;
    std::vector<Expr> values;
    std::vector<Expr> conditions;
    for (size_t k = 0; k < doms.size(); ++k) {
      const IterVar& iv = block->iter_vars[k];
      DataType dtype = iv.var->dtype;
      Expr min = cast(dtype, doms[k].min);
      Expr last = analyzer_.simplify(min + cast(dtype, doms[k].extent) - 1);
      Expr dom_min = iv.dom.min;
      Expr dom_end = analyzer_.simplify(iv.dom.min + iv.dom.extent);
      Expr dom_last = analyzer_.simplify(dom_end - 1);
      // A region that holds the whole domain is the domain; constant ends are clipped to it.
      if (analyzer_.can_prove(le(min, dom_min)) && analyzer_.can_prove(ge(last, dom_last))) {
        min = dom_min;
        last = dom_last;
      }
      const int64_t* c_min = as_const_int(min);
      const int64_t* c_dom_min = as_const_int(dom_min);
      if (c_min && c_dom_min && *c_min < *c_dom_min) min = dom_min;
      const int64_t* c_last = as_const_int(last);
      const int64_t* c_dom_last = as_const_int(dom_last);
      if (c_last && c_dom_last && *c_last > *c_dom_last) last = dom_last;
      Expr extent = analyzer_.simplify(last - min + 1);
      // A symbolic extent is replaced by its constant upper bound when it has one that is
      // tighter than the domain's (a symbolic domain's bound is only that of its type). A bound
      // near the type's limit (`(n + 1) // 2` of an unknown n) comes from the type, not the
      // schedule, and is no tile size.
      Expr loop_extent = extent;
      bool padded = false;
      if (as_const_int(extent) == nullptr) {
        arith::ConstIntBound b = analyzer_.const_int_bound(extent);
        int64_t dom_bound = analyzer_.const_int_bound(iv.dom.extent).max_value;
        bool tighter = b.max_value < dom_bound || as_const_int(iv.dom.extent) != nullptr;
        int64_t type_max = dtype.bits() < 64 ? (int64_t{1} << (dtype.bits() - 1)) - 1
                                             : arith::ConstIntBound::kPosInf;
        bool from_type = b.max_value > (type_max >> 8);
        if (b.max_value != arith::ConstIntBound::kPosInf && tighter && !from_type) {
          loop_extent = make_const(dtype, std::min(b.max_value, dom_bound));
          padded = true;
        }
      }
      Expr value;
      bool unit = is_const_int(loop_extent, 1) && !preserve_unit_loops_;
      if (unit) {
        value = min;
      } else {
        Ref<Var> ax = make_var("ax" + std::to_string(loop_vars.size()), dtype);
        analyzer_.bind(ax, Range{make_zero(dtype), loop_extent});
        loop_vars.push_back(ax);
        extents.push_back(loop_extent);
        value = is_const_int(min, 0) ? Expr(ax) : min + ax;
      }
      values.push_back(value);
      if (!analyzer_.can_prove(ge(value, dom_min))) conditions.push_back(ge(value, dom_min));
      if (!analyzer_.can_prove(lt(value, dom_end))) conditions.push_back(lt(value, dom_end));
      if (padded && !analyzer_.can_prove(le(value, last))) conditions.push_back(le(value, last));
    }
    Expr predicate = bool_const(true);
    for (const Expr& c : conditions) {
      predicate = is_const_int(predicate, 1) ? c : logical_and(predicate, c);
    }
    Stmt nest = make<BlockRealize>(values, predicate, block_.realize->block);
    for (size_t k = loop_vars.size(); k-- > 0;) {
      nest = make<For>(loop_vars[k], make_zero(loop_vars[k]->dtype), extents[k], ForKind::kSerial,
                       nest);
    }
    std::vector<Stmt> stmts = body_stmts(loop_.loop->body);
    stmts.insert(stmts.begin() + static_cast<std::ptrdiff_t>(position), nest);
    auto new_loop = copy(loop_.loop);
    new_loop->body = seq(std::move(stmts));
    BlockRemoval removal = plan_block_removal(block_);
    Stmt body = replace_stmt(func_->body, loop_.loop, new_loop);
    body = replace_stmt(body, removal.target, Stmt());
    return BlockRewrite{with_body(func_, body), removal.loops, {}};
  }

  Ref<PrimFunc> func_;
  FunctionIndex& index_;
  const BlockLocation& block_;
  const LoopLocation& loop_;
  bool preserve_unit_loops_;
  Move move_;
  arith::Analyzer analyzer_;
};

BlockRewrite plan_move(Schedule& sch, const RV& block_rv, const RV& loop_rv,
                       bool preserve_unit_loops, Move move) {
  // Step 1. Resolve the block and the loop.
  const BlockLocation& block = sch.block(block_rv, move.primitive);
  const LoopLocation& loop = sch.loop(loop_rv, move.primitive);
  const std::string& func_name = sch.func_name(block_rv);
  if (sch.func_name(loop_rv) != func_name) {
    schedule_error("NotInSameScopeError", move.primitive,
                   "block '" + block.block->name + "' is in function '" + func_name +
                       "' and loop '" + loop.loop->loop_var->name + "' in function '" +
                       sch.func_name(loop_rv) + "'");
  }
  return ComputeAtPlanner(sch, func_name, block, loop, preserve_unit_loops, move).plan();
}

void move_block(Schedule& sch, const RV& block_rv, const RV& loop_rv, bool preserve_unit_loops,
                Move move) {
  const char* primitive = move.primitive;
  int64_t mark = location_mark(sch, loop_rv);
  const std::string& func_name = sch.func_name(block_rv);
  if (mark == kInlineMark) {
    BlockRewrite rewrite = move.reverse ? plan_reverse_compute_inline(sch, block_rv, primitive)
                                        : plan_compute_inline(sch, block_rv, primitive);
    apply_rewrite(sch, func_name, rewrite, primitive);
  } else if (mark == kRootMark) {
    sch.block(block_rv, primitive);
  } else {
    apply_rewrite(sch, func_name, plan_move(sch, block_rv, loop_rv, preserve_unit_loops, move),
                  primitive);
  }
  sch.record(Instruction{primitive,
                         Json::array({block_rv.name(), loop_rv.name()}),
                         {{"preserve_unit_loops", preserve_unit_loops}},
                         {},
                         Json()});
}

bool can_move(Schedule& sch, const RV& block_rv, const RV& loop_rv, bool preserve_unit_loops,
              Move move) {
  try {
    int64_t mark = location_mark(sch, loop_rv);
    if (mark == kInlineMark) {
      if (move.reverse) {
        plan_reverse_compute_inline(sch, block_rv, move.primitive);
      } else {
        plan_compute_inline(sch, block_rv, move.primitive);
      }
    } else if (mark != kRootMark) {
      plan_move(sch, block_rv, loop_rv, preserve_unit_loops, move);
    }
    return true;
  } catch (const ScheduleError&) {
    return false;
  }
}

// The loops of a scope, in pre-order, not entering nested blocks.
class ScopeLoopCollector : public IRVisitor {
 public:
  std::vector<const For*> loops;

 protected:
  using IRVisitor::visit;
  void visit(const For* op) override {
    loops.push_back(op);
    visit_stmt(op->body);
  }
  void visit(const BlockRealize*) override {}
};

// The loops of a block's scope in pre-order: the loops sample_compute_location's decisions
// number.
std::vector<const For*> scope_loops(const BlockLocation& block) {
  ScopeLoopCollector collector;
  if (block.scope != nullptr) collector.visit_stmt(block.scope->body);
  return std::move(collector.loops);
}

}  // namespace

void compute_at(Schedule& sch, const RV& block, const RV& loop, bool preserve_unit_loops) {
  move_block(sch, block, loop, preserve_unit_loops, Move{false, "compute_at"});
}

void reverse_compute_at(Schedule& sch, const RV& block, const RV& loop, bool preserve_unit_loops) {
  move_block(sch, block, loop, preserve_unit_loops, Move{true, "reverse_compute_at"});
}

bool can_compute_at(Schedule& sch, const RV& block, const RV& loop, bool preserve_unit_loops) {
  return can_move(sch, block, loop, preserve_unit_loops, Move{false, "compute_at"});
}

bool can_reverse_compute_at(Schedule& sch, const RV& block, const RV& loop,
                            bool preserve_unit_loops) {
  return can_move(sch, block, loop, preserve_unit_loops, Move{true, "reverse_compute_at"});
}

namespace {

// Whether `location` (kInlineMark, kRootMark or the number of a loop of `loops`, the loops of
// the block's scope in pre-order) is a compute location of the block: the planner of the move
// runs and nothing changes.
bool is_compute_location(Schedule& sch, const RV& block_rv, const BlockLocation& block,
                         const std::string& func_name, const std::vector<const For*>& loops,
                         int64_t location, const char* primitive) {
  try {
    if (location == kInlineMark) {
      plan_compute_inline(sch, block_rv, primitive);
    } else if (location >= 0) {
      if (location >= static_cast<int64_t>(loops.size())) return false;
      const LoopLocation* loc =
          sch.index(func_name).find_loop(loops[static_cast<size_t>(location)]->loop_var.get());
      ComputeAtPlanner(sch, func_name, block, *loc, false, Move{false, primitive}).plan();
    } else if (location != kRootMark) {
      return false;
    }
  } catch (const ScheduleError&) {
    return false;
  }
  return true;
}

}  // namespace

std::vector<int64_t> compute_location_candidates(Schedule& sch, const RV& block_rv) {
  const char* primitive = "sample_compute_location";
  const BlockLocation& block = sch.block(block_rv, primitive);
  std::string func_name = sch.func_name(block_rv);
  std::vector<const For*> loops = scope_loops(block);
  std::vector<int64_t> candidates;
  for (int64_t location = kInlineMark; location < static_cast<int64_t>(loops.size()); ++location) {
    if (is_compute_location(sch, block_rv, block, func_name, loops, location, primitive)) {
      candidates.push_back(location);
    }
  }
  return candidates;
}

namespace {

// draw_compute_location for a block whose scope loops are known.
std::optional<int64_t> draw_location(Schedule& sch, const RV& block_rv, const BlockLocation& block,
                                     const std::string& func_name,
                                     const std::vector<const For*>& loops,
                                     const std::function<uint64_t()>& next_random,
                                     const std::function<bool(int64_t)>& accept) {
  const char* primitive = "sample_compute_location";
  std::vector<int64_t> order;
  for (int64_t location = kInlineMark; location < static_cast<int64_t>(loops.size()); ++location) {
    order.push_back(location);
  }
  for (size_t i = 0; i < order.size(); ++i) {
    std::swap(order[i], order[i + next_random() % (order.size() - i)]);
    if (is_compute_location(sch, block_rv, block, func_name, loops, order[i], primitive) &&
        accept(order[i])) {
      return order[i];
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> draw_compute_location(Schedule& sch, const RV& block_rv,
                                             const std::function<uint64_t()>& next_random,
                                             const std::function<bool(int64_t)>& accept) {
  const BlockLocation& block = sch.block(block_rv, "sample_compute_location");
  return draw_location(sch, block_rv, block, sch.func_name(block_rv), scope_loops(block),
                       next_random, accept);
}

RV sample_compute_location(Schedule& sch, const RV& block_rv,
                           const std::optional<int64_t>& decision) {
  const char* primitive = "sample_compute_location";
  // Step 1. Resolve the block and list the loops of its scope.
  const BlockLocation& block = sch.block(block_rv, primitive);
  std::string func_name = sch.func_name(block_rv);
  std::vector<const For*> loops = scope_loops(block);
  // Step 2. Take the decision when it is a location (one move planned: a replay checks only the
  // location it is given), or draw one among the candidates.
  int64_t chosen = 0;
  if (decision.has_value()) {
    chosen = *decision;
    if (!is_compute_location(sch, block_rv, block, func_name, loops, chosen, primitive)) {
      std::string list;
      for (int64_t c : compute_location_candidates(sch, block_rv)) {
        list += (list.empty() ? "" : ", ") + std::to_string(c);
      }
      schedule_error("InvalidDecisionError", primitive,
                     "decision " + std::to_string(chosen) +
                         " is not a compute location of block '" + block.block->name +
                         "'; the candidates are [" + list +
                         "] (-2 inline, -1 root, k the k-th loop of its scope in pre-order)");
    }
  } else {
    // The root is always a candidate.
    const Schedule::LocationFilter& filter = sch.location_filter();
    chosen = draw_location(
                 sch, block_rv, block, func_name, loops, [&sch] { return sch.next_random(); },
                 [&](int64_t location) { return !filter || filter(sch, block_rv, location); })
                 .value_or(kRootMark);
  }
  // Step 3. Make the handle and record.
  Ref<Var> loop_var =
      chosen >= 0 ? loops[chosen]->loop_var : make_var(chosen == kRootMark ? "root" : "inline");
  RV out = sch.new_loop_rv(func_name, loop_var);
  sch.record(
      Instruction{primitive, Json::array({block_rv.name()}), Json::object(), {out}, Json(chosen)});
  return out;
}

void register_compute_at_instructions(std::vector<InstructionKind>* kinds) {
  kinds->push_back({"compute_at",
                    {"block", "loop"},
                    false,
                    [](Schedule& sch, const Json& in, const Json& attrs, const Json&) {
                      compute_at(sch, rv_from_json(in.at(0), "compute_at"),
                                 rv_from_json(in.at(1), "compute_at"),
                                 attrs.value("preserve_unit_loops", false));
                      return std::vector<RV>{};
                    }});
  kinds->push_back({"reverse_compute_at",
                    {"block", "loop"},
                    false,
                    [](Schedule& sch, const Json& in, const Json& attrs, const Json&) {
                      reverse_compute_at(sch, rv_from_json(in.at(0), "reverse_compute_at"),
                                         rv_from_json(in.at(1), "reverse_compute_at"),
                                         attrs.value("preserve_unit_loops", false));
                      return std::vector<RV>{};
                    }});
  kinds->push_back({"sample_compute_location",
                    {"block"},
                    false,
                    [](Schedule& sch, const Json& in, const Json&, const Json& decision) {
                      std::optional<int64_t> d;
                      if (!decision.is_null()) d = decision.get<int64_t>();
                      return std::vector<RV>{sample_compute_location(
                          sch, rv_from_json(in.at(0), "sample_compute_location"), d)};
                    }});
}

}  // namespace kiln::schedule
