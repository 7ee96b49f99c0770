// The GPU design space: which workloads get the sketches of auto_bind and cross_thread_reduction
// (a scalar sum among them), that the thread counts they draw respect the target's limit, and that
// the postprocessor verify_gpu_code refuses, under a counted reason, a block left unbound, a kernel
// with too many threads and one with too much shared memory. multi_level_tiling_gpu: the sketch a
// matmul (with an element-wise epilogue too), a batch matmul and a conv2d get, sampled and mutated
// tiles within the target's threads, shared memory and the register tile (check_gpu_tiles names
// each limit), and the copies that rewrite_cooperative_fetch spreads over the threads. No device is
// needed: the targets give their limits. tests/python/test_autotune_space_gpu.py runs the
// candidates on an OpenCL device.
#include <gtest/gtest.h>

#include <algorithm>

#include "autotune/space/shared_memory_banks.h"
#include "autotune/space/space_parts.h"
#include "kiln/autotune/space.h"
#include "kiln/driver/build.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/storage_align.h"
#include "kiln/schedule/annotation.h"
#include "kiln/tir/compact_buffer_allocation.h"
#include "kiln/tir/lower_init_block.h"
#include "kiln/tir/plan_buffer_allocation.h"
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

// --- multi_level_tiling_gpu ------------------------------------------------------------------

// C[b, i, j] = sum_k A[b, i, k] * B[b, k, j].
Ref<PrimFunc> batch_matmul(int64_t batch, int64_t m, int64_t n, int64_t k) {
  te::Tensor a = te::placeholder({c(batch), c(m), c(k)}, DataType::float32(), "A");
  te::Tensor b = te::placeholder({c(batch), c(k), c(n)}, DataType::float32(), "B");
  IterVar r = te::reduce_axis(Range{c(0), c(k)}, "k");
  te::Tensor out = te::compute(
      {c(batch), c(m), c(n)},
      [&](const std::vector<Ref<Var>>& i) {
        return te::sum(a({i[0], i[1], r.var}) * b({i[0], r.var, i[2]}), {r});
      },
      "C");
  return te::create_prim_func({a, b, out});
}

// conv2d NCHW, 3 x 3 window, stride 1, padding 1 (a padding stage), ci -> co channels.
Ref<PrimFunc> conv2d(int64_t ci, int64_t hw, int64_t co) {
  te::Tensor x = te::placeholder({c(1), c(ci), c(hw), c(hw)}, DataType::float32(), "X");
  te::Tensor w = te::placeholder({c(co), c(ci), c(3), c(3)}, DataType::float32(), "W");
  te::Tensor pad = te::compute(
      {c(1), c(ci), c(hw + 2), c(hw + 2)},
      [&](const std::vector<Ref<Var>>& v) {
        Expr inside = logical_and(logical_and(ge(v[2], c(1)), lt(v[2], c(hw + 1))),
                                  logical_and(ge(v[3], c(1)), lt(v[3], c(hw + 1))));
        return if_then_else(inside, x({v[0], v[1], v[2] - c(1), v[3] - c(1)}),
                            make_const(DataType::float32(), 0.0));
      },
      "pad");
  IterVar rc = te::reduce_axis(Range{c(0), c(ci)}, "rc");
  IterVar ry = te::reduce_axis(Range{c(0), c(3)}, "ry");
  IterVar rx = te::reduce_axis(Range{c(0), c(3)}, "rx");
  te::Tensor out = te::compute(
      {c(1), c(co), c(hw), c(hw)},
      [&](const std::vector<Ref<Var>>& v) {
        return te::sum(
            pad({v[0], rc.var, v[2] + ry.var, v[3] + rx.var}) * w({v[1], rc.var, ry.var, rx.var}),
            {rc, ry, rx});
      },
      "conv");
  return te::create_prim_func({x, w, out});
}

// D[i, j] = max(C[i, j], 0) of the m x n x k matmul C.
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
      "D");
  return te::create_prim_func({a, b, relu});
}

