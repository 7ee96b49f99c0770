// lower_cross_thread_reduction: reductions over loops bound to GPU threads become per-thread
// partial results combined in shared memory (see the header for the contract).
#include "kiln/tir/lower_cross_thread_reduction.h"

#include <unordered_set>
#include <vector>

#include "kiln/ir/block_reducer.h"
#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

using VarSet = std::unordered_set<const Var*>;

// Whether every variable of `e` is one of `vars`.
bool uses_only(const Expr& e, const VarSet& vars) {
  return !uses_var(e, [&vars](const Var* v) { return vars.count(v) == 0; });
}

// `regions` with every dimension that depends on one of `reduce_vars` widened to the whole
// dimension: what the block touches over all of its reduction.
std::vector<BufferRegion> over_reduction(const std::vector<BufferRegion>& regions,
                                         const VarSet& reduce_vars) {
  std::vector<BufferRegion> out;
  for (const BufferRegion& r : regions) {
    BufferRegion widened = r;
    for (size_t d = 0; d < r.region.size() && d < r.buffer->shape.size(); ++d) {
      if (uses_any(r.region[d].min, reduce_vars) || uses_any(r.region[d].extent, reduce_vars)) {
        const Expr& extent = r.buffer->shape[d];
        widened.region[d] = Range{make_zero(extent->dtype), extent};
      }
    }
    out.push_back(widened);
  }
  return out;
}

