// Reductions in tensor expressions: reduce axes, commutative reducers, and the built-in reducers
// sum, max, min and prod. A reduction is an ir::Reduce node; it may only be the whole body of a
// te compute, which te::create_prim_func turns into a block with an init and an update.
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/expr.h"

namespace kiln::te {

using ir::CommReducer;
using ir::DataType;
using ir::Expr;
using ir::IterVar;
using ir::Range;
using ir::Ref;
using ir::Var;

// The variable of a reduce axis made by te::reduce_axis. It is an ordinary ir::Var to the rest
// of the IR; its dynamic type lets te::compute tell a reduce axis used outside its reduction from
// a free symbolic variable.
struct ReduceAxisVar : Var {
  ReduceAxisVar(std::string name, DataType dtype) : Var(std::move(name), dtype) {}
};

// Whether `var` was made by te::reduce_axis.
bool is_reduce_axis_var(const Var* var);

// A reduce axis over `dom` (a constant extent must be positive).
IterVar reduce_axis(Range dom, const std::string& name = "rv");

// A reducer with `lhs`/`rhs` variables, combined values `result` and neutral `identity`, one
// entry per component. Checks that the components agree in number and dtype. `api` is named in
// errors.
Ref<CommReducer> make_comm_reducer(std::vector<Ref<Var>> lhs, std::vector<Ref<Var>> rhs,
                                   std::vector<Expr> result, std::vector<Expr> identity,
                                   const std::string& api);

// One Reduce per component of `combiner`, over `source` (one per component) and `axis` (reduce
// axes; an axis the sources do not use is valid). `where` (may be null) restricts the reduced
// points; `init` (empty or one per component) replaces the identity as the starting value.
std::vector<Expr> comm_reduce(const Ref<CommReducer>& combiner, std::vector<Expr> source,
                              const std::vector<IterVar>& axis, Expr where, std::vector<Expr> init,
                              const std::string& api);

// The built-in reducers over `axis`, as te.sum / te.max / te.min / te.prod. `where` and `init`
// may be null.
Expr sum(Expr source, const std::vector<IterVar>& axis, Expr where = nullptr, Expr init = nullptr);
Expr max(Expr source, const std::vector<IterVar>& axis, Expr where = nullptr, Expr init = nullptr);
Expr min(Expr source, const std::vector<IterVar>& axis, Expr where = nullptr, Expr init = nullptr);
Expr prod(Expr source, const std::vector<IterVar>& axis, Expr where = nullptr, Expr init = nullptr);

}  // namespace kiln::te
