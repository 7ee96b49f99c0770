// Helpers of the tests of the late lowering passes (loop_partition, vectorize_loops,
// unroll_loops, lower_intrinsics, make_packed_api): flat loop programs built by hand, runs on the
// reference interpreter, and searches of the IR.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kiln/interpreter/interpreter.h"
#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::tir::flat_testing {

using namespace kiln::ir;

// A parameter: a buffer (an array argument) or a scalar variable.
struct Param {
  Param(Ref<Buffer> b) : buffer(std::move(b)) {}  // NOLINT(google-explicit-constructor)
  Param(Ref<Var> v) : scalar(std::move(v)) {}     // NOLINT(google-explicit-constructor)
  Ref<Buffer> buffer;
  Ref<Var> scalar;
};

// A PrimFunc over `params` (buffers get a handle parameter each) with `body`.
inline Ref<PrimFunc> make_func(const std::vector<Param>& params, Stmt body) {
  auto func = make<PrimFunc>();
  for (const Param& p : params) {
    if (p.buffer) {
      Ref<Var> handle = make_var(p.buffer->name + "_handle", DataType::handle());
      func->params.push_back(handle);
      func->buffer_map.emplace_back(handle, p.buffer);
    } else {
      func->params.push_back(p.scalar);
    }
  }
  func->body = std::move(body);
  return func;
}

inline Ref<Buffer> buffer_1d(const std::string& name, Expr extent,
                             DataType dtype = DataType::float32()) {
  return decl_buffer({std::move(extent)}, dtype, name);
}

inline Stmt loop(const Ref<Var>& var, Expr min, Expr extent, Stmt body,
                 ForKind kind = ForKind::kSerial) {
  return make<For>(var, std::move(min), std::move(extent), kind, std::move(body));
}

inline Stmt loop(const Ref<Var>& var, int64_t extent, Stmt body, ForKind kind = ForKind::kSerial) {
  return loop(var, int32_const(0), int32_const(extent), std::move(body), kind);
}

inline Expr likely(Expr condition) {
  return call(Builtin::Likely, {std::move(condition)});
}

inline Expr i32(int64_t v) {
  return int32_const(v);
}

// `n` floats from a fixed seed, in [-1, 1).
inline std::vector<float> random_floats(size_t n, unsigned seed = 7) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Runs `func` on float32 arrays (one per buffer parameter, in order) and integer scalars
// (one per scalar parameter, in order); returns the arrays after the run.
inline std::vector<std::vector<float>> run(const Ref<PrimFunc>& func,
                                           std::vector<std::vector<float>> arrays,
                                           const std::vector<int64_t>& scalars = {}) {
  std::vector<interpreter::Argument> args;
  size_t a = 0, s = 0;
  for (const Ref<Var>& p : func->params) {
    if (func->buffer_of(p)) {
      std::vector<float>& data = arrays.at(a++);
      args.push_back(interpreter::Argument::tensor(data.data(), DataType::float32(),
                                                   {static_cast<int64_t>(data.size())}));
    } else {
      args.push_back(interpreter::Argument::integer(scalars.at(s++)));
    }
  }
  interpreter::interpret(*func, args);
  return arrays;
}

// How many nodes under `s` satisfy `pred`.
inline int count_nodes(const Stmt& s, const std::function<bool(const Node*)>& pred) {
  int n = 0;
  post_order_visit(s, [&](const Node* node) { n += pred(node) ? 1 : 0; });
  return n;
}

inline int count_kind(const Stmt& s, NodeKind kind) {
  return count_nodes(s, [kind](const Node* node) { return node->kind() == kind; });
}

inline int count_calls(const Stmt& s, Builtin op) {
  return count_nodes(s, [op](const Node* node) {
    return node->kind() == NodeKind::Call && static_cast<const Call*>(node)->op == op;
  });
}

// The loops under `s` in program order (a loop before the loops inside it).
inline std::vector<const For*> loops_of(const Stmt& s) {
  struct Collector : IRVisitor {
    using IRVisitor::visit;
    void visit(const For* op) override {
      loops.push_back(op);
      IRVisitor::visit(op);
    }
    std::vector<const For*> loops;
  } collector;
  collector.visit_stmt(s);
  return collector.loops;
}

// The message of the kiln error `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace kiln::tir::flat_testing