// The decisions of the sample_perfect_tile instructions of a trace, with their n.
std::vector<std::vector<int64_t>> tiles_of(const schedule::Trace& trace) {
  std::vector<std::vector<int64_t>> out;
  for (const schedule::Instruction& inst : trace.instructions()) {
    if (inst.kind == "sample_perfect_tile") {
      out.push_back(inst.decision.get<std::vector<int64_t>>());
    }
  }
  return out;
}

std::vector<std::string> thread_axes(const schedule::Trace& trace) {
  std::vector<std::string> out;
  for (const schedule::Instruction& inst : trace.instructions()) {
    if (inst.kind == "bind") out.push_back(inst.attrs.at("thread_axis").get<std::string>());
  }
  return out;
}

TEST(GpuTiling, AMatmulGetsOneSketchSSSRRSRS) {
  TuneTask task = make_task(matmul(128, 128, 128), "cuda -arch=sm_80");
  SpaceGenerator space(task, {});
  ASSERT_EQ(space.sketches().size(), 1u);
  const schedule::Trace& sketch = space.sketches()[0];
  // i and j in five levels, k in three; S0, S1 and S2 fused and bound.
  std::vector<std::vector<int64_t>> tiles = tiles_of(sketch);
  ASSERT_EQ(tiles.size(), 3u);
  EXPECT_EQ(tiles[0].size(), 5u);
  EXPECT_EQ(tiles[1].size(), 5u);
  EXPECT_EQ(tiles[2].size(), 3u);
  EXPECT_EQ(thread_axes(sketch),
            (std::vector<std::string>{"blockIdx.x", "vthread.x", "threadIdx.x"}));
  EXPECT_EQ(count_of(sketch, "cache_write"), 1u);
  EXPECT_EQ(count_of(sketch, "cache_read"), 2u);
  EXPECT_EQ(count_of(sketch, "decompose_reduction"), 1u);
  std::string text = sketch.as_python();
  EXPECT_NE(text.find(R"(storage_scope="local")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(storage_scope="shared")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(ann_key="kiln.cooperative_fetch")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(ann_key="pragma_auto_unroll_max_step")"), std::string::npos) << text;
}

TEST(GpuTiling, ABatchMatmulAndAConvolutionAreTiledToo) {
  TuneTask batch_task = make_task(batch_matmul(4, 32, 48, 40), "cuda -arch=sm_80");
  SpaceGenerator batch(batch_task, {});
  ASSERT_EQ(batch.sketches().size(), 1u);
  EXPECT_EQ(tiles_of(batch.sketches()[0]).size(), 4u);  // b, i, j, then k
  EXPECT_EQ(count_of(batch.sketches()[0], "fuse"), 3u);
  // The convolution's padding is inlined into the shared copy of its input: one kernel.
  TuneTask conv_task = make_task(conv2d(8, 14, 16), "cuda -arch=sm_80");
  SpaceGenerator conv(conv_task, {});
  ASSERT_EQ(conv.sketches().size(), 1u);
  const schedule::Trace& sketch = conv.sketches()[0];
  std::vector<std::vector<int64_t>> tiles = tiles_of(sketch);
  ASSERT_EQ(tiles.size(), 7u);  // n, co, h, w in five levels, rc, ry, rx in three
  for (size_t t = 0; t < tiles.size(); ++t) EXPECT_EQ(tiles[t].size(), t < 4 ? 5u : 3u);
  EXPECT_EQ(count_of(sketch, "compute_inline"), 1u);
  std::optional<Candidate> candidate;
  for (uint64_t seed = 0; seed < 8 && !candidate; ++seed) candidate = conv.sample(0, seed);
  ASSERT_TRUE(candidate);
  std::vector<Ref<PrimFunc>> kernels;
  tir::lower(candidate->mod->lookup("main"), driver::lower_options_for(conv_task.target, &kernels));
  EXPECT_EQ(kernels.size(), 1u);
}

