// Small helpers shared by the lowering passes in tir/: installing a new body in a PrimFunc while
// keeping the very same function when nothing changed.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// `func` itself when `body` is its body, else a copy of `func` with `body`.
inline ir::Ref<ir::PrimFunc> with_body(const ir::Ref<ir::PrimFunc>& func, const ir::Stmt& body) {
  if (body.same_as(func->body)) return func;
  auto result = ir::copy(func.get());
  result->body = body;
  return result;
}

}  // namespace kiln::tir
