// Helpers of the reduction family (see reduction_util.h): the conditions of a predicate and the
// init of a reduction rebuilt as a loop nest of its own.
#include "reduction_util.h"

#include <algorithm>
#include <unordered_set>

#include "kiln/arith/analyzer.h"
#include "kiln/arith/iter_map.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"

namespace kiln::schedule {

using namespace kiln::ir;

Expr conjunction(const std::vector<Expr>& conditions) {
  Expr out;
  for (const Expr& c : conditions) out = out.defined() ? logical_and(out, c) : c;
  return out.defined() ? out : bool_const(true);
}

namespace {

// The point regions of the loads in `stmt` (what an init that is not a constant reads).
std::vector<BufferRegion> load_regions(const Stmt& stmt) {
  std::vector<BufferRegion> regions;
  post_order_visit(stmt, [&regions](const Node* node) {
    if (node->kind() != NodeKind::BufferLoad) return;
    const auto* load = static_cast<const BufferLoad*>(node);
    BufferRegion region{load->buffer, {}};
    for (const Expr& index : load->indices) region.region.push_back(Range{index, int32_const(1)});
    regions.push_back(std::move(region));
  });
  return regions;
}

// `condition` (over copied and dropped loops) at the reduction's first step, over the copied
// loops and simplified with their ranges; null where the first step leaves a dropped loop unknown.
Expr first_step_condition(const Expr& condition, const InitSource& source,
                          const std::vector<Ref<For>>& nest, const VarMap& loop_map,
                          const std::unordered_set<const Var*>& dropped) {
  for (const Var* v : dropped) {
    bool used = uses_var(condition, [v](const Var* x) { return x == v; });
    if (used && source.first_step.count(v) == 0) return Expr();
  }
  arith::Analyzer analyzer;
  for (const Ref<For>& loop : nest) analyzer.bind(loop->loop_var, Range{loop->min, loop->extent});
  return analyzer.simplify(substitute(substitute(condition, source.first_step), loop_map));
}

}  // namespace

std::vector<BufferRegion> substitute_regions(const std::vector<BufferRegion>& regions,
                                             const VarMap& vmap) {
  std::vector<BufferRegion> out = regions;
  for (BufferRegion& region : out) {
    for (Range& range : region.region) {
      range.min = substitute(range.min, vmap);
      range.extent = substitute(range.extent, vmap);
    }
  }
  return out;
}

bool uses_any(const Expr& e, const std::unordered_set<const Var*>& vars) {
  return uses_var(e, [&vars](const Var* v) { return vars.count(v) != 0; });
}

bool loops_map_one_to_one(const BlockRealize& realize, const std::vector<const For*>& loops,
                          std::string* why) {
  arith::Analyzer analyzer;
  arith::IterRanges ranges;
  for (const For* loop : loops) ranges[loop->loop_var.get()] = Range{loop->min, loop->extent};
  // The predicate only shrinks the domain, which keeps a one-to-one map one to one.
  arith::IterMapResult map = arith::detect_iter_map(realize.iter_values, ranges, bool_const(true),
                                                    arith::IterMapLevel::kBijective, &analyzer);
  if (map.ok()) return true;
  *why = map.errors.front();
  return false;
}

Stmt make_init_nest(const InitSource& source, std::string* conflict) {
  // Step 1. Copy the loops that the bindings use, in order.
  std::unordered_set<const Var*> candidates, copied;
  for (const For* loop : source.loops) candidates.insert(loop->loop_var.get());
  VarMap loop_map;
  std::vector<Ref<For>> nest;
  for (const For* loop : source.loops) {
    const Var* v = loop->loop_var.get();
    bool used = std::any_of(source.bindings.begin(), source.bindings.end(), [v](const Expr& b) {
      return uses_var(b, [v](const Var* x) { return x == v; });
    });
    if (!used) continue;
    auto copy_loop = copy(loop);
    copy_loop->loop_var = make_var(loop->loop_var->name + "_init", loop->loop_var->dtype);
    copy_loop->min = substitute(loop->min, loop_map);
    copy_loop->extent = substitute(loop->extent, loop_map);
    loop_map[v] = copy_loop->loop_var;
    copied.insert(v);
    nest.push_back(copy_loop);
  }
  // Step 2. Keep the conditions of the predicate that only the copied loops decide.
  std::unordered_set<const Var*> dropped;
  for (const Var* v : candidates) {
    if (copied.count(v) == 0) dropped.insert(v);
  }
  std::vector<Expr> kept;
  for (const Expr& condition : conjuncts(source.predicate)) {
    bool uses_copied = uses_any(condition, copied);
    bool uses_dropped = uses_any(condition, dropped);
    if (uses_copied && uses_dropped) {
      Expr first = first_step_condition(condition, source, nest, loop_map, dropped);
      if (!first.defined()) {
        *conflict = to_script(condition);
        return nullptr;
      }
      if (!is_const_int(first, 1)) kept.push_back(first);
    } else if (!uses_dropped) {
      kept.push_back(substitute(condition, loop_map));
    }
  }
  // Step 3. The init block over copies of the iterators.
  Stmt body;
  if (source.iters.empty() && !source.always_block) {
    body = source.init;
  } else {
    VarMap iter_map;
    auto block = make<Block>();
    block->name = source.block_name;
    std::vector<Expr> values;
    for (size_t k = 0; k < source.iters.size(); ++k) {
      IterVar iv = source.iters[k];
      Ref<Var> fresh = make_var(iv.var->name + "_init", iv.var->dtype);
      iter_map[iv.var.get()] = fresh;
      iv.var = fresh;
      block->iter_vars.push_back(iv);
      values.push_back(substitute(source.bindings[k], loop_map));
    }
    block->body = substitute(source.init, iter_map);
    block->reads = load_regions(block->body);
    block->writes = substitute_regions(source.writes, iter_map);
    body = make<BlockRealize>(std::move(values), conjunction(kept), block);
  }
  for (size_t k = nest.size(); k-- > 0;) {
    nest[k]->body = body;
    body = nest[k];
  }
  return body;
}

}  // namespace kiln::schedule
