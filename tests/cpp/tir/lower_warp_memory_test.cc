// Tests of lower_warp_memory on functions built by hand: a "warp" buffer that each lane reads and
// writes at its own lane becomes registers without the lane dimension (golden IR, and the same
// results on the interpreter), one read across lanes becomes shared memory (a copy per warp where
// warps would share elements), and the errors.
#include <gtest/gtest.h>

#include "kiln/ir/printer.h"
#include "kiln/tir/lower_warp_memory.h"
#include "tir_test_util.h"

namespace kiln::tir::testing {
namespace {

// for ty in threadIdx.y(2): block "copy" allocating W (2, lanes, 4) in the "warp" scope:
//   for lane in threadIdx.x(32): for e in range(4): W[ty, lane, e] = A[ty, lane * 4 + e]
//   for lane2 in threadIdx.x(32): for e2 in range(4):
//     B[ty, lane2 * 4 + e2] = W[ty, read_lane(lane2), e2] * 2
//   and, when other_threads > 0, for t in threadIdx.x(other_threads): A[ty, t] = 0
// With one_slot, W is indexed W[0, ...] in both loops: the two warps use the same elements.
Ref<PrimFunc> warp_copy(const std::function<Expr(const Ref<Var>&)>& read_lane,
                        int64_t other_threads = 0, int64_t lanes = 32, bool one_slot = false) {
  Ref<Buffer> a = buffer({2, 128}, "A");
  Ref<Buffer> b = buffer({2, 128}, "B");
  Ref<Buffer> w = buffer({2, lanes, 4}, "W", DataType::float32(), "warp");
  Ref<Var> ty = make_var("ty"), lane = make_var("lane"), e = make_var("e");
  Ref<Var> lane2 = make_var("lane2"), e2 = make_var("e2");
  Expr slot = one_slot ? c(0) : Expr(ty);
  Stmt fill = thread_loop(
      lane, 32, "threadIdx.x",
      loop(e, 4, buffer_store(w, buffer_load(a, {ty, lane * c(4) + e}), {slot, lane, e})));
  Stmt use = thread_loop(lane2, 32, "threadIdx.x",
                         loop(e2, 4,
                              buffer_store(b, buffer_load(w, {slot, read_lane(lane2), e2}) * f32(2),
                                           {ty, lane2 * c(4) + e2})));
  std::vector<Stmt> stmts = {fill, use};
  if (other_threads > 0) {
    Ref<Var> t = make_var("t");
    stmts.push_back(thread_loop(t, other_threads, "threadIdx.x", buffer_store(a, f32(0), {ty, t})));
  }
  Stmt body = block("copy", {}, {}, seq(stmts), {w});
  return make_func({a, b}, root(thread_loop(ty, 2, "threadIdx.y", body)));
}

TEST(LowerWarpMemory, OwnLanesBecomeRegistersGolden) {
  Ref<PrimFunc> before = warp_copy([](const Ref<Var>& lane) { return Expr(lane); });
  Ref<PrimFunc> after = lower_warp_memory(before);
  EXPECT_EQ(to_script(after->body), R"(with T.block("root"):
    T.reads()
    T.writes()
    for ty in T.thread_binding(2, thread="threadIdx.y"):
        with T.block("copy"):
            T.reads()
            T.writes()
            W = T.alloc_buffer((2, 4), "float32", scope="local")
            for lane in T.thread_binding(32, thread="threadIdx.x"):
                for e in range(4):
                    W[ty, e] = A[ty, lane * 4 + e]
            for lane2 in T.thread_binding(32, thread="threadIdx.x"):
                for e2 in range(4):
                    B[ty, lane2 * 4 + e2] = W[ty, e2] * T.float32(2))");
}

TEST(LowerWarpMemory, ReadsAcrossLanesKeepTheBufferInSharedMemory) {
  Ref<PrimFunc> after = lower_warp_memory(
      warp_copy([](const Ref<Var>& lane) { return floormod(lane + c(1), c(32)); }));
  std::string text = to_script(after->body);
  EXPECT_NE(text.find("W = T.alloc_buffer((2, 32, 4), \"float32\", scope=\"shared\")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("W[ty, (lane2 + 1) % 32, e2]"), std::string::npos) << text;
}

TEST(LowerWarpMemory, WarpsThatShareElementsInSharedMemoryGetACopyEach) {
  // Both warps fill and read W[0, ...] across lanes: in one shared buffer they would overwrite
  // each other's elements; each gets its copy, indexed by the loop of the warps.
  Ref<PrimFunc> after = lower_warp_memory(
      warp_copy([](const Ref<Var>& lane) { return floormod(lane + c(1), c(32)); }, 0, 32, true));
  std::string text = to_script(after->body);
  EXPECT_NE(text.find("W = T.alloc_buffer((2, 2, 32, 4), \"float32\", scope=\"shared\")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("W[ty, 0, lane, e] = A[ty, lane * 4 + e]"), std::string::npos) << text;
  EXPECT_NE(text.find("W[ty, 0, (lane2 + 1) % 32, e2]"), std::string::npos) << text;
}

TEST(LowerWarpMemory, NoWarpBufferNothingChanges) {
  Ref<PrimFunc> f = tiled_producer_consumer(16, 4);
  EXPECT_TRUE(lower_warp_memory(f).same_as(f));
}

TEST(LowerWarpMemory, ErrorLaneDimensionIsNot32) {
  std::string message = error_of(
      [] { lower_warp_memory(warp_copy([](const Ref<Var>& lane) { return Expr(lane); }, 0, 16)); });
  EXPECT_NE(message.find("lower_warp_memory: the \"warp\" buffer W has the shape (2, 16, 4); a "
                         "warp buffer's second-to-last dimension is its 32 lanes"),
            std::string::npos)
      << message;
}

TEST(LowerWarpMemory, ErrorRegistersInAKernelWhoseThreadIdxXIsNotWholeWarps) {
  // Another loop over threadIdx.x has 48 threads: warps would straddle threadIdx.y.
  std::string message = error_of(
      [] { lower_warp_memory(warp_copy([](const Ref<Var>& lane) { return Expr(lane); }, 48)); });
  EXPECT_NE(message.find("lower_warp_memory: the \"warp\" buffer W is held in the registers of "
                         "each lane (threadIdx.x), but its kernel also binds threadIdx.x to a "
                         "loop of extent 48"),
            std::string::npos)
      << message;
}

TEST(LowerWarpMemory, ErrorWarpParameter) {
  Ref<Buffer> w = buffer({32, 8}, "W", DataType::float32(), "warp");
  Ref<Var> lane = make_var("lane");
  Ref<PrimFunc> f =
      make_func({w}, thread_loop(lane, 32, "threadIdx.x", buffer_store(w, f32(0), {lane, c(0)})));
  std::string message = error_of([&] { lower_warp_memory(f); });
  EXPECT_NE(message.find("lower_warp_memory: parameter W is in the \"warp\" scope"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace kiln::tir::testing
