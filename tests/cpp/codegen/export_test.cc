// Export of a shared library (dlopen'ed here and loaded by the runtime), the runtime serving
// JIT-compiled code through KilnModuleCreate, and the source dumps (LLVM IR and assembly).
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "codegen_test_util.h"
#include "kiln/codegen/export.h"

namespace kiln::codegen::testing {
namespace {

// C[i] = A[i] + B[i] on 16 fixed elements, split into a parallel outer loop so that the module
// also holds a (private) task function.
Ref<PrimFunc> add16(const std::string& symbol) {
  Ref<Buffer> a = buffer_1d("A", DataType::float32(), int32_const(16));
  Ref<Buffer> b = buffer_1d("B", DataType::float32(), int32_const(16));
  Ref<Buffer> c = buffer_1d("C", DataType::float32(), int32_const(16));
  Ref<Var> io = make_var("io"), ii = make_var("ii");
  Expr index = io * 4 + ii;
  Stmt loop =
      serial(io, int32_const(4),
             serial(ii, int32_const(4),
                    buffer_store(c, buffer_load(a, {index}) + buffer_load(b, {index}), {index})),
             ForKind::kParallel);
  return packed_func(symbol, {a, b, c}, loop);
}

std::string manifest_for(const std::string& symbol) {
  std::string tensor = R"({"kind": "tensor", "dtype": "float32", "shape": [16], "alignment": 64, )";
  return R"({"abi_version": )" + std::to_string(KILN_RUNTIME_ABI_VERSION) + R"(, "target": ")" +
         host_target().str() + R"(", "functions": [{"name": "add", "symbol": ")" + symbol +
         R"(", "args": [)" + tensor + R"("name": "A"}, )" + tensor + R"("name": "B"}, )" + tensor +
         R"("name": "C"}]}]})";
}

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kiln_export_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::remove(path("lib.so").c_str());
    rmdir(dir_.c_str());
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
};

