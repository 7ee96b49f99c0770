// Overlapping arguments: KilnFuncCall behaves as if the kernel read every input before writing
// any output. Kernels written here (an in-process module over a hand-written manifest) write
// their outputs in an order that gives wrong results when an input aliases an output; each test
// compares with the result computed on separate copies.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/runtime/c_runtime_api.h"
#include "test_util.h"

namespace kiln {
namespace runtime {
namespace testing {
namespace {

float* data_of(const DLTensor* t) {
  return reinterpret_cast<float*>(static_cast<char*>(t->data) + t->byte_offset);
}

int64_t stride_of(const DLTensor* t, int d) {
  if (t->strides != nullptr) return t->strides[d];
  int64_t stride = 1;
  for (int k = t->ndim - 1; k > d; --k) stride *= t->shape[k];
  return stride;
}

// B[j, i] = A[i, j] + 1 over float32[n, n], row by row of A.
int32_t transpose_add_one(const KilnValue* args, const int32_t*, int32_t) {
  const DLTensor* a = static_cast<const DLTensor*>(args[0].v_handle);
  const DLTensor* b = static_cast<const DLTensor*>(args[1].v_handle);
  int64_t n = a->shape[0];
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) data_of(b)[j * n + i] = data_of(a)[i * n + j] + 1.0f;
  }
  return 0;
}

// Y[i] = X[i - 1] (Y[0] = 0) over float32[n] with any strides, in increasing i.
int32_t shift(const KilnValue* args, const int32_t*, int32_t) {
  const DLTensor* x = static_cast<const DLTensor*>(args[0].v_handle);
  const DLTensor* y = static_cast<const DLTensor*>(args[1].v_handle);
  int64_t sx = stride_of(x, 0), sy = stride_of(y, 0);
  for (int64_t i = 0; i < y->shape[0]; ++i) {
    data_of(y)[i * sy] = i == 0 ? 0.0f : data_of(x)[(i - 1) * sx];
  }
  return 0;
}

// Y = X, Z = 2 X over float32[n].
int32_t two_outputs(const KilnValue* args, const int32_t*, int32_t) {
  const DLTensor* x = static_cast<const DLTensor*>(args[0].v_handle);
  const DLTensor* y = static_cast<const DLTensor*>(args[1].v_handle);
  const DLTensor* z = static_cast<const DLTensor*>(args[2].v_handle);
  for (int64_t i = 0; i < x->shape[0]; ++i) {
    data_of(y)[i] = data_of(x)[i];
    data_of(z)[i] = 2 * data_of(x)[i];
  }
  return 0;
}

// Records where the kernel found X and W (both read-only) and writes Y = X + W; fails when
// asked to by a negative first element of W.
const void* g_seen_x = nullptr;
const void* g_seen_w = nullptr;
int32_t observe(const KilnValue* args, const int32_t*, int32_t) {
  const DLTensor* x = static_cast<const DLTensor*>(args[0].v_handle);
  const DLTensor* w = static_cast<const DLTensor*>(args[1].v_handle);
  const DLTensor* y = static_cast<const DLTensor*>(args[2].v_handle);
  g_seen_x = data_of(x);
  g_seen_w = data_of(w);
  if (data_of(w)[0] < 0) {
    KilnSetLastError("observe: asked to fail");
    return -1;
  }
  for (int64_t i = 0; i < x->shape[0]; ++i) data_of(y)[i] = data_of(x)[i] + data_of(w)[i];
  return 0;
}

const KilnPackedCFunc kTable[] = {&transpose_add_one, &shift, &two_outputs, &observe, nullptr};

void* resolve(void*, const char* symbol) {
  if (std::strcmp(symbol, KILN_MODULE_FUNCTIONS_SYMBOL) == 0) {
    return const_cast<KilnPackedCFunc*>(kTable);
  }
  return nullptr;
}

const char* kManifest = R"({"abi_version": 2, "target": "llvm", "functions": [
  {"name": "transpose_add_one", "symbol": "t", "sym_vars": ["n"], "args": [
    {"name": "A", "kind": "tensor", "dtype": "float32", "shape": ["n", "n"], "written": false},
    {"name": "B", "kind": "tensor", "dtype": "float32", "shape": ["n", "n"], "written": true}]},
  {"name": "shift", "symbol": "s", "sym_vars": ["n", "sx", "sy"], "args": [
    {"name": "X", "kind": "tensor", "dtype": "float32", "shape": ["n"], "strides": ["sx"],
     "written": false},
    {"name": "Y", "kind": "tensor", "dtype": "float32", "shape": ["n"], "strides": ["sy"],
     "written": true}]},
  {"name": "two_outputs", "symbol": "o", "sym_vars": ["n"], "args": [
    {"name": "X", "kind": "tensor", "dtype": "float32", "shape": ["n"], "written": false},
    {"name": "Y", "kind": "tensor", "dtype": "float32", "shape": ["n"], "written": true},
    {"name": "Z", "kind": "tensor", "dtype": "float32", "shape": ["n"], "written": true}]},
  {"name": "observe", "symbol": "b", "sym_vars": ["n"], "args": [
    {"name": "X", "kind": "tensor", "dtype": "float32", "shape": ["n"], "alignment": 128,
     "written": false},
    {"name": "W", "kind": "tensor", "dtype": "float32", "shape": ["n"], "written": false},
    {"name": "Y", "kind": "tensor", "dtype": "float32", "shape": ["n"], "written": true}]}]})";

