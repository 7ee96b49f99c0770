// te.create_prim_func: lowers a graph of placeholder and compute ops to a TensorIR PrimFunc with
// one block per compute op (see create_prim_func.h for the shape of the result).
#include "kiln/te/create_prim_func.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "kiln/ir/block_reducer.h"
#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::te {

using namespace kiln::ir;

namespace {

// Whether two index expressions are written the same way over the same variables; repeated
// accesses to one element then share a region entry instead of a min/max of equal terms.
bool same_index(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined() || a->kind() != b->kind() || a->dtype != b->dtype) {
    return false;
  }
  if (const auto* x = a.as<IntImm>()) return x->value == b.as<IntImm>()->value;
  if (const auto* x = a.as<FloatImm>()) return x->value == b.as<FloatImm>()->value;
  if (const auto* x = a.as<Cast>()) return same_index(x->value, b.as<Cast>()->value);
  if (const auto* x = dynamic_cast<const BinaryNode*>(a.get())) {
    const auto* y = static_cast<const BinaryNode*>(b.get());
    return same_index(x->a, y->a) && same_index(x->b, y->b);
  }
  return false;
}

// `e` as base + offset with a constant offset (base is null for a constant).
std::pair<Expr, int64_t> split_offset(const Expr& e) {
  if (const int64_t* c = as_const_int(e)) return {nullptr, *c};
  if (const auto* add = e.as<Add>()) {
    if (const int64_t* c = as_const_int(add->b)) return {add->a, *c};
  }
  if (const auto* sub = e.as<Sub>()) {
    if (const int64_t* c = as_const_int(sub->b)) return {sub->a, -*c};
  }
  return {e, 0};
}

// The range covering `indices` when they differ only by constant offsets from one base
// (A[i], A[i + 1], A[i - 1] give [i - 1, i - 1 + 3)); nullopt otherwise.
std::optional<Range> offset_range(const std::vector<Expr>& indices) {
  auto [base, lo] = split_offset(indices[0]);
  int64_t hi = lo;
  for (size_t i = 1; i < indices.size(); ++i) {
    auto [b, offset] = split_offset(indices[i]);
    if (!(b.defined() == base.defined() && (!b.defined() || same_index(b, base)))) {
      return std::nullopt;
    }
    lo = std::min(lo, offset);
    hi = std::max(hi, offset);
  }
  DataType t = indices[0]->dtype;
  Expr start = make_const(t, lo);
  if (base.defined()) start = lo == 0 ? base : lo > 0 ? base + lo : base - (-lo);
  return Range{start, make_const(t, hi - lo + 1)};
}

// The region of `buffer` that covers every access in `accesses` (each a list of indices): per
// dimension the index itself when all accesses agree, base + [lo, hi] when they differ by
// constant offsets, else [min, max + 1) of the indices.
BufferRegion covering_region(const Ref<Buffer>& buffer,
                             const std::vector<std::vector<Expr>>& accesses) {
  BufferRegion region{buffer, {}};
  for (int d = 0; d < buffer->ndim(); ++d) {
    std::vector<Expr> distinct;
    for (const std::vector<Expr>& access : accesses) {
      bool seen = false;
      for (const Expr& e : distinct) seen = seen || same_index(e, access[d]);
      if (!seen) distinct.push_back(access[d]);
    }
    if (distinct.size() == 1) {
      region.region.push_back(Range{distinct[0], make_one(distinct[0]->dtype)});
      continue;
    }
    if (std::optional<Range> range = offset_range(distinct)) {
      region.region.push_back(*range);
      continue;
    }
    Expr lo = distinct[0], hi = distinct[0];
    for (size_t i = 1; i < distinct.size(); ++i) {
      lo = ir::min(lo, distinct[i]);
      hi = ir::max(hi, distinct[i]);
    }
    region.region.push_back(Range{lo, hi + 1 - lo});
  }
  return region;
}

