// Input outside the backend's contract is rejected with a message naming the function, the node
// and what to do: GPU-only constructs, unlowered blocks, unflattened accesses, free variables.
#include <gtest/gtest.h>

#include "codegen_test_util.h"

namespace kiln::codegen::testing {
namespace {

Ref<Buffer> out_buffer() {
  return buffer_1d("out", DataType::float32(), int32_const(8));
}

Stmt store_one(const Ref<Buffer>& out, Expr index) {
  return buffer_store(out, make_const(DataType::float32(), 1.0), {std::move(index)});
}

TEST(CodegenErrors, ThreadBindingIsGpuOnly) {
  Ref<Buffer> out = out_buffer();
  Ref<Var> tx = make_var("tx");
  auto loop =
      make<For>(tx, int32_const(0), int32_const(8), ForKind::kThreadBinding, store_one(out, tx));
  loop->thread_tag = "threadIdx.x";
  std::string msg = error_of([&] { jit(packed_func("bound", {out}, loop)); });
  EXPECT_NE(msg.find("codegen: loop tx of function bound is bound to the GPU thread index "
                     "threadIdx.x"),
            std::string::npos)
      << msg;
}

TEST(CodegenErrors, SharedMemoryIsGpuOnly) {
  Ref<Buffer> out = out_buffer();
  Ref<Buffer> tile = buffer_1d("tile", DataType::float32(), int32_const(8));
  tile->scope = "shared";
  std::string msg = error_of([&] {
    jit(packed_func("shared", {out}, make<Allocate>(tile, store_one(tile, int32_const(0)))));
  });
  EXPECT_NE(msg.find("codegen: buffer tile of function shared is allocated in GPU shared memory"),
            std::string::npos)
      << msg;
}

TEST(CodegenErrors, ThreadBarriersAreGpuOnly) {
  Stmt sync = make<Evaluate>(call(Builtin::StorageSync, {make<StringImm>("shared")}));
  std::string msg = error_of([&] { jit(packed_func("sync", {out_buffer()}, sync)); });
  EXPECT_NE(msg.find("codegen: function sync synchronizes GPU threads (storage_sync)"),
            std::string::npos)
      << msg;
}

TEST(CodegenErrors, BlocksMustBeLoweredFirst) {
  Ref<Buffer> out = out_buffer();
  auto block = make<Block>();
  block->name = "B";
  block->body = store_one(out, int32_const(0));
  Stmt realize = make<BlockRealize>(std::vector<Expr>{}, bool_const(true), block);
  std::string msg = error_of([&] { jit(packed_func("blocks", {out}, realize)); });
  EXPECT_NE(msg.find("codegen: function blocks still contains a BlockRealize"), std::string::npos)
      << msg;
}

TEST(CodegenErrors, AccessesMustBeFlattened) {
  Ref<Buffer> grid = decl_buffer({int32_const(2), int32_const(4)}, DataType::float32(), "grid");
  Stmt store =
      buffer_store(grid, make_const(DataType::float32(), 1.0), {int32_const(1), int32_const(2)});
  std::string msg = error_of([&] { jit(packed_func("grid", {grid}, store)); });
  EXPECT_NE(msg.find("codegen: BufferStore of buffer grid in function grid has 2 indices"),
            std::string::npos)
      << msg;
}

TEST(CodegenErrors, FreeVariablesAreReported) {
  Ref<Buffer> out = out_buffer();
  Ref<Var> k = make_var("k");
  std::string msg = error_of([&] { jit(packed_func("free", {out}, store_one(out, k))); });
  EXPECT_NE(msg.find("codegen: variable 'k' is used in function free but not defined there"),
            std::string::npos)
      << msg;
}

TEST(CodegenErrors, GlobalSymbolIsRequired) {
  Ref<PrimFunc> func = packed_func("anonymous", {out_buffer()}, make<Evaluate>(int32_const(0)));
  func->attrs.erase("global_symbol");
  std::string msg = error_of([&] { jit(func); });
  EXPECT_NE(msg.find("codegen: a PrimFunc has no \"global_symbol\" attribute"), std::string::npos)
      << msg;
}

TEST(CodegenErrors, JitRefusesFeaturesThisCpuLacks) {
  if (host_target().has_feature("amx-tile")) GTEST_SKIP() << "this CPU has AMX";
  Target amx = parse_target("llvm -mcpu=sapphirerapids");
  std::string msg = error_of([&] {
    compile_jit({packed_func("amx", {out_buffer()}, make<Evaluate>(int32_const(0)))}, amx, "");
  });
  EXPECT_NE(msg.find("compile_jit: target 'llvm -mtriple="), std::string::npos) << msg;
  EXPECT_NE(msg.find("uses CPU features this CPU lacks ("), std::string::npos) << msg;
  EXPECT_NE(msg.find("amx-tile"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kiln::codegen::testing