class Aliasing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(KilnModuleCreate(kManifest, nullptr, resolve, nullptr, &module_), 0)
        << KilnGetLastError();
  }
  static void TearDownTestSuite() {
    KilnModuleFree(module_);
    module_ = nullptr;
  }

  // Calls function `name`; returns its status.
  static int32_t call(const char* name, const PackedArgs& args) {
    KilnFunctionHandle function = nullptr;
    EXPECT_EQ(KilnModuleGetFunction(module_, name, &function), 0);
    return KilnFuncCall(function, args.values.data(), args.codes.data(), args.size());
  }

  static KilnModuleHandle module_;
};

KilnModuleHandle Aliasing::module_ = nullptr;

TEST_F(Aliasing, TransposeInPlace) {
  const int n = 5;
  AlignedBuffer<float> a(n * n);
  std::vector<float> expected(n * n);
  for (int i = 0; i < n * n; ++i) a[i] = static_cast<float>(i);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) expected[j * n + i] = a[i * n + j] + 1;
  }
  TensorView t(a.data(), {n, n}, float32());
  PackedArgs args;
  args.tensor(&t.tensor).tensor(&t.tensor);
  ASSERT_EQ(call("transpose_add_one", args), 0) << KilnGetLastError();
  EXPECT_EQ(std::vector<float>(a.data(), a.data() + n * n), expected);
}

TEST_F(Aliasing, OverlappingViewsWithOffsets) {
  // X = buf[0:8] and Y = buf[1:9]: NumPy's y[:] = shift(x) with x copied first.
  AlignedBuffer<float> buf(9);
  for (int i = 0; i < 9; ++i) buf[i] = static_cast<float>(10 + i);
  TensorView x(buf.data(), {8}, float32()), y(buf.data(), {8}, float32());
  y.tensor.byte_offset = sizeof(float);
  PackedArgs args;
  args.tensor(&x.tensor).tensor(&y.tensor);
  ASSERT_EQ(call("shift", args), 0) << KilnGetLastError();
  // y[i] = x_before[i - 1]: buf[1] = 0, buf[i + 1] = 10 + (i - 1).
  std::vector<float> expected = {10, 0, 10, 11, 12, 13, 14, 15, 16};
  EXPECT_EQ(std::vector<float>(buf.data(), buf.data() + 9), expected);
}

TEST_F(Aliasing, NegativeStrideInputOverOutput) {
  // X is buf reversed (data at the last element, stride -1); Y is buf itself.
  AlignedBuffer<float> buf(6);
  for (int i = 0; i < 6; ++i) buf[i] = static_cast<float>(i + 1);
  TensorView x(buf.data() + 5, {6}, float32()), y(buf.data(), {6}, float32());
  x.set_strides({-1});
  PackedArgs args;
  args.tensor(&x.tensor).tensor(&y.tensor);
  ASSERT_EQ(call("shift", args), 0) << KilnGetLastError();
  // reversed = 6 5 4 3 2 1; shifted: 0 6 5 4 3 2.
  std::vector<float> expected = {0, 6, 5, 4, 3, 2};
  EXPECT_EQ(std::vector<float>(buf.data(), buf.data() + 6), expected);
}

