// Reduce axes, commutative reducers and the built-in reducers of tensor expressions, with the
// checks that give their errors at the call that made the mistake.
#include "kiln/te/reduction.h"

#include <unordered_set>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::te {

using namespace kiln::ir;

namespace {

// A constant converted to `dtype`; any other expression must already have it.
Expr conform(Expr value, DataType dtype, const std::string& api, const char* what) {
  if (value->dtype == dtype) return value;
  if (value.is<IntImm>() || value.is<FloatImm>()) return cast(dtype, value);
  user_error(ErrorKind::kType) << api << ": " << what << " has dtype " << value->dtype
                               << " but the reduced values have dtype " << dtype
                               << "; convert it with astype(\"" << dtype << "\")";
}

void check_reduced_type(const Expr& source, const char* api, bool arithmetic) {
  internal_check(source.defined()) << api << ": null expression";
  DataType t = source->dtype;
  type_check(!t.is_handle() && !t.is_void() && t.is_scalar())
      << api << ": expected a scalar number to reduce, found an expression of dtype " << t;
  type_check(!(arithmetic && t.is_bool()))
      << api << ": cannot reduce a bool expression arithmetically; convert it first, e.g. "
      << "cond.astype(\"int32\")";
}

// The reducer x op y with the given identity, over fresh variables of `dtype`.
Ref<CommReducer> binary_reducer(DataType dtype, Expr (*combine)(Expr, Expr), Expr identity,
                                const char* api) {
  Ref<Var> x = make_var("x", dtype);
  Ref<Var> y = make_var("y", dtype);
  return make_comm_reducer({x}, {y}, {combine(x, y)}, {identity}, api);
}

Expr builtin_reduce(const char* api, Expr source, const std::vector<IterVar>& axis, Expr where,
                    Expr init, Expr (*combine)(Expr, Expr), Expr (*identity)(DataType),
                    bool arithmetic) {
  check_reduced_type(source, api, arithmetic);
  DataType t = source->dtype;
  Ref<CommReducer> reducer = binary_reducer(t, combine, identity(t), api);
  std::vector<Expr> inits;
  if (init.defined()) inits.push_back(init);
  return comm_reduce(reducer, {source}, axis, where, inits, api)[0];
}

}  // namespace

bool is_reduce_axis_var(const Var* var) {
  return dynamic_cast<const ReduceAxisVar*>(var) != nullptr;
}

IterVar reduce_axis(Range dom, const std::string& name) {
  internal_check(dom.min.defined() && dom.extent.defined()) << "te.reduce_axis: null range";
  for (const Expr* e : {&dom.min, &dom.extent}) {
    type_check((*e)->dtype.is_integer() && (*e)->dtype.is_scalar())
        << "te.reduce_axis: the range of axis " << name << " must have integer bounds, found dtype "
        << (*e)->dtype;
  }
  if (const int64_t* extent = as_const_int(dom.extent)) {
    std::string range;
    if (const int64_t* lo = as_const_int(dom.min)) {
      range = " [" + std::to_string(*lo) + ", " + std::to_string(*lo + *extent) + ")";
    }
    user_check(*extent > 0) << "te.reduce_axis: axis " << name << " has the empty range" << range
                            << " (extent " << *extent << "); a reduce axis needs a positive extent";
  }
  std::tie(dom.min, dom.extent) = promote("te.reduce_axis", dom.min, dom.extent);
  Ref<Var> var(make<ReduceAxisVar>(name, dom.min->dtype));
  return IterVar{var, dom, IterType::kCommReduce};
}

Ref<CommReducer> make_comm_reducer(std::vector<Ref<Var>> lhs, std::vector<Ref<Var>> rhs,
                                   std::vector<Expr> result, std::vector<Expr> identity,
                                   const std::string& api) {
  size_t n = lhs.size();
  user_check(n > 0) << api << ": a reducer needs at least one component";
  index_check(rhs.size() == n && result.size() == n && identity.size() == n)
      << api << ": the reducer has " << n << " lhs, " << rhs.size() << " rhs variables, "
      << result.size() << " combined values (fcombine) and " << identity.size()
      << " identity values (fidentity); they must agree";
  for (size_t i = 0; i < n; ++i) {
    DataType t = lhs[i]->dtype;
    type_check(rhs[i]->dtype == t) << api << ": component " << i << " has lhs dtype " << t
                                   << " but rhs dtype " << rhs[i]->dtype;
    internal_check(result[i].defined() && identity[i].defined()) << api << ": null component";
    type_check(result[i]->dtype == t)
        << api << ": component " << i << " of fcombine's result has dtype " << result[i]->dtype
        << " but the reduced values have dtype " << t << "; convert it with astype";
    identity[i] = conform(identity[i], t, api, "the identity (fidentity) value");
  }
  auto reducer = make<CommReducer>();
  reducer->lhs = std::move(lhs);
  reducer->rhs = std::move(rhs);
  reducer->result = std::move(result);
  reducer->identity = std::move(identity);
  return reducer;
}

