// Manifests read through KilnModuleCreate (the in-process path a JIT uses): a working module with
// a symbol resolver and its kernel table, each malformed-manifest message and its error code,
// target checks, and a fuzz pass showing that damaged manifests give errors, never crashes.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kiln/runtime/c_runtime_api.h"
#include "test_util.h"

namespace kiln {
namespace runtime {
namespace testing {
namespace {

// out[i] = in[i] * 2 over int64[n].
int32_t twice_kernel(const KilnValue* args, const int32_t*, int32_t) {
  const DLTensor* in = static_cast<const DLTensor*>(args[0].v_handle);
  const DLTensor* out = static_cast<const DLTensor*>(args[1].v_handle);
  for (int64_t i = 0; i < in->shape[0]; ++i) {
    static_cast<int64_t*>(out->data)[i] = static_cast<int64_t*>(in->data)[i] * 2;
  }
  return 0;
}

// The kernel tables a resolver hands out: the one kernel of valid_manifest, or nothing.
const KilnPackedCFunc kOneKernel[] = {&twice_kernel, nullptr};
const KilnPackedCFunc kNoKernel[] = {nullptr};

// What the resolver serves and how often it was asked.
struct Resolver {
  const KilnPackedCFunc* table = kOneKernel;
  int calls = 0;
};

void* resolve(void* ctx, const char* symbol) {
  auto* resolver = static_cast<Resolver*>(ctx);
  ++resolver->calls;
  if (std::strcmp(symbol, KILN_MODULE_FUNCTIONS_SYMBOL) == 0) {
    return const_cast<KilnPackedCFunc*>(resolver->table);
  }
  return nullptr;
}

#if defined(__x86_64__)
const char* kHostFeature = "\"+sse2\"";
#else
const char* kHostFeature = "";
#endif

std::string valid_manifest() {
  return std::string(R"({"abi_version": 2, "target": "llvm", "host_features": [)") + kHostFeature +
         R"(], "producer": "ignored key",
    "functions": [{"name": "twice", "symbol": "kiln_twice", "sym_vars": ["n"],
                   "args": [{"name": "in", "kind": "tensor", "dtype": "int64", "shape": ["n"]},
                            {"name": "out", "kind": "tensor", "dtype": "int64", "shape": ["n"]}]}],
    "device_blobs": []})";
}

// Creates a module from `manifest` over `table`; returns "" on success, else the message. The
// error code must be `code`.
std::string create_error(const std::string& manifest, int32_t code = kKilnErrorValue,
                         const KilnPackedCFunc* table = kOneKernel) {
  Resolver resolver;
  resolver.table = table;
  ModuleGuard module;
  int32_t status = KilnModuleCreate(manifest.c_str(), nullptr, resolve, &resolver, module.out());
  if (status == 0) return "";
  EXPECT_EQ(status, code) << KilnGetLastError();
  EXPECT_EQ(module.get(), nullptr);
  return KilnGetLastError();
}

// A manifest with one function whose single argument is `arg` (JSON object text).
std::string manifest_with_arg(const std::string& arg) {
  return R"({"abi_version": 2, "target": "llvm", "functions": [{"name": "f", "symbol": "kiln_twice",
    "sym_vars": ["n"], "args": [)" +
         arg + "]}]}";
}

TEST(InProcessModule, ReadsKernelsFromTheTableTheResolverFinds) {
  Resolver resolver;
  ModuleGuard module;
  ASSERT_EQ(KilnModuleCreate(valid_manifest().c_str(), nullptr, resolve, &resolver, module.out()),
            0)
      << KilnGetLastError();
  EXPECT_EQ(resolver.calls, 1);  // the table only: kernels are not looked up by name
  KilnFunctionHandle twice = nullptr;
  ASSERT_EQ(KilnModuleGetFunction(module.get(), "twice", &twice), 0);
  std::vector<int64_t> in = {1, 2, 3}, out(3);
  TensorView tin(in.data(), {3}, int64()), tout(out.data(), {3}, int64());
  PackedArgs args;
  args.tensor(&tin.tensor).tensor(&tout.tensor);
  ASSERT_EQ(KilnFuncCall(twice, args.values.data(), args.codes.data(), args.size()), 0)
      << KilnGetLastError();
  EXPECT_EQ(out, (std::vector<int64_t>{2, 4, 6}));
}

TEST(InProcessModule, MissingTable) {
  EXPECT_EQ(create_error(valid_manifest(), kKilnErrorValue, nullptr),
            "KilnModuleCreate: the module defines no kernel table kiln_module_functions; it is "
            "not a module of runtime ABI version 2");
}

TEST(InProcessModule, TableShorterThanManifest) {
  std::string manifest = R"({"abi_version": 2, "target": "llvm",
      "functions": [{"name": "f", "symbol": "kiln_unchecked_f", "args": []},
                    {"name": "g", "symbol": "kiln_unchecked_g", "args": []}]})";
  EXPECT_EQ(create_error(manifest),
            "KilnModuleCreate: the manifest lists 2 functions but the kernel table "
            "kiln_module_functions holds 1 (function g has no kernel)");
}

