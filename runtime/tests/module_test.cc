// Loading exported modules: lookup, successful calls of the fake module's kernels, kernel errors,
// every reason the runtime refuses a module (ABI, target, CPU features, manifest, kernel table)
// with its error code, and the kernels' absence from the dynamic symbol table.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kiln/runtime/c_runtime_api.h"
#include "test_util.h"

namespace kiln {
namespace runtime {
namespace testing {
namespace {

KilnFunctionHandle get_function(KilnModuleHandle module, const char* name) {
  KilnFunctionHandle function = nullptr;
  EXPECT_EQ(KilnModuleGetFunction(module, name, &function), 0) << KilnGetLastError();
  return function;
}

// Loads a variant that must be refused with error code `code` and returns the message.
std::string refusal_message(const std::string& variant,
                            int32_t code = kKilnErrorModuleUnsupported) {
  ModuleGuard module;
  std::string path = fake_module_path(variant);
  EXPECT_EQ(KilnModuleLoadFromFile(path.c_str(), module.out()), code) << KilnGetLastError();
  EXPECT_EQ(module.get(), nullptr);
  return KilnGetLastError();
}

TEST(ModuleLoad, ListsFunctionsAndTarget) {
  ModuleGuard module;
  ASSERT_EQ(KilnModuleLoadFromFile(fake_module_path("ok").c_str(), module.out()), 0)
      << KilnGetLastError();
  int32_t count = 0;
  const char* const* names = nullptr;
  ASSERT_EQ(KilnModuleListFunctions(module.get(), &count, &names), 0);
  std::vector<std::string> listed(names, names + count);
  EXPECT_EQ(listed, (std::vector<std::string>{"main", "scale_add", "row_sums", "fill",
                                              "fail_always", "parallel_sum"}));
  const char* target = nullptr;
  ASSERT_EQ(KilnModuleGetTarget(module.get(), &target), 0);
  EXPECT_EQ(std::string(target).rfind("llvm -mtriple=", 0), 0u) << target;
}

TEST(ModuleLoad, FunctionSpecComesFromManifest) {
  ModuleGuard module;
  ASSERT_EQ(KilnModuleLoadFromFile(fake_module_path("ok").c_str(), module.out()), 0);
  const KilnFuncSpec* spec = nullptr;
  ASSERT_EQ(KilnFuncGetSpec(get_function(module.get(), "scale_add"), &spec), 0);
  EXPECT_STREQ(spec->name, "scale_add");
  EXPECT_STREQ(spec->symbol, "kiln_unchecked_scale_add");
  ASSERT_EQ(spec->num_args, 4);
  EXPECT_STREQ(spec->args[0].name, "A");
  EXPECT_EQ(spec->args[0].kind, kKilnArgTensor);
  EXPECT_EQ(spec->args[0].ndim, 2);
  EXPECT_EQ(spec->args[0].shape[0], 4);
  EXPECT_EQ(spec->args[0].shape[1], -1);  // symbolic variable #0
  EXPECT_EQ(spec->args[0].strides, nullptr);
  EXPECT_EQ(spec->args[0].device_type, kDLCPU);
  EXPECT_EQ(spec->args[0].alignment, 1);
  EXPECT_EQ(spec->args[2].kind, kKilnArgScalar);
  EXPECT_EQ(spec->args[2].dtype.code, kDLFloat);
  EXPECT_EQ(spec->args[2].dtype.bits, 32);
  EXPECT_EQ(spec->args[3].alignment, 64);
  EXPECT_EQ(spec->args[0].written, 0);
  EXPECT_EQ(spec->args[3].written, 1);
  EXPECT_EQ(spec->args[3].streaming_alignment, 0);  // the manifest does not say: none
  const KilnFuncSpec* main_spec = nullptr;
  ASSERT_EQ(KilnFuncGetSpec(get_function(module.get(), "main"), &main_spec), 0);
  EXPECT_EQ(main_spec->args[2].streaming_alignment, 64);
  ASSERT_EQ(spec->num_sym_vars, 1);
  EXPECT_STREQ(spec->sym_var_names[0], "n");
  EXPECT_EQ(spec->sym_var_dtypes[0].code, kDLInt);
  EXPECT_EQ(spec->sym_var_dtypes[0].bits, 64);
}

TEST(ModuleLoad, KernelsAreNotExported) {
  // The runtime's table is the only way to the kernels: the library's dynamic symbols hold the
  // manifest and the table, and no kernel.
  void* library = dlopen(fake_module_path("ok").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  EXPECT_NE(dlsym(library, KILN_MODULE_MANIFEST_SYMBOL), nullptr);
  EXPECT_NE(dlsym(library, KILN_MODULE_FUNCTIONS_SYMBOL), nullptr);
  EXPECT_EQ(dlsym(library, "kiln_unchecked_main"), nullptr);
  EXPECT_EQ(dlsym(library, "kiln_main"), nullptr);
  dlclose(library);
}

TEST(ModuleLoad, MissingFunctionListsAvailableNames) {
  ModuleGuard module;
  ASSERT_EQ(KilnModuleLoadFromFile(fake_module_path("ok").c_str(), module.out()), 0);
  KilnFunctionHandle function = nullptr;
  EXPECT_EQ(KilnModuleGetFunction(module.get(), "mian", &function), kKilnErrorIndex);
  EXPECT_NE(std::string(KilnGetLastError())
                .find("no function 'mian' in " + fake_module_path("ok") +
                      "; available: main, scale_add, row_sums, fill, fail_always, parallel_sum"),
            std::string::npos)
      << KilnGetLastError();
}

TEST(ModuleCall, VectorAdd) {
  ModuleGuard module;
  ASSERT_EQ(KilnModuleLoadFromFile(fake_module_path("ok").c_str(), module.out()), 0);
  const int n = 100;
  AlignedBuffer<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = static_cast<float>(2 * i + 1);
  }
  TensorView ta(a.data(), {n}, float32()), tb(b.data(), {n}, float32()),
      tc(c.data(), {n}, float32());
  PackedArgs args;
  args.tensor(&ta.tensor).tensor(&tb.tensor).tensor(&tc.tensor);
  ASSERT_EQ(KilnFuncCall(get_function(module.get(), "main"), args.values.data(), args.codes.data(),
                         args.size()),
            0)
      << KilnGetLastError();
  for (int i = 0; i < n; ++i) EXPECT_EQ(c[i], static_cast<float>(3 * i + 1));
}

TEST(ModuleCall, ScalarArguments) {
  ModuleGuard module;
  ASSERT_EQ(KilnModuleLoadFromFile(fake_module_path("ok").c_str(), module.out()), 0);
  std::vector<int64_t> out(5, 0);
  TensorView t(out.data(), {5}, int64());
  KilnFunctionHandle fill = get_function(module.get(), "fill");
  PackedArgs args;
  args.tensor(&t.tensor).integer(7).integer(0);
  ASSERT_EQ(KilnFuncCall(fill, args.values.data(), args.codes.data(), args.size()), 0)
      << KilnGetLastError();
  EXPECT_EQ(out, std::vector<int64_t>(5, -7));
}

TEST(ModuleCall, ExplicitStridesAcceptAView) {
  ModuleGuard module;
  ASSERT_EQ(KilnModuleLoadFromFile(fake_module_path("ok").c_str(), module.out()), 0);
  // A 3x2 view of the first two columns of a 3x5 array.
  std::vector<float> wide = {1, 2, 0, 0, 0, 3, 4, 0, 0, 0, 5, 6, 0, 0, 0};
  std::vector<float> sums(3, 0);
  TensorView x(wide.data(), {3, 2}, float32()), out(sums.data(), {3}, float32());
  x.set_strides({5, 1});
  PackedArgs args;
  args.tensor(&x.tensor).tensor(&out.tensor);
  ASSERT_EQ(KilnFuncCall(get_function(module.get(), "row_sums"), args.values.data(),
                         args.codes.data(), args.size()),
            0)
      << KilnGetLastError();
  EXPECT_EQ(sums, (std::vector<float>{3, 7, 11}));
}

TEST(ModuleCall, ParallelKernelWithWorkspace) {
  ModuleGuard module;
  ASSERT_EQ(KilnModuleLoadFromFile(fake_module_path("ok").c_str(), module.out()), 0);
  const int n = 10000;
  std::vector<double> x(n);
  for (int i = 0; i < n; ++i) x[i] = i;
  double result = 0;
  TensorView tx(x.data(), {n}, float64()), tout(&result, {1}, float64());
  for (int num_tasks : {1, 3, 16}) {
    PackedArgs args;
    args.tensor(&tx.tensor).tensor(&tout.tensor).integer(num_tasks);
    ASSERT_EQ(KilnFuncCall(get_function(module.get(), "parallel_sum"), args.values.data(),
                           args.codes.data(), args.size()),
              0)
        << KilnGetLastError();
    EXPECT_EQ(result, n * (n - 1) / 2.0) << "num_tasks " << num_tasks;
  }
}

TEST(ModuleCall, KernelErrorIsReported) {
  ModuleGuard module;
  ASSERT_EQ(KilnModuleLoadFromFile(fake_module_path("ok").c_str(), module.out()), 0);
  PackedArgs args;
  args.integer(42);
  EXPECT_EQ(KilnFuncCall(get_function(module.get(), "fail_always"), args.values.data(),
                         args.codes.data(), args.size()),
            kKilnErrorRuntime);
  EXPECT_STREQ(KilnGetLastError(), "fail_always: deliberate failure with x = 42");
}

TEST(ModuleCall, KernelRejectsAValueItChecksItself) {
  ModuleGuard module;
  ASSERT_EQ(KilnModuleLoadFromFile(fake_module_path("ok").c_str(), module.out()), 0);
  double x = 1, result = 0;
  TensorView tx(&x, {1}, float64()), tout(&result, {1}, float64());
  PackedArgs args;
  args.tensor(&tx.tensor).tensor(&tout.tensor).integer(-1);
  EXPECT_NE(KilnFuncCall(get_function(module.get(), "parallel_sum"), args.values.data(),
                         args.codes.data(), args.size()),
            0);
  EXPECT_STREQ(KilnGetLastError(), "parallel_sum: num_tasks must be positive");
}

TEST(ModuleRefusal, AbiVersionMismatch) {
  std::string message = refusal_message("bad_abi");
  EXPECT_NE(message.find("fake_module_bad_abi.so: module has ABI version 99, this runtime runs "
                         "ABI version 2; load it with a newer kiln runtime"),
            std::string::npos)
      << message;
}

TEST(ModuleRefusal, ModuleOfTheOldAbi) {
  std::string message = refusal_message("old_abi");
  EXPECT_NE(message.find("fake_module_old_abi.so: module has ABI version 1, this runtime runs ABI "
                         "version 2; export the module again with this version of kiln"),
            std::string::npos)
      << message;
}

TEST(ModuleRefusal, MissingCpuFeature) {
  std::string message = refusal_message("missing_feature");
  EXPECT_NE(message.find("module needs CPU features this CPU lacks: kiln_fake_feature"),
            std::string::npos)
      << message;
}

TEST(ModuleRefusal, WrongArchitecture) {
  std::string message = refusal_message("wrong_arch");
  EXPECT_NE(message.find("architecture 'riscv64' of -mtriple=riscv64-unknown-linux-gnu is not "
                         "this machine's"),
            std::string::npos)
      << message;
}

TEST(ModuleRefusal, MalformedManifest) {
  std::string message = refusal_message("malformed", kKilnErrorModuleFile);
  EXPECT_NE(message.find("fake_module_malformed.so: manifest: invalid JSON: offset "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("unexpected end of text"), std::string::npos) << message;
}

TEST(ModuleRefusal, DeviceCodeOfAnUnknownKind) {
  std::string message = refusal_message("device_blob");
  EXPECT_NE(message.find("device_blobs[0]: device code of kind 'vulkan', which this runtime does "
                         "not load (it loads 'opencl' and 'cuda')"),
            std::string::npos)
      << message;
}

TEST(ModuleRefusal, TableWithoutAKernelOfTheManifest) {
  std::string message = refusal_message("missing_kernel", kKilnErrorModuleFile);
  EXPECT_NE(message.find("the manifest lists 2 functions but the kernel table "
                         "kiln_module_functions holds 1 (function ghost has no kernel)"),
            std::string::npos)
      << message;
}

TEST(ModuleRefusal, NotAKilnModule) {
  std::string message = refusal_message("no_manifest", kKilnErrorModuleFile);
  EXPECT_NE(message.find("not a kiln module: it defines no symbol kiln_module_manifest"),
            std::string::npos)
      << message;
}

TEST(ModuleRefusal, MissingFile) {
  std::string message = refusal_message("does_not_exist", kKilnErrorModuleFile);
  EXPECT_NE(message.find("fake_module_does_not_exist.so: cannot open: "), std::string::npos)
      << message;
}

TEST(ModuleRefusal, NullArguments) {
  KilnModuleHandle module = nullptr;
  EXPECT_EQ(KilnModuleLoadFromFile(nullptr, &module), kKilnErrorValue);
  EXPECT_STREQ(KilnGetLastError(), "KilnModuleLoadFromFile: path and out must not be NULL");
  EXPECT_EQ(KilnFuncCall(nullptr, nullptr, nullptr, 0), kKilnErrorValue);
  EXPECT_STREQ(KilnGetLastError(), "KilnFuncCall: function handle is NULL");
}

}  // namespace
}  // namespace testing
}  // namespace runtime
}  // namespace kiln