TEST(GpuTiling, AnElementwiseEpilogueIsInlinedIntoTheWriteBack) {
  TuneTask task = make_task(matmul_relu(64, 64, 32), "cuda -arch=sm_80");
  SpaceGenerator space(task, {});
  ASSERT_EQ(space.sketches().size(), 1u);
  EXPECT_EQ(count_of(space.sketches()[0], "reverse_compute_inline"), 1u);
  std::optional<Candidate> candidate;
  for (uint64_t seed = 0; seed < 8 && !candidate; ++seed) candidate = space.sample(0, seed);
  ASSERT_TRUE(candidate);
  std::vector<Ref<PrimFunc>> kernels;
  tir::lower(candidate->mod->lookup("main"), driver::lower_options_for(task.target, &kernels));
  EXPECT_EQ(kernels.size(), 1u);  // no kernel of its own for the ReLU
}

// The threads per block, the outputs per thread and the shared bytes of each kernel of a
// candidate, read from its lowered kernels.
struct KernelShape {
  int64_t threads = 1;
  int64_t shared_bytes = 0;
};
std::vector<KernelShape> kernel_shapes(const Candidate& candidate, const codegen::Target& target) {
  std::vector<Ref<PrimFunc>> kernels;
  tir::lower(candidate.mod->lookup("main"), driver::lower_options_for(target, &kernels));
  std::vector<KernelShape> out;
  for (const Ref<PrimFunc>& kernel : kernels) {
    KernelShape shape;
    for (const char* axis : {"x", "y", "z"}) {
      auto it = kernel->attrs.find(std::string("kiln.launch.threadIdx.") + axis);
      if (it != kernel->attrs.end()) shape.threads *= *as_const_int(it->second);
    }
    post_order_visit(kernel->body, [&](const Node* node) {
      if (node->kind() != NodeKind::Allocate) return;
      const Buffer& b = *static_cast<const Allocate*>(node)->buffer;
      if (b.scope == "shared") shape.shared_bytes += *as_const_int(b.shape[0]) * b.dtype.bytes();
    });
    out.push_back(shape);
  }
  return out;
}

TEST(GpuTiling, SampledTilesKeepTheTargetsLimits) {
  // A warp (32) to 256 threads per block, 8 KiB of shared memory: draws outside are drawn
  // again, each counted.
  for (const char* target : {"cuda -arch=sm_80 -max_threads_per_block=256",
                             "cuda -arch=sm_80 -max_shared_memory_per_block=8192"}) {
    TuneTask task = make_task(matmul(128, 128, 128), target);
    SpaceGenerator space(task, {});
    int sampled = 0;
    for (uint64_t seed = 0; seed < 12; ++seed) {
      std::optional<Candidate> candidate = space.sample(0, seed);
      if (!candidate) continue;
      ++sampled;
      for (const KernelShape& shape : kernel_shapes(*candidate, task.target)) {
        EXPECT_GE(shape.threads, 32) << target << " seed " << seed;
        EXPECT_LE(shape.threads, task.target.gpu.max_threads_per_block) << target;
        EXPECT_LE(shape.shared_bytes, task.target.gpu.max_shared_memory_per_block) << target;
      }
    }
    EXPECT_GE(sampled, 8) << target;
    EXPECT_GT(space.rejections().count("sample: GpuThreadExtentError"), 0u) << target;
    for (const auto& [reason, count] : space.rejections()) {
      EXPECT_EQ(reason.rfind("sample: Gpu", 0), 0u) << reason;
    }
  }
}

TEST(GpuTiling, EveryThreadAccumulatesAtMostTheRegisterTile) {
  TuneTask task = make_task(matmul(128, 128, 128), "cuda -arch=sm_80");
  SpaceGenerator space(task, {});
  for (uint64_t seed = 0; seed < 10; ++seed) {
    std::optional<Candidate> candidate = space.sample(0, seed);
    if (!candidate) continue;
    // S1 (virtual threads) x S3 x S4 of i and of j.
    std::vector<std::vector<int64_t>> tiles = tiles_of(candidate->decisions);
    int64_t outputs = 1;
    for (size_t axis = 0; axis < 2; ++axis)
      outputs *= tiles[axis][1] * tiles[axis][3] * tiles[axis][4];
    EXPECT_LE(outputs, kMaxRegisterTile) << "seed " << seed;
  }
}

