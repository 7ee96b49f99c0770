// Tests of driver::build: the manifest it assembles, calls of the JIT-compiled code through the
// runtime (with its argument checks), export_library + load, and errors.
#include "kiln/driver/build.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <string>

#include "kiln/ir/op.h"
#include "kiln/runtime/module.h"
#include "kiln/schedule/for_kind.h"
#include "kiln/schedule/getters.h"
#include "kiln/support/error.h"
#include "kiln/te/create_prim_func.h"

namespace kiln::driver {
namespace {

using namespace kiln::ir;
using kiln::runtime::NDArray;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// C[i] = A[i] + B[i] over a symbolic n.
Ref<PrimFunc> vector_add() {
  Ref<Var> n = make_var("n");
  te::Tensor a = te::placeholder({n}, DataType::float32(), "A");
  te::Tensor b = te::placeholder({n}, DataType::float32(), "B");
  te::Tensor c = te::compute(
      {n}, [&](const std::vector<Ref<Var>>& i) { return add(a({i[0]}), b({i[0]})); }, "C");
  return te::create_prim_func({a, b, c});
}

NDArray filled(int64_t n, float start) {
  NDArray array = NDArray::empty({n}, DLDataType{kDLFloat, 32, 1});
  for (int64_t i = 0; i < n; ++i) array.data<float>()[i] = start + static_cast<float>(i);
  return array;
}

// Runs main(A, B, C) of `module` on n elements and checks C = A + B.
void expect_adds(KilnModuleHandle handle, int64_t n) {
  KilnFunctionHandle main_function = nullptr;
  ASSERT_EQ(KilnModuleGetFunction(handle, "main", &main_function), 0) << KilnGetLastError();
  NDArray a = filled(n, 1.0f), b = filled(n, 10.0f), c = filled(n, 0.0f);
  KilnValue values[3];
  int32_t codes[3] = {kKilnDLTensorHandle, kKilnDLTensorHandle, kKilnDLTensorHandle};
  values[0].v_handle = a.tensor();
  values[1].v_handle = b.tensor();
  values[2].v_handle = c.tensor();
  ASSERT_EQ(KilnFuncCall(main_function, values, codes, 3), 0) << KilnGetLastError();
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(c.data<float>()[i], 11.0f + 2.0f * i);
}

TEST(Build, ManifestListsTheFunctionsArgumentSpecs) {
  std::unique_ptr<BuiltModule> built = build(vector_add(), "llvm");
  auto manifest = nlohmann::json::parse(built->manifest());
  EXPECT_EQ(manifest["abi_version"], KILN_RUNTIME_ABI_VERSION);
  EXPECT_EQ(manifest["target"], built->target().str());
  EXPECT_EQ(manifest["device_blobs"].size(), 0u);
  ASSERT_EQ(manifest["functions"].size(), 1u);
  auto function = manifest["functions"][0];
  EXPECT_EQ(function["name"], "main");
  EXPECT_EQ(function["sym_vars"], nlohmann::json::array({"n"}));
  EXPECT_EQ(function["args"][2]["name"], "C");
  EXPECT_EQ(function["args"][2]["shape"], nlohmann::json::array({"n"}));
  EXPECT_EQ(built->function_names(), std::vector<std::string>{"main"});
  EXPECT_TRUE(built->runnable());
  EXPECT_GT(built->timings().total_ms, 0.0);
}

TEST(Build, RunsThroughTheRuntimeAtTwoSizes) {
  std::unique_ptr<BuiltModule> built = build(vector_add(), "llvm");
  expect_adds(built->runtime_module(), 5);
  expect_adds(built->runtime_module(), 1000);
}

TEST(Build, RuntimeChecksTheArguments) {
  std::unique_ptr<BuiltModule> built = build(vector_add(), "llvm");
  KilnFunctionHandle main_function = nullptr;
  ASSERT_EQ(KilnModuleGetFunction(built->runtime_module(), "main", &main_function), 0);
  NDArray a = filled(4, 0), b = filled(5, 0), c = filled(4, 0);
  KilnValue values[3];
  int32_t codes[3] = {kKilnDLTensorHandle, kKilnDLTensorHandle, kKilnDLTensorHandle};
  values[0].v_handle = a.tensor();
  values[1].v_handle = b.tensor();
  values[2].v_handle = c.tensor();
  EXPECT_NE(KilnFuncCall(main_function, values, codes, 3), 0);
  EXPECT_EQ(std::string(KilnGetLastError()),
            "main: argument B: dimension 0 is n = 4 (bound by argument A), found 5");
}

TEST(Build, ExportedLibraryLoadsAndRuns) {
  std::unique_ptr<BuiltModule> built = build(vector_add(), "llvm", "main");
  std::string path = ::testing::TempDir() + "driver_test_" + std::to_string(::getpid()) + ".so";
  built->export_library(path);
  built.reset();  // the exported library does not need the JIT
  runtime::Module module = runtime::Module::load(path);
  EXPECT_EQ(module.function_names(), std::vector<std::string>{"main"});
  expect_adds(module.handle(), 77);
  std::remove(path.c_str());
}

TEST(Build, ModuleOfSeveralFunctions) {
  auto mod = make<IRModule>();
  mod->functions["first"] = vector_add();
  mod->functions["second"] = vector_add();
  std::unique_ptr<BuiltModule> built = build(mod, "llvm");
  EXPECT_EQ(built->function_names(), (std::vector<std::string>{"first", "second"}));
  auto manifest = nlohmann::json::parse(built->manifest());
  EXPECT_EQ(manifest["functions"][1]["symbol"], "kiln_unchecked_second");
}

TEST(Build, SourceOfTheCode) {
  std::unique_ptr<BuiltModule> built = build(vector_add(), "llvm");
  EXPECT_NE(built->get_source("ll").find("define"), std::string::npos);
  EXPECT_NE(built->get_source("asm").find("main"), std::string::npos);
  EXPECT_NE(error_of([&] { built->get_source("ptx"); }).find("unknown format 'ptx'"),
            std::string::npos);
}

TEST(Build, ForeignArchitectureIsExportableButNotRunnable) {
  std::unique_ptr<BuiltModule> built =
      build(vector_add(), "llvm -mtriple=aarch64-linux-gnu -mcpu=generic");
  EXPECT_FALSE(built->runnable());
  std::string message = error_of([&] { built->runtime_module(); });
  EXPECT_NE(message.find("cannot run in this process: it is for aarch64"), std::string::npos)
      << message;
  EXPECT_NE(built->get_source("asm").find("main"), std::string::npos);
}

TEST(Build, WarnsAboutEveryLoopLeftSerial) {
  // The vectorized loop over the symbolic n cannot become vector code: it runs serially, and
  // the module says so; the results are still right.
  auto mod = make<IRModule>();
  mod->functions["main"] = vector_add();
  schedule::Schedule scheduled(mod);
  schedule::RV block = schedule::get_block(scheduled, "C");
  schedule::vectorize(scheduled, schedule::get_loops(scheduled, block)[0]);
  std::unique_ptr<BuiltModule> built = build(scheduled.mod(), "llvm");
  std::vector<std::string> expected = {
      "function main: loop i is not vectorized (it runs serially): its extent n is not a "
      "constant"};
  EXPECT_EQ(built->warnings(), expected);
  auto manifest = nlohmann::json::parse(built->manifest());
  EXPECT_EQ(manifest["warnings"], nlohmann::json(expected));
  expect_adds(built->runtime_module(), 37);

  std::unique_ptr<BuiltModule> clean = build(vector_add(), "llvm");
  EXPECT_TRUE(clean->warnings().empty());
  EXPECT_EQ(nlohmann::json::parse(clean->manifest())["warnings"], nlohmann::json::array());
}

TEST(Build, Errors) {
  EXPECT_NE(error_of([] { build(make<IRModule>(), "llvm"); }).find("the module has no functions"),
            std::string::npos);
  EXPECT_NE(error_of([] { build(vector_add(), "llvm -nope"); }).find("nope"), std::string::npos);
}

}  // namespace
}  // namespace kiln::driver