TEST(InProcessModule, TableLongerThanManifest) {
  std::string manifest = R"({"abi_version": 2, "target": "llvm", "functions": []})";
  EXPECT_EQ(create_error(manifest),
            "KilnModuleCreate: the kernel table kiln_module_functions holds more kernels than the "
            "0 functions of the manifest");
  EXPECT_EQ(create_error(manifest, kKilnErrorValue, kNoKernel), "");
}

TEST(InProcessModule, OldAbiIsRefusedWithAHint) {
  std::string manifest = R"({"abi_version": 1, "target": "llvm", "functions": []})";
  EXPECT_EQ(create_error(manifest, kKilnErrorModuleUnsupported),
            "KilnModuleCreate: module has ABI version 1, this runtime runs ABI version 2; export "
            "the module again with this version of kiln");
}

TEST(InProcessModule, WrittenFlagsAndSymbolicDtypes) {
  std::string manifest = R"({"abi_version": 2, "target": "llvm", "functions": [{"name": "f",
      "symbol": "kiln_unchecked_f", "sym_vars": ["n", "m"], "sym_var_dtypes": ["int32", "uint16"],
      "args": [{"name": "A", "kind": "tensor", "dtype": "int64", "shape": ["n"], "written": false},
               {"name": "B", "kind": "tensor", "dtype": "int64", "shape": ["m"], "written": true},
               {"name": "C", "kind": "tensor", "dtype": "int64", "shape": ["n"]}]}]})";
  Resolver resolver;
  ModuleGuard module;
  ASSERT_EQ(KilnModuleCreate(manifest.c_str(), nullptr, resolve, &resolver, module.out()), 0)
      << KilnGetLastError();
  KilnFunctionHandle function = nullptr;
  const KilnFuncSpec* spec = nullptr;
  ASSERT_EQ(KilnModuleGetFunction(module.get(), "f", &function), 0);
  ASSERT_EQ(KilnFuncGetSpec(function, &spec), 0);
  EXPECT_EQ(spec->args[0].written, 0);
  EXPECT_EQ(spec->args[1].written, 1);
  EXPECT_EQ(spec->args[2].written, 1);  // unstated: taken to be written
  ASSERT_EQ(spec->num_sym_vars, 2);
  EXPECT_EQ(spec->sym_var_dtypes[0].code, kDLInt);
  EXPECT_EQ(spec->sym_var_dtypes[0].bits, 32);
  EXPECT_EQ(spec->sym_var_dtypes[1].code, kDLUInt);
  EXPECT_EQ(spec->sym_var_dtypes[1].bits, 16);
}

