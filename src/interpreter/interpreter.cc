// The entry point of the reference interpreter: check the arguments, compile the function body
// into a code tree with the arguments' variables in scope, then run it on one Frame.
#include "kiln/interpreter/interpreter.h"

#include "arguments.h"
#include "compiler.h"
#include "kiln/support/error.h"

namespace kiln::interpreter {

using namespace kiln::ir;

Argument Argument::tensor(void* data, DataType dtype, std::vector<int64_t> shape,
                          std::vector<int64_t> strides, bool writable) {
  Argument arg;
  arg.kind = Kind::kTensor;
  arg.data = data;
  arg.dtype = dtype;
  arg.shape = std::move(shape);
  arg.strides = std::move(strides);
  arg.writable = writable;
  return arg;
}

Argument Argument::integer(int64_t value) {
  Argument arg;
  arg.kind = Kind::kInt;
  arg.int_value = value;
  return arg;
}

Argument Argument::floating(double value) {
  Argument arg;
  arg.kind = Kind::kFloat;
  arg.float_value = value;
  return arg;
}

void interpret(const PrimFunc& func, const std::vector<Argument>& args, const Options& options) {
  // Step 1. Check the arguments; collect the variables and storage they bind.
  Bindings bindings = bind_arguments(func, args);

  // Step 2. Compile the body with those in scope, with GPU semantics when asked for or when
  // the body has barriers.
  user_check(func.body.defined()) << "tir.interpret: the function has no body";
  Compiler compiler;
  bool has_barriers = find_barriers(func.body, &compiler.syncing);
  compiler.gpu =
      options.gpu == GpuSemantics::kOn || (options.gpu == GpuSemantics::kAuto && has_barriers);
  for (const Ref<PrimFunc>& kernel : options.kernels) {
    auto symbol = kernel->attrs.find("global_symbol");
    const auto* name = symbol == kernel->attrs.end() ? nullptr : symbol->second.as<StringImm>();
    user_check(name != nullptr) << "tir.interpret: a device kernel has no global_symbol";
    compiler.kernels[name->value] = kernel;
  }
  std::vector<int> value_slots, storage_indices;
  for (const BoundValue& v : bindings.values) value_slots.push_back(compiler.bind(v.var));
  for (const BoundStorage& s : bindings.storages) {
    storage_indices.push_back(compiler.bind_storage(s.data));
  }
  StmtCodePtr body = compiler.stmt(func.body);

  // Step 3. Refuse to write into read-only arrays.
  for (size_t k = 0; k < bindings.storages.size(); ++k) {
    const BoundStorage& s = bindings.storages[k];
    user_check(s.writable || !compiler.is_written(storage_indices[k]))
        << "tir.interpret: " << s.what
        << ": the function stores into this buffer but the array is read-only";
  }

  // Step 4. Run.
  Frame frame;
  frame.slots.resize(compiler.num_slots());
  frame.storages.resize(compiler.num_storages());
  frame.states.resize(compiler.num_states());
  for (size_t k = 0; k < bindings.values.size(); ++k) {
    frame.slots[value_slots[k]] = bindings.values[k].value;
  }
  for (size_t k = 0; k < bindings.storages.size(); ++k) {
    frame.storages[storage_indices[k]] = bindings.storages[k].storage;
  }
  body->exec(frame);
}

}  // namespace kiln::interpreter
