// Preconditions of cache_read and cache_write on hand-built functions that te cannot produce: a
// block that reads and writes one buffer, two writers of a buffer, a reader before the writer.
// Each failure must leave the schedule's module and trace exactly as they were.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "kiln/ir/buffer.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/cache_read_write.h"
#include "kiln/schedule/getters.h"

namespace kiln::schedule {
namespace {

using namespace kiln::ir;

constexpr int64_t kExtent = 8;

Ref<Buffer> vector_buffer(const std::string& name) {
  return decl_buffer({int32_const(kExtent)}, DataType::float32(), name);
}

// for i in range(8): with T.block(name): out[v] = in_0[v] + in_1[v] + … + 1
Stmt elementwise_block(const std::string& name, const Ref<Buffer>& out,
                       const std::vector<Ref<Buffer>>& ins) {
  Ref<Var> loop_var = make_var("i");
  Ref<Var> v = make_var("v");
  auto block = make<Block>();
  block->name = name;
  block->iter_vars.push_back(IterVar{v, Range{int32_const(0), int32_const(kExtent)}});
  Expr value = make_const(DataType::float32(), 1.0);
  for (const Ref<Buffer>& in : ins) {
    block->reads.push_back(BufferRegion{in, {Range{v, int32_const(1)}}});
    value = buffer_load(in, {v}) + value;
  }
  block->writes.push_back(BufferRegion{out, {Range{v, int32_const(1)}}});
  block->body = buffer_store(out, value, {v});
  Stmt realize = make<BlockRealize>(std::vector<Expr>{loop_var}, bool_const(true), block);
  return make<For>(loop_var, int32_const(0), int32_const(kExtent), ForKind::kSerial, realize);
}

// A function of parameters `params` whose root block allocates `allocs` and runs `stmts`.
Ref<IRModule> module_of(const std::vector<Ref<Buffer>>& params,
                        const std::vector<Ref<Buffer>>& allocs, std::vector<Stmt> stmts) {
  auto root = make<Block>();
  root->name = "root";
  root->alloc_buffers = allocs;
  root->body = seq(std::move(stmts));
  auto func = make<PrimFunc>();
  for (const Ref<Buffer>& b : params) {
    Ref<Var> handle = make_var(b->name + "_handle", DataType::handle());
    func->params.push_back(handle);
    func->buffer_map.emplace_back(handle, b);
  }
  func->body = make<BlockRealize>(std::vector<Expr>{}, bool_const(true), root);
  auto mod = make<IRModule>();
  mod->functions["main"] = func;
  return mod;
}

// Runs `primitive`, which must throw a ScheduleError of `error_class` whose message holds
// `fragment`, and checks that the schedule is unchanged.
void expect_failure(Schedule& sch, const std::function<void()>& primitive,
                    const std::string& error_class, const std::string& fragment) {
  Ref<IRModule> mod_before = sch.mod();
  size_t trace_before = sch.trace().instructions().size();
  try {
    primitive();
    ADD_FAILURE() << "expected " << error_class;
  } catch (const ScheduleError& e) {
    EXPECT_EQ(e.error_class(), error_class);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
  EXPECT_TRUE(sch.mod().same_as(mod_before));
  EXPECT_EQ(sch.trace().instructions().size(), trace_before);
}

TEST(CacheReadWrite, CacheReadOfABufferTheBlockAlsoWrites) {
  Ref<Buffer> a = vector_buffer("A");
  Ref<Buffer> b = vector_buffer("B");
  // B[v] = B[v] + A[v] + 1, with B among both the reads and the writes.
  Schedule sch(module_of({a, b}, {}, {elementwise_block("acc", b, {a, b})}));
  RV block = get_block(sch, "acc");
  expect_failure(
      sch, [&] { cache_read(sch, block, 1, "shared"); }, "ReadWriteBufferError",
      "cache_read: block 'acc' both reads and writes buffer B; cache_read copies a buffer that "
      "the block only reads");
  // Its other input can be cached.
  RV cached = cache_read(sch, block, 0, "shared");
  EXPECT_EQ(sch.block(cached, "test").block->name, "A_shared");
}

TEST(CacheReadWrite, TwoWritersOfOneBuffer) {
  Ref<Buffer> a = vector_buffer("A");
  Ref<Buffer> b = vector_buffer("B");
  Ref<Buffer> c = vector_buffer("C");
  Schedule sch(module_of({a, c}, {b},
                         {elementwise_block("B0", b, {a}), elementwise_block("B1", b, {a}),
                          elementwise_block("C", c, {b})}));
  RV reader = get_block(sch, "C");
  RV writer = get_block(sch, "B0");
  expect_failure(
      sch, [&] { cache_read(sch, reader, 0, "local"); }, "NotSingleWriteBlockError",
      "cache_read: buffer B is written by 2 blocks of the scope ('B0', 'B1'); a cache stage needs "
      "a single writer");
  expect_failure(
      sch, [&] { cache_write(sch, writer, 0, "local"); }, "NotSingleWriteBlockError",
      "cache_write: buffer B is written by 2 blocks of the scope ('B0', 'B1')");
}

TEST(CacheReadWrite, ReaderBeforeWriter) {
  Ref<Buffer> a = vector_buffer("A");
  Ref<Buffer> b = vector_buffer("B");
  Ref<Buffer> c = vector_buffer("C");
  // C reads B before B writes it.
  Schedule sch(
      module_of({a, c}, {b}, {elementwise_block("C", c, {b}), elementwise_block("B", b, {a})}));
  RV reader = get_block(sch, "C");
  RV writer = get_block(sch, "B");
  expect_failure(
      sch, [&] { cache_read(sch, reader, 0, "shared"); }, "CacheLocationError",
      "there is no place for the copy between the writer and the readers: block 'C' reads "
      "buffer B before block 'B' writes it in the body of block 'root'");
  expect_failure(
      sch, [&] { cache_write(sch, writer, 0, "shared"); }, "CacheLocationError",
      "block 'C' reads buffer B before block 'B' writes it");
}

TEST(CacheReadWrite, CacheWriteOfABufferNobodyReads) {
  Ref<Buffer> a = vector_buffer("A");
  Ref<Buffer> b = vector_buffer("B");
  Ref<Buffer> c = vector_buffer("C");
  Schedule sch(
      module_of({a, b, c}, {}, {elementwise_block("B", b, {a}), elementwise_block("C", c, {a})}));
  RV cached = cache_write(sch, get_block(sch, "B"), 0, "local");
  // The copy goes right after the writer, before the unrelated block C.
  const BlockLocation& copy = sch.block(cached, "test");
  const auto* body = sch.func("main")->body.as<BlockRealize>()->block->body.as<SeqStmt>();
  ASSERT_NE(body, nullptr);
  ASSERT_EQ(body->seq.size(), 3u);
  EXPECT_EQ(body->seq[1].get(), copy.loops.front());
  EXPECT_EQ(copy.block->name, "B_local");
}

}  // namespace
}  // namespace kiln::schedule