TEST(GpuTiling, MutatedTilesStayWithinTheLimits) {
  TuneTask task = make_task(matmul(64, 96, 64), "cuda -arch=sm_80");
  SpaceGenerator space(task, {});
  std::optional<Candidate> parent;
  for (uint64_t seed = 0; seed < 8 && !parent; ++seed) parent = space.sample(0, seed);
  ASSERT_TRUE(parent);
  std::mt19937_64 rng(5);
  int changed = 0;
  for (int round = 0; round < 12; ++round) {
    std::optional<schedule::Trace> mutated = space.mutate(parent->decisions, rng);
    if (!mutated) continue;
    std::optional<Candidate> child = space.replay(0, *mutated);
    ASSERT_TRUE(child) << "round " << round;
    changed += child->hash != parent->hash;
    for (const KernelShape& shape : kernel_shapes(*child, task.target)) {
      EXPECT_GE(shape.threads, 32);
      EXPECT_LE(shape.threads, 1024);
    }
  }
  EXPECT_GT(changed, 0);
  for (const schedule::Trace& neighbour : space.neighbours(parent->decisions)) {
    EXPECT_TRUE(space.replay(0, neighbour));
  }
}

TEST(GpuTiling, TheSharedCopiesAreSpreadOverTheThreads) {
  TuneTask task = make_task(matmul(128, 128, 128), "cuda -arch=sm_80");
  SpaceGenerator space(task, {});
  std::optional<Candidate> candidate;
  for (uint64_t seed = 0; seed < 8 && !candidate; ++seed) candidate = space.sample(0, seed);
  ASSERT_TRUE(candidate);
  // The postprocessors' instructions follow the sketch's: per copy a fuse, a split by the
  // thread count and a bind to threadIdx.x (and a vectorize where a vector width was drawn),
  std::vector<std::string> axes = thread_axes(candidate->trace);
  EXPECT_EQ(std::count(axes.begin(), axes.end(), "threadIdx.x"), 3);
  // and per copy an unannotate each of rewrite_cooperative_fetch and pad_shared_tiles.
  EXPECT_EQ(count_of(candidate->trace, "unannotate"), 4u);
  std::string text = to_script(candidate->mod->lookup("main"));
  EXPECT_EQ(text.find("kiln.cooperative_fetch"), std::string::npos) << text;
  EXPECT_EQ(text.find("kiln.pad_shared"), std::string::npos) << text;
}

// The loops of block `name` below its `skip` outer ones, as "extent:kind" ("16:threadIdx.x",
// "4:vectorized", "2:serial").
std::vector<std::string> inner_loops(schedule::Schedule& sch, const std::string& name,
                                     size_t skip) {
  std::vector<std::string> out;
  const schedule::BlockLocation* loc = sch.index("main").find_block(name);
  for (size_t l = skip; l < loc->loops.size(); ++l) {
    const For* loop = loc->loops[l];
    std::string kind = loop->kind == ForKind::kThreadBinding ? loop->thread_tag
                       : loop->kind == ForKind::kVectorized  ? "vectorized"
                                                             : "serial";
    out.push_back(std::to_string(*as_const_int(loop->extent)) + ":" + kind);
  }
  return out;
}

