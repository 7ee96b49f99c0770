// Helpers for the lowering pass tests: operators built with te, functions in the shape that
// schedule primitives give (built by hand), and the numeric check that a pass keeps results.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kiln/interpreter/interpreter.h"
#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/support/error.h"
#include "kiln/te/create_prim_func.h"
#include "kiln/te/reduction.h"

namespace kiln::tir::testing {

using namespace kiln::ir;

// The message of the kiln error `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline Expr c(int64_t v) {
  return int32_const(v);
}

inline Expr f32(double v) {
  return make_const(DataType::float32(), v);
}

// --- Operators from te ----------------------------------------------------------------------

inline Ref<PrimFunc> matmul_func(int64_t m, int64_t n, int64_t k) {
  te::Tensor a = te::placeholder({c(m), c(k)}, DataType::float32(), "A");
  te::Tensor b = te::placeholder({c(k), c(n)}, DataType::float32(), "B");
  IterVar rk = te::reduce_axis(Range{c(0), c(k)}, "k");
  te::Tensor out = te::compute(
      {c(m), c(n)},
      [&](const std::vector<Ref<Var>>& v) {
        return te::sum(a({v[0], rk.var}) * b({rk.var, v[1]}), {rk});
      },
      "C");
  return te::create_prim_func({a, b, out});
}

// conv2d NCHW with stride 1 and padding 1: a padding stage (an intermediate buffer) and a
// reduction over input channels and the 3x3 window.
inline Ref<PrimFunc> conv2d_func() {
  const int64_t n = 1, ci = 2, h = 5, w = 5, co = 3, r = 3;
  te::Tensor x = te::placeholder({c(n), c(ci), c(h), c(w)}, DataType::float32(), "X");
  te::Tensor weight = te::placeholder({c(co), c(ci), c(r), c(r)}, DataType::float32(), "W");
  te::Tensor pad = te::compute(
      {c(n), c(ci), c(h + 2), c(w + 2)},
      [&](const std::vector<Ref<Var>>& v) {
        Expr inside = logical_and(logical_and(ge(v[2], c(1)), lt(v[2], c(h + 1))),
                                  logical_and(ge(v[3], c(1)), lt(v[3], c(w + 1))));
        return if_then_else(inside, x({v[0], v[1], v[2] - 1, v[3] - 1}), f32(0));
      },
      "pad");
  IterVar rc = te::reduce_axis(Range{c(0), c(ci)}, "rc");
  IterVar ry = te::reduce_axis(Range{c(0), c(r)}, "ry");
  IterVar rx = te::reduce_axis(Range{c(0), c(r)}, "rx");
  te::Tensor out = te::compute(
      {c(n), c(co), c(h), c(w)},
      [&](const std::vector<Ref<Var>>& v) {
        return te::sum(pad({v[0], rc.var, v[2] + ry.var, v[3] + rx.var}) *
                           weight({v[1], rc.var, ry.var, rx.var}),
                       {rc, ry, rx});
      },
      "conv");
  return te::create_prim_func({x, weight, out});
}

// Row-wise softmax: max, exp, sum and division, with three intermediate buffers.
inline Ref<PrimFunc> softmax_func(int64_t rows, int64_t cols) {
  te::Tensor x = te::placeholder({c(rows), c(cols)}, DataType::float32(), "X");
  IterVar k1 = te::reduce_axis(Range{c(0), c(cols)}, "k");
  te::Tensor mx = te::compute(
      {c(rows)},
      [&](const std::vector<Ref<Var>>& v) {
        return te::max(x({v[0], k1.var}), {k1});
      },
      "row_max");
  te::Tensor e = te::compute(
      {c(rows), c(cols)},
      [&](const std::vector<Ref<Var>>& v) {
        return call(Builtin::Exp, {x({v[0], v[1]}) - mx({v[0]})});
      },
      "exp");
  IterVar k2 = te::reduce_axis(Range{c(0), c(cols)}, "k");
  te::Tensor s = te::compute(
      {c(rows)},
      [&](const std::vector<Ref<Var>>& v) {
        return te::sum(e({v[0], k2.var}), {k2});
      },
      "row_sum");
  te::Tensor out = te::compute(
      {c(rows), c(cols)},
      [&](const std::vector<Ref<Var>>& v) {
        return div(e({v[0], v[1]}), s({v[0]}));
      },
      "softmax");
  return te::create_prim_func({x, out});
}

