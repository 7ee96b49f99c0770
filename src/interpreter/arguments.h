// The check of interpret()'s arguments against a PrimFunc's parameters, and what they bind:
// scalar parameters, symbolic dimensions/strides/offsets, and the storage of each tensor.
#pragma once

#include <string>
#include <vector>

#include "code.h"
#include "kiln/interpreter/interpreter.h"

namespace kiln::interpreter {

// A variable bound for the whole function, with its value.
struct BoundValue {
  const ir::Var* var;
  Lane value;
};

// A data variable (a tensor parameter, or the `data` of its buffer) bound to an argument's memory.
struct BoundStorage {
  const ir::Var* data;
  Storage storage;
  bool writable;
  std::string what;  // "argument 2 (buffer C)", for messages
};

struct Bindings {
  std::vector<BoundValue> values;
  std::vector<BoundStorage> storages;
};

// Checks `args` against the parameters of `func` (count, dtype, ndim, shape, layout) and
// returns what they bind; a kiln error naming tir.interpret, the argument, what was expected
// and what was found when one does not fit.
Bindings bind_arguments(const ir::PrimFunc& func, const std::vector<Argument>& args);

}  // namespace kiln::interpreter
