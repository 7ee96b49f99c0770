// Program features: the vector's length and names, and features of hand-scheduled functions
// that must move in the expected direction (vectorization, parallel loops, tiling, strides,
// arithmetic by kind, the target's vector width), determinism and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "kiln/autotune/features.h"
#include "kiln/support/error.h"
#include "lowered_workloads.h"

namespace kiln::autotune {
namespace {

using namespace kiln::autotune::testing;
using ir::Ref;

// The value of the feature called `name`.
double feature(const std::vector<float>& features, const std::string& name) {
  const std::vector<std::string>& names = feature_names();
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) ADD_FAILURE() << "no feature " << name;
  return it == names.end() ? NAN : features[it - names.begin()];
}

std::vector<float> features_of(const Ref<ir::PrimFunc>& lowered, int cores = 2) {
  MachineOptions options;
  options.num_cores = cores;
  return extract_features(lowered, avx2_target(), options);
}

// The largest value of `field` over the access slots (access0.field, access1.field, …).
double max_over_accesses(const std::vector<float>& features, const std::string& field) {
  double best = -INFINITY;
  for (int slot = 0; slot < 4; ++slot) {
    std::string prefix = "access" + std::to_string(slot) + ".";
    if (feature(features, prefix + "present") == 1) {
      best = std::max(best, feature(features, prefix + field));
    }
  }
  return best;
}

TEST(Features, LengthAndNames) {
  const std::vector<std::string>& names = feature_names();
  std::vector<float> features = features_of(lowered_matmul(32));
  EXPECT_EQ(features.size(), names.size());
  std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size()) << "feature names repeat";
  for (const char* name :
       {"program.log_operations", "program.vector_share", "program.parallel_share",
        "arith.float_fma", "memory.strided_share", "access0.log_stride",
        "tile.log_accumulator_registers", "alloc.log_local_bytes", "prior.log_throughput"}) {
    EXPECT_TRUE(unique.count(name)) << name;
  }
  for (float value : features) EXPECT_TRUE(std::isfinite(value));
}

TEST(Features, Deterministic) {
  MatmulSchedule s{4, 16, true, true, true, true};
  EXPECT_EQ(features_of(lowered_matmul(64, s)), features_of(lowered_matmul(64, s)));
}

TEST(Features, VectorizedLoopRaisesTheVectorShare) {
  std::vector<float> scalar = features_of(lowered_elementwise(1024, 0, false));
  std::vector<float> vector = features_of(lowered_elementwise(1024, 8, false));
  EXPECT_EQ(feature(scalar, "program.vector_share"), 0);
  EXPECT_EQ(feature(vector, "program.vector_share"), 1);
  // 8 float32 lanes fill one AVX2 register.
  EXPECT_EQ(feature(scalar, "vector.store_lanes_ratio"), 0.125);
  EXPECT_EQ(feature(vector, "vector.store_lanes_ratio"), 1);
  EXPECT_EQ(feature(vector, "vector.full_share"), 1);
  EXPECT_LT(feature(vector, "memory.log_load_instructions"),
            feature(scalar, "memory.log_load_instructions"));
}

TEST(Features, LanesAreRelativeToTheTarget) {
  codegen::Target avx512 =
      codegen::parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512");
  Ref<ir::PrimFunc> lowered = lowered_elementwise(1024, 8, false);
  std::vector<float> on_avx512 = extract_features(lowered, avx512);
  EXPECT_EQ(feature(on_avx512, "target.log_float32_lanes"), 4);
  EXPECT_EQ(feature(on_avx512, "vector.store_lanes_ratio"), 0.5);
  EXPECT_EQ(feature(on_avx512, "vector.full_share"), 0);
  EXPECT_EQ(feature(features_of(lowered), "target.log_float32_lanes"), 3);
}