TEST(InProcessModule, SymbolicLimits) {
  std::string manifest = R"({"abi_version": 2, "target": "llvm", "functions": [{"name": "f",
      "symbol": "kiln_unchecked_f", "sym_vars": ["n", "m"], "sym_var_dtypes": ["int32", "int64"],
      "sym_var_max": [2147483640, null],
      "args": [{"name": "A", "kind": "tensor", "dtype": "int64", "shape": ["n", "m"]}]}]})";
  Resolver resolver;
  ModuleGuard module;
  ASSERT_EQ(KilnModuleCreate(manifest.c_str(), nullptr, resolve, &resolver, module.out()), 0)
      << KilnGetLastError();
  KilnFunctionHandle function = nullptr;
  const KilnFuncSpec* spec = nullptr;
  ASSERT_EQ(KilnModuleGetFunction(module.get(), "f", &function), 0);
  ASSERT_EQ(KilnFuncGetSpec(function, &spec), 0);
  EXPECT_EQ(spec->sym_var_max[0], 2147483640);
  EXPECT_EQ(spec->sym_var_max[1], INT64_MAX);
}

TEST(InProcessModule, SymbolicDtypesDefaultToInt64) {
  Resolver resolver;
  ModuleGuard module;
  ASSERT_EQ(KilnModuleCreate(valid_manifest().c_str(), nullptr, resolve, &resolver, module.out()),
            0);
  KilnFunctionHandle function = nullptr;
  const KilnFuncSpec* spec = nullptr;
  ASSERT_EQ(KilnModuleGetFunction(module.get(), "twice", &function), 0);
  ASSERT_EQ(KilnFuncGetSpec(function, &spec), 0);
  EXPECT_EQ(spec->sym_var_dtypes[0].code, kDLInt);
  EXPECT_EQ(spec->sym_var_dtypes[0].bits, 64);
}

TEST(InProcessModule, NeedsResolverOrHandle) {
  KilnModuleHandle module = nullptr;
  EXPECT_NE(KilnModuleCreate(valid_manifest().c_str(), nullptr, nullptr, nullptr, &module), 0);
  EXPECT_STREQ(KilnGetLastError(), "KilnModuleCreate: needs a symbol resolver or a library handle");
}

TEST(InProcessModule, UnicodeEscapesDecodeToUtf8) {
  std::string manifest = R"({"abi_version": 2, "target": "llvm", "functions": [
      {"name": "caf\u00e9\ud83d\ude00", "symbol": "kiln_twice", "args": []}]})";
  Resolver resolver;
  ModuleGuard module;
  ASSERT_EQ(KilnModuleCreate(manifest.c_str(), nullptr, resolve, &resolver, module.out()), 0)
      << KilnGetLastError();
  KilnFunctionHandle function = nullptr;
  EXPECT_EQ(KilnModuleGetFunction(module.get(), "caf\xc3\xa9\xf0\x9f\x98\x80", &function), 0);
}

struct MalformedCase {
  std::string manifest;
  std::string message;
};

