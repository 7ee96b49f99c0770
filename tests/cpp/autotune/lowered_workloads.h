// Lowered functions for the feature and cost model tests: small TE workloads, scheduled by hand
// with kiln's schedule primitives and lowered with kiln::tir::lower.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/codegen/target.h"
#include "kiln/ir/builtin.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/cache_read_write.h"
#include "kiln/schedule/compute_at.h"
#include "kiln/schedule/for_kind.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/schedule/reduction.h"
#include "kiln/te/create_prim_func.h"
#include "kiln/te/reduction.h"
#include "kiln/te/tensor.h"
#include "kiln/tir/pipeline.h"

namespace kiln::autotune::testing {

using ir::Expr;
using ir::Ref;

inline Expr c(int64_t v) {
  return ir::int32_const(v);
}

inline Ref<ir::IRModule> module_of(const Ref<ir::PrimFunc>& func) {
  auto mod = ir::make<ir::IRModule>();
  mod->functions["main"] = func;
  return mod;
}

// C[i, j] = sum_k A[i, k] * B[k, j] of m x n x k float32.
inline Ref<ir::PrimFunc> matmul(int64_t m, int64_t n, int64_t k) {
  te::Tensor a = te::placeholder({c(m), c(k)}, ir::DataType::float32(), "A");
  te::Tensor b = te::placeholder({c(k), c(n)}, ir::DataType::float32(), "B");
  ir::IterVar r = te::reduce_axis(ir::Range{c(0), c(k)}, "k");
  te::Tensor out = te::compute(
      {c(m), c(n)},
      [&](const std::vector<Ref<ir::Var>>& i) {
        return te::sum(a({i[0], r.var}) * b({r.var, i[1]}), {r});
      },
      "C");
  return te::create_prim_func({a, b, out});
}

// The n x n x n matmul.
inline Ref<ir::PrimFunc> matmul(int64_t n) {
  return matmul(n, n, n);
}

// B[i] = sum_k A[i, k] of float32 over `rows` rows (rows = 0: a scalar, B[()] = sum_k A[k]).
inline Ref<ir::PrimFunc> sum_rows(int64_t rows, int64_t n) {
  std::vector<Expr> shape = rows > 0 ? std::vector<Expr>{c(rows), c(n)} : std::vector<Expr>{c(n)};
  te::Tensor a = te::placeholder(shape, ir::DataType::float32(), "A");
  ir::IterVar k = te::reduce_axis(ir::Range{c(0), c(n)}, "k");
  std::vector<Expr> out_shape = rows > 0 ? std::vector<Expr>{c(rows)} : std::vector<Expr>{};
  te::Tensor b = te::compute(
      out_shape,
      [&](const std::vector<Ref<ir::Var>>& i) {
        return te::sum(rows > 0 ? a({i[0], k.var}) : a({k.var}), {k});
      },
      "B");
  return te::create_prim_func({a, b});
}

// How lowered_matmul schedules the matmul: the loops i, j split by tile_i x tile_j (0: not
// split) and ordered i_0, j_0, k, i_1, j_1; the accumulators written to a local cache that is
// copied out under j_0; i_1 unrolled, j_1 vectorized and i_0 parallel when asked.
struct MatmulSchedule {
  int64_t tile_i = 0, tile_j = 0;
  bool cache = false, unroll = false, vectorize = false, parallel = false;
};

inline Ref<ir::PrimFunc> lowered_matmul(int64_t n, const MatmulSchedule& s = {}) {
  using namespace schedule;
  Schedule sch(module_of(matmul(n)));
  RV block = get_block(sch, "C");
  if (s.tile_i > 0 && s.tile_j > 0) {
    std::vector<RV> loops = get_loops(sch, block);
    std::vector<RV> i = split(sch, loops[0], {std::monostate{}, s.tile_i});
    std::vector<RV> j = split(sch, loops[1], {std::monostate{}, s.tile_j});
    reorder(sch, {i[0], j[0], loops[2], i[1], j[1]});
    if (s.cache) {
      RV copy = cache_write(sch, block, 0, "local");
      reverse_compute_at(sch, copy, j[0]);
      decompose_reduction(sch, block, loops[2]);
    }
    if (s.unroll) unroll(sch, i[1]);
    if (s.vectorize) vectorize(sch, j[1]);
    if (s.parallel) parallel(sch, i[0]);
  }
  return tir::lower(sch.mod()->lookup("main"));
}

// B[i] = A[i] * 2 + 1 over n float32, its loop split by `lanes` and vectorized when lanes > 0,
// the outer loop parallel when asked.
inline Ref<ir::PrimFunc> lowered_elementwise(int64_t n, int64_t lanes, bool parallel_outer) {
  using namespace schedule;
  te::Tensor a = te::placeholder({c(n)}, ir::DataType::float32(), "A");
  te::Tensor out = te::compute(
      {c(n)},
      [&](const std::vector<Ref<ir::Var>>& i) {
        return a({i[0]}) * ir::make_const(ir::DataType::float32(), 2.0) +
               ir::make_const(ir::DataType::float32(), 1.0);
      },
      "B");
  Schedule sch(module_of(te::create_prim_func({a, out})));
  RV block = get_block(sch, "B");
  std::vector<RV> loops = get_loops(sch, block);
  if (lanes > 0) {
    std::vector<RV> parts = split(sch, loops[0], {std::monostate{}, lanes});
    vectorize(sch, parts[1]);
    if (parallel_outer) parallel(sch, parts[0]);
  } else if (parallel_outer) {
    parallel(sch, loops[0]);
  }
  return tir::lower(sch.mod()->lookup("main"));
}

// B[i, j] = A[j, i] of n x n float32: the load walks A with stride n in the inner loop.
inline Ref<ir::PrimFunc> lowered_transpose(int64_t n) {
  te::Tensor a = te::placeholder({c(n), c(n)}, ir::DataType::float32(), "A");
  te::Tensor out = te::compute(
      {c(n), c(n)},
      [&](const std::vector<Ref<ir::Var>>& i) {
        return a({i[1], i[0]});
      },
      "B");
  return tir::lower(te::create_prim_func({a, out}));
}

// A fixed x86-64 AVX2 target with FMA (16 vector registers of 256 bits), for numbers that must
// not depend on the machine running the test.
inline const codegen::Target& avx2_target() {
  static const codegen::Target target =
      codegen::parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell");
  return target;
}

}  // namespace kiln::autotune::testing
