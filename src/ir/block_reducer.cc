// The combiner of a reduction block (see block_reducer.h): one value combined by + * max min,
// or several, each by a Select or one of those, bound to LetStmts before they are stored.
#include "kiln/ir/block_reducer.h"

#include <cmath>
#include <unordered_set>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"

namespace kiln::ir {

namespace {

using VarSet = std::unordered_set<const Var*>;

Expr load_of(const BufferStore& store) {
  return make<BufferLoad>(store.buffer->dtype, store.buffer, store.indices);
}

bool is_load_of(const Expr& e, const BufferStore& store) {
  const auto* load = e.as<BufferLoad>();
  return load != nullptr && structural_equal(e, load_of(store));
}

bool is_combining_kind(NodeKind kind) {
  return kind == NodeKind::Add || kind == NodeKind::Mul || kind == NodeKind::Max ||
         kind == NodeKind::Min;
}

const char* combiner_name(NodeKind kind) {
  switch (kind) {
    case NodeKind::Add:
      return "sum";
    case NodeKind::Mul:
      return "prod";
    case NodeKind::Max:
      return "max";
    default:
      return "min";
  }
}

// The identity of + * max min for dtype `t`. A float max (min) may also start from -inf (+inf):
// an identity as good as the lowest (largest) finite value that te.max (te.min) uses.
Expr identity_of(NodeKind kind, DataType t) {
  switch (kind) {
    case NodeKind::Add:
      return make_zero(t);
    case NodeKind::Mul:
      return make_one(t);
    case NodeKind::Max:
      return min_value(t);
    default:
      return max_value(t);
  }
}

bool is_identity(NodeKind kind, const Expr& init, DataType t) {
  if (const auto* f = init.as<FloatImm>()) {
    bool infinite =
        std::isinf(f->value) && f->dtype == t &&
        ((kind == NodeKind::Max && f->value < 0) || (kind == NodeKind::Min && f->value > 0));
    if (infinite) return true;
  }
  return structural_equal(identity_of(kind, t), init);
}

// The operand of `value` (a Select or one of + * max min) that is not the load `stored`, when
// exactly one of its operands is that load.
Expr other_operand(const Expr& value, const BufferStore& stored) {
  Expr a, b;
  if (const auto* select = value.as<Select>()) {
    a = select->true_value, b = select->false_value;
  } else if (is_combining_kind(value->kind())) {
    const auto* binary = static_cast<const BinaryNode*>(value.get());
    a = binary->a, b = binary->b;
  } else {
    return Expr();
  }
  if (is_load_of(a, stored) && !is_load_of(b, stored)) return b;
  if (is_load_of(b, stored) && !is_load_of(a, stored)) return a;
  return Expr();
}

bool reads_any(const Expr& e, const std::vector<Ref<Buffer>>& buffers) {
  bool found = false;
  post_order_visit(e, [&](const Node* node) {
    if (node->kind() != NodeKind::BufferLoad) return;
    for (const Ref<Buffer>& b : buffers) {
      found = found || static_cast<const BufferLoad*>(node)->buffer.same_as(b);
    }
  });
  return found;
}

// Replaces, outermost first, each subexpression structurally equal to one of `from` by the
// matching expression of `to`.
class ReplaceSubexpressions : public IRMutator {
 public:
  ReplaceSubexpressions(std::vector<Expr> from, std::vector<Expr> to)
      : from_(std::move(from)), to_(std::move(to)) {}

 protected:
#define KILN_REPLACE(Name)                                       \
  Expr visit(const Name* op) override {                          \
    Expr replaced = replacement(Expr(op));                       \
    return replaced.defined() ? replaced : IRMutator::visit(op); \
  }
  KILN_EXPR_NODE_LIST(KILN_REPLACE)
#undef KILN_REPLACE

 private:
  Expr replacement(const Expr& e) const {
    for (size_t k = 0; k < from_.size(); ++k) {
      if (structural_equal(e, from_[k])) return to_[k];
    }
    return Expr();
  }

