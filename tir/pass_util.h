// Small helpers shared by the lowering passes in tir/: installing a new body in a PrimFunc while
// keeping the very same function when nothing changed, the free variables of a statement,
// comparisons as bounds on a loop variable, and questions about variables and GPU thread loops.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "kiln/ir/function.h"
#include "kiln/ir/functor.h"

namespace kiln::arith {
class Analyzer;
}  // namespace kiln::arith

namespace kiln::tir {

// `func` itself when `body` is its body, else a copy of `func` with `body`.
inline ir::Ref<ir::PrimFunc> with_body(const ir::Ref<ir::PrimFunc>& func, const ir::Stmt& body) {
  if (body.same_as(func->body)) return func;
  auto result = ir::copy(func.get());
  result->body = body;
  return result;
}

// The variables `body` uses but does not define (loops, lets and allocations define them), in
// order of first use; a buffer access uses the buffer's data variable.
std::vector<const ir::Var*> free_vars(const ir::Stmt& body);

// Whether `e` uses one of `vars`.
inline bool uses_any(const ir::Expr& e, const std::unordered_set<const ir::Var*>& vars) {
  return ir::uses_var(e, [&vars](const ir::Var* v) { return vars.count(v) != 0; });
}

// `atom` as an expression g with atom <=> g >= 0, when it is a scalar integer comparison
// (`a < b`: b - a - 1); undefined otherwise.
ir::Expr as_nonnegative(const ir::Expr& atom);

// The constant d with f(var + 1) - f(var) == d, if there is one (null otherwise); `holder` keeps
// the simplified difference that the pointer points into.
const int64_t* constant_step(arith::Analyzer* ana, const ir::Expr& f, const ir::Ref<ir::Var>& var,
                             ir::Expr* holder);

// Whether `loop` is bound to a GPU thread index (threadIdx.x/y/z), not a block index.
inline bool is_thread_loop(const ir::For& loop) {
  return loop.kind == ir::ForKind::kThreadBinding && loop.thread_tag.rfind("threadIdx", 0) == 0;
}

// Whether `loop` is bound to a virtual thread (vthread.x/y/z), which inject_virtual_threads runs
// inside the thread; until then it shares "shared" buffers as a threadIdx loop does.
inline bool is_vthread_loop(const ir::For& loop) {
  return loop.kind == ir::ForKind::kThreadBinding && loop.thread_tag.rfind("vthread", 0) == 0;
}

}  // namespace kiln::tir
