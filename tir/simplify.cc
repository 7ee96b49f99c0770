// simplify: runs arith::Analyzer's statement simplifier over a function's body.
#include "kiln/tir/simplify.h"

#include "kiln/arith/analyzer.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

Ref<PrimFunc> simplify(const Ref<PrimFunc>& func) {
  arith::Analyzer analyzer;
  return with_body(func, analyzer.simplify(func->body));
}

}  // namespace kiln::tir