  std::vector<Expr> from_;
  std::vector<Expr> to_;
};

class Matcher {
 public:
  Matcher(const Block& block, ReducerMismatch* mismatch) : block_(block), mismatch_(mismatch) {}

  std::optional<BlockReducer> match() {
    // Step 1. An init, and spatial and reduce iterators only.
    if (!block_.init.defined()) return not_reduction("has no init, so it is not a reduction");
    bool has_reduce = false;
    for (const IterVar& iv : block_.iter_vars) {
      if (iv.type == IterType::kCommReduce) {
        has_reduce = true;
        reduce_vars_.insert(iv.var.get());
      } else if (iv.type != IterType::kDataPar) {
        return not_reduction("has the " + std::string(iter_type_name(iv.type)) + " iterator '" +
                             iv.var->name + "'; a reduction has only spatial and reduce iterators");
      }
    }
    if (!has_reduce) return not_reduction("has no reduce iterator");
    // Step 2. One value, or several bound to LetStmts.
    if (block_.body.as<LetStmt>() != nullptr) return match_several();
    return match_one();
  }

 private:
  std::optional<BlockReducer> not_reduction(const std::string& why) {
    *mismatch_ = {ReducerMismatch::kNotReduction, "block '" + block_.name + "' " + why};
    return std::nullopt;
  }
  std::optional<BlockReducer> unknown_combiner(const std::string& why) {
    *mismatch_ = {ReducerMismatch::kUnknownCombiner, why};
    return std::nullopt;
  }

  // Whether the store's element depends on a reduce iterator (then the mismatch says so).
  bool stores_per_reduce_step(const BufferStore& store) {
    for (const Expr& index : store.indices) {
      if (uses_var(index, [this](const Var* v) { return reduce_vars_.count(v) != 0; })) {
        not_reduction("stores to " + to_script(load_of(store)) +
                      ", an element that depends on a reduce iterator");
        return true;
      }
    }
    return false;
  }

  std::optional<BlockReducer> match_one() {
    const auto* init = block_.init.as<BufferStore>();
    const auto* update = block_.body.as<BufferStore>();
    if (init == nullptr || update == nullptr) {
      const Stmt& other = init == nullptr ? block_.init : block_.body;
      return not_reduction(
          "is not of the form `C[idx] = f(C[idx], x)` with an init `C[idx] = c`: "
          "its " +
          std::string(init == nullptr ? "init" : "body") + " is a " + kind_name(other->kind()));
    }
    if (!init->buffer.same_as(update->buffer) || !is_load_of(load_of(*init), *update)) {
      return not_reduction("initializes " + to_script(load_of(*init)) + " but updates " +
                           to_script(load_of(*update)));
    }
    if (stores_per_reduce_step(*update)) return std::nullopt;
    const Expr& value = update->value;
    std::string update_text = to_script(Stmt(update));
    if (!is_combining_kind(value->kind())) {
      return unknown_combiner("the update `" + update_text + "` of block '" + block_.name +
                              "' is not a sum, product, max or min of the stored element");
    }
    Expr rhs = other_operand(value, *update);
    if (!rhs.defined()) {
      return unknown_combiner("the update `" + update_text + "` of block '" + block_.name +
                              "' does not combine the stored element with a new value exactly "
                              "once");
    }
    if (reads_any(rhs, {update->buffer})) {
      return unknown_combiner("the update `" + update_text + "` of block '" + block_.name +
                              "' reads " + update->buffer->name + " in the value it combines");
    }
    DataType t = update->buffer->dtype;
    if (!is_identity(value->kind(), init->value, t)) {
      return unknown_combiner(
          "block '" + block_.name + "' combines with " + combiner_name(value->kind()) +
          " but its init value " + to_script(init->value) + " is not the identity " +
          to_script(identity_of(value->kind(), t)) + " of " + combiner_name(value->kind()));
    }
    auto combiner = make<CommReducer>();
    Ref<Var> x = make_var("x", t), y = make_var("y", rhs->dtype);
    combiner->lhs = {x};
    combiner->rhs = {y};
    combiner->result = {ReplaceSubexpressions({load_of(*update), rhs}, {x, y}).mutate(value)};
    combiner->identity = {init->value};
    return BlockReducer{{update->buffer}, update->indices, combiner, {rhs}};
  }