TEST(ManifestErrors, EachMalformationIsNamed) {
  std::vector<MalformedCase> cases = {
      {"", "manifest: invalid JSON: offset 0: unexpected end of text"},
      {"[1, 2]", "manifest: expected an object, found an array"},
      {R"({"target": "llvm", "functions": []})", R"(manifest: missing key "abi_version")"},
      {R"({"abi_version": "1", "target": "llvm", "functions": []})",
       "manifest: abi_version: expected an integer, found a string"},
      {R"({"abi_version": 1.5, "target": "llvm", "functions": []})",
       "manifest: abi_version: expected an integer, found a number"},
      {R"({"abi_version": 1, "target": "llvm", "functions": {}})",
       "manifest: functions: expected an array, found an object"},
      {R"({"abi_version": 1, "target": "llvm", "functions": [{"symbol": "s", "args": []}]})",
       R"(manifest: functions[0]: missing key "name")"},
      {R"({"abi_version": 1, "target": "llvm", "functions": [{"name": "f", "symbol": "kiln_twice",
          "args": []}, {"name": "f", "symbol": "kiln_twice", "args": []}]})",
       "manifest: functions[1].name: function 'f' is defined twice"},
      {manifest_with_arg(R"({"name": "A", "kind": "tensor", "dtype": "float33", "shape": [1]})"),
       "manifest: functions[0].args[0].dtype: unknown dtype 'float33'"},
      {manifest_with_arg(R"({"name": "A", "kind": "matrix", "dtype": "float32"})"),
       R"(manifest: functions[0].args[0].kind: expected "tensor" or "scalar", found "matrix")"},
      {manifest_with_arg(
           R"({"name": "A", "kind": "tensor", "dtype": "float32", "shape": [4, "k"]})"),
       "manifest: functions[0].args[0].shape[1]: 'k' is not one of the function's sym_vars"},
      {manifest_with_arg(R"({"name": "A", "kind": "tensor", "dtype": "float32", "shape": [-4]})"),
       "manifest: functions[0].args[0].shape[0]: expected an extent >= 0, found -4"},
      {manifest_with_arg(
           R"({"name": "A", "kind": "tensor", "dtype": "float32", "shape": [4, 2.5]})"),
       "manifest: functions[0].args[0].shape[1]: expected an integer or a sym_var name, found a "
       "number"},
      {manifest_with_arg(
           R"({"name": "A", "kind": "tensor", "dtype": "float32", "ndim": 3, "shape": [4, "n"]})"),
       "manifest: functions[0].args[0].ndim: 3 does not match the shape's 2 entries"},
      {manifest_with_arg(
           R"({"name": "A", "kind": "tensor", "dtype": "float32", "shape": [4, "n"], "strides": [1]})"),
       "manifest: functions[0].args[0].strides: expected 2 entries like the shape, found 1"},
      {manifest_with_arg(
           R"({"name": "A", "kind": "tensor", "dtype": "float32", "shape": [4], "device": "tpu"})"),
       "manifest: functions[0].args[0].device: unknown device 'tpu'"},
      {manifest_with_arg(
           R"({"name": "A", "kind": "tensor", "dtype": "float32", "shape": [4], "alignment": 48})"),
       "manifest: functions[0].args[0].alignment: expected a power of two, found 48"},
      {manifest_with_arg(R"({"name": "A", "kind": "tensor", "dtype": "float32", "shape": [4],
                             "streaming_alignment": 0})"),
       "manifest: functions[0].args[0].streaming_alignment: expected a power of two, found 0"},
      {manifest_with_arg(R"({"name": "a", "kind": "scalar", "dtype": "float32x4"})"),
       "manifest: functions[0].args[0].dtype: a scalar must have one lane"},
      {manifest_with_arg(
           R"({"name": "A", "kind": "tensor", "dtype": "float32", "shape": [4], "written": 1})"),
       "manifest: functions[0].args[0].written: expected true or false, found a number"},
      {R"({"abi_version": 2, "target": "llvm", "functions": [{"name": "f", "symbol": "s",
          "sym_vars": ["n"], "sym_var_dtypes": ["int32", "int64"], "args": []}]})",
       "manifest: functions[0].sym_var_dtypes: expected 1 entries, one per sym_var, found 2"},
      {R"({"abi_version": 2, "target": "llvm", "functions": [{"name": "f", "symbol": "s",
          "sym_vars": ["n"], "sym_var_max": [1, 2], "args": []}]})",
       "manifest: functions[0].sym_var_max: expected an array of 1 entries (an integer or null "
       "per sym_var), found an array"},
      {R"({"abi_version": 2, "target": "llvm", "functions": [{"name": "f", "symbol": "s",
          "sym_vars": ["n"], "sym_var_dtypes": ["float32"], "args": []}]})",
       "manifest: functions[0].sym_var_dtypes[0]: expected an integer dtype (int32, int64 ...), "
       "found 'float32'"},
      {std::string(100, '[') + std::string(100, ']'),
       "manifest: invalid JSON: offset 65: nesting deeper than 64"},
      {R"({"abi_version": 1} x)",
       "manifest: invalid JSON: offset 19: unexpected text after the "
       "JSON value"},
      {R"({"abi_version": 01})",
       "manifest: invalid JSON: offset 16: invalid number (leading zero)"},
      {R"({"a": "\q"})", "manifest: invalid JSON: offset 8: invalid escape in string"},
      {"{\"a\": \"line\nbreak\"}",
       "manifest: invalid JSON: offset 11: control character in string"},
      {R"({"a": "open)",
       "manifest: invalid JSON: offset 11: unexpected end of text, unterminated string"},
      {R"({"a" 1})", "manifest: invalid JSON: offset 5: expected ':'"},
      {R"({"a": tru})", "manifest: invalid JSON: offset 6: invalid literal"},
      {R"({"a": 1,})", "manifest: invalid JSON: offset 8: expected a string key"},
  };
  for (const MalformedCase& c : cases) {
    EXPECT_EQ(create_error(c.manifest), "KilnModuleCreate: " + c.message) << c.manifest;
  }
}