TEST(Features, ParallelLoop) {
  std::vector<float> serial = features_of(lowered_elementwise(1024, 8, false), 4);
  std::vector<float> parallel = features_of(lowered_elementwise(48, 8, true), 4);
  EXPECT_EQ(feature(serial, "program.parallel_share"), 0);
  EXPECT_EQ(feature(serial, "dominant.log_parallel_extent"), 0);
  EXPECT_EQ(feature(parallel, "program.parallel_share"), 1);
  EXPECT_EQ(feature(parallel, "program.log_parallel_launches"), 1);  // log2(1 + 1)
  EXPECT_FLOAT_EQ(feature(parallel, "dominant.log_parallel_extent"), std::log2(7.0));
  // 6 iterations on 4 cores: two rounds of 4 slots, 2 of them idle.
  EXPECT_FLOAT_EQ(feature(parallel, "dominant.parallel_extent_per_core"), 1.5);
  EXPECT_FLOAT_EQ(feature(parallel, "dominant.parallel_idle_share"), 0.25);
  EXPECT_FLOAT_EQ(feature(parallel, "target.log_cores"), 2);
}

TEST(Features, TilingShrinksTheInnermostFootprint) {
  std::vector<float> untiled = features_of(lowered_matmul(256));
  std::vector<float> tiled = features_of(lowered_matmul(256, {4, 16, true, false, true, false}));
  // Untiled, the two innermost loops (j, k) sweep all of B (256 KiB); tiled, (k, i_1) touch a
  // 256 x 16 strip of it (16 KiB).
  EXPECT_FLOAT_EQ(max_over_accesses(untiled, "log_footprint_2"), std::log2(1.0 + 256 * 256 * 4));
  EXPECT_FLOAT_EQ(max_over_accesses(tiled, "log_footprint_2"), std::log2(1.0 + 256 * 16 * 4));
  EXPECT_LT(feature(tiled, "memory.log_bytes_into_l1"),
            feature(untiled, "memory.log_bytes_into_l1"));
  EXPECT_GT(feature(tiled, "dominant.levels_fitting_l1"), 0);
}

TEST(Features, StridedAccessShowsItsStride) {
  std::vector<float> features = features_of(lowered_transpose(64));
  bool found_load = false, found_store = false;
  for (int slot = 0; slot < 4; ++slot) {
    std::string prefix = "access" + std::to_string(slot) + ".";
    if (feature(features, prefix + "present") != 1) continue;
    if (feature(features, prefix + "is_store") == 1) {
      found_store = true;
      EXPECT_EQ(feature(features, prefix + "stride_kind"), 1);  // unit stride
      EXPECT_EQ(feature(features, prefix + "log_stride"), 1);   // log2(1 + 1)
    } else {
      found_load = true;
      EXPECT_EQ(feature(features, prefix + "stride_kind"), 2);  // strided
      EXPECT_FLOAT_EQ(feature(features, prefix + "log_stride"), std::log2(65.0));
    }
  }
  EXPECT_TRUE(found_load && found_store);
  EXPECT_EQ(feature(features, "memory.strided_share"), 0.5);
  EXPECT_EQ(feature(features, "memory.unit_stride_share"), 0.5);
}

TEST(Features, ArithmeticByKind) {
  Ref<ir::PrimFunc> lowered = lowered_matmul(16);
  std::vector<float> fused = features_of(lowered);
  // 16^3 multiply-adds, each an FMA of 2 operations: log2(1 + 8192).
  EXPECT_FLOAT_EQ(feature(fused, "arith.float_fma"), std::log2(1.0 + 2 * 16 * 16 * 16));
  EXPECT_EQ(feature(fused, "arith.float_mul"), 0);
  EXPECT_EQ(feature(fused, "program.fma_share"), 1);
  codegen::Target no_contract =
      codegen::parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell -fp-contract=off");
  std::vector<float> separate = extract_features(lowered, no_contract);
  EXPECT_EQ(feature(separate, "arith.float_fma"), 0);
  EXPECT_FLOAT_EQ(feature(separate, "arith.float_mul"), std::log2(1.0 + 16 * 16 * 16));
  EXPECT_FLOAT_EQ(feature(separate, "arith.float_add_sub"), std::log2(1.0 + 16 * 16 * 16));

  te::Tensor a = te::placeholder({c(64)}, ir::DataType::float32(), "A");
  te::Tensor out = te::compute(
      {c(64)},
      [&](const std::vector<Ref<ir::Var>>& i) {
        Expr x = a({i[0]});
        return ir::max(ir::div(ir::call(ir::Builtin::Exp, {x}), x),
                       ir::cast(ir::DataType::float32(), i[0] * 3));
      },
      "B");
  std::vector<float> mixed = features_of(tir::lower(te::create_prim_func({a, out})));
  EXPECT_FLOAT_EQ(feature(mixed, "arith.float_math"), std::log2(65.0));
  EXPECT_FLOAT_EQ(feature(mixed, "arith.float_div"), std::log2(65.0));
  EXPECT_FLOAT_EQ(feature(mixed, "arith.float_min_max"), std::log2(65.0));
  EXPECT_FLOAT_EQ(feature(mixed, "arith.casts"), std::log2(65.0));
  EXPECT_FLOAT_EQ(feature(mixed, "arith.int_arith"), std::log2(65.0));
}