  std::optional<BlockReducer> match_several() {
    // Step 1. let t_0 = f_0; ...; B_0[idx] = t_0; ... and the init B_j[idx] = e_j.
    std::string form =
        "is not a reduction of several values `let t_j = f_j(...)` for each value, then "
        "`B_j[idx] = t_j`, with an init `B_j[idx] = c_j`: ";
    std::vector<const LetStmt*> lets;
    Stmt s = block_.body;
    while (const auto* let = s.as<LetStmt>()) {
      lets.push_back(let);
      s = let->body;
    }
    std::vector<const BufferStore*> stores = stores_of(s), inits = stores_of(block_.init);
    size_t n = lets.size();
    if (stores.size() != n || inits.size() != n) {
      return not_reduction(form + "it binds " + std::to_string(n) + " values, stores " +
                           std::to_string(stores.size()) + " and initializes " +
                           std::to_string(inits.size()));
    }
    BlockReducer r;
    r.indices = stores[0]->indices;
    std::vector<Expr> updates;  // f_j over the block's iterators
    for (size_t j = 0; j < n; ++j) {
      const BufferStore& store = *stores[j];
      const auto* temp = store.value.as<Var>();
      if (temp != nullptr && temp != lets[j]->var.get()) temp = nullptr;
      if (temp == nullptr || !inits[j]->buffer.same_as(store.buffer) ||
          !is_load_of(load_of(*inits[j]), store)) {
        return not_reduction(form + "its store " + to_script(Stmt(stores[j])) + " is not `" +
                             to_script(load_of(*inits[j])) + " = " + lets[j]->var->name + "`");
      }
      if (!structural_equal(load_of(store),
                            make<BufferLoad>(store.buffer->dtype, store.buffer, r.indices))) {
        return not_reduction(form + "it stores to " + to_script(load_of(store)) + " and " +
                             to_script(load_of(*stores[0])) + ", at different indices");
      }
      if (stores_per_reduce_step(store)) return std::nullopt;
      r.buffers.push_back(store.buffer);
      updates.push_back(lets[j]->value);
    }
    // Step 2. y_j: the operand of f_j that is not B_j[idx], reading no B_k.
    std::vector<Expr> from, to;
    auto combiner = make<CommReducer>();
    for (size_t j = 0; j < n; ++j) {
      Expr y = other_operand(updates[j], *stores[j]);
      std::string value_text = "the value " + to_script(updates[j]) + " of " +
                               to_script(load_of(*stores[j])) + " in block '" + block_.name + "'";
      if (!y.defined()) {
        return unknown_combiner(value_text + " is not a select, sum, product, max or min with " +
                                "the stored element as exactly one operand");
      }
      if (reads_any(y, r.buffers)) {
        return unknown_combiner(value_text + " combines " + to_script(y) +
                                ", which reads the values it reduces into");
      }
      for (const Expr& other : r.values) {
        if (structural_equal(y, other)) {
          return unknown_combiner(value_text + " combines " + to_script(y) +
                                  ", which another value combines too");
        }
      }
      r.values.push_back(y);
      combiner->lhs.push_back(make_var("x" + std::to_string(j), r.buffers[j]->dtype));
      combiner->rhs.push_back(make_var("y" + std::to_string(j), y->dtype));
      from.push_back(load_of(*stores[j]));
      to.push_back(combiner->lhs.back());
    }
    from.insert(from.end(), r.values.begin(), r.values.end());
    to.insert(to.end(), combiner->rhs.begin(), combiner->rhs.end());
    // Step 3. f_j over x and y only: no other variable (a spatial iterator) and no load, which
    // the partial results of rfactor and of threads could not evaluate where they combine.
    VarSet operands;
    for (const Ref<Var>& v : combiner->lhs) operands.insert(v.get());
    for (const Ref<Var>& v : combiner->rhs) operands.insert(v.get());
    for (size_t j = 0; j < n; ++j) {
      Expr f = ReplaceSubexpressions(from, to).mutate(updates[j]);
      bool loads = false;
      post_order_visit(
          f, [&loads](const Node* node) { loads = loads || node->kind() == NodeKind::BufferLoad; });
      bool other = loads || uses_var(f, [&](const Var* v) { return operands.count(v) == 0; });
      if (other) {
        return unknown_combiner("the value " + to_script(updates[j]) + " of " +
                                to_script(load_of(*stores[j])) + " in block '" + block_.name +
                                "' depends on more than the stored values and the values it "
                                "combines");
      }
      combiner->result.push_back(f);
    }
    // Step 4. The init: constants, the combiner's identity.
    for (const BufferStore* init : inits) {
      bool constant = init->value.as<IntImm>() != nullptr || init->value.as<FloatImm>() != nullptr;
      if (!constant) {
        return not_reduction(form + "its init " + to_script(Stmt(init)) + " is not a constant");
      }
      combiner->identity.push_back(init->value);
    }
    r.combiner = combiner;
    return r;
  }

