// The GPU design space: which workloads get the sketches of auto_bind and cross_thread_reduction
// (a scalar sum among them), that the thread counts they draw respect the target's limit, and that
// the postprocessor verify_gpu_code refuses, under a counted reason, a block left unbound, a kernel
// with too many threads and one with too much shared memory. No device is needed: the targets give
// their limits. tests/python/test_autotune_space_gpu.py runs the candidates on an OpenCL device.
#include <gtest/gtest.h>

#include <algorithm>

#include "autotune/space/space_parts.h"
#include "kiln/autotune/space.h"
#include "lowered_workloads.h"

namespace kiln::autotune {
namespace {

using namespace ir;
using testing::c;
using testing::matmul;
using testing::module_of;
using testing::sum_rows;

// B[i, j] = A[i, j] + 1.
Ref<PrimFunc> add_one(int64_t m, int64_t n) {
  te::Tensor a = te::placeholder({c(m), c(n)}, DataType::float32(), "A");
  te::Tensor b = te::compute(
      {c(m), c(n)},
      [&](const std::vector<Ref<Var>>& i) {
        return a({i[0], i[1]}) + make_const(DataType::float32(), 1.0);
      },
      "B");
  return te::create_prim_func({a, b});
}

// The instructions of `kind` in a trace, and the candidates of its sample_categorical ones.
size_t count_of(const schedule::Trace& trace, const std::string& kind) {
  return static_cast<size_t>(
      std::count_if(trace.instructions().begin(), trace.instructions().end(),
                    [&](const schedule::Instruction& inst) { return inst.kind == kind; }));
}

std::vector<int64_t> thread_counts(const schedule::Trace& trace) {
  for (const schedule::Instruction& inst : trace.instructions()) {
    if (inst.kind == "sample_categorical") {
      return inst.attrs.at("candidates").get<std::vector<int64_t>>();
    }
  }
  return {};
}

TEST(GpuSpace, AnElementwiseFunctionIsBoundOneElementPerThread) {
  TuneTask task = make_task(add_one(24, 10), "opencl");  // the space keeps a pointer to it
  SpaceGenerator space(task, {});
  ASSERT_EQ(space.sketches().size(), 1u);
  const schedule::Trace& sketch = space.sketches()[0];
  EXPECT_EQ(count_of(sketch, "fuse"), 1u);
  EXPECT_EQ(count_of(sketch, "bind"), 2u);
  // 240 elements: 32 .. 256 threads, none past twice the extent.
  EXPECT_EQ(thread_counts(sketch), (std::vector<int64_t>{32, 64, 128, 256}));
  for (uint64_t seed = 0; seed < 4; ++seed) EXPECT_TRUE(space.sample(0, seed)) << seed;
  EXPECT_TRUE(space.rejections().empty());
}

TEST(GpuSpace, ThreadCountsStayWithinTheTargetsLimit) {
  TuneTask task = make_task(add_one(64, 64), "opencl -max_threads_per_block=64");
  SpaceGenerator space(task, {});
  EXPECT_EQ(thread_counts(space.sketches()[0]), (std::vector<int64_t>{32, 64}));
  TuneTask rows_task = make_task(sum_rows(4, 4096), "cuda -max_threads_per_block=128");
  SpaceGenerator rows(rows_task, {});
  ASSERT_EQ(rows.sketches().size(), 2u);
  EXPECT_EQ(thread_counts(rows.sketches()[1]), (std::vector<int64_t>{16, 32, 64, 128}));
}

TEST(GpuSpace, AReductionOfFewLongRowsGetsACrossThreadSketch) {
  TuneTask task = make_task(sum_rows(4, 4096), "opencl");
  SpaceGenerator space(task, {});
  ASSERT_EQ(space.sketches().size(), 2u);
  // The block as it is, bound one row per thread by auto_bind, and the rows' sums split among
  // the threads of a block.
  EXPECT_EQ(count_of(space.sketches()[0], "fuse"), 0u);
  const schedule::Trace& cross = space.sketches()[1];
  ASSERT_EQ(count_of(cross, "bind"), 2u);
  EXPECT_EQ(cross.instructions().back().attrs.at("thread_axis"), "blockIdx.x");
  for (int sketch = 0; sketch < 2; ++sketch) {
    for (uint64_t seed = 0; seed < 3; ++seed) {
      EXPECT_TRUE(space.sample(sketch, seed)) << sketch << " " << seed;
    }
  }
  EXPECT_TRUE(space.rejections().empty());
}

TEST(GpuSpace, AMatmulOrManyShortRowsGetNoCrossThreadSketch) {
  for (const Ref<PrimFunc>& func : {matmul(64, 64, 64), sum_rows(4096, 64), sum_rows(4, 16)}) {
    TuneTask task = make_task(func, "opencl");
    EXPECT_EQ(SpaceGenerator(task, {}).sketches().size(), 1u);
  }
}

TEST(GpuSpace, AScalarSumGetsOneThreadOneBlockAndTwoStageSketches) {
  // No spatial loop: auto_bind runs the block as it is in one thread of one block (unit loops),
  // cross_thread_reduction gives one block of threads striding over the input, and two stages
  // (rfactor over a sampled number of thread blocks, one block reducing their partial results).
  TuneTask task = make_task(sum_rows(0, 4096), "opencl");
  SpaceGenerator space(task, {});
  ASSERT_EQ(space.sketches().size(), 3u);
  EXPECT_EQ(count_of(space.sketches()[0], "add_unit_loop"), 2u);
  EXPECT_EQ(count_of(space.sketches()[1], "add_unit_loop"), 1u);
  EXPECT_EQ(count_of(space.sketches()[1], "rfactor"), 0u);
  EXPECT_EQ(count_of(space.sketches()[2], "rfactor"), 1u);
  EXPECT_EQ(count_of(space.sketches()[2], "bind"), 4u);
  for (int sketch = 0; sketch < 3; ++sketch) {
    for (uint64_t seed = 0; seed < 3; ++seed) {
      EXPECT_TRUE(space.sample(sketch, seed)) << sketch << " " << seed;
    }
  }
  EXPECT_TRUE(space.rejections().empty());
  // A short one: no two stages.
  TuneTask short_task = make_task(sum_rows(0, 8), "opencl");
  EXPECT_EQ(SpaceGenerator(short_task, {}).sketches().size(), 2u);
}

// The class of the ScheduleError verify_gpu_code raises for `mod` on `target`, "" for none.
std::string verify(const Ref<IRModule>& mod, const std::string& target) {
  TuneTask task = make_task(mod->lookup("main"), target);
  SpaceContext context;
  context.task = &task;
  schedule::Schedule sch(mod, 0);
  try {
    make_verify_gpu_code(context)->apply(sch);
  } catch (const schedule::ScheduleError& e) {
    return e.error_class();
  }
  return "";
}

// add_one(16, 64) with one row per thread block, a thread per element and, when `shared`, the
// block's row of A staged in shared memory (64 floats per block).
Ref<IRModule> bound_add_one(bool shared) {
  schedule::Schedule sch(module_of(add_one(16, 64)), 0);
  schedule::RV block = schedule::get_block(sch, "B");
  std::vector<schedule::RV> loops = schedule::get_loops(sch, block);
  schedule::bind_loop(sch, loops[0], "blockIdx.x");
  schedule::bind_loop(sch, loops[1], "threadIdx.x");
  if (shared) {
    schedule::RV copy = schedule::cache_read(sch, block, 0, "shared");
    schedule::compute_at(sch, copy, loops[0]);
    schedule::bind_loop(sch, schedule::get_loops(sch, copy).back(), "threadIdx.x");
  }
  return sch.mod();
}

TEST(GpuVerifyPostproc, AcceptsWhatTheGpuRunsAndNamesWhatItCannot) {
  EXPECT_EQ(verify(bound_add_one(false), "opencl -max_threads_per_block=64"), "");
  EXPECT_EQ(verify(bound_add_one(false), "opencl -max_threads_per_block=32"),
            "GpuTooManyThreadsError");
  EXPECT_EQ(verify(bound_add_one(true), "opencl -max_shared_memory_per_block=256"), "");
  EXPECT_EQ(verify(bound_add_one(true), "opencl -max_shared_memory_per_block=128"),
            "GpuSharedMemoryError");
  EXPECT_EQ(verify(module_of(add_one(16, 64)), "opencl"), "UnboundBlockError");
}

}  // namespace
}  // namespace kiln::autotune