class CrossThreadReduction : public IRMutator {
 public:
  CrossThreadReduction(const PrimFunc& func, int64_t warp_size) : warp_size_(warp_size) {
    post_order_visit(func.body, [&](const Node* node) {
      if (node->kind() != NodeKind::For) return;
      const auto* loop = static_cast<const For*>(node);
      if (loop->kind != ForKind::kThreadBinding || loop->thread_tag != "threadIdx.x") return;
      const int64_t* e = as_const_int(loop->extent);
      x_extents_.insert(e != nullptr ? *e : -1);
    });
  }

 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    if (const BlockRealize* realize = reduction_rooted_at(op)) return rewrite(op, realize);
    bool thread = is_thread_loop(*op);
    if (thread) thread_loops_.push_back(op);
    Stmt result = IRMutator::visit(op);
    if (thread) thread_loops_.pop_back();
    return result;
  }

  // The shared buffers of the reductions inside a block belong to that block: allocated outside
  // the thread loops, one per thread block.
  Stmt visit(const Block* op) override {
    size_t before = shared_buffers_.size();
    Stmt result = IRMutator::visit(op);
    if (shared_buffers_.size() == before) return result;
    auto block = copy(result.as<Block>());
    block->alloc_buffers.insert(block->alloc_buffers.end(), shared_buffers_.begin() + before,
                                shared_buffers_.end());
    shared_buffers_.resize(before);
    return block;
  }

 private:
  // A reduction block under `root` whose reduce iterators are bound through root's variable and
  // through a loop bound to threadIdx: root is then the outermost loop of its reduction.
  static const BlockRealize* reduction_rooted_at(const For* root) {
    VarSet thread_vars;
    post_order_visit(Stmt(root), [&](const Node* node) {
      if (node->kind() == NodeKind::For && is_thread_loop(*static_cast<const For*>(node))) {
        thread_vars.insert(static_cast<const For*>(node)->loop_var.get());
      }
    });
    if (thread_vars.empty()) return nullptr;
    const BlockRealize* found = nullptr;
    post_order_visit(root->body, [&](const Node* node) {
      if (found != nullptr || node->kind() != NodeKind::BlockRealize) return;
      const auto* realize = static_cast<const BlockRealize*>(node);
      const Block& block = *realize->block;
      bool uses_root = false, uses_thread = false;
      for (size_t i = 0; i < block.iter_vars.size(); ++i) {
        if (block.iter_vars[i].type != IterType::kCommReduce) continue;
        uses_root |= uses_any(realize->iter_values[i], {root->loop_var.get()});
        uses_thread |= uses_any(realize->iter_values[i], thread_vars);
      }
      if (uses_root && uses_thread) found = realize;
    });
    return found;
  }

  [[noreturn]] void fail(const Block& block, const For* loop, const std::string& why) {
    user_error(ErrorKind::kValue) << "lower_cross_thread_reduction: block '" << block.name
                                  << "' reduces over loop " << loop->loop_var->name << " bound to "
                                  << loop->thread_tag << ", which needs "
                                  << "the threads to combine their results: " << why;
  }

  Stmt rewrite(const For* root, const BlockRealize* realize) {
    const Block& block = *realize->block;
    // Step 1. The loops from the root down to the block: one bound to threadIdx (`loop`), the
    // others serial, which each thread runs for its part.
    std::vector<const For*> chain;  // the serial loops, outermost first
    const For* loop = nullptr;
    VarSet chain_vars;
    Stmt s = Stmt(root);
    while (const auto* inner = s.as<For>()) {
      chain_vars.insert(inner->loop_var.get());
      if (is_thread_loop(*inner) && loop == nullptr) {
        loop = inner;
      } else if (inner->kind == ForKind::kThreadBinding) {
        const For* bound = loop != nullptr ? loop : inner;
        fail(block, bound,
             "loop " + inner->loop_var->name +
                 " between its reduce loops is bound "
                 "to " +
                 inner->thread_tag +
                 "; bind one reduce loop to threadIdx and "
                 "keep the others serial");
      } else {
        chain.push_back(inner);
      }
      s = inner->body;
    }
    internal_check(loop != nullptr) << "lower_cross_thread_reduction: no thread loop found";
    if (s.get() != realize) {
      fail(block, loop, "the loops of its reduction must contain only the block");
    }
    const int64_t* threads = as_const_int(loop->extent);
    internal_check(threads != nullptr)
        << "lower_cross_thread_reduction: non-constant thread extent";
    int64_t num_threads = *threads;

    // Step 2. The block: B_j[idx] = f_j(B[idx], y) for its values B_j, the identity of f as
    // init.
    ReducerMismatch mismatch;
    std::optional<BlockReducer> reducer = match_block_reducer(block, &mismatch);
    if (!reducer) fail(block, loop, mismatch.why);
    if (!block.alloc_buffers.empty()) fail(block, loop, "the block has buffers of its own");
    const CommReducer& combiner = *reducer->combiner;
    size_t n = reducer->buffers.size();

    // Step 3. Reduce iterators over the chain only; spatial ones outside it.
    VarMap vmap;
    for (size_t i = 0; i < block.iter_vars.size(); ++i) {
      const IterVar& iv = block.iter_vars[i];
      const Expr& bound = realize->iter_values[i];
      if (iv.type == IterType::kCommReduce && !uses_only(bound, chain_vars)) {
        fail(block, loop,
             "reduce iterator " + iv.var->name +
                 " is bound through a loop outside "
                 "its reduce loops; keep the reduce loops of the block together");
      }
      if (iv.type == IterType::kDataPar && uses_any(bound, chain_vars)) {
        fail(block, loop,
             "spatial iterator " + iv.var->name +
                 " is bound through it or a loop "
                 "inside it; only reduce iterators may be");
      }
      // Spatial iterators stay: the new block binds them as the reduction block did.
      if (iv.type == IterType::kCommReduce) vmap[iv.var.get()] = bound;
    }
    std::vector<Expr> values;  // y_j over the chain's loops
    for (const Expr& y : reducer->values) values.push_back(substitute(y, vmap));
    // B_j[idx], where thread 0 stores the result.
    std::vector<Expr> results = elements_of(reducer->buffers, reducer->indices);

    // Step 4. The thread group (other threadIdx axes around) and the buffers.
    Expr group = int32_const(0);
    int64_t groups = 1;
    for (const For* outer : thread_loops_) {
      if (outer->thread_tag == loop->thread_tag) {
        fail(block, loop, "it is nested in another loop bound to " + outer->thread_tag);
      }
      const int64_t* e = as_const_int(outer->extent);
      internal_check(e != nullptr) << "lower_cross_thread_reduction: non-constant thread extent";
      group = group * int32_const(*e) + cast(DataType::int32(), Expr(outer->loop_var) - outer->min);
      groups *= *e;
    }
    // Per value: a shared buffer of the partial results, a register for one thread's.
    std::vector<Ref<Buffer>> red, acc;
    for (size_t j = 0; j < n; ++j) {
      DataType t = reducer->buffers[j]->dtype;
      std::string suffix = n == 1 ? "" : std::to_string(j);
      red.push_back(decl_buffer({int32_const(groups * num_threads)}, t,
                                block.name + "_red" + suffix, "shared"));
      acc.push_back(decl_buffer({int32_const(1)}, t, block.name + "_acc" + suffix, "local"));
    }
    Expr base = group * int32_const(num_threads);
    auto slot = [&](const Expr& thread) {
      return std::vector<Expr>{base + cast(DataType::int32(), thread)};
    };
    Expr zero = int32_const(0);

    // The conditions of the block's predicate on loops outside the reduction: they guard the
    // store of the result.
    std::vector<Expr> outer_conditions;
    std::vector<Expr> terms = conjuncts(realize->predicate);
    for (auto it = terms.rbegin(); it != terms.rend(); ++it) {  // the last term first
      if (!uses_any(*it, chain_vars)) outer_conditions.push_back(*it);
    }
    bool power_of_two = (num_threads & (num_threads - 1)) == 0;
    bool shuffle = warp_size_ > 0 && loop->thread_tag == "threadIdx.x" && power_of_two &&
                   num_threads <= warp_size_ && x_extents_.size() == 1 &&
                   *x_extents_.begin() == num_threads;

    // Step 5. Each thread's part, in its registers, then into the shared buffers.
    std::vector<Expr> acc_values = elements_of(acc, {zero});
    Stmt step = store_together(acc_values, combine(combiner, acc_values, values));
    if (!is_const_int(realize->predicate, 1)) step = make<IfThenElse>(realize->predicate, step);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      auto copy_loop = copy(*it);
      copy_loop->body = step;
      step = copy_loop;
    }
    Expr tx = Expr(loop->loop_var) - loop->min;
    auto first = copy(loop);
    first->annotations.clear();
    if (shuffle) {
      // Steps 6-7 with warp shuffles: the parts combine in registers, thread 0 stores.
      std::vector<Stmt> body = {store_each(acc_values, combiner.identity), step};
      for (int64_t s = num_threads / 2; s >= 1; s /= 2) {
        // Every lane shuffles, before the combiner's conditions could leave some lanes out.
        std::vector<Ref<Var>> theirs;
        for (size_t j = 0; j < n; ++j) {
          theirs.push_back(make_var(acc[j]->name + "_down" + std::to_string(s), acc[j]->dtype));
        }
        Stmt combined = store_together(
            acc_values, combine(combiner, acc_values, {theirs.begin(), theirs.end()}));
        for (size_t j = n; j-- > 0;) {
          Expr shuffled = make<Call>(
              acc[j]->dtype, Builtin::WarpShuffleDown,
              std::vector<Expr>{acc_values[j], int32_const(s), int32_const(num_threads)});
          combined = make<LetStmt>(theirs[j], shuffled, combined);
        }
        body.push_back(combined);
      }
      Expr cond = eq(tx, make_const(tx->dtype, 0));
      for (const Expr& c : outer_conditions) cond = logical_and(cond, c);
      body.push_back(make<IfThenElse>(cond, store_each(results, acc_values)));
      first->body = make<SeqStmt>(std::move(body));
      return wrap(block, realize, acc, first);
    }
    first->body =
        make<SeqStmt>(std::vector<Stmt>{store_each(acc_values, combiner.identity), step,
                                        store_each(elements_of(red, slot(tx)), acc_values)});
    std::vector<Stmt> seq = {first};

    // Step 6. Halving steps: thread i combines the values of thread i + s.
    int64_t span = 1;
    while (span < num_threads) span *= 2;
    auto thread_loop = [&](const std::string& name, auto body_of) {
      Ref<Var> v = make_var(loop->loop_var->name + "_" + name, loop->loop_var->dtype);
      auto result = copy(loop);
      result->loop_var = v;
      result->body = body_of(Expr(v) - loop->min);
      return Stmt(result);
    };
    for (int64_t s = span / 2; s >= 1; s /= 2) {
      seq.push_back(thread_loop("step" + std::to_string(s), [&](const Expr& i) {
        Expr other = i + make_const(i->dtype, s);
        std::vector<Expr> mine = elements_of(red, slot(i));
        Expr cond = logical_and(lt(i, make_const(i->dtype, s)),
                                lt(other, make_const(i->dtype, num_threads)));
        return Stmt(make<IfThenElse>(
            cond, store_together(mine, combine(combiner, mine, elements_of(red, slot(other))))));
      }));
    }

    // Step 7. Thread 0 stores the result (where the block's conditions on outer loops hold).
    seq.push_back(thread_loop("store", [&](const Expr& i) {
      Expr cond = eq(i, make_const(i->dtype, 0));
      for (const Expr& c : outer_conditions) cond = logical_and(cond, c);
      std::vector<Expr> partial = elements_of(red, slot(make_const(i->dtype, 0)));
      return Stmt(make<IfThenElse>(cond, store_each(results, partial)));
    }));

    shared_buffers_.insert(shared_buffers_.end(), red.begin(), red.end());
    return wrap(block, realize, acc, make<SeqStmt>(std::move(seq)));
  }

  // Step 8. An opaque block in the reduction block's place, binding its spatial iterators,
  // that owns the register `buffers` and runs `body`.
  Stmt wrap(const Block& block, const BlockRealize* realize, std::vector<Ref<Buffer>> buffers,
            Stmt body) {
    auto wrapper = make<Block>();
    wrapper->name = block.name + "_cross_thread";
    std::vector<Expr> spatial_values;
    for (size_t i = 0; i < block.iter_vars.size(); ++i) {
      if (block.iter_vars[i].type != IterType::kDataPar) continue;
      wrapper->iter_vars.push_back(block.iter_vars[i]);
      spatial_values.push_back(realize->iter_values[i]);
    }
    VarSet reduce_vars;
    for (const IterVar& iv : block.iter_vars) {
      if (iv.type == IterType::kCommReduce) reduce_vars.insert(iv.var.get());
    }
    wrapper->reads = over_reduction(block.reads, reduce_vars);
    wrapper->writes = over_reduction(block.writes, reduce_vars);
    wrapper->alloc_buffers = std::move(buffers);
    wrapper->body = std::move(body);
    return make<BlockRealize>(spatial_values, bool_const(true), wrapper);
  }

  std::vector<const For*> thread_loops_;     // the enclosing loops bound to threadIdx
  std::vector<Ref<Buffer>> shared_buffers_;  // made inside the block being visited
  int64_t warp_size_;                        // 0: no warp shuffles
  std::unordered_set<int64_t> x_extents_;    // of the loops bound to threadIdx.x (-1: symbolic)
};

}  // namespace

Ref<PrimFunc> lower_cross_thread_reduction(const Ref<PrimFunc>& func, int64_t warp_size) {
  return with_body(func, CrossThreadReduction(*func, warp_size).mutate(func->body));
}

}  // namespace kiln::tir