// Layer normalization over the last axis, with mean and variance as intermediate buffers.
inline Ref<PrimFunc> layer_norm_func(int64_t rows, int64_t cols) {
  te::Tensor x = te::placeholder({c(rows), c(cols)}, DataType::float32(), "X");
  te::Tensor gamma = te::placeholder({c(cols)}, DataType::float32(), "gamma");
  IterVar k1 = te::reduce_axis(Range{c(0), c(cols)}, "k");
  te::Tensor mean = te::compute(
      {c(rows)},
      [&](const std::vector<Ref<Var>>& v) {
        return te::sum(x({v[0], k1.var}) * f32(1.0 / static_cast<double>(cols)), {k1});
      },
      "mean");
  IterVar k2 = te::reduce_axis(Range{c(0), c(cols)}, "k");
  te::Tensor var = te::compute(
      {c(rows)},
      [&](const std::vector<Ref<Var>>& v) {
        Expr d = x({v[0], k2.var}) - mean({v[0]});
        return te::sum(d * d * f32(1.0 / static_cast<double>(cols)), {k2});
      },
      "var");
  te::Tensor out = te::compute(
      {c(rows), c(cols)},
      [&](const std::vector<Ref<Var>>& v) {
        Expr normalized =
            (x({v[0], v[1]}) - mean({v[0]})) * call(Builtin::Rsqrt, {var({v[0]}) + f32(1e-5)});
        return normalized * gamma({v[1]});
      },
      "norm");
  return te::create_prim_func({x, gamma, out});
}

// B[i] = A[i] * 2 + 1 over a symbolic length n, through an intermediate buffer.
inline Ref<PrimFunc> symbolic_elementwise_func() {
  Ref<Var> n = make_size_var("n");
  te::Tensor a = te::placeholder({n}, DataType::float32(), "A");
  te::Tensor t = te::compute(
      {n}, [&](const std::vector<Ref<Var>>& v) { return a({v[0]}) * f32(2); }, "tmp");
  te::Tensor b = te::compute(
      {n}, [&](const std::vector<Ref<Var>>& v) { return t({v[0]}) + f32(1); }, "B");
  return te::create_prim_func({a, b});
}

// --- Functions in the shape schedule primitives give, built by hand ---------------------------

inline Stmt loop(const Ref<Var>& var, int64_t extent, Stmt body, ForKind kind = ForKind::kSerial) {
  return make<For>(var, c(0), c(extent), kind, std::move(body));
}

inline Stmt thread_loop(const Ref<Var>& var, int64_t extent, const std::string& tag, Stmt body) {
  auto loop = make<For>(var, c(0), c(extent), ForKind::kThreadBinding, std::move(body));
  loop->thread_tag = tag;
  return loop;
}

inline IterVar iter(const Ref<Var>& var, int64_t extent, IterType type = IterType::kDataPar) {
  return IterVar{var, Range{c(0), c(extent)}, type};
}

// A BlockRealize of a new block; read and write regions are left empty.
inline Stmt block(const std::string& name, const std::vector<IterVar>& iters,
                  const std::vector<Expr>& values, Stmt body,
                  std::vector<Ref<Buffer>> alloc_buffers = {}, Stmt init = nullptr,
                  Expr predicate = nullptr) {
  auto b = make<Block>();
  b->name = name;
  b->iter_vars = iters;
  b->alloc_buffers = std::move(alloc_buffers);
  b->init = std::move(init);
  b->body = std::move(body);
  return make<BlockRealize>(values, predicate.defined() ? predicate : bool_const(true), b);
}

inline Ref<Buffer> buffer(std::vector<int64_t> shape, const std::string& name,
                          DataType dtype = DataType::float32(),
                          const std::string& scope = "global") {
  std::vector<Expr> dims;
  for (int64_t d : shape) dims.push_back(c(d));
  return decl_buffer(std::move(dims), dtype, name, scope);
}

inline Ref<PrimFunc> make_func(const std::vector<Ref<Buffer>>& params, Stmt body) {
  auto func = make<PrimFunc>();
  for (const Ref<Buffer>& b : params) {
    Ref<Var> handle = make_var(b->name + "_handle", DataType::handle());
    func->params.push_back(handle);
    func->buffer_map.emplace_back(handle, b);
  }
  func->body = std::move(body);
  func->attrs["global_symbol"] = make<StringImm>("main");
  return func;
}

// The root block with `alloc_buffers` around `body`.
inline Stmt root(Stmt body, std::vector<Ref<Buffer>> alloc_buffers = {}) {
  return block("root", {}, {}, std::move(body), std::move(alloc_buffers));
}

