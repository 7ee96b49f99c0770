// Input outside the backend's contract is rejected with a message naming the function, the node
// and what to do: GPU-only constructs, unlowered blocks, unflattened accesses, free variables.
#include <gtest/gtest.h>

#include "codegen_test_util.h"
#include "kiln/codegen/export.h"

namespace kiln::codegen::testing {
namespace {

Ref<Buffer> out_buffer() {
  return buffer_1d("out", DataType::float32(), int32_const(8));
}

Stmt store_one(const Ref<Buffer>& out, Expr index) {
  return buffer_store(out, make_const(out->dtype, 1.0), {std::move(index)});
}

bool llvm_knows_x86() {
  try {
    parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell");
    return true;
  } catch (const Error&) {
    return false;
  }
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
  // The JIT compiles for this process: an x86 CPU's code only on an x86-64 host.
  if (host_target().triple.rfind("x86_64", 0) != 0) GTEST_SKIP() << "the host is not x86-64";
  if (host_target().has_feature("amx-tile")) GTEST_SKIP() << "this CPU has AMX";
  Target amx = parse_target("llvm -mcpu=sapphirerapids");
  std::string msg = error_of([&] {
    compile_jit({packed_func("amx", {out_buffer()}, make<Evaluate>(int32_const(0)))}, amx, "");
  });
  EXPECT_NE(msg.find("compile_jit: target 'llvm -mtriple="), std::string::npos) << msg;
  EXPECT_NE(msg.find("uses CPU features this CPU lacks ("), std::string::npos) << msg;
  EXPECT_NE(msg.find("amx-tile"), std::string::npos) << msg;
}

// vpdpbusd on a target without AVX-512 VNNI: LLVM's instruction selection fails fatally ("Do not
// know how to split the result of this operator!"). kiln turns that into an internal error and
// the process, and LLVM, go on.
TEST(CodegenErrors, LLVMFatalErrorsBecomeInternalErrors) {
  if (!llvm_knows_x86()) GTEST_SKIP() << "this LLVM has no x86 target";
  Target haswell = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell");
  DataType i32x16 = DataType::int_(32, 16);
  Ref<Buffer> out = buffer_1d("out", DataType::int32(), int32_const(16));
  Expr lanes = ramp(int32_const(0), int32_const(1), 16);
  Expr dot = call(i32x16, Builtin::CallLLVMPureIntrin,
                  {make<StringImm>("llvm.x86.avx512.vpdpbusd.512"), buffer_load(out, {lanes}),
                   buffer_load(out, {lanes}), buffer_load(out, {lanes})});
  Ref<PrimFunc> func = packed_func("dot", {out}, buffer_store(out, dot, {lanes}));
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      compile_source({func}, haswell, "asm");
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInternal);
      std::string msg = e.what();
      EXPECT_NE(msg.find("LLVM failed while compiling function dot for target llvm "
                         "-mtriple=x86_64-pc-linux-gnu -mcpu=haswell: "),
                std::string::npos)
          << msg;
    }
  }
  // LLVM still compiles afterwards, with the same kind of target machine.
  std::string text =
      compile_source({packed_func("ok", {out}, store_one(out, int32_const(0)))}, haswell, "asm");
  EXPECT_NE(text.find("ok"), std::string::npos);
}

}  // namespace
}  // namespace kiln::codegen::testing
