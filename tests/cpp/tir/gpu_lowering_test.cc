// Tests of the GPU lowering passes on flat programs built by hand: insert_barriers (where a
// barrier goes, and where none is needed), merge_dynamic_shared_memory (the layout of the
// "shared.dyn" buffers), split_host_device (the kernel, its parameters and launch, its dynamic
// shared memory, the missing-bind error) and verify_gpu_code (threads, shared memory, divergent
// barriers).
#include <gtest/gtest.h>

#include "kiln/ir/printer.h"
#include "kiln/tir/insert_barriers.h"
#include "kiln/tir/merge_dynamic_shared_memory.h"
#include "kiln/tir/split_host_device.h"
#include "kiln/tir/verify_gpu_code.h"
#include "tir_test_util.h"

namespace kiln::tir::testing {
namespace {

// for bx in blockIdx.x(4): allocate S[64] shared;
//   for tx in threadIdx.x(64): S[tx] = A[bx * 64 + tx]
//   for tx2 in threadIdx.x(64): B[bx * 64 + tx2] = S[63 - tx2]
Ref<PrimFunc> block_reverse(int64_t threads = 64) {
  Ref<Buffer> a = buffer({4 * threads}, "A");
  Ref<Buffer> b = buffer({4 * threads}, "B");
  Ref<Buffer> s = buffer({threads}, "S", DataType::float32(), "shared");
  Ref<Var> bx = make_var("bx"), tx = make_var("tx"), tx2 = make_var("tx2");
  Stmt fill = thread_loop(tx, threads, "threadIdx.x",
                          buffer_store(s, buffer_load(a, {bx * c(threads) + tx}), {tx}));
  Stmt use =
      thread_loop(tx2, threads, "threadIdx.x",
                  buffer_store(b, buffer_load(s, {c(threads - 1) - tx2}), {bx * c(threads) + tx2}));
  return make_func({a, b}, thread_loop(bx, 4, "blockIdx.x", make<Allocate>(s, seq({fill, use}))));
}

TEST(InsertBarriers, BetweenASharedWriteAndReadGolden) {
  Ref<PrimFunc> after = insert_barriers(block_reverse());
  EXPECT_EQ(to_script(after->body),
            R"(for bx in T.thread_binding(4, thread="blockIdx.x"):
    with T.allocate((64,), "float32", scope="shared") as S:
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            S[tx] = A[bx * 64 + tx]
        T.evaluate(T.storage_sync("shared"))
        for tx2 in T.thread_binding(64, thread="threadIdx.x"):
            B[bx * 64 + tx2] = S[63 - tx2])");
}

TEST(InsertBarriers, SerialLoopThatWritesAndReadsSharedEndsWithOne) {
  Ref<Buffer> a = buffer({64}, "A");
  Ref<Buffer> s = buffer({8}, "S", DataType::float32(), "shared");
  Ref<Var> tx = make_var("tx"), k = make_var("k");
  Stmt body = thread_loop(
      tx, 8, "threadIdx.x",
      make<Allocate>(s, loop(k, 8,
                             seq({buffer_store(s, buffer_load(a, {k * 8 + tx}), {tx}),
                                  buffer_store(a, buffer_load(s, {c(7) - tx}), {k * 8 + tx})}))));
  Ref<PrimFunc> after = insert_barriers(make_func({a}, body));
  std::string text = to_script(after->body);
  // One barrier between the write and the read, one at the end of each iteration of k.
  size_t first = text.find("T.storage_sync");
  ASSERT_NE(first, std::string::npos) << text;
  size_t second = text.find("T.storage_sync", first + 1);
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_EQ(text.find("T.storage_sync", second + 1), std::string::npos) << text;
}

TEST(InsertBarriers, NothingSharedNothingChanges) {
  Ref<Buffer> a = buffer({64}, "A");
  Ref<Var> tx = make_var("tx");
  Ref<PrimFunc> f = make_func(
      {a},
      thread_loop(tx, 64, "threadIdx.x", buffer_store(a, buffer_load(a, {tx}) * f32(2), {tx})));
  EXPECT_TRUE(insert_barriers(f).same_as(f));
}

TEST(SplitHostDevice, KernelParametersAndLaunch) {
  std::vector<Ref<PrimFunc>> kernels;
  Ref<PrimFunc> host = split_host_device(insert_barriers(block_reverse()), "main", &kernels);
  ASSERT_EQ(kernels.size(), 1u);
  const PrimFunc& kernel = *kernels[0];
  EXPECT_EQ(kernel.attrs.at("global_symbol").as<StringImm>()->value, "main_kernel0");
  ASSERT_EQ(kernel.params.size(), 2u);
  EXPECT_EQ(kernel.params[0]->name, "A");  // the data variables, in order of first use
  EXPECT_EQ(kernel.params[1]->name, "B");
  EXPECT_EQ(to_script(kernel.attrs.at("kiln.launch.blockIdx.x")), "4");
  EXPECT_EQ(to_script(kernel.attrs.at("kiln.launch.threadIdx.x")), "64");
  std::string text = to_script(host->body);
  EXPECT_NE(text.find("device_launch(\"main_kernel0\", T.packed_arg_device_id(0), "
                      "T.int64(4), T.int64(1), T.int64(1), T.int64(64), T.int64(1), "
                      "T.int64(1), T.int64(0), A, B)"),
            std::string::npos)
      << text;
}

// for bx in blockIdx.x(4): allocate S[10] float32 shared.dyn; allocate H[6] float16 shared.dyn;
//   for tx in threadIdx.x(6): S[tx] = A[bx * 6 + tx]; H[tx] = A[bx * 6 + tx]
Ref<PrimFunc> two_dynamic_buffers() {
  Ref<Buffer> a = buffer({24}, "A");
  Ref<Buffer> s = buffer({10}, "S", DataType::float32(), "shared.dyn");
  Ref<Buffer> h = buffer({6}, "H", DataType::float_(16), "shared.dyn");
  Ref<Var> bx = make_var("bx"), tx = make_var("tx");
  Expr value = buffer_load(a, {bx * c(6) + tx});
  Stmt fill = thread_loop(tx, 6, "threadIdx.x",
                          seq({buffer_store(s, value, {tx}),
                               buffer_store(h, cast(DataType::float_(16), value), {tx})}));
  return make_func({a},
                   thread_loop(bx, 4, "blockIdx.x", make<Allocate>(s, make<Allocate>(h, fill))));
}

TEST(MergeDynamicSharedMemory, BuffersBecomeAlignedViewsIntoOneBlock) {
  Ref<PrimFunc> after = merge_dynamic_shared_memory(two_dynamic_buffers());
  // S takes bytes 0-39, H starts at byte 48 (the next multiple of 16), its element 24 as float16,
  // and ends at byte 60. Both now have the data variable dyn_shared.
  EXPECT_EQ(to_script(after->body),
            R"(for bx in T.thread_binding(4, thread="blockIdx.x"):
    with T.allocate((60,), "uint8", scope="shared.dyn") as dyn_shared:
        for tx in T.thread_binding(6, thread="threadIdx.x"):
            S[tx] = A[bx * 6 + tx]
            H[tx + 24] = T.Cast("float16", A[bx * 6 + tx]))");
  const auto* allocate = after->body.as<For>()->body.as<Allocate>();
  ASSERT_NE(allocate, nullptr);
  post_order_visit(after->body, [&](const Node* node) {
    if (node->kind() == NodeKind::BufferStore) {
      EXPECT_TRUE(
          static_cast<const BufferStore*>(node)->buffer->data.same_as(allocate->buffer->data));
    }
  });
  std::vector<Ref<PrimFunc>> kernels;
  Ref<PrimFunc> host = split_host_device(after, "main", &kernels);
  EXPECT_NE(to_script(host->body).find("T.int64(1), T.int64(60), A)"), std::string::npos)
      << to_script(host->body);
  GpuLimits limits;
  limits.max_shared_memory_per_block = 32;
  EXPECT_NE(error_of([&] {
              verify_gpu_code(*kernels[0], limits);
            }).find("60 bytes of shared memory exceed the target's limit 32"),
            std::string::npos);
}

TEST(MergeDynamicSharedMemory, NoDynamicBufferNothingChanges) {
  Ref<PrimFunc> f = block_reverse();
  EXPECT_TRUE(merge_dynamic_shared_memory(f).same_as(f));
}

TEST(SplitHostDevice, AStoreOutsideBoundLoopsIsRefused) {
  Ref<Buffer> a = buffer({16}, "A");
  Ref<Var> i = make_var("i");
  Ref<PrimFunc> f = make_func({a}, loop(i, 16, buffer_store(a, f32(0), {i})));
  std::vector<Ref<PrimFunc>> kernels;
  std::string msg = error_of([&] { split_host_device(f, "main", &kernels); });
  EXPECT_NE(msg.find("stores into buffer A outside every loop bound to a GPU block or thread"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("sch.bind(loop, \"threadIdx.x\")"), std::string::npos) << msg;
}

TEST(VerifyGpuCode, Limits) {
  std::vector<Ref<PrimFunc>> kernels;
  split_host_device(insert_barriers(block_reverse(128)), "main", &kernels);
  GpuLimits limits;
  limits.max_threads_per_block = 64;
  std::string msg = error_of([&] { verify_gpu_code(*kernels[0], limits); });
  EXPECT_NE(msg.find("128 threads per block (the product of the threadIdx extents) exceed the "
                     "target's limit 64"),
            std::string::npos)
      << msg;
  limits.max_threads_per_block = 1024;
  limits.max_shared_memory_per_block = 256;
  msg = error_of([&] { verify_gpu_code(*kernels[0], limits); });
  EXPECT_NE(msg.find("512 bytes of shared memory exceed the target's limit 256"), std::string::npos)
      << msg;
  limits.max_shared_memory_per_block = 512;
  EXPECT_EQ(error_of([&] { verify_gpu_code(*kernels[0], limits); }), "");
}

TEST(VerifyGpuCode, CheckReturnsTheKindOfTheFirstViolation) {
  std::vector<Ref<PrimFunc>> kernels;
  split_host_device(insert_barriers(block_reverse(128)), "main", &kernels);
  GpuLimits limits;
  limits.max_threads_per_block = 64;
  limits.max_shared_memory_per_block = 256;
  GpuCodeCheck check = check_gpu_code(*kernels[0], limits);  // threads come first
  EXPECT_EQ(check.violation, GpuCodeViolation::kTooManyThreads);
  EXPECT_EQ(check.message.rfind("verify_gpu_code: kernel main_kernel0: 128 threads per block", 0),
            0u)
      << check.message;
  limits.max_threads_per_block = 1024;
  check = check_gpu_code(*kernels[0], limits);
  EXPECT_EQ(check.violation, GpuCodeViolation::kTooMuchSharedMemory);
  EXPECT_EQ(check.message,
            "verify_gpu_code: kernel main_kernel0: 512 bytes of shared memory exceed the target's "
            "limit 256 (-max_shared_memory_per_block); use smaller shared tiles");
  limits.max_shared_memory_per_block = 512;
  check = check_gpu_code(*kernels[0], limits);
  EXPECT_EQ(check.violation, GpuCodeViolation::kNone);
  EXPECT_EQ(check.message, "");
}

TEST(VerifyGpuCode, BarrierUnderAThreadConditionIsRefused) {
  Ref<Buffer> a = buffer({64}, "A");
  Ref<Var> tx = make_var("tx");
  Stmt sync = make<Evaluate>(make<Call>(DataType::int32(), Builtin::StorageSync,
                                        std::vector<Expr>{make<StringImm>("shared")}));
  Stmt body =
      thread_loop(tx, 64, "threadIdx.x",
                  seq({buffer_store(a, f32(1), {tx}), make<IfThenElse>(lt(tx, c(16)), sync)}));
  std::vector<Ref<PrimFunc>> kernels;
  split_host_device(make_func({a}, body), "main", &kernels);
  std::string msg = error_of([&] { verify_gpu_code(*kernels[0], GpuLimits{}); });
  EXPECT_NE(msg.find("a barrier (storage_sync) is in code that not every thread of the block "
                     "reaches"),
            std::string::npos)
      << msg;
}

TEST(VerifyGpuCode, BarrierInALoopWhoseTripCountDependsOnTheThreadIsRefused) {
  Ref<Buffer> a = buffer({64}, "A");
  Ref<Var> tx = make_var("tx"), k = make_var("k");
  Stmt sync = make<Evaluate>(make<Call>(DataType::int32(), Builtin::StorageSync,
                                        std::vector<Expr>{make<StringImm>("shared")}));
  // Thread tx runs the loop tx / 16 + 1 times: thread 0 leaves while thread 63 waits.
  Stmt body = thread_loop(tx, 64, "threadIdx.x",
                          make<For>(k, c(0), floordiv(tx, c(16)) + c(1), ForKind::kSerial,
                                    seq({buffer_store(a, f32(1), {tx}), sync})));
  std::vector<Ref<PrimFunc>> kernels;
  split_host_device(make_func({a}, body), "main", &kernels);
  GpuCodeCheck check = check_gpu_code(*kernels[0], GpuLimits{});
  EXPECT_EQ(check.violation, GpuCodeViolation::kDivergentBarrier) << check.message;
}

}  // namespace
}  // namespace kiln::tir::testing