// What compute_at of a producer into the tiles of its consumer gives: the intermediate T
// (size x size, allocated at the root) is produced and consumed tile by tile.
//   B[i, j] = T[i, j] + 1 where T[i, j] = A[i, j] * 2, in tiles of tile x tile.
inline Ref<PrimFunc> tiled_producer_consumer(int64_t size, int64_t tile) {
  Ref<Buffer> a = buffer({size, size}, "A");
  Ref<Buffer> b = buffer({size, size}, "B");
  Ref<Buffer> t = buffer({size, size}, "tmp");
  Ref<Var> i0 = make_var("i0"), j0 = make_var("j0");
  Ref<Var> i1 = make_var("i1"), j1 = make_var("j1"), i2 = make_var("i2"), j2 = make_var("j2");
  Ref<Var> ti = make_var("vi"), tj = make_var("vj"), bi = make_var("vi"), bj = make_var("vj");
  Stmt produce =
      loop(i1, tile,
           loop(j1, tile,
                block("T", {iter(ti, size), iter(tj, size)}, {i0 * tile + i1, j0 * tile + j1},
                      buffer_store(t, buffer_load(a, {ti, tj}) * f32(2), {ti, tj}))));
  Stmt consume =
      loop(i2, tile,
           loop(j2, tile,
                block("B", {iter(bi, size), iter(bj, size)}, {i0 * tile + i2, j0 * tile + j2},
                      buffer_store(b, buffer_load(t, {bi, bj}) + f32(1), {bi, bj}))));
  Stmt nest = loop(i0, size / tile, loop(j0, size / tile, seq({produce, consume})));
  return make_func({a, b}, root(nest, {t}));
}

// --- Numeric checks ---------------------------------------------------------------------------

// Storage for one argument of a function.
struct ArgumentData {
  std::vector<unsigned char> bytes;
  DataType dtype;
  std::vector<int64_t> shape;
  int64_t scalar = 0;
  bool is_scalar = false;
};

inline int64_t dimension(const Expr& extent, const std::map<std::string, int64_t>& sizes) {
  if (const int64_t* v = as_const_int(extent)) return *v;
  const auto* var = extent.as<Var>();
  EXPECT_TRUE(var != nullptr) << "dimension " << extent << " is neither a constant nor a size";
  auto it = var == nullptr ? sizes.end() : sizes.find(var->name);
  EXPECT_TRUE(it != sizes.end()) << "no size given for " << extent;
  return it == sizes.end() ? 1 : it->second;
}

// Arguments for `func` filled with values from a fixed seed; symbolic sizes come from `sizes`
// (by variable name), as do scalar parameters.
inline std::vector<ArgumentData> random_arguments(const PrimFunc& func,
                                                  const std::map<std::string, int64_t>& sizes) {
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<ArgumentData> args;
  for (const Ref<Var>& param : func.params) {
    ArgumentData data;
    Ref<Buffer> b = func.buffer_of(param);
    if (!b) {
      data.is_scalar = true;
      auto it = sizes.find(param->name);
      data.scalar = it == sizes.end() ? 3 : it->second;
      args.push_back(std::move(data));
      continue;
    }
    data.dtype = b->dtype;
    int64_t count = 1;
    for (const Expr& e : b->shape) {
      data.shape.push_back(dimension(e, sizes));
      count *= data.shape.back();
    }
    data.bytes.resize(static_cast<size_t>(count * b->dtype.bytes()));
    for (int64_t k = 0; k < count; ++k) {
      if (b->dtype == DataType::float32()) {
        float v = normal(rng);
        std::memcpy(&data.bytes[static_cast<size_t>(k) * 4], &v, 4);
      } else if (b->dtype == DataType::int32()) {
        int32_t v = static_cast<int32_t>(rng() % 101) - 50;
        std::memcpy(&data.bytes[static_cast<size_t>(k) * 4], &v, 4);
      } else {
        ADD_FAILURE() << "random_arguments: no generator for dtype " << b->dtype;
      }
    }
    args.push_back(std::move(data));
  }
  return args;
}

inline void run(const PrimFunc& func, std::vector<ArgumentData>& args) {
  std::vector<interpreter::Argument> converted;
  for (ArgumentData& a : args) {
    if (a.is_scalar) {
      converted.push_back(interpreter::Argument::integer(a.scalar));
    } else {
      converted.push_back(interpreter::Argument::tensor(a.bytes.data(), a.dtype, a.shape));
    }
  }
  interpreter::interpret(func, converted);
}

// Runs both functions on the same arguments and expects every buffer to end bit for bit equal
// (passes do not reorder floating-point operations).
inline void expect_same_results(const Ref<PrimFunc>& before, const Ref<PrimFunc>& after,
                                const std::map<std::string, int64_t>& sizes = {}) {
  ASSERT_EQ(before->params.size(), after->params.size());
  std::vector<ArgumentData> expected = random_arguments(*before, sizes);
  std::vector<ArgumentData> actual = expected;
  run(*before, expected);
  run(*after, actual);
  for (size_t p = 0; p < expected.size(); ++p) {
    EXPECT_TRUE(expected[p].bytes == actual[p].bytes)
        << "argument " << p << " differs after the pass:\n"
        << to_script(after);
  }
}

}  // namespace kiln::tir::testing
