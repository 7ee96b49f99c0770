// Tests of streamed_buffers, is_streaming_store and streaming_point: which stores under a loop
// annotated pragma_nontemporal stream, and which statement the code generator copies.
#include "kiln/tir/nontemporal.h"

#include <gtest/gtest.h>

#include "flat_program.h"

namespace kiln::tir {
namespace {

using namespace flat_testing;

Ref<For> annotated(Stmt s, int64_t value = 1) {
  auto f = copy(s.as<For>());
  f->annotations[kNontemporalAnnotation] = int32_const(value);
  return f;
}

bool never_allocated(const Var*) {
  return false;
}

// for i in range(4): B[ramp(i * 16, 1, 16)] = A[ramp(i * 16, 1, 16)]
struct VectorCopy {
  Ref<Var> i = make_var("i");
  Ref<Buffer> a = buffer_1d("A", i32(64)), b = buffer_1d("B", i32(64));
  Expr index = ramp(i * 16, i32(1), 16);
  Stmt store = buffer_store(b, buffer_load(a, {index}), {index});
};

TEST(StreamedBuffers, ContiguousVectorStoresOfAnArgumentStream) {
  VectorCopy c;
  Ref<For> copy_loop = annotated(loop(c.i, 4, c.store));
  std::vector<const Var*> streamed = streamed_buffers(*copy_loop, never_allocated);
  ASSERT_EQ(streamed.size(), 1u);
  EXPECT_EQ(streamed[0], c.b->data.get());
  EXPECT_TRUE(is_streaming_store(*c.store.as<BufferStore>(), streamed));
}

TEST(StreamedBuffers, NothingStreamsWithoutTheAnnotationOrWithZero) {
  VectorCopy c;
  Stmt plain = loop(c.i, 4, c.store);
  EXPECT_TRUE(streamed_buffers(*plain.as<For>(), never_allocated).empty());
  EXPECT_TRUE(streamed_buffers(*annotated(plain, 0), never_allocated).empty());
}

TEST(StreamedBuffers, ABufferReadUnderTheLoopOrAllocatedDoesNotStream) {
  VectorCopy c;
  // B[...] = B[...] + A[...]: an accumulation reads what it stores.
  Stmt update =
      buffer_store(c.b, add(buffer_load(c.b, {c.index}), buffer_load(c.a, {c.index})), {c.index});
  EXPECT_TRUE(streamed_buffers(*annotated(loop(c.i, 4, update)), never_allocated).empty());
  const Var* b_data = c.b->data.get();
  auto allocated = [b_data](const Var* data) { return data == b_data; };
  EXPECT_TRUE(streamed_buffers(*annotated(loop(c.i, 4, c.store)), allocated).empty());
}

TEST(StreamedBuffers, ScalarAndStridedStoresDoNotStream) {
  VectorCopy c;
  Stmt scalar = buffer_store(c.b, buffer_load(c.a, {c.i}), {c.i});
  EXPECT_TRUE(streamed_buffers(*annotated(loop(c.i, 4, scalar)), never_allocated).empty());
  Expr strided = ramp(c.i, i32(4), 16);
  Stmt scatter = buffer_store(c.b, buffer_load(c.a, {strided}), {strided});
  std::vector<const Var*> none =
      streamed_buffers(*annotated(loop(c.i, 4, scatter)), never_allocated);
  EXPECT_TRUE(none.empty());
  // A scalar store to a buffer that also gets vector stores is not a streaming one.
  std::vector<const Var*> streamed = streamed_buffers(
      *annotated(loop(c.i, 4, make<SeqStmt>(std::vector<Stmt>{c.store, scalar}))), never_allocated);
  ASSERT_EQ(streamed.size(), 1u);
  EXPECT_FALSE(is_streaming_store(*scalar.as<BufferStore>(), streamed));
}

TEST(StreamingPoint, AnElementwiseNestIsCopiedWhole) {
  VectorCopy c;
  Ref<Var> r = make_var("r");
  Ref<For> nest = annotated(loop(r, 8, loop(c.i, 4, c.store)));
  std::vector<const Var*> streamed = streamed_buffers(*nest, never_allocated);
  EXPECT_EQ(streaming_point(*nest, streamed), nest.get());
}

TEST(StreamingPoint, WhatDoesNotStreamStaysOutOfTheCopies) {
  // for r: { for k: T[...] = A[...] (an intermediate); for i: B[...] = A[...] }
  VectorCopy c;
  Ref<Var> r = make_var("r"), k = make_var("k"), m = make_var("m");
  Ref<Buffer> t = buffer_1d("T", i32(64));
  Expr t_index = ramp(k * 16, i32(1), 16);
  Stmt stage = loop(k, 4, buffer_store(t, buffer_load(c.a, {t_index}), {t_index}));
  Stmt output = loop(c.i, 4, c.store);
  auto t_data = t->data.get();
  auto allocated = [t_data](const Var* data) { return data == t_data; };
  Ref<For> rows = annotated(loop(r, 8, make<SeqStmt>(std::vector<Stmt>{stage, output})));
  std::vector<const Var*> streamed = streamed_buffers(*rows, allocated);
  ASSERT_EQ(streamed.size(), 1u);
  EXPECT_EQ(streaming_point(*rows, streamed), output.get());
  // Through a loop that leaves something out below it (a tile's reduction, its write-back).
  Ref<For> tiles =
      annotated(loop(m, 2, loop(r, 8, make<SeqStmt>(std::vector<Stmt>{stage, output}))));
  EXPECT_EQ(streaming_point(*tiles, streamed_buffers(*tiles, allocated)), output.get());
  // Two statements that stream: their loop is copied whole.
  Ref<For> both = annotated(loop(r, 8, make<SeqStmt>(std::vector<Stmt>{output, output})));
  EXPECT_EQ(streaming_point(*both, streamed_buffers(*both, allocated)), both.get());
}

}  // namespace
}  // namespace kiln::tir
