// PrimFunc: a TensorIR function, and IRModule: functions by name.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kiln/ir/stmt.h"

namespace kiln::ir {

// A function over buffers and scalars. `params` are the arguments in calling order; a param
// that is a tensor is a handle Var mapped to its Buffer in `buffer_map`; a param absent from the
// map is a scalar. The body is a statement (a root BlockRealize before lowering).
struct PrimFunc : Node {
  KILN_NODE_KIND(PrimFunc)
  PrimFunc() : Node(kKind) {}
  std::vector<Ref<Var>> params;
  std::vector<std::pair<Ref<Var>, Ref<Buffer>>> buffer_map;  // in params order
  Stmt body;
  Attrs attrs;  // e.g. "global_symbol", "target"

  // The buffer bound to `param`, or null for a scalar param.
  Ref<Buffer> buffer_of(const Ref<Var>& param) const;
};

// Functions by name, sorted by name.
struct IRModule : Node {
  KILN_NODE_KIND(IRModule)
  IRModule() : Node(kKind) {}
  std::map<std::string, Ref<PrimFunc>> functions;

  // The function called `name`; a kIndex error naming the module's functions when absent.
  Ref<PrimFunc> lookup(const std::string& name) const;
};

}  // namespace kiln::ir