TEST(Features, ScalarUnitStrideLoopsAreExpectedToBeVectorizedByTheCompiler) {
  // i, k, j with the init split out: the inner j loop stores C[i, j] at unit stride and loads
  // B[k, j] at unit stride and A[i, k] once: LLVM's loop vectorizer turns it into vectors.
  schedule::Schedule sch(module_of(matmul(64)));
  schedule::RV block = schedule::get_block(sch, "C");
  std::vector<schedule::RV> loops = schedule::get_loops(sch, block);
  schedule::reorder(sch, {loops[0], loops[2], loops[1]});
  schedule::decompose_reduction(sch, block, loops[2]);
  std::vector<float> ikj = features_of(tir::lower(sch.mod()->lookup("main")));
  EXPECT_EQ(feature(ikj, "vector.auto_vectorized_share"), 1);
  EXPECT_EQ(feature(ikj, "program.vector_share"), 0);  // no vector in the program itself
  // i, j, k reduces along its inner loop: a float sum is not reassociated into vectors.
  std::vector<float> ijk = features_of(lowered_matmul(64));
  EXPECT_EQ(feature(ijk, "vector.auto_vectorized_share"), 0);
}

TEST(Features, LocalAllocationsAreCounted) {
  std::vector<float> features = features_of(lowered_matmul(64, {4, 16, true, false, true, true}));
  // The 4 x 16 accumulator tile of float32, allocated once per parallel iteration.
  EXPECT_FLOAT_EQ(feature(features, "alloc.log_local_bytes"), std::log2(1.0 + 4 * 16 * 4));
  EXPECT_EQ(feature(features, "alloc.count"), 1);
  EXPECT_EQ(feature(features, "alloc.under_parallel"), 1);
  EXPECT_EQ(feature(features, "alloc.log_global_bytes"), 0);
}

TEST(Features, SymbolicExtentsCountOnce) {
  Ref<ir::Var> n = ir::make_size_var("n");
  te::Tensor a = te::placeholder({n, c(16)}, ir::DataType::float32(), "A");
  ir::IterVar k = te::reduce_axis(ir::Range{c(0), c(16)}, "k");
  te::Tensor out = te::compute(
      {n},
      [&](const std::vector<Ref<ir::Var>>& i) {
        return te::sum(a({i[0], k.var}), {k});
      },
      "B");
  std::vector<float> features = features_of(tir::lower(te::create_prim_func({a, out})));
  EXPECT_EQ(feature(features, "program.symbolic_loops"), 1);
  // The update runs 16 times per row, the row loop counts once.
  EXPECT_FLOAT_EQ(feature(features, "arith.float_add_sub"), std::log2(17.0));
  for (float value : features) EXPECT_TRUE(std::isfinite(value));
}

TEST(Features, UnloweredFunctionIsRefused) {
  try {
    extract_features(matmul(8), avx2_target());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find("extract_features: expected a lowered function "
                                         "(kiln.tir.lower), found block 'root'"),
              std::string::npos)
        << e.what();
  }
}

TEST(Features, NullFunctionIsRefused) {
  try {
    extract_features(nullptr, avx2_target());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find("expected a lowered PrimFunc, found None"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kiln::autotune
