// The schedule rules transpose_tiling, add_rfactor and random_compute_location and the mutator
// mutate_compute_location: which workloads get their sketches, that the candidates of
// compute_location_candidates are exactly the decisions sample_compute_location accepts, that a
// mutated location is a valid other one, and that a malformed decision refuses the candidate
// with a counted reason. tests/python/test_autotune_space.py runs the candidates against NumPy.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/autotune/space.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/schedule/compute_at.h"
#include "kiln/schedule/getters.h"
#include "kiln/te/create_prim_func.h"
#include "kiln/te/reduction.h"
#include "kiln/te/tensor.h"
#include "lowered_workloads.h"

namespace kiln::autotune {
namespace {

using namespace ir;
using schedule::Json;

using testing::c;
using testing::matmul;
using testing::sum_rows;

// relu(A @ B): a tiled reduction feeding an element-wise output.
Ref<PrimFunc> matmul_relu(int64_t m, int64_t n, int64_t k) {
  te::Tensor a = te::placeholder({c(m), c(k)}, DataType::float32(), "A");
  te::Tensor b = te::placeholder({c(k), c(n)}, DataType::float32(), "B");
  IterVar r = te::reduce_axis(Range{c(0), c(k)}, "k");
  te::Tensor product = te::compute(
      {c(m), c(n)},
      [&](const std::vector<Ref<Var>>& i) {
        return te::sum(a({i[0], r.var}) * b({r.var, i[1]}), {r});
      },
      "C");
  te::Tensor relu = te::compute(
      {c(m), c(n)},
      [&](const std::vector<Ref<Var>>& i) {
        return max(product({i[0], i[1]}), make_const(DataType::float32(), 0.0));
      },
      "relu");
  return te::create_prim_func({a, b, relu});
}

// (A * 2) + 1 in two blocks: an element-wise producer that is inlined.
Ref<PrimFunc> scale_shift(int64_t n) {
  te::Tensor a = te::placeholder({c(n)}, DataType::float32(), "A");
  te::Tensor scaled = te::compute(
      {c(n)},
      [&](const std::vector<Ref<Var>>& i) {
        return a({i[0]}) * make_const(DataType::float32(), 2.0);
      },
      "scaled");
  te::Tensor out = te::compute(
      {c(n)},
      [&](const std::vector<Ref<Var>>& i) {
        return scaled({i[0]}) + make_const(DataType::float32(), 1.0);
      },
      "out");
  return te::create_prim_func({a, out});
}

// The shape of a softmax without the exponentials: two row reductions (the second reads the
// first) feeding an element-wise output.
//   mx[i] = max_k A[i, k]; s[i] = sum_k (A[i, k] - mx[i]); Y[i, j] = (A[i, j] - mx[i]) * s[i]
Ref<PrimFunc> centred_rows(int64_t m, int64_t n) {
  te::Tensor a = te::placeholder({c(m), c(n)}, DataType::float32(), "A");
  IterVar k1 = te::reduce_axis(Range{c(0), c(n)}, "k1");
  te::Tensor mx = te::compute(
      {c(m)},
      [&](const std::vector<Ref<Var>>& i) {
        return te::max(a({i[0], k1.var}), {k1});
      },
      "mx");
  IterVar k2 = te::reduce_axis(Range{c(0), c(n)}, "k2");
  te::Tensor s = te::compute(
      {c(m)},
      [&](const std::vector<Ref<Var>>& i) {
        return te::sum(a({i[0], k2.var}) - mx({i[0]}), {k2});
      },
      "s");
  te::Tensor y = te::compute(
      {c(m), c(n)},
      [&](const std::vector<Ref<Var>>& i) {
        return (a({i[0], i[1]}) - mx({i[0]})) * s({i[0]});
      },
      "Y");
  return te::create_prim_func({a, y});
}

// The instructions of `trace` of one kind.
std::vector<schedule::Instruction> instructions_of(const schedule::Trace& trace,
                                                   const std::string& kind) {
  std::vector<schedule::Instruction> out;
  for (const schedule::Instruction& inst : trace.instructions()) {
    if (inst.kind == kind) out.push_back(inst);
  }
  return out;
}

size_t count_sketches_with(const SpaceGenerator& space, const std::string& kind) {
  size_t count = 0;
  for (const schedule::Trace& sketch : space.sketches()) {
    count += !instructions_of(sketch, kind).empty();
  }
  return count;
}

SpaceConfig four_threads() {
  SpaceConfig config;
  config.num_threads = 4;
  return config;
}

// T[i, j] = A[j, i] (n x m from m x n).
Ref<PrimFunc> transpose(int64_t m, int64_t n) {
  te::Tensor a = te::placeholder({c(m), c(n)}, DataType::float32(), "A");
  te::Tensor t = te::compute(
      {c(n), c(m)},
      [&](const std::vector<Ref<Var>>& i) {
        return a({i[1], i[0]});
      },
      "T");
  return te::create_prim_func({a, t});
}

// ---------------------------------------------------------------------------------------------
// transpose_tiling

TEST(TransposeTiling, ATransposeGetsTheSketchAsItIsAndOneWithBothRowsTiled) {
  SpaceGenerator space(make_task(transpose(64, 96), "llvm"), four_threads());
  ASSERT_EQ(space.sketches().size(), 2u);
  EXPECT_EQ(count_sketches_with(space, "sample_perfect_tile"), 1u);
  std::vector<schedule::Instruction> tiles =
      instructions_of(space.sketches()[1], "sample_perfect_tile");
  ASSERT_EQ(tiles.size(), 2u);
  for (const schedule::Instruction& tile : tiles) {
    EXPECT_EQ(tile.attrs.at("max_innermost_factor"), kMaxTransposeTile);
  }
  // Its candidates sample (the loop order and the results: test_autotune_space.py).
  std::optional<Candidate> candidate = space.sample(1, 3);
  ASSERT_TRUE(candidate.has_value());
  EXPECT_EQ(instructions_of(candidate->decisions, "reorder").size(), 1u);
}

TEST(TransposeTiling, ElementWiseBroadcastAndShortRowsGetNone) {
  for (const Ref<PrimFunc>& func : {scale_shift(256), transpose(4, 256), matmul(64, 64, 64)}) {
    SpaceGenerator space(make_task(func, "llvm"), four_threads());
    for (const schedule::Trace& sketch : space.sketches()) {
      for (const schedule::Instruction& tile : instructions_of(sketch, "sample_perfect_tile")) {
        EXPECT_NE(tile.attrs.at("max_innermost_factor"), kMaxTransposeTile);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// add_rfactor

TEST(AddRFactor, AVectorSumGetsTheSketchAsItIsAndOneRFactorPerHalf) {
  TuneTask task = make_task(sum_rows(0, 1 << 16), "llvm");
  SpaceGenerator space(task, four_threads());
  ASSERT_EQ(space.sketches().size(), 3u);
  EXPECT_TRUE(instructions_of(space.sketches()[0], "rfactor").empty());
  // The two rfactor sketches factor over the two outputs of the same split.
  std::set<std::string> factored;
  for (size_t s = 1; s < 3; ++s) {
    const schedule::Trace& sketch = space.sketches()[s];
    std::vector<schedule::Instruction> split = instructions_of(sketch, "split");
    std::vector<schedule::Instruction> rfactor = instructions_of(sketch, "rfactor");
    ASSERT_EQ(split.size(), 1u);
    ASSERT_EQ(rfactor.size(), 1u);
    ASSERT_EQ(split[0].outputs.size(), 2u);
    EXPECT_EQ(rfactor[0].attrs.at("factor_axis"), 0);
    factored.insert(rfactor[0].inputs.at(0).get<std::string>());
  }
  EXPECT_EQ(factored.size(), 2u);
}

TEST(AddRFactor, ARowSumWithFewRowsFactorsAlongTheLastDimension) {
  TuneTask task = make_task(sum_rows(4, 65536), "llvm");
  SpaceGenerator space(task, four_threads());
  ASSERT_EQ(count_sketches_with(space, "rfactor"), 2u);
  for (const schedule::Trace& sketch : space.sketches()) {
    for (const schedule::Instruction& rfactor : instructions_of(sketch, "rfactor")) {
      EXPECT_EQ(rfactor.attrs.at("factor_axis"), 1);
    }
  }
}

// A target of 8 float32 lanes, whatever the host's are.
const char* const kHaswell = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell";

TEST(AddRFactor, AReductionAlongRowsWithEnoughRowsGetsVectorPartialResults) {
  TuneTask rows = make_task(sum_rows(4096, 64), kHaswell);
  SpaceGenerator space(rows, four_threads());
  ASSERT_EQ(space.sketches().size(), 2u);
  EXPECT_TRUE(instructions_of(space.sketches()[0], "rfactor").empty());
  const schedule::Trace& sketch = space.sketches()[1];
  // The innermost reduction loop split by a sampled multiple of the 8 lanes (at most half the
  // loop), its inner half the last dimension of the partial result.
  std::vector<schedule::Instruction> widths = instructions_of(sketch, "sample_categorical");
  ASSERT_FALSE(widths.empty());
  EXPECT_EQ(widths[0].attrs.at("candidates"), Json::array({8, 16, 32}));
  std::vector<schedule::Instruction> rfactor = instructions_of(sketch, "rfactor");
  ASSERT_EQ(rfactor.size(), 1u);
  EXPECT_EQ(rfactor[0].attrs.at("factor_axis"), 1);
  EXPECT_EQ(rfactor[0].inputs.at(0).get<std::string>(),
            instructions_of(sketch, "split")[0].outputs.at(1).name());
  // Every candidate accepted computes the rows' sums with vectors; the partial result is never
  // left under the loop over the partial results (where it would be one lane at a time).
  int accepted = 0;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    std::optional<Candidate> candidate = space.sample(1, seed);
    if (!candidate.has_value()) continue;
    ++accepted;
    std::string text = to_script(candidate->mod);
    EXPECT_NE(text.find("B_rf"), std::string::npos);
    EXPECT_NE(text.find("T.vectorized("), std::string::npos);
  }
  // The partial result's location is drawn among those outside the loop over the partial
  // results: no draw is refused.
  EXPECT_EQ(accepted, 12);
  EXPECT_TRUE(space.rejections().empty());
  // Fewer than four vectors per row: nothing to gain.
  TuneTask short_rows = make_task(sum_rows(4096, 16), kHaswell);
  EXPECT_EQ(count_sketches_with(SpaceGenerator(short_rows, four_threads()), "rfactor"), 0u);
}

TEST(AddRFactor, ARowNoVectorDividesGetsWholeVectorsWithAPartialLastOne) {
  // 197 columns (a ViT's attention scores): vectors of the 8 lanes and their multiples, the last
  // one partial; the init of the partial results runs on every lane (the tail's condition taken
  // at the first step of the reduction), so no candidate is refused.
  TuneTask task = make_task(sum_rows(64, 197), kHaswell);
  SpaceGenerator space(task, four_threads());
  ASSERT_EQ(space.sketches().size(), 2u);
  const schedule::Trace& sketch = space.sketches()[1];
  EXPECT_EQ(instructions_of(sketch, "sample_categorical")[0].attrs.at("candidates"),
            Json::array({8, 16, 32, 64}));
  for (uint64_t seed = 0; seed < 8; ++seed) {
    std::optional<Candidate> candidate = space.sample(1, seed);
    ASSERT_TRUE(candidate.has_value()) << seed;
    std::string text = to_script(candidate->mod);
    EXPECT_NE(text.find("B_rf_init"), std::string::npos);
    EXPECT_NE(text.find("T.vectorized("), std::string::npos);
  }
  EXPECT_TRUE(space.rejections().empty());
  // Four rows of 50257 logits lack parallelism: both halves of a perfect split (1733 x 29) are
  // factored, and the vectors along the rows come besides.
  TuneTask few_rows = make_task(sum_rows(4, 50257), kHaswell);
  SpaceGenerator few(few_rows, four_threads());
  ASSERT_EQ(count_sketches_with(few, "rfactor"), 3u);
  EXPECT_EQ(instructions_of(few.sketches().back(), "sample_categorical")[0].attrs.at("candidates"),
            Json::array({8, 16, 32, 64}));
  // Where a vector divides the reduction, one of the halves is vectors already: no third.
  TuneTask dividing = make_task(sum_rows(4, 65536), kHaswell);
  EXPECT_EQ(count_sketches_with(SpaceGenerator(dividing, four_threads()), "rfactor"), 2u);
}

TEST(AddRFactor, AMatmulGetsNone) {
  TuneTask matmul_task = make_task(matmul(256, 256, 256), "llvm");
  SpaceGenerator space(matmul_task, four_threads());
  EXPECT_EQ(space.sketches().size(), 2u);  // SSRSRS and SSRRS
  EXPECT_EQ(count_sketches_with(space, "rfactor"), 0u);
  // A reduction no longer than the threads are many gains nothing from splitting.
  TuneTask short_sum = make_task(sum_rows(0, 4), "llvm");
  EXPECT_EQ(count_sketches_with(SpaceGenerator(short_sum, four_threads()), "rfactor"), 0u);
}

// y[i] = sum_r A[i, r] * x[r]: A streamed along its rows, x reused by every row.
Ref<PrimFunc> matvec(int64_t m, int64_t n) {
  te::Tensor a = te::placeholder({c(m), c(n)}, DataType::float32(), "A");
  te::Tensor x = te::placeholder({c(n)}, DataType::float32(), "x");
  IterVar r = te::reduce_axis(Range{c(0), c(n)}, "r");
  te::Tensor y = te::compute(
      {c(m)},
      [&](const std::vector<Ref<Var>>& i) {
        return te::sum(a({i[0], r.var}) * x({r.var}), {r});
      },
      "y");
  return te::create_prim_func({a, x, y});
}

TEST(AddRFactor, AMatrixVectorProductAlsoGetsVectorPartialResultsAlongItsRows) {
  // multi_level_tiling's vectors along y would gather A across its rows: the partial results
  // along A's rows come besides, and multi_level_tiling tiles them (rows of A x lanes).
  SpaceGenerator space(make_task(matvec(256, 512), kHaswell), four_threads());
  EXPECT_EQ(count_sketches_with(space, "rfactor"), 2u);
  EXPECT_EQ(space.sketches().size(), 3u);
  for (const schedule::Trace& sketch : space.sketches()) {
    std::vector<schedule::Instruction> rfactor = instructions_of(sketch, "rfactor");
    if (rfactor.empty()) continue;
    EXPECT_EQ(rfactor[0].attrs.at("factor_axis"), 1);
    EXPECT_FALSE(instructions_of(sketch, "cache_write").empty());  // the tiled partial results
  }
}

// S[0, c, 0, 0] = sum_{y, x} X[0, c, y, x]: a global pooling's sum, its height and width kept
// as dimensions of one value.
Ref<PrimFunc> global_sum(int64_t channels, int64_t height, int64_t width) {
  te::Tensor x =
      te::placeholder({c(1), c(channels), c(height), c(width)}, DataType::float32(), "X");
  IterVar ry = te::reduce_axis(Range{c(0), c(height)}, "ry");
  IterVar rx = te::reduce_axis(Range{c(0), c(width)}, "rx");
  te::Tensor s = te::compute(
      {c(1), c(channels), c(1), c(1)},
      [&](const std::vector<Ref<Var>>& i) {
        return te::sum(x({i[0], i[1], ry.var, rx.var}), {ry, rx});
      },
      "S");
  return te::create_prim_func({x, s});
}

TEST(AddRFactor, AGlobalPoolingSumsWholeRowsOfHeightTimesWidthInVectors) {
  // No tile reuses X (the result's unit height and width are no reuse): no multi_level_tiling;
  // the partial results run along y and x fused (28 x 28 = 784 = 98 vectors of 8).
  SpaceGenerator space(make_task(global_sum(64, 28, 28), kHaswell), four_threads());
  EXPECT_EQ(count_sketches_with(space, "cache_write"), 0u);
  ASSERT_EQ(count_sketches_with(space, "rfactor"), 1u);
  const schedule::Trace& sketch = space.sketches().back();
  ASSERT_EQ(instructions_of(sketch, "fuse").size(), 1u);
  EXPECT_EQ(instructions_of(sketch, "sample_categorical")[0].attrs.at("candidates"),
            Json::array({8, 16}));
}

TEST(AddRFactor, PartialResultsAreNeverDrawnOneLaneAtATime) {
  TuneTask task = make_task(sum_rows(4, 65536), "llvm");
  SpaceGenerator space(task, four_threads());
  for (int sketch = 0; sketch < 3; ++sketch) {
    int accepted = 0;
    for (uint64_t seed = 0; seed < 12; ++seed) {
      std::optional<Candidate> candidate = space.sample(sketch, seed);
      if (!candidate.has_value()) continue;
      ++accepted;
      bool factored = to_script(candidate->mod).find("B_rf") != std::string::npos;
      EXPECT_EQ(factored, sketch != 0);
    }
    EXPECT_EQ(accepted, 12) << "sketch " << sketch;
  }
  EXPECT_TRUE(space.rejections().empty());
}

// ---------------------------------------------------------------------------------------------
// random_compute_location

TEST(RandomComputeLocation, RowReductionsFeedingAnElementwiseOutputAreMoved) {
  TuneTask task = make_task(centred_rows(64, 1024), kHaswell);
  SpaceGenerator space(task, four_threads());
  // s and mx each as they are and with vector partial results (add_rfactor).
  ASSERT_EQ(space.sketches().size(), 4u);
  const schedule::Trace& sketch = space.sketches()[0];
  // The consumer first (s), then its producer (mx), each sampled and then moved.
  ASSERT_EQ(instructions_of(sketch, "sample_compute_location").size(), 2u);
  ASSERT_EQ(instructions_of(sketch, "compute_at").size(), 2u);
  std::vector<schedule::Instruction> blocks = instructions_of(sketch, "get_block");
  EXPECT_EQ(blocks[0].attrs.at("name"), "s");
  EXPECT_EQ(blocks[1].attrs.at("name"), "mx");
  // The partial results rfactor creates are visited by the rules too, right after the block
  // they feed: each gets a location of its own.
  std::vector<std::string> located;
  const schedule::Trace& factored = space.sketches()[3];
  std::map<std::string, std::string> block_names;
  for (const schedule::Instruction& inst : factored.instructions()) {
    if (inst.kind == "get_block") {
      block_names[inst.outputs.at(0).name()] = inst.attrs.at("name").get<std::string>();
    }
    if (inst.kind == "sample_compute_location") {
      located.push_back(block_names[inst.inputs.at(0).get<std::string>()]);
    }
  }
  EXPECT_NE(std::find(located.begin(), located.end(), "s_rf"), located.end());
  EXPECT_NE(std::find(located.begin(), located.end(), "mx_rf"), located.end());
}

TEST(RandomComputeLocation, TiledInlinedAndOutputBlocksAreNotMoved) {
  TuneTask tiled = make_task(matmul_relu(64, 64, 64), "llvm");
  SpaceGenerator tiled_space(tiled, four_threads());
  // Both tilings, each also with the ReLU inlined into the write-back of the accumulator tile.
  ASSERT_EQ(count_sketches_with(tiled_space, "cache_write"), 4u);
  EXPECT_EQ(count_sketches_with(tiled_space, "reverse_compute_inline"), 2u);
  EXPECT_EQ(count_sketches_with(tiled_space, "sample_compute_location"), 0u);
  TuneTask inlined = make_task(scale_shift(256), "llvm");
  SpaceGenerator inlined_space(inlined, four_threads());
  ASSERT_EQ(count_sketches_with(inlined_space, "compute_inline"), 1u);
  EXPECT_EQ(count_sketches_with(inlined_space, "sample_compute_location"), 0u);
  // An output is not moved; only the partial results of its rfactor sketches are.
  TuneTask sum_task = make_task(sum_rows(4, 65536), "llvm");
  SpaceGenerator sum_space(sum_task, four_threads());
  ASSERT_EQ(sum_space.sketches().size(), 3u);
  EXPECT_TRUE(instructions_of(sum_space.sketches()[0], "sample_compute_location").empty());
  for (size_t k = 1; k < 3; ++k) {
    EXPECT_EQ(instructions_of(sum_space.sketches()[k], "sample_compute_location").size(), 1u);
  }
}

// The candidate of the first seed that `space` accepts for `sketch`.
std::optional<Candidate> first_candidate(SpaceGenerator& space, size_t sketch) {
  for (uint64_t seed = 0; seed < 32; ++seed) {
    std::optional<Candidate> candidate = space.sample(sketch, seed);
    if (candidate.has_value()) return candidate;
  }
  return std::nullopt;
}

TEST(RandomComputeLocation, OnlyUsefulLocationsAreDrawn) {
  TuneTask task = make_task(centred_rows(16, 64), "llvm");
  SpaceGenerator space(task, four_threads());
  std::set<std::pair<int64_t, int64_t>> seen;
  for (uint64_t seed = 0; seed < 48; ++seed) {
    std::optional<Candidate> candidate = space.sample(0, seed);
    // The draws skip the locations refuse_recomputation would refuse: every sample is kept.
    ASSERT_TRUE(candidate.has_value()) << "seed " << seed;
    schedule::Schedule sch(candidate->mod, 0);
    EXPECT_FALSE(recomputes_reduction(sch, "mx")) << "seed " << seed;
    EXPECT_FALSE(recomputes_reduction(sch, "s")) << "seed " << seed;
    std::vector<schedule::Instruction> locations =
        instructions_of(candidate->decisions, "sample_compute_location");
    seen.insert({locations[0].decision.get<int64_t>(), locations[1].decision.get<int64_t>()});
  }
  EXPECT_TRUE(space.rejections().empty());
  // s: root or the loop i of Y; mx: root, or the loops i of Y or of s.
  EXPECT_GE(seen.size(), 3u);
}

TEST(RecomputesReduction, IsTrueUnderALoopTheResultDoesNotDependOn) {
  Ref<IRModule> mod = make<IRModule>();
  mod->functions["main"] = centred_rows(8, 16);
  schedule::Schedule sch(mod, 0);
  schedule::RV block = schedule::get_block(sch, "s");
  EXPECT_FALSE(recomputes_reduction(sch, "s"));
  std::vector<int64_t> all = schedule::compute_location_candidates(sch, block);
  std::vector<int64_t> useful = useful_compute_locations(sch, block);
  EXPECT_LT(useful.size(), all.size());
  EXPECT_NE(std::find(useful.begin(), useful.end(), -1), useful.end());
  for (int64_t candidate : all) {
    schedule::Schedule moved = sch.copy();
    schedule::compute_at(moved, block, schedule::sample_compute_location(moved, block, candidate));
    bool listed = std::find(useful.begin(), useful.end(), candidate) != useful.end();
    EXPECT_EQ(recomputes_reduction(moved, "s"), !listed) << "location " << candidate;
  }
}

// ---------------------------------------------------------------------------------------------
// compute_location_candidates and mutate_compute_location

TEST(ComputeLocationCandidates, AreTheDecisionsSampleComputeLocationAccepts) {
  Ref<IRModule> mod = make<IRModule>();
  mod->functions["main"] = centred_rows(8, 16);
  for (const char* name : {"mx", "s"}) {
    schedule::Schedule sch(mod, 0);
    schedule::RV block = schedule::get_block(sch, name);
    std::vector<int64_t> candidates = schedule::compute_location_candidates(sch, block);
    EXPECT_TRUE(std::is_sorted(candidates.begin(), candidates.end()));
    EXPECT_NE(std::find(candidates.begin(), candidates.end(), -1), candidates.end());
    for (int64_t decision = -2; decision < 8; ++decision) {
      schedule::Schedule copy = sch.copy();
      bool listed = std::find(candidates.begin(), candidates.end(), decision) != candidates.end();
      bool accepted = true;
      try {
        schedule::sample_compute_location(copy, block, decision);
      } catch (const schedule::ScheduleError& e) {
        EXPECT_EQ(e.error_class(), "InvalidDecisionError");
        accepted = false;
      }
      EXPECT_EQ(listed, accepted) << name << " decision " << decision;
    }
  }
}

TEST(ComputeLocationCandidates, DrawsAreUniformOverTheAcceptedCandidates) {
  Ref<IRModule> mod = make<IRModule>();
  mod->functions["main"] = centred_rows(8, 16);
  schedule::Schedule sch(mod, 0);
  schedule::RV block = schedule::get_block(sch, "s");
  std::vector<int64_t> candidates = schedule::compute_location_candidates(sch, block);
  ASSERT_GE(candidates.size(), 3u);
  std::mt19937_64 rng(3);
  auto next = [&rng] { return rng(); };
  // All of them, about as often each (200 draws per candidate expected).
  std::map<int64_t, int> counts;
  for (size_t k = 0; k < 200 * candidates.size(); ++k) {
    std::optional<int64_t> drawn =
        schedule::draw_compute_location(sch, block, next, [](int64_t) { return true; });
    ASSERT_TRUE(drawn.has_value());
    ++counts[*drawn];
  }
  ASSERT_EQ(counts.size(), candidates.size());
  for (int64_t c : candidates) {
    EXPECT_GT(counts[c], 140) << c;
    EXPECT_LT(counts[c], 260) << c;
  }
  // Only what `accept` accepts, and none when it accepts none.
  int64_t only = candidates.back();
  for (int k = 0; k < 20; ++k) {
    EXPECT_EQ(
        schedule::draw_compute_location(sch, block, next, [only](int64_t c) { return c == only; }),
        only);
  }
  EXPECT_FALSE(
      schedule::draw_compute_location(sch, block, next, [](int64_t) { return false; }).has_value());
}

TEST(ComputeLocationCandidates, TheScheduleFilterNarrowsDrawsButNotDecisions) {
  Ref<IRModule> mod = make<IRModule>();
  mod->functions["main"] = centred_rows(8, 16);
  schedule::Schedule sch(mod, 5);
  schedule::RV block = schedule::get_block(sch, "s");
  std::vector<int64_t> candidates = schedule::compute_location_candidates(sch, block);
  ASSERT_GE(candidates.size(), 3u);
  int64_t only = candidates.back();
  std::vector<int64_t> asked;
  sch.set_location_filter([&](schedule::Schedule&, const schedule::RV& rv, int64_t location) {
    EXPECT_EQ(rv.name(), block.name());
    asked.push_back(location);
    return location == only;
  });
  // Copies keep the filter: each draw takes the one location it accepts.
  for (int k = 0; k < 8; ++k) {
    schedule::Schedule copy = sch.copy();
    schedule::sample_compute_location(copy, block);
    EXPECT_EQ(copy.trace().instructions().back().decision, only);
  }
  // Only compute locations are offered to the filter; a given decision does not ask it.
  for (int64_t location : asked) {
    EXPECT_NE(std::find(candidates.begin(), candidates.end(), location), candidates.end());
  }
  asked.clear();
  schedule::Schedule decided = sch.copy();
  schedule::sample_compute_location(decided, block, candidates.front());
  EXPECT_TRUE(asked.empty());
  // A filter that accepts nothing leaves the block at the root.
  sch.set_location_filter([](schedule::Schedule&, const schedule::RV&, int64_t) { return false; });
  schedule::sample_compute_location(sch, block);
  EXPECT_EQ(sch.trace().instructions().back().decision, -1);
}

TEST(MutateComputeLocation, ProposesAnotherValidLocation) {
  TuneTask task = make_task(centred_rows(16, 64), "llvm");
  SpaceGenerator space(task, four_threads());
  SpaceContext context;
  context.task = &task;
  context.config = four_threads();
  context.num_threads = 4;
  std::unique_ptr<Mutator> mutator = make_mutate_compute_location(context);
  std::mt19937_64 rng(7);
  int proposals = 0;
  for (uint64_t seed = 0; seed < 24; ++seed) {
    std::optional<Candidate> parent = space.sample(0, seed);
    if (!parent.has_value()) continue;
    for (int attempt = 0; attempt < 8; ++attempt) {
      size_t index = 0;
      Json decision;
      if (!mutator->propose(parent->decisions, rng, &index, &decision)) continue;
      ++proposals;
      const schedule::Instruction& inst = parent->decisions.instructions()[index];
      ASSERT_EQ(inst.kind, "sample_compute_location");
      EXPECT_NE(inst.decision, decision);
      // The child keeps the proposed decision: it was valid, so the replay did not redraw it.
      std::optional<Candidate> child =
          space.replay(0, parent->decisions.with_decision(index, decision));
      ASSERT_TRUE(child.has_value());
      EXPECT_EQ(child->decisions.instructions()[index].decision, decision);
      EXPECT_NE(child->hash, parent->hash);
    }
  }
  EXPECT_GT(proposals, 0);
  EXPECT_TRUE(space.rejections().empty());
}

TEST(MutateComputeLocation, FindsNothingInATraceWithoutLocations) {
  TuneTask task = make_task(matmul(32, 32, 32), "llvm");
  SpaceGenerator space(task, four_threads());
  SpaceContext context;
  context.task = &task;
  context.num_threads = 4;
  std::unique_ptr<Mutator> mutator = make_mutate_compute_location(context);
  std::mt19937_64 rng(0);
  size_t index = 0;
  Json decision;
  std::optional<Candidate> candidate = space.sample(0, 0);
  ASSERT_TRUE(candidate.has_value());
  EXPECT_FALSE(mutator->propose(candidate->decisions, rng, &index, &decision));
}

// ---------------------------------------------------------------------------------------------
// Invalid decisions

// The index of the first instruction of `kind` in `trace`.
size_t first_index(const schedule::Trace& trace, const std::string& kind) {
  for (size_t i = 0; i < trace.instructions().size(); ++i) {
    if (trace.instructions()[i].kind == kind) return i;
  }
  ADD_FAILURE() << "no instruction " << kind;
  return 0;
}

TEST(InvalidDecisions, AMalformedLocationIsRefusedAndCounted) {
  TuneTask task = make_task(centred_rows(16, 64), "llvm");
  SpaceGenerator space(task, four_threads());
  std::optional<Candidate> parent = first_candidate(space, 0);
  ASSERT_TRUE(parent.has_value());
  size_t site = first_index(parent->decisions, "sample_compute_location");
  EXPECT_FALSE(space.replay(0, parent->decisions.with_decision(site, "root")).has_value());
  EXPECT_FALSE(
      space.replay(0, parent->decisions.with_decision(site, Json::array({1, 2}))).has_value());
  ASSERT_EQ(space.rejections().count("replay: error"), 1u);
  EXPECT_EQ(space.rejections().at("replay: error"), 2);
}

TEST(InvalidDecisions, ALocationThatNamesNoValidLoopIsDrawnAnew) {
  TuneTask task = make_task(centred_rows(16, 64), "llvm");
  SpaceGenerator space(task, four_threads());
  std::optional<Candidate> parent = first_candidate(space, 0);
  ASSERT_TRUE(parent.has_value());
  size_t site = first_index(parent->decisions, "sample_compute_location");
  std::optional<Candidate> child = space.replay(0, parent->decisions.with_decision(site, 999));
  // Not refused as malformed: drawn anew, among the locations that compute each value once.
  ASSERT_TRUE(child.has_value());
  EXPECT_NE(child->decisions.instructions()[site].decision, 999);
  EXPECT_TRUE(space.rejections().empty());
}

TEST(InvalidDecisions, AMalformedSplitOfTheReductionIsRefusedAndCounted) {
  TuneTask task = make_task(sum_rows(0, 1 << 16), "llvm");
  SpaceGenerator space(task, four_threads());
  std::optional<Candidate> parent = space.sample(1, 0);
  ASSERT_TRUE(parent.has_value());
  size_t site = first_index(parent->decisions, "sample_perfect_tile");
  EXPECT_FALSE(space.replay(1, parent->decisions.with_decision(site, "x")).has_value());
  ASSERT_EQ(space.rejections().count("replay: error"), 1u);
  // A split whose factors do not multiply to the extent is drawn anew.
  std::optional<Candidate> child =
      space.replay(1, parent->decisions.with_decision(site, Json::array({3, 5})));
  ASSERT_TRUE(child.has_value());
  std::vector<int64_t> factors =
      child->decisions.instructions()[site].decision.get<std::vector<int64_t>>();
  EXPECT_EQ(factors[0] * factors[1], 1 << 16);
}

}  // namespace
}  // namespace kiln::autotune
