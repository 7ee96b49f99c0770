// Tests of the block analyses behind the compute-location primitives (schedule/block_dependence.h)
// on matmul followed by relu, and of the primitives' can_* queries through the C++ API.
#include "schedule/block_dependence.h"

#include <gtest/gtest.h>

#include "kiln/ir/op.h"
#include "kiln/schedule/compute_at.h"
#include "kiln/schedule/compute_inline.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/te/create_prim_func.h"
#include "kiln/te/reduction.h"

namespace kiln::schedule {
namespace {

using namespace kiln::ir;

Expr c(int64_t v) {
  return int32_const(v);
}

// C = A @ B (16x8 by 8x12), D = max(C, 0).
Ref<IRModule> matmul_relu() {
  te::Tensor a = te::placeholder({c(16), c(8)}, DataType::float32(), "A");
  te::Tensor b = te::placeholder({c(8), c(12)}, DataType::float32(), "B");
  IterVar k = te::reduce_axis(Range{c(0), c(8)}, "k");
  te::Tensor mm = te::compute(
      {c(16), c(12)},
      [&](const std::vector<Ref<Var>>& v) {
        return te::sum(a({v[0], k.var}) * b({k.var, v[1]}), {k});
      },
      "C");
  te::Tensor relu = te::compute(
      {c(16), c(12)},
      [&](const std::vector<Ref<Var>>& v) {
        return max(mm({v[0], v[1]}), make_const(DataType::float32(), 0.0));
      },
      "D");
  auto mod = make<IRModule>();
  mod->functions["main"] = te::create_prim_func({a, b, relu});
  return mod;
}

class BlockDependenceTest : public ::testing::Test {
 protected:
  BlockDependenceTest() : sch(matmul_relu(), 0), index(sch.index("main")) {}
  const BlockLocation& loc(const std::string& name) { return *index.find_block(name); }

  Schedule sch;
  FunctionIndex& index;
};

TEST_F(BlockDependenceTest, ScopeBlocksAreInProgramOrder) {
  std::vector<const BlockLocation*> blocks = scope_blocks(index, loc("C").scope);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0]->block->name, "C");
  EXPECT_EQ(blocks[1]->block->name, "D");
  EXPECT_TRUE(scope_blocks(index, nullptr).empty());
}

TEST_F(BlockDependenceTest, ProducersAndConsumers) {
  std::vector<const BlockLocation*> consumers = consumers_of(index, loc("C"));
  ASSERT_EQ(consumers.size(), 1u);
  EXPECT_EQ(consumers[0]->block->name, "D");
  std::vector<const BlockLocation*> producers = producers_of(index, loc("D"));
  ASSERT_EQ(producers.size(), 1u);
  EXPECT_EQ(producers[0]->block->name, "C");
  EXPECT_TRUE(producers_of(index, loc("C")).empty());
  EXPECT_TRUE(consumers_of(index, loc("D")).empty());
}

TEST_F(BlockDependenceTest, CompleteAndReductionBlocks) {
  EXPECT_EQ(why_not_complete(index, loc("D")), "");
  EXPECT_EQ(why_not_complete(index, loc("C")),
            "its iterator 'v_k' is a reduce iterator, not a spatial one");
  EXPECT_EQ(why_not_reduction(index, loc("C")), "");
  EXPECT_EQ(why_not_reduction(index, loc("D")), "it has no init statement");
}

TEST_F(BlockDependenceTest, OutputBuffers) {
  EXPECT_EQ(output_buffer(loc("C")), nullptr);
  ASSERT_NE(output_buffer(loc("D")), nullptr);
  EXPECT_EQ(output_buffer(loc("D"))->name, "D");
}

TEST_F(BlockDependenceTest, StagePipeline) {
  EXPECT_TRUE(check_stage_pipeline(index, loc("C").scope).ok());
}