TEST(GpuCooperativeFetch, SpreadsEachCopyOverTheThreadsWithTheWidthThatFits) {
  // A 16 x 16 matmul in 2 x 2 thread blocks of 4 x 4 threads (fused: 16 threads), each thread
  // 2 x 2 outputs; k in steps of `step`. A's copy of one step is 8 rows of `step`.
  auto staged = [](int64_t step, int64_t lanes) {
    schedule::Schedule sch(module_of(matmul(16, 16, 16)), 0);
    schedule::RV block = schedule::get_block(sch, "C");
    std::vector<schedule::RV> loops = schedule::get_loops(sch, block);
    std::vector<schedule::RV> i =
        schedule::split(sch, loops[0], {int64_t{2}, int64_t{4}, int64_t{2}});
    std::vector<schedule::RV> j =
        schedule::split(sch, loops[1], {int64_t{2}, int64_t{4}, int64_t{2}});
    std::vector<schedule::RV> k = schedule::split(sch, loops[2], {std::monostate{}, step});
    schedule::reorder(sch, {i[0], j[0], i[1], j[1], k[0], k[1], i[2], j[2]});
    schedule::bind_loop(sch, schedule::fuse(sch, {i[0], j[0]}), "blockIdx.x");
    schedule::bind_loop(sch, schedule::fuse(sch, {i[1], j[1]}), "threadIdx.x");
    schedule::RV copy = schedule::cache_read(sch, block, 0, "shared", {block});
    schedule::compute_at(sch, copy, k[0]);
    schedule::annotate(sch, copy, kCooperativeFetchAnnotation, int32_const(lanes));
    TuneTask task = make_task(matmul(16, 16, 16), "cuda");
    SpaceContext context;
    context.task = &task;
    make_rewrite_cooperative_fetch(context)->apply(sch);
    return sch;
  };
  // 8 x 8 = 64 elements: 16 threads copy four at a time, once.
  schedule::Schedule vector = staged(8, 4);
  EXPECT_EQ(inner_loops(vector, "A_shared", 3),
            (std::vector<std::string>{"1:serial", "16:threadIdx.x", "4:vectorized"}));
  EXPECT_EQ(vector.index("main")
                .find_block("A_shared")
                ->block->annotations.count(kCooperativeFetchAnnotation),
            0u);
  // Rows of 2 do not hold vectors of 4: one element per thread, in two passes.
  schedule::Schedule scalar = staged(2, 4);
  EXPECT_EQ(inner_loops(scalar, "A_shared", 3),
            (std::vector<std::string>{"1:serial", "16:threadIdx.x"}));
}

// A 32 x 32 x 32 matmul on one thread block of 32 threads, thread t computing row t of C
// (for k, for j): A's 32 x 32 tile is staged in shared memory, copied by the 32 threads with
// `lanes`, and each thread reads its own row of it: with the compact stride of 32 every thread of
// a warp reads bank k (32-way conflicts). The copy is sampled to be padded with `pad`.
struct RowPerThread {
  schedule::Schedule sch;
  Ref<PrimFunc> compacted;
};

RowPerThread row_per_thread(int64_t lanes, int64_t pad = 2) {
  schedule::Schedule sch(module_of(matmul(32, 32, 32)), 0);
  schedule::RV block = schedule::get_block(sch, "C");
  std::vector<schedule::RV> loops = schedule::get_loops(sch, block);
  std::vector<schedule::RV> i = schedule::split(sch, loops[0], {int64_t{1}, int64_t{32}});
  std::vector<schedule::RV> k = schedule::split(sch, loops[2], {int64_t{1}, int64_t{32}});
  schedule::reorder(sch, {i[0], i[1], k[0], k[1], loops[1]});
  schedule::bind_loop(sch, i[0], "blockIdx.x");
  schedule::bind_loop(sch, i[1], "threadIdx.x");
  schedule::RV copy = schedule::cache_read(sch, block, 0, "shared", {block});
  schedule::compute_at(sch, copy, k[0]);
  schedule::annotate(sch, copy, kCooperativeFetchAnnotation, int32_const(lanes));
  schedule::annotate(sch, copy, kPadSharedAnnotation, int32_const(pad));
  TuneTask task = make_task(matmul(32, 32, 32), "cuda");
  SpaceContext context;
  context.task = &task;
  make_rewrite_cooperative_fetch(context)->apply(sch);
  Ref<PrimFunc> compacted = tir::compact_buffer_allocation(
      tir::plan_buffer_allocation(tir::lower_init_block(sch.func("main"))));
  return {sch, compacted};
}