TEST_F(ExportTest, SharedLibraryExportsTheTableAndTheManifestOnly) {
  std::string manifest = manifest_for("kiln_add");
  export_library({add16("kiln_add")}, host_target(), manifest, path("lib.so"));
  // RTLD_GLOBAL-free dlopen works because this process links libkiln_runtime, which defines the
  // backend functions the library leaves undefined.
  void* handle = dlopen(path("lib.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  const char* text = static_cast<const char*>(dlsym(handle, "kiln_module_manifest"));
  ASSERT_NE(text, nullptr);
  EXPECT_EQ(std::string(text), manifest);
  // The kernel checks nothing, so it is not exported: only the table reaches it.
  EXPECT_EQ(dlsym(handle, "kiln_add"), nullptr);
  EXPECT_EQ(dlsym(handle, "kiln_add_parallel_0"), nullptr);  // tasks stay private
  const auto* table = static_cast<const KilnPackedCFunc*>(dlsym(handle, "kiln_module_functions"));
  ASSERT_NE(table, nullptr);
  ASSERT_NE(table[0], nullptr);
  EXPECT_EQ(table[1], nullptr);
  Tensor<float> a(16, DataType::float32()), b(16, DataType::float32()), c(16, DataType::float32());
  for (int k = 0; k < 16; ++k) {
    a[k] = static_cast<float>(k);
    b[k] = 100.0f;
  }
  KilnValue args[3];
  int32_t codes[3] = {kKilnDLTensorHandle, kKilnDLTensorHandle, kKilnDLTensorHandle};
  args[0].v_handle = a.dl();
  args[1].v_handle = b.dl();
  args[2].v_handle = c.dl();
  ASSERT_EQ(table[0](args, codes, 3), 0);
  for (int k = 0; k < 16; ++k) EXPECT_EQ(c[k], static_cast<float>(k) + 100.0f);
  dlclose(handle);
}

TEST_F(ExportTest, DynamicSymbolTableHoldsNoKernel) {
  export_library({add16("kiln_unchecked_add")}, host_target(), manifest_for("kiln_unchecked_add"),
                 path("lib.so"));
  std::string listing = path("symbols.txt");
  std::string command = "nm -D --defined-only " + path("lib.so") + " > " + listing;
  ASSERT_EQ(std::system(command.c_str()), 0);
  std::ifstream in(listing);
  std::string line;
  std::vector<std::string> kiln_symbols;
  while (std::getline(in, line)) {
    std::string name = line.substr(line.rfind(' ') + 1);
    if (name.rfind("kiln", 0) == 0) kiln_symbols.push_back(name);
  }
  std::remove(listing.c_str());
  EXPECT_EQ(kiln_symbols,
            (std::vector<std::string>{"kiln_module_functions", "kiln_module_manifest"}));
}

TEST_F(ExportTest, LibraryEndsWithItsChecksumTrailer) {
  export_library({add16("kiln_add")}, host_target(), manifest_for("kiln_add"), path("lib.so"));
  std::ifstream in(path("lib.so"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 24u);
  EXPECT_EQ(bytes.substr(bytes.size() - 8), "KILNSUM1");
  // Sealing again is refused: the exporter sealed it once.
  EXPECT_EQ(KilnModuleFileSeal(path("lib.so").c_str()), kKilnErrorModuleFile);
}

TEST_F(ExportTest, RuntimeLoadsTheLibraryAndChecksArguments) {
  export_library({add16("kiln_add")}, host_target(), manifest_for("kiln_add"), path("lib.so"));
  KilnModuleHandle module = nullptr;
  ASSERT_EQ(KilnModuleLoadFromFile(path("lib.so").c_str(), &module), 0) << KilnGetLastError();
  KilnFunctionHandle func = nullptr;
  ASSERT_EQ(KilnModuleGetFunction(module, "add", &func), 0) << KilnGetLastError();
  Tensor<float> a(16, DataType::float32()), b(16, DataType::float32()), c(16, DataType::float32());
  for (int k = 0; k < 16; ++k) a[k] = b[k] = static_cast<float>(k);
  KilnValue args[3];
  int32_t codes[3] = {kKilnDLTensorHandle, kKilnDLTensorHandle, kKilnDLTensorHandle};
  args[0].v_handle = a.dl();
  args[1].v_handle = b.dl();
  args[2].v_handle = c.dl();
  ASSERT_EQ(KilnFuncCall(func, args, codes, 3), 0) << KilnGetLastError();
  EXPECT_EQ(c[15], 30.0f);
  EXPECT_NE(KilnFuncCall(func, args, codes, 2), 0);
  KilnModuleFree(module);
}

TEST_F(ExportTest, LinkFailureIsAKilnError) {
  std::string msg = error_of(
      [&] { export_library({add16("kiln_add")}, host_target(), "", "/nonexistent-dir/lib.so"); });
  EXPECT_NE(msg.find("export_library: linking /nonexistent-dir/lib.so failed"), std::string::npos)
      << msg;
}

TEST(JitRuntime, RuntimeServesJitCodeThroughTheResolver) {
  std::string manifest = manifest_for("kiln_jit_add");
  auto jit_module = compile_jit({add16("kiln_jit_add")}, host_target(), manifest);
  EXPECT_STREQ(
      static_cast<const char*>(JitModule::resolve(jit_module.get(), "kiln_module_manifest")),
      manifest.c_str());
  EXPECT_EQ(JitModule::resolve(jit_module.get(), "kiln_jit_add_parallel_0"), nullptr);
  // The resolver serves the table, not the unchecked kernel.
  EXPECT_EQ(JitModule::resolve(jit_module.get(), "kiln_jit_add"), nullptr);
  EXPECT_NE(JitModule::resolve(jit_module.get(), "kiln_module_functions"), nullptr);
  KilnModuleHandle module = nullptr;
  ASSERT_EQ(KilnModuleCreate(jit_module->manifest().c_str(), nullptr, &JitModule::resolve,
                             jit_module.get(), &module),
            0)
      << KilnGetLastError();
  KilnFunctionHandle func = nullptr;
  ASSERT_EQ(KilnModuleGetFunction(module, "add", &func), 0) << KilnGetLastError();
  Tensor<float> a(16, DataType::float32()), b(16, DataType::float32()), c(16, DataType::float32());
  for (int k = 0; k < 16; ++k) a[k] = b[k] = 1.5f;
  KilnValue args[3];
  int32_t codes[3] = {kKilnDLTensorHandle, kKilnDLTensorHandle, kKilnDLTensorHandle};
  args[0].v_handle = a.dl();
  args[1].v_handle = b.dl();
  args[2].v_handle = c.dl();
  ASSERT_EQ(KilnFuncCall(func, args, codes, 3), 0) << KilnGetLastError();
  EXPECT_EQ(c[7], 3.0f);
  KilnModuleFree(module);
}

// for io: C[ramp(io * 16, 1, 16)] = A[...] * B[...] + C[...]
Ref<PrimFunc> vector_fma16() {
  Ref<Buffer> a = buffer_1d("A", DataType::float32(), int32_const(1024));
  Ref<Buffer> b = buffer_1d("B", DataType::float32(), int32_const(1024));
  Ref<Buffer> c = buffer_1d("C", DataType::float32(), int32_const(1024));
  Ref<Var> io = make_var("io");
  Expr index = ramp(io * 16, int32_const(1), 16);
  Expr value = buffer_load(a, {index}) * buffer_load(b, {index}) + buffer_load(c, {index});
  return packed_func("vfma", {a, b, c},
                     serial(io, int32_const(64), buffer_store(c, value, {index})));
}

TEST(Source, AssemblyForZnver4UsesVectorRegisters) {
  Target znver4 = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4");
  std::string asm_text = compile_source({vector_fma16()}, znver4, "asm");
  EXPECT_NE(asm_text.find("zmm"), std::string::npos) << asm_text.substr(0, 2000);
  if (host_target().has_feature("avx512f")) {
    auto module = compile_jit({vector_fma16()}, znver4, "");
    EXPECT_NE(module->get_source("asm").find("zmm"), std::string::npos);
  }
  Target haswell = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell");
  std::string avx2 = compile_source({vector_fma16()}, haswell, "asm");
  EXPECT_NE(avx2.find("ymm"), std::string::npos);
  EXPECT_EQ(avx2.find("zmm"), std::string::npos);
}

TEST(Source, CrossCompilesForAnotherArchitecture) {
  if (host_target().triple.rfind("x86_64", 0) != 0) GTEST_SKIP() << "the test runs on x86_64";
  std::string asm_text =
      compile_source({vector_fma16()}, parse_target("llvm -mtriple=aarch64-linux-gnu"), "asm");
  EXPECT_NE(asm_text.find(".4s"), std::string::npos) << asm_text.substr(0, 2000);
  std::string msg = error_of(
      [] { compile_jit({vector_fma16()}, parse_target("llvm -mtriple=aarch64-linux-gnu"), ""); });
  EXPECT_NE(msg.find("is for aarch64 but this process runs on x86_64"), std::string::npos) << msg;
}

TEST(Source, LlvmIrOfTheJitModule) {
  auto module = jit(vector_fma16());
  std::string ll = module->get_source("ll");
  EXPECT_NE(ll.find("define internal i32 @vfma(ptr"), std::string::npos) << ll;
  EXPECT_NE(ll.find("constant [2 x ptr] [ptr @vfma, ptr null]"), std::string::npos) << ll;
  EXPECT_NE(ll.find("<16 x float>"), std::string::npos);
  // No fast math by default: the multiply and the add stay separate (no contraction).
  EXPECT_EQ(ll.find("fmul fast"), std::string::npos);
  EXPECT_EQ(module->get_source("ll"), ll);
  std::string msg = error_of([&] { module->get_source("ptx"); });
  EXPECT_NE(msg.find("get_source: unknown format 'ptx'"), std::string::npos) << msg;
}

TEST(Source, FastMathAttributeMarksFloatOperations) {
  Ref<PrimFunc> func = vector_fma16();
  func->attrs["kiln.fast_math"] = bool_const(true);
  std::string ll = compile_source({func}, host_target(), "ll");
  EXPECT_NE(ll.find("fast"), std::string::npos) << ll;
}

}  // namespace
}  // namespace kiln::codegen::testing