TEST_F(BlockDependenceTest, RelaxedRegionOverInnerLoops) {
  const BlockLocation& d = loc("D");
  arith::Analyzer analyzer;
  std::unordered_map<const Var*, bool> bound;
  bind_loops(d.loops, &analyzer, &bound);
  // Relaxing the inner loop j only: row i, all 12 columns.
  std::vector<Range> region = relaxed_region(d, d.block->reads[0], 1, &analyzer);
  ASSERT_EQ(region.size(), 2u);
  EXPECT_TRUE(region[0].min.same_as(d.loops[0]->loop_var));
  EXPECT_TRUE(is_const_int(region[0].extent, 1));
  EXPECT_TRUE(is_const_int(region[1].min, 0));
  EXPECT_TRUE(is_const_int(region[1].extent, 12));
  // Relaxing both: the whole buffer.
  region = relaxed_region(d, d.block->reads[0], 0, &analyzer);
  EXPECT_TRUE(is_const_int(region[0].extent, 16));
  EXPECT_TRUE(is_const_int(region[1].extent, 12));
}

TEST_F(BlockDependenceTest, RemovalTakesTheLoopsThatHoldOnlyTheBlock) {
  const BlockLocation& d = loc("D");
  BlockRemoval removal = plan_block_removal(d);
  EXPECT_EQ(removal.target, d.loops[0]);
  ASSERT_EQ(removal.loops.size(), 2u);
  EXPECT_EQ(removal.loops[0], d.loops[1]->loop_var.get());
  EXPECT_EQ(removal.loops[1], d.loops[0]->loop_var.get());
  EXPECT_EQ(loop_depth(d, d.loops[1]), 1u);
  EXPECT_EQ(loop_depth(d, loc("C").loops[0]), 2u);
}

TEST(ComputeLocationQueries, CanComputeAtChangesNothing) {
  Schedule sch(matmul_relu(), 0);
  RV mm = get_block(sch, "C");
  RV relu = get_block(sch, "D");
  std::vector<RV> relu_loops = get_loops(sch, relu);
  std::vector<RV> mm_loops = get_loops(sch, mm);
  Ref<IRModule> before = sch.mod();
  size_t trace_length = sch.trace().instructions().size();
  EXPECT_TRUE(can_compute_at(sch, mm, relu_loops[0]));
  EXPECT_FALSE(can_compute_at(sch, relu, mm_loops[0]));  // D is an output block
  EXPECT_TRUE(can_reverse_compute_at(sch, relu, mm_loops[1]));
  EXPECT_FALSE(can_reverse_compute_at(sch, relu, relu_loops[0]));  // its own loop
  EXPECT_FALSE(can_compute_inline(sch, mm));                       // C is a reduction
  EXPECT_FALSE(can_reverse_compute_inline(sch, relu));             // its producer is a reduction
  EXPECT_TRUE(sch.mod().same_as(before));
  EXPECT_EQ(sch.trace().instructions().size(), trace_length);
}

TEST(ComputeLocationQueries, ComputeAtMovesTheProducer) {
  Schedule sch(matmul_relu(), 0);
  RV mm = get_block(sch, "C");
  RV relu = get_block(sch, "D");
  std::vector<RV> relu_loops = get_loops(sch, relu);
  compute_at(sch, mm, relu_loops[0]);
  const BlockLocation& moved = *sch.index("main").find_block("C");
  // The matmul now sits under D's loop i, with its own loops over j and k.
  ASSERT_EQ(moved.loops.size(), 3u);
  EXPECT_EQ(moved.loops[0], sch.loop(relu_loops[0], "test").loop);
  EXPECT_EQ(moved.loops[1]->loop_var->name, "ax0");
  EXPECT_TRUE(is_const_int(moved.loops[1]->extent, 12));
  EXPECT_TRUE(is_const_int(moved.loops[2]->extent, 8));
  EXPECT_EQ(sch.trace().instructions().back().kind, "compute_at");
}

}  // namespace
}  // namespace kiln::schedule