TEST(SharedBankModel, CountsTheWavefrontsOfEachAccessOfAWarp) {
  RowPerThread scalar = row_per_thread(1);
  SharedBankModel model(*scalar.compacted, "A_shared", 32);
  ASSERT_TRUE(model.valid());
  EXPECT_EQ(model.shape(), (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(model.strides(), (std::vector<int64_t>{32, 1}));
  // Scalar reads: 32 k x 32 j per thread, 32 wavefronts each; the copy's 32 stores, one each.
  SharedCost compact = model.cost(model.strides(), SharedReads::kScalar);
  EXPECT_EQ(compact.wavefronts, 32 * 32 * 32 + 32);
  EXPECT_EQ(compact.requests, 32 * 32 + 32);
  // A row stride of 33 puts the rows of the warp's threads in 32 different banks.
  SharedCost padded = model.cost({33, 1}, SharedReads::kScalar);
  EXPECT_EQ(padded.wavefronts, 32 * 32 + 32);
  EXPECT_EQ(padded.requests, compact.requests);
  // Reads of k .. k + 3 merged into one vector read, served a quarter of the warp at a time:
  // 8 threads' rows in 4 banks (8-way) when compact, none with a stride of 36; a stride of 33
  // leaves the reads unaligned, so scalar.
  SharedCost vector = model.cost(model.strides(), SharedReads::kVector);
  EXPECT_EQ(vector.wavefronts, 8 * 32 * 4 * 8 + 32);
  EXPECT_EQ(vector.requests, 8 * 32 + 32);
  SharedCost at_36 = model.cost({36, 1}, SharedReads::kVector);
  SharedCost at_33 = model.cost({33, 1}, SharedReads::kVector);
  EXPECT_EQ(at_36.wavefronts, 8 * 32 * 4 + 32);
  EXPECT_EQ(at_33.wavefronts, padded.wavefronts);
  EXPECT_LT(at_36.requests, at_33.requests);
  // No model of a buffer that is not staged.
  EXPECT_FALSE(SharedBankModel(*scalar.compacted, "B_shared", 32).valid());
}

TEST(SharedBankModel, PadsByTheLeastThatAvoidsConflictsAndKeepsVectorsAligned) {
  // Scalar copies and reads: one element of padding.
  SharedBankModel model(*row_per_thread(1).compacted, "A_shared", 32);
  std::optional<SharedPadding> one = model.best_padding(SharedReads::kScalar);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->axis, 0);
  EXPECT_EQ(one->pad, 1);
  EXPECT_EQ(one->factor, 32);
  EXPECT_EQ(one->offset, 1);
  // Vector reads need aligned rows: a stride of 36 (no conflict, a quarter of the requests).
  std::optional<SharedPadding> aligned = model.best_padding(SharedReads::kVector);
  ASSERT_TRUE(aligned);
  EXPECT_EQ(aligned->pad, 4);
  EXPECT_EQ(aligned->offset, 4);
  // Copies of four lanes need rows of whole vectors even for scalar reads: a stride of 36
  // spreads the rows over 8 banks (4-way conflicts instead of 32-way).
  std::optional<SharedPadding> four = SharedBankModel(*row_per_thread(4).compacted, "A_shared", 32)
                                          .best_padding(SharedReads::kScalar);
  ASSERT_TRUE(four);
  EXPECT_EQ(four->pad, 4);
  // One thread per block: nothing to gain.
  EXPECT_FALSE(SharedBankModel(*row_per_thread(1).compacted, "A_shared", 1)
                   .best_padding(SharedReads::kScalar));
}

TEST(GpuPadSharedTiles, PadsTheCopiesSampledToBePaddedForTheirReads) {
  auto alignment = [](int64_t pad, const std::string& target) {
    RowPerThread tile = row_per_thread(1, pad);
    TuneTask task = make_task(matmul(32, 32, 32), target);
    SpaceContext context;
    context.task = &task;
    make_pad_shared_tiles(context)->apply(tile.sch);
    const Block& copy = *tile.sch.index("main").find_block("A_shared")->block;
    EXPECT_EQ(copy.annotations.count(kPadSharedAnnotation), 0u);
    auto it = copy.annotations.find(kStorageAlignAnnotation);
    EXPECT_EQ(count_of(tile.sch.trace(), "storage_align"), it == copy.annotations.end() ? 0u : 1u);
    return it == copy.annotations.end() ? std::string()
                                        : format_storage_align(parse_storage_align(it->second));
  };
  EXPECT_EQ(alignment(0, "cuda -arch=sm_80"), "");
  EXPECT_EQ(alignment(1, "cuda -arch=sm_80"), "0:0:32:4");
  EXPECT_EQ(alignment(2, "cuda -arch=sm_80"), "0:0:32:1");
  // Not past the target's shared memory (4 KiB compact, 4224 bytes padded by 1).
  EXPECT_EQ(alignment(2, "cuda -max_shared_memory_per_block=4200"), "");
}

TEST(GpuTiling, CheckGpuTilesNamesEachLimit) {
  // A 16 x 16 tiled matmul by hand: 4 x 4 threads, each 2 x 2 outputs of each of 2 x 2 virtual
  // threads, the 16 x 8 tiles of A and B of each k step in shared memory (1 KiB).
  auto tiled = [](int64_t low, int64_t register_tile) {
    schedule::Schedule sch(module_of(matmul(16, 16, 16)), 0);
    schedule::RV block = schedule::get_block(sch, "C");
    std::vector<schedule::RV> loops = schedule::get_loops(sch, block);
    std::vector<schedule::RV> i =
        schedule::split(sch, loops[0], {int64_t{2}, int64_t{4}, int64_t{2}});
    std::vector<schedule::RV> j =
        schedule::split(sch, loops[1], {int64_t{2}, int64_t{4}, int64_t{2}});
    std::vector<schedule::RV> k = schedule::split(sch, loops[2], {int64_t{2}, int64_t{8}});
    schedule::reorder(sch, {i[0], j[0], i[1], j[1], k[0], k[1], i[2], j[2]});
    schedule::bind_loop(sch, schedule::fuse(sch, {i[0], j[0]}), "vthread.x");
    schedule::bind_loop(sch, schedule::fuse(sch, {i[1], j[1]}), "threadIdx.x");
    for (int64_t r : {0, 1}) {
      schedule::RV copy = schedule::cache_read(sch, block, r, "shared", {block});
      schedule::compute_at(sch, copy, k[0]);
    }
    schedule::annotate(sch, block, kThreadExtentLowAnnotation, int32_const(low));
    schedule::annotate(sch, block, kRegisterTileAnnotation, int32_const(register_tile));
    return sch;
  };
  auto error = [](schedule::Schedule sch, const std::string& target) -> std::string {
    try {
      check_gpu_tiles(sch, codegen::parse_target(target));
    } catch (const schedule::ScheduleError& e) {
      return e.error_class();
    }
    return "";
  };
  EXPECT_EQ(error(tiled(16, 16), "cuda"), "");
  EXPECT_EQ(error(tiled(32, 16), "cuda"), "GpuThreadExtentError");
  EXPECT_EQ(error(tiled(16, 16), "cuda -max_threads_per_block=8"), "GpuThreadExtentError");
  EXPECT_EQ(error(tiled(16, 8), "cuda"), "GpuRegisterTileError");
  EXPECT_EQ(error(tiled(16, 16), "cuda -max_shared_memory_per_block=1024"), "");
  EXPECT_EQ(error(tiled(16, 16), "cuda -max_shared_memory_per_block=1000"), "GpuSharedMemoryError");
}

}  // namespace
}  // namespace kiln::autotune