// The regions read by the loads in `exprs`, one per buffer, in order of first access.
std::vector<BufferRegion> read_regions(const std::vector<Expr>& exprs) {
  std::vector<Ref<Buffer>> order;
  std::unordered_map<const Buffer*, std::vector<std::vector<Expr>>> accesses;
  for (const Expr& e : exprs) {
    post_order_visit(e, [&](const Node* n) {
      if (n->kind() != NodeKind::BufferLoad) return;
      const auto* load = static_cast<const BufferLoad*>(n);
      auto it = accesses.find(load->buffer.get());
      if (it == accesses.end()) {
        order.push_back(load->buffer);
        it = accesses.emplace(load->buffer.get(), std::vector<std::vector<Expr>>{}).first;
      }
      it->second.push_back(load->indices);
    });
  }
  std::vector<BufferRegion> regions;
  for (const Ref<Buffer>& b : order) regions.push_back(covering_region(b, accesses[b.get()]));
  return regions;
}

std::vector<Expr> as_exprs(const std::vector<Ref<Var>>& vars) {
  return std::vector<Expr>(vars.begin(), vars.end());
}

// Variables that `e` uses, in order of first use.
void collect_vars(const Expr& e, std::vector<const Var*>* out) {
  post_order_visit(e, [&](const Node* n) {
    if (n->kind() == NodeKind::Var) out->push_back(static_cast<const Var*>(n));
  });
}

class PrimFuncBuilder {
 public:
  Ref<PrimFunc> build(const std::vector<PrimFuncArg>& args) {
    auto func = make<PrimFunc>();
    // Step 1. Parameters, and the variables they bind.
    for (size_t i = 0; i < args.size(); ++i) add_param(args[i], i, func.get());
    // A dimension of a later tensor may bind a variable that an earlier shape uses.
    check_param_shapes();
    // Step 2. Operations in topological order, producers first.
    for (const Tensor& t : arg_tensors_) visit(t.op, nullptr);
    // Step 3. Inputs given, intermediates allocated, every variable bound.
    std::vector<Ref<Buffer>> allocs;
    for (const auto& op : order_) {
      for (const Ref<Buffer>& b : op->outputs) {
        if (param_buffers_.count(b.get())) continue;
        user_check(dynamic_cast<const PlaceholderOp*>(op.get()) == nullptr)
            << "te.create_prim_func: tensor " << b->name << " is an input of "
            << first_consumer_[op.get()]
            << " but is not in the argument list; pass every placeholder the computation reads";
        allocs.push_back(b);
        for (const Expr& e : b->shape)
          check_bound(e, "the shape of intermediate tensor " + b->name);
      }
    }
    for (const auto& op : order_) {
      if (const auto* compute = dynamic_cast<const ComputeOp*>(op.get())) check_bound(*compute);
      if (const auto* ext = dynamic_cast<const ExternOp*>(op.get())) check_bound(*ext);
    }
    // Step 4. One loop nest around one block per compute op, one opaque block per extern op.
    std::vector<Stmt> nests;
    for (const auto& op : order_) {
      if (const auto* compute = dynamic_cast<const ComputeOp*>(op.get())) {
        nests.push_back(lower(*compute));
      }
      if (const auto* ext = dynamic_cast<const ExternOp*>(op.get())) nests.push_back(lower(*ext));
    }
    // Step 5. The root block and the function.
    auto root = make<Block>();
    root->name = "root";
    root->alloc_buffers = std::move(allocs);
    root->body = seq(std::move(nests));
    func->body = make<BlockRealize>(std::vector<Expr>{}, bool_const(true), root);
    func->attrs["global_symbol"] = make<StringImm>("main");
    func->attrs["tir.noalias"] = bool_const(true);
    return func;
  }

 private:
  void add_param(const PrimFuncArg& arg, size_t index, PrimFunc* func) {
    if (const Ref<Var>* scalar = std::get_if<Ref<Var>>(&arg)) {
      internal_check(scalar->defined()) << "te.create_prim_func: null variable argument";
      user_check(bound_.insert(scalar->get()).second)
          << "te.create_prim_func: variable " << (*scalar)->name
          << " is given twice or is already bound as a dimension of an earlier tensor argument";
      func->params.push_back(*scalar);
      return;
    }
    const Tensor& t = std::get<Tensor>(arg);
    user_check(t.defined()) << "te.create_prim_func: argument " << index
                            << " is an undefined tensor";
    const Ref<Buffer>& buffer = t.buffer();
    user_check(param_buffers_.insert(buffer.get()).second)
        << "te.create_prim_func: tensor " << buffer->name << " is given twice (argument " << index
        << ")";
    Ref<Var> handle = make_var(buffer->name, DataType::handle());
    func->params.push_back(handle);
    func->buffer_map.emplace_back(handle, buffer);
    for (const Expr& dim : buffer->shape) {
      if (const auto* v = dim.as<Var>()) bound_.insert(v);
    }
    param_shapes_.push_back(buffer);
    arg_tensors_.push_back(t);
  }