TEST_F(Aliasing, OverlappingOutputsAreRefused) {
  AlignedBuffer<float> x(8), buf(12);
  TensorView tx(x.data(), {8}, float32()), ty(buf.data(), {8}, float32()),
      tz(buf.data() + 4, {8}, float32());
  PackedArgs args;
  args.tensor(&tx.tensor).tensor(&ty.tensor).tensor(&tz.tensor);
  const char* message =
      "two_outputs: arguments Y and Z overlap in memory and the function writes both; pass "
      "separate arrays (the result would depend on the order of the writes)";
  EXPECT_EQ(call("two_outputs", args), kKilnErrorValue);
  EXPECT_STREQ(KilnGetLastError(), message);
  KilnFunctionHandle function = nullptr;
  const KilnFuncSpec* spec = nullptr;
  ASSERT_EQ(KilnModuleGetFunction(module_, "two_outputs", &function), 0);
  ASSERT_EQ(KilnFuncGetSpec(function, &spec), 0);
  EXPECT_EQ(KilnFuncCheckArgs(spec, args.values.data(), args.codes.data(), args.size()),
            kKilnErrorValue);
  EXPECT_STREQ(KilnGetLastError(), message);
}

TEST_F(Aliasing, AdjacentOutputsDoNotOverlap) {
  AlignedBuffer<float> x(4), buf(8);
  for (int i = 0; i < 4; ++i) x[i] = static_cast<float>(i);
  TensorView tx(x.data(), {4}, float32()), ty(buf.data(), {4}, float32()),
      tz(buf.data() + 4, {4}, float32());
  PackedArgs args;
  args.tensor(&tx.tensor).tensor(&ty.tensor).tensor(&tz.tensor);
  ASSERT_EQ(call("two_outputs", args), 0) << KilnGetLastError();
  EXPECT_EQ(std::vector<float>(buf.data(), buf.data() + 8),
            (std::vector<float>{0, 1, 2, 3, 0, 2, 4, 6}));
}

TEST_F(Aliasing, EmptyTensorsNeverOverlap) {
  AlignedBuffer<float> buf(4);
  TensorView x(buf.data(), {0}, float32()), y(buf.data(), {0}, float32()),
      z(buf.data(), {0}, float32());
  PackedArgs args;
  args.tensor(&x.tensor).tensor(&y.tensor).tensor(&z.tensor);
  EXPECT_EQ(call("two_outputs", args), 0) << KilnGetLastError();
}

TEST_F(Aliasing, DistinctOrReadOnlyOverlapsAreNotCopied) {
  // X and W are the same memory, but neither is written: the kernel sees the caller's pointers.
  AlignedBuffer<float> x(16, 128), y(16);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
  TensorView tx(x.data(), {16}, float32()), tw(x.data(), {16}, float32()),
      ty(y.data(), {16}, float32());
  PackedArgs args;
  args.tensor(&tx.tensor).tensor(&tw.tensor).tensor(&ty.tensor);
  ASSERT_EQ(call("observe", args), 0) << KilnGetLastError();
  EXPECT_EQ(g_seen_x, x.data());
  EXPECT_EQ(g_seen_w, x.data());
  EXPECT_EQ(y[5], 10.0f);
}

TEST_F(Aliasing, CopyKeepsTheRequiredAlignment) {
  // X (alignment 128) and W overlap the output Y: both are copied; the copy of X is 128-byte
  // aligned like X, and the caller's memory is left to the kernel's writes only.
  AlignedBuffer<float> buf(16, 128);
  for (int i = 0; i < 16; ++i) buf[i] = static_cast<float>(i);
  TensorView tx(buf.data(), {16}, float32()), tw(buf.data(), {16}, float32()),
      ty(buf.data(), {16}, float32());
  PackedArgs args;
  args.tensor(&tx.tensor).tensor(&tw.tensor).tensor(&ty.tensor);
  ASSERT_EQ(call("observe", args), 0) << KilnGetLastError();
  EXPECT_NE(g_seen_x, buf.data());
  EXPECT_NE(g_seen_w, buf.data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(g_seen_x) % 128, 0u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(buf[i], 2.0f * i) << i;
}

TEST_F(Aliasing, KernelFailureAfterACopyIsReported) {
  AlignedBuffer<float> buf(4, 128);
  buf[0] = -1;
  TensorView tx(buf.data(), {4}, float32()), tw(buf.data(), {4}, float32()),
      ty(buf.data(), {4}, float32());
  PackedArgs args;
  args.tensor(&tx.tensor).tensor(&tw.tensor).tensor(&ty.tensor);
  EXPECT_EQ(call("observe", args), kKilnErrorRuntime);
  EXPECT_STREQ(KilnGetLastError(), "observe: asked to fail");
  EXPECT_EQ(buf[0], -1.0f);
}

}  // namespace
}  // namespace testing
}  // namespace runtime
}  // namespace kiln