  static std::vector<const BufferStore*> stores_of(const Stmt& s) {
    std::vector<const BufferStore*> out;
    if (const auto* store = s.as<BufferStore>()) return {store};
    const auto* seq = s.as<SeqStmt>();
    if (seq == nullptr) return out;
    for (const Stmt& item : seq->seq) {
      const auto* store = item.as<BufferStore>();
      if (store == nullptr) return {};
      out.push_back(store);
    }
    return out;
  }

  const Block& block_;
  ReducerMismatch* mismatch_;
  VarSet reduce_vars_;
};

}  // namespace

std::optional<BlockReducer> match_block_reducer(const Block& block, ReducerMismatch* mismatch) {
  return Matcher(block, mismatch).match();
}

std::vector<Expr> combine(const CommReducer& combiner, const std::vector<Expr>& lhs,
                          const std::vector<Expr>& rhs) {
  VarMap operands;
  for (size_t j = 0; j < combiner.lhs.size(); ++j) {
    operands[combiner.lhs[j].get()] = lhs[j];
    operands[combiner.rhs[j].get()] = rhs[j];
  }
  std::vector<Expr> out;
  for (const Expr& f : combiner.result) out.push_back(substitute(f, operands));
  return out;
}

std::vector<Expr> elements_of(const std::vector<Ref<Buffer>>& buffers,
                              const std::vector<Expr>& indices) {
  std::vector<Expr> out;
  for (const Ref<Buffer>& b : buffers) out.push_back(make<BufferLoad>(b->dtype, b, indices));
  return out;
}

Stmt store_each(const std::vector<Expr>& places, const std::vector<Expr>& values) {
  std::vector<Stmt> stores;
  for (size_t j = 0; j < places.size(); ++j) {
    const auto* load = places[j].as<BufferLoad>();
    internal_check(load != nullptr)
        << "store_each: the place " << to_script(places[j]) << " is not a buffer element";
    stores.push_back(make<BufferStore>(load->buffer, values[j], load->indices));
  }
  return stores.size() == 1 ? stores[0] : make<SeqStmt>(std::move(stores));
}

Stmt store_together(const std::vector<Expr>& places, const std::vector<Expr>& values) {
  std::vector<Ref<Var>> temps;
  std::vector<Stmt> stores;
  for (size_t j = 0; j < places.size(); ++j) {
    const auto* load = places[j].as<BufferLoad>();
    internal_check(load != nullptr)
        << "store_together: the place " << to_script(places[j]) << " is not a buffer element";
    if (places.size() == 1) return make<BufferStore>(load->buffer, values[0], load->indices);
    temps.push_back(make_var(load->buffer->name + "_temp", values[j]->dtype));
    stores.push_back(make<BufferStore>(load->buffer, Expr(temps[j]), load->indices));
  }
  Stmt body = make<SeqStmt>(std::move(stores));
  for (size_t j = places.size(); j-- > 0;) body = make<LetStmt>(temps[j], values[j], body);
  return body;
}

}  // namespace kiln::ir