TEST(ManifestErrors, OutOfRangeIntegerIsNotAnInteger) {
  std::string manifest = R"({"abi_version": 99999999999999999999, "target": "llvm",
      "functions": []})";
  EXPECT_EQ(create_error(manifest),
            "KilnModuleCreate: manifest: abi_version: expected an integer, found a number");
}

TEST(ManifestTarget, DeviceTargetKindIsRefused) {
  EXPECT_EQ(create_error(R"({"abi_version": 2, "target": "cuda -arch=sm_90", "functions": []})",
                         kKilnErrorModuleUnsupported),
            "KilnModuleCreate: target kind 'cuda' is not a host target (expected llvm or c; "
            "device code belongs in device_blobs)");
}

TEST(ManifestTarget, EmptyTargetIsRefused) {
  EXPECT_EQ(create_error(R"({"abi_version": 2, "target": "  ", "functions": []})",
                         kKilnErrorModuleUnsupported),
            "KilnModuleCreate: target is empty");
}

TEST(ManifestTarget, ForeignOsIsRefused) {
#if defined(__x86_64__)
  std::string message = create_error(
      R"({"abi_version": 2, "target": "llvm -mtriple=x86_64-apple-darwin", "functions": []})",
      kKilnErrorModuleUnsupported);
  EXPECT_NE(message.find("OS of -mtriple=x86_64-apple-darwin is not this machine's (linux)"),
            std::string::npos)
      << message;
#else
  GTEST_SKIP() << "the test triple is an x86_64 one";
#endif
}

TEST(ManifestTarget, SeveralMissingFeaturesAreAllNamed) {
  std::string message = create_error(
      R"({"abi_version": 2, "target": "llvm", "host_features": ["no_such_a", "no_such_b"],
          "functions": []})",
      kKilnErrorModuleUnsupported);
  EXPECT_NE(message.find("module needs CPU features this CPU lacks: no_such_a, no_such_b"),
            std::string::npos)
      << message;
}

// Creates a module from a damaged manifest; "" or the message, whatever the error code.
std::string fuzz_error(const std::string& manifest) {
  Resolver resolver;
  ModuleGuard module;
  int32_t status = KilnModuleCreate(manifest.c_str(), nullptr, resolve, &resolver, module.out());
  if (status == 0) return "";
  EXPECT_LT(status, 0);
  return KilnGetLastError();
}

TEST(ManifestFuzz, DamagedManifestsNeverCrash) {
  const std::string valid = valid_manifest();
  ASSERT_EQ(create_error(valid), "");
  // Every truncation.
  for (size_t length = 0; length < valid.size(); ++length) {
    std::string message = fuzz_error(valid.substr(0, length));
    EXPECT_NE(message, "") << "truncated at " << length;
  }
  // Random byte substitutions with characters that matter to JSON.
  const char alphabet[] = "{}[]\":,0123456789-.eE\\untfals \x01\xff";
  std::mt19937 random(12345);
  for (int round = 0; round < 3000; ++round) {
    std::string damaged = valid;
    int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits; ++e) {
      damaged[random() % damaged.size()] = alphabet[random() % (sizeof(alphabet) - 1)];
    }
    fuzz_error(damaged);  // accepted or refused with a message; must not crash
  }
}

}  // namespace
}  // namespace testing
}  // namespace runtime
}  // namespace kiln