  void visit(const std::shared_ptr<const Operation>& op, const Operation* consumer) {
    if (!visited_.insert(op.get()).second) return;
    if (consumer != nullptr) {
      bool is_extern = dynamic_cast<const ExternOp*>(consumer) != nullptr;
      first_consumer_[op.get()] = (is_extern ? "extern " : "compute ") + consumer->name;
    }
    for (const Tensor& input : op->input_tensors()) visit(input.op, op.get());
    order_.push_back(op);
  }

  // Every variable of `e` must be bound by a parameter.
  void check_bound(const Expr& e, const std::string& where,
                   const std::unordered_set<const Var*>& local = {}) {
    std::vector<const Var*> vars;
    collect_vars(e, &vars);
    for (const Var* v : vars) {
      user_check(bound_.count(v) || local.count(v))
          << "te.create_prim_func: variable " << v->name << " used in " << where
          << " is not bound: it is neither an argument nor a whole dimension of an argument "
             "tensor's shape; pass it in the argument list";
    }
  }

  void check_bound(const ComputeOp& op) {
    std::unordered_set<const Var*> local;
    for (const IterVar& iv : op.axis) local.insert(iv.var.get());
    for (const IterVar& iv : op.reduce_axis) local.insert(iv.var.get());
    for (const Expr& e : op.body) check_bound(e, "compute " + op.name, local);
  }

  // The statement of an extern op may use its buffers' data variables besides bound ones.
  void check_bound(const ExternOp& op) {
    std::unordered_set<const Var*> local;
    for (const Tensor& t : op.inputs) local.insert(t.buffer()->data.get());
    for (const Ref<Buffer>& b : op.outputs) local.insert(b->data.get());
    std::vector<const Var*> vars;
    post_order_visit(op.body, [&](const Node* n) {
      if (n->kind() == NodeKind::Var) vars.push_back(static_cast<const Var*>(n));
    });
    for (const Var* v : vars) {
      user_check(bound_.count(v) || local.count(v))
          << "te.create_prim_func: variable " << v->name << " used in extern " << op.name
          << " is not bound: it is neither an argument nor a whole dimension of an argument "
             "tensor's shape; pass it in the argument list";
    }
  }

  void check_param_shapes() {
    for (const Ref<Buffer>& b : param_shapes_) {
      for (const Expr& e : b->shape) check_bound(e, "the shape of tensor " + b->name);
    }
  }

  std::string unique_block_name(const std::string& name) {
    std::string candidate = name;
    for (int n = 1; !block_names_.insert(candidate).second; ++n) {
      candidate = name + "_" + std::to_string(n);
    }
    return candidate;
  }

  // The loop nest and block of one compute op.
  Stmt lower(const ComputeOp& op) {
    // Step 1. Loop variables and block iterators, spatial then reduce.
    VarMap to_block;
    std::vector<Ref<Var>> loop_vars, block_vars;
    std::vector<Range> loop_ranges;
    auto block = make<Block>();
    auto add_iter = [&](const IterVar& iv) {
      Ref<Var> loop_var = make_var(iv.var->name, iv.var->dtype);
      Ref<Var> block_var = make_var("v_" + iv.var->name, iv.var->dtype);
      loop_vars.push_back(loop_var);
      block_vars.push_back(block_var);
      loop_ranges.push_back(iv.dom);
      block->iter_vars.push_back(IterVar{block_var, iv.dom, iv.type});
      to_block[iv.var.get()] = block_var;
    };
    for (const IterVar& iv : op.axis) add_iter(iv);
    for (const IterVar& iv : op.reduce_axis) add_iter(iv);
    std::vector<Expr> point =
        as_exprs(std::vector<Ref<Var>>(block_vars.begin(), block_vars.begin() + op.axis.size()));
    // Step 2. The body: stores of the values, or init and update of a reduction.
    std::vector<Expr> read_exprs;
    if (const auto* reduce = op.body[0].as<Reduce>()) {
      lower_reduction(op, *reduce, to_block, point, block.get(), &read_exprs);
    } else {
      std::vector<Stmt> stores;
      for (int i = 0; i < op.num_outputs(); ++i) {
        Expr value = substitute(op.body[i], to_block);
        read_exprs.push_back(value);
        stores.push_back(buffer_store(op.outputs[i], value, point));
      }
      block->body = seq(std::move(stores));
    }
    // Step 3. Regions, name and annotations.
    block->reads = read_regions(read_exprs);
    for (const Ref<Buffer>& out : op.outputs)
      block->writes.push_back(covering_region(out, {point}));
    block->name = unique_block_name(op.name);
    block->annotations = op.attrs;
    // Step 4. The realize and the loops around it, innermost last in the lists.
    Stmt nest = make<BlockRealize>(as_exprs(loop_vars), bool_const(true), block);
    for (size_t i = loop_vars.size(); i-- > 0;) {
      nest = make<For>(loop_vars[i], loop_ranges[i].min, loop_ranges[i].extent, ForKind::kSerial,
                       nest);
    }
    return nest;
  }

