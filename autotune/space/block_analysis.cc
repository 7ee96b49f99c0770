// analyze_block: the iterators, loops and accesses of a block, read off its BlockRealize; and
// whether a block recomputes a reduction, and the compute locations where it would not.
#include "autotune/space/block_analysis.h"

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/compute_at.h"

namespace kiln::autotune {

using namespace ir;

namespace {

// Whether `index` is an iterator of `block` plus a constant, or a constant (broadcast).
bool is_iterator_plus_constant(const Expr& index, const Block& block) {
  Expr e = index;
  if (const auto* add = e.as<Add>()) {
    if (as_const_int(add->b) != nullptr) e = add->a;
  } else if (const auto* sub = e.as<Sub>()) {
    if (as_const_int(sub->b) != nullptr) e = sub->a;
  }
  if (as_const_int(e) != nullptr) return true;
  const auto* v = e.as<Var>();
  if (v == nullptr) return false;
  for (const IterVar& iv : block.iter_vars) {
    if (iv.var.get() == v) return true;
  }
  return false;
}

// The iterator of `block` that the last index of `region` is exactly, or -1.
int last_iter(const BufferRegion& region, const Block& block) {
  if (region.region.empty() || !is_const_int(region.region.back().extent, 1)) return -1;
  return iterator_index(region.region.back().min, block);
}

}  // namespace

int iterator_index(const Expr& e, const Block& block) {
  const auto* v = e.as<Var>();
  for (size_t k = 0; v != nullptr && k < block.iter_vars.size(); ++k) {
    if (block.iter_vars[k].var.get() == v) return static_cast<int>(k);
  }
  return -1;
}

int64_t annotation_or(const Block& block, const char* key, int64_t fallback) {
  auto it = block.annotations.find(key);
  const int64_t* value = it == block.annotations.end() ? nullptr : as_const_int(it->second);
  return value != nullptr ? *value : fallback;
}

bool is_extern_block(schedule::Schedule& sch, const std::string& name) {
  const schedule::BlockLocation* loc = sch.index("main").find_block(name);
  if (loc == nullptr) return false;
  bool calls_extern = false;
  post_order_visit(loc->block->body, [&](const Node* n) {
    if (n->kind() != NodeKind::Call) return;
    Builtin op = static_cast<const Call*>(n)->op;
    calls_extern = calls_extern || op == Builtin::CallExtern || op == Builtin::CallPureExtern;
  });
  return calls_extern;
}

BlockAnalysis analyze_block(schedule::Schedule& sch, const std::string& name) {
  BlockAnalysis result;
  const schedule::BlockLocation* loc = sch.index("main").find_block(name);
  if (loc == nullptr || loc->realize == nullptr) return result;
  const Block& block = *loc->block;
  const BlockRealize& realize = *loc->realize;
  size_t n = block.iter_vars.size();
  result.is_reduce.resize(n);
  result.is_unit.resize(n);
  result.iter_loop.assign(n, -1);
  result.loop_iter.assign(loc->loops.size(), -1);
  result.has_init = block.init.defined();
  bool trivial = realize.iter_values.size() == n && loc->loops.size() == n;
  for (size_t k = 0; k < n; ++k) {
    result.is_reduce[k] = block.iter_vars[k].type != IterType::kDataPar;
    result.is_unit[k] = is_const_int(block.iter_vars[k].dom.extent, 1);
    const auto* v = k < realize.iter_values.size() ? realize.iter_values[k].as<Var>() : nullptr;
    for (size_t l = 0; v != nullptr && l < loc->loops.size(); ++l) {
      if (loc->loops[l]->loop_var.get() == v) {
        result.iter_loop[k] = static_cast<int>(l);
        result.loop_iter[l] = static_cast<int>(k);
      }
    }
    trivial = trivial && result.iter_loop[k] >= 0 &&
              as_const_int(loc->loops[result.iter_loop[k]]->extent) != nullptr &&
              is_const_int(loc->loops[result.iter_loop[k]]->min, 0);
  }
  result.trivial_bindings = trivial;
  for (const BufferRegion& read : block.reads) {
    std::vector<bool> uses(n, false);
    for (const Range& r : read.region) {
      for (size_t k = 0; k < n; ++k) {
        const Var* iv = block.iter_vars[k].var.get();
        uses[k] = uses[k] || uses_var(r.min, [iv](const Var* v) { return v == iv; });
      }
    }
    result.read_uses.push_back(uses);
    result.read_last_iter.push_back(last_iter(read, block));
  }
  if (!block.writes.empty()) result.write_last_iter = last_iter(block.writes[0], block);
  const auto* store = block.body.as<BufferStore>();
  bool all_spatial = true;
  for (bool r : result.is_reduce) all_spatial = all_spatial && !r;
  result.spatial = all_spatial && store != nullptr && block.writes.size() == 1 && !block.init;
  if (store != nullptr) {
    post_order_visit(store->value, [&](const Node* node) {
      if (node->kind() != NodeKind::Call) return;
      if (ir::builtin_is_transcendental(static_cast<const Call*>(node)->op)) {
        result.expensive = true;
      }
    });
  }
  if (result.spatial) {
    bool injective = true;
    post_order_visit(store->value, [&](const Node* node) {
      if (node->kind() != NodeKind::BufferLoad) return;
      for (const Expr& index : static_cast<const BufferLoad*>(node)->indices) {
        injective = injective && is_iterator_plus_constant(index, block);
      }
    });
    result.injective = injective;
    post_order_visit(store->value, [&](const Node* node) {
      if (node->kind() != NodeKind::Call) return;
      const auto* call = static_cast<const Call*>(node);
      if (call->op != Builtin::IfThenElse || call->args.size() != 3) return;
      for (size_t arm = 1; arm < 3; ++arm) {
        post_order_visit(call->args[arm], [&](const Node* inner) {
          result.guarded_read = result.guarded_read || inner->kind() == NodeKind::BufferLoad;
        });
      }
    });
  }
  Ref<PrimFunc> func = sch.func("main");
  for (const BufferRegion& write : block.writes) {
    for (const auto& [param, buffer] : func->buffer_map) {
      result.writes_output = result.writes_output || buffer.same_as(write.buffer);
    }
  }
  return result;
}

std::optional<double> loop_runs(schedule::Schedule& sch, const std::string& name) {
  const schedule::BlockLocation* loc = sch.index("main").find_block(name);
  if (loc == nullptr) return std::nullopt;
  double runs = 1;
  for (const For* loop : loc->loops) {
    const int64_t* extent = as_const_int(loop->extent);
    if (extent == nullptr) return std::nullopt;
    runs *= static_cast<double>(*extent);
  }
  return runs;
}

bool recomputes_reduction(schedule::Schedule& sch, const std::string& name) {
  const schedule::BlockLocation* loc = sch.index("main").find_block(name);
  if (loc == nullptr) return false;
  bool reduction = false;
  double iterations = 1;
  for (const IterVar& iv : loc->block->iter_vars) {
    const int64_t* extent = as_const_int(iv.dom.extent);
    if (extent == nullptr) return false;
    iterations *= static_cast<double>(*extent);
    reduction = reduction || iv.type != IterType::kDataPar;
  }
  std::optional<double> runs = loop_runs(sch, name);
  return reduction && runs && *runs >= 2 * iterations;
}

bool in_another_reduction_loop(schedule::Schedule& sch, const std::string& name) {
  const schedule::BlockLocation* loc = sch.index("main").find_block(name);
  if (loc == nullptr) return false;
  bool reduction = false;
  for (const IterVar& iv : loc->block->iter_vars) reduction |= iv.type != IterType::kDataPar;
  if (!reduction) return false;
  for (const For* loop : loc->loops) {
    const Var* var = loop->loop_var.get();
    bool found = false;
    post_order_visit(loop->body, [&](const Node* node) {
      if (found || node->kind() != NodeKind::BlockRealize) return;
      const auto* realize = static_cast<const BlockRealize*>(node);
      if (realize->block.get() == loc->block) return;
      for (size_t k = 0; k < realize->block->iter_vars.size(); ++k) {
        if (realize->block->iter_vars[k].type == IterType::kDataPar) continue;
        found =
            found || uses_var(realize->iter_values[k], [var](const Var* v) { return v == var; });
      }
    });
    if (found) return true;
  }
  return false;
}

bool is_useful_compute_location(schedule::Schedule& sch, const schedule::RV& block,
                                int64_t candidate) {
  std::string name = sch.block(block, "useful_compute_locations").block->name;
  schedule::Schedule moved = sch.copy();
  schedule::compute_at(moved, block, schedule::sample_compute_location(moved, block, candidate));
  return !recomputes_reduction(moved, name) && !in_another_reduction_loop(moved, name);
}

std::vector<int64_t> useful_compute_locations(schedule::Schedule& sch, const schedule::RV& block) {
  std::vector<int64_t> useful;
  for (int64_t candidate : schedule::compute_location_candidates(sch, block)) {
    if (is_useful_compute_location(sch, block, candidate)) useful.push_back(candidate);
  }
  return useful;
}

const schedule::BlockLocation* root_scope_block(schedule::Schedule& sch, const std::string& name) {
  const schedule::BlockLocation* loc = sch.index("main").find_block(name);
  const schedule::BlockLocation* root = sch.index("main").find_block("root");
  if (loc == nullptr || root == nullptr || loc->scope != root->block) return nullptr;
  return loc;
}

bool has_operand_reuse(const BlockAnalysis& a) {
  for (const std::vector<bool>& uses : a.read_uses) {
    bool operand = false, reused = false;
    for (size_t k = 0; k < uses.size(); ++k) {
      operand = operand || (a.is_reduce[k] && uses[k]);
      reused = reused || (!a.is_reduce[k] && !a.is_unit[k] && !uses[k]);
    }
    if (operand && reused) return true;
  }
  return false;
}

}  // namespace kiln::autotune