std::vector<Expr> comm_reduce(const Ref<CommReducer>& combiner, std::vector<Expr> source,
                              const std::vector<IterVar>& axis, Expr where, std::vector<Expr> init,
                              const std::string& api) {
  size_t n = combiner->lhs.size();
  index_check(source.size() == n) << api << ": the reducer has " << n << " components but "
                                  << source.size() << " values to reduce were given";
  // Step 1. The values to reduce, the condition and the initial values.
  for (size_t i = 0; i < n; ++i) {
    internal_check(source[i].defined()) << api << ": null value to reduce";
    type_check(source[i]->dtype == combiner->lhs[i]->dtype)
        << api << ": value " << i << " to reduce has dtype " << source[i]->dtype
        << " but the reducer combines " << combiner->lhs[i]->dtype;
    post_order_visit(source[i], [&](const Node* node) {
      user_check(node->kind() != NodeKind::Reduce)
          << api
          << ": the reduced expression contains another reduction; compute the inner "
             "reduction in its own te.compute and use that tensor";
    });
  }
  if (where.defined()) {
    type_check(where->dtype == DataType::bool_())
        << api << ": where must be a bool condition, found an expression of dtype " << where->dtype;
  } else {
    where = bool_const(true);
  }
  user_check(init.empty() || init.size() == n)
      << api << ": init has " << init.size() << " values for a reducer of " << n << " components";
  for (size_t i = 0; i < init.size(); ++i) {
    internal_check(init[i].defined()) << api << ": null init value";
    init[i] = conform(init[i], combiner->lhs[i]->dtype, api, "init");
  }
  // Step 2. The axes: reduce axes, distinct. An axis the values do not use is valid, as in
  // TVM: te.sum(x, axis=k) is extent(k) * x and te.max(x, axis=k) is x; generated and ported
  // code produces such reductions.
  user_check(!axis.empty()) << api << ": axis is empty; give the reduce axes (te.reduce_axis)";
  std::unordered_set<const Var*> seen;
  for (const IterVar& iv : axis) {
    user_check(iv.type == IterType::kCommReduce)
        << api << ": axis " << iv.var->name << " is a " << iter_type_name(iv.type)
        << " axis; reduce over axes made by te.reduce_axis";
    user_check(seen.insert(iv.var.get()).second)
        << api << ": reduce axis " << iv.var->name << " is given twice";
  }
  // Step 3. One Reduce per component; they share every field but value_index.
  std::vector<Expr> outputs;
  for (size_t i = 0; i < n; ++i) {
    auto r = make<Reduce>(combiner->lhs[i]->dtype);
    r->combiner = combiner;
    r->source = source;
    r->axis = axis;
    r->condition = where;
    r->value_index = static_cast<int>(i);
    r->init = init;
    outputs.push_back(r);
  }
  return outputs;
}

Expr sum(Expr source, const std::vector<IterVar>& axis, Expr where, Expr init) {
  return builtin_reduce("te.sum", source, axis, where, init, &add, &make_zero, true);
}

Expr max(Expr source, const std::vector<IterVar>& axis, Expr where, Expr init) {
  return builtin_reduce("te.max", source, axis, where, init, &ir::max, &min_value, false);
}

Expr min(Expr source, const std::vector<IterVar>& axis, Expr where, Expr init) {
  return builtin_reduce("te.min", source, axis, where, init, &ir::min, &max_value, false);
}

Expr prod(Expr source, const std::vector<IterVar>& axis, Expr where, Expr init) {
  return builtin_reduce("te.prod", source, axis, where, init, &mul, &make_one, true);
}

}  // namespace kiln::te