  // The opaque block of an extern op: no iterators, the whole of each input read and of each
  // output written, so that the schedule sees it as one indivisible step.
  Stmt lower(const ExternOp& op) {
    auto whole = [](const Ref<Buffer>& b) {
      BufferRegion region{b, {}};
      for (const Expr& extent : b->shape) {
        region.region.push_back(Range{make_zero(extent->dtype), extent});
      }
      return region;
    };
    auto block = make<Block>();
    std::unordered_set<const Buffer*> read;
    for (const Tensor& t : op.inputs) {
      if (read.insert(t.buffer().get()).second) block->reads.push_back(whole(t.buffer()));
    }
    for (const Ref<Buffer>& out : op.outputs) block->writes.push_back(whole(out));
    block->body = op.body;
    block->name = unique_block_name(op.name);
    block->annotations = op.attrs;
    return make<BlockRealize>(std::vector<Expr>{}, bool_const(true), block);
  }

  void lower_reduction(const ComputeOp& op, const Reduce& reduce, const VarMap& to_block,
                       const std::vector<Expr>& point, Block* block,
                       std::vector<Expr>* read_exprs) {
    const CommReducer& combiner = *reduce.combiner;
    size_t n = op.outputs.size();
    // Step 1. The sources, the condition and the initial values over the block iterators.
    std::vector<Expr> sources;
    for (const Expr& s : reduce.source) sources.push_back(substitute(s, to_block));
    Expr condition = substitute(reduce.condition, to_block);
    std::vector<Expr> inits;
    for (const Expr& e : reduce.init) inits.push_back(substitute(e, to_block));
    read_exprs->insert(read_exprs->end(), sources.begin(), sources.end());
    read_exprs->push_back(condition);
    read_exprs->insert(read_exprs->end(), inits.begin(), inits.end());
    // Step 2. init: out = init value or identity.
    std::vector<Stmt> init_stores;
    for (size_t i = 0; i < n; ++i) {
      Expr value = inits.empty() ? combiner.identity[i] : inits[i];
      init_stores.push_back(buffer_store(op.outputs[i], value, point));
    }
    block->init = seq(std::move(init_stores));
    // Step 3. update: out = combiner(out, source), all components combined before any store.
    std::vector<Expr> outs;
    for (size_t i = 0; i < n; ++i) outs.push_back(buffer_load(op.outputs[i], point));
    Stmt update = store_together(outs, combine(combiner, outs, sources));
    // Step 4. where: guard the update, so its loads run only where the condition holds.
    if (!is_const_int(condition, 1)) update = make<IfThenElse>(condition, update);
    block->body = update;
  }

  std::vector<Tensor> arg_tensors_;
  std::vector<Ref<Buffer>> param_shapes_;
  std::unordered_set<const Buffer*> param_buffers_;
  std::unordered_set<const Var*> bound_;
  std::unordered_set<const Operation*> visited_;
  std::unordered_map<const Operation*, std::string> first_consumer_;
  std::vector<std::shared_ptr<const Operation>> order_;
  std::unordered_set<std::string> block_names_;
};

}  // namespace

Ref<PrimFunc> create_prim_func(const std::vector<PrimFuncArg>& args) {
  return PrimFuncBuilder().build(args);
}

}  // namespace kiln::te
