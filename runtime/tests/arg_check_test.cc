// The argument checks KilnFuncCall runs before a kernel: one test per failure mode, asserting the
// message and the error code, plus the layouts that must be accepted (explicit compact strides,
// byte offsets, empty tensors, pinned host memory), the range of symbolic variables and shapes
// whose size overflows 64 bits (described by hand: nothing that large is allocated).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/runtime/c_runtime_api.h"
#include "test_util.h"

namespace kiln {
namespace runtime {
namespace testing {
namespace {

class ArgCheck : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(KilnModuleLoadFromFile(fake_module_path("ok").c_str(), &module_), 0)
        << KilnGetLastError();
  }
  static void TearDownTestSuite() {
    KilnModuleFree(module_);
    module_ = nullptr;
  }

  static const KilnFuncSpec* spec(const char* name) {
    KilnFunctionHandle function = nullptr;
    const KilnFuncSpec* result = nullptr;
    EXPECT_EQ(KilnModuleGetFunction(module_, name, &function), 0);
    EXPECT_EQ(KilnFuncGetSpec(function, &result), 0);
    return result;
  }

  // Checks `args` against function `name`; returns "" when accepted, else the message. A
  // refusal must come with error code `code`.
  static std::string check(const char* name, const PackedArgs& args,
                           int32_t code = kKilnErrorValue) {
    int32_t status =
        KilnFuncCheckArgs(spec(name), args.values.data(), args.codes.data(), args.size());
    if (status == 0) return "";
    EXPECT_EQ(status, code) << KilnGetLastError();
    return KilnGetLastError();
  }

  // Valid arguments for scale_add(A: float32[4, n], B: float32[4, n], alpha, C: float32[4, n]).
  ArgCheck()
      : a_(4 * 8),
        b_(4 * 8),
        c_(4 * 8),
        ta_(a_.data(), {4, 8}, float32()),
        tb_(b_.data(), {4, 8}, float32()),
        tc_(c_.data(), {4, 8}, float32()) {}

  PackedArgs scale_add_args() {
    PackedArgs args;
    args.tensor(&ta_.tensor).tensor(&tb_.tensor).floating(2.0).tensor(&tc_.tensor);
    return args;
  }

  static KilnModuleHandle module_;
  AlignedBuffer<float> a_, b_, c_;
  TensorView ta_, tb_, tc_;
};

KilnModuleHandle ArgCheck::module_ = nullptr;

TEST_F(ArgCheck, AcceptsValidArguments) {
  EXPECT_EQ(check("scale_add", scale_add_args()), "");
}

TEST_F(ArgCheck, CallRunsKernelAfterChecks) {
  for (int i = 0; i < 32; ++i) {
    a_[i] = static_cast<float>(i);
    b_[i] = 1.0f;
  }
  KilnFunctionHandle function = nullptr;
  ASSERT_EQ(KilnModuleGetFunction(module_, "scale_add", &function), 0);
  PackedArgs args = scale_add_args();
  ASSERT_EQ(KilnFuncCall(function, args.values.data(), args.codes.data(), args.size()), 0)
      << KilnGetLastError();
  for (int i = 0; i < 32; ++i) EXPECT_EQ(c_[i], 2.0f * i + 1.0f);
}

TEST_F(ArgCheck, ArgumentCount) {
  PackedArgs args;
  args.tensor(&ta_.tensor).tensor(&tb_.tensor).floating(2.0);
  EXPECT_EQ(check("scale_add", args, kKilnErrorType), "scale_add: expected 4 arguments, found 3");
}

TEST_F(ArgCheck, Dtype) {
  ta_.tensor.dtype = int64();
  EXPECT_EQ(check("scale_add", scale_add_args(), kKilnErrorType),
            "scale_add: argument A: expected dtype float32, found int64");
}

TEST_F(ArgCheck, VectorDtypeIsNotScalarDtype) {
  ta_.tensor.dtype = DLDataType{kDLFloat, 32, 4};
  EXPECT_EQ(check("scale_add", scale_add_args(), kKilnErrorType),
            "scale_add: argument A: expected dtype float32, found float32x4");
}

TEST_F(ArgCheck, Ndim) {
  TensorView three_d(a_.data(), {4, 2, 4}, float32());
  PackedArgs args;
  args.tensor(&three_d.tensor).tensor(&tb_.tensor).floating(2.0).tensor(&tc_.tensor);
  EXPECT_EQ(check("scale_add", args), "scale_add: argument A: expected ndim 2, found 3");
}

TEST_F(ArgCheck, FixedExtent) {
  ta_.shape[0] = 5;
  EXPECT_EQ(check("scale_add", scale_add_args()),
            "scale_add: argument A: dimension 0: expected 4, found 5");
}

TEST_F(ArgCheck, SymbolicExtentBoundByEarlierArgument) {
  ta_.shape[1] = 64;
  tb_.shape[1] = 65;
  EXPECT_EQ(check("scale_add", scale_add_args()),
            "scale_add: argument B: dimension 1 is n = 64 (bound by argument A), found 65");
}

TEST_F(ArgCheck, SymbolicExtentBindsPerCall) {
  // n is bound afresh by every call: 8 here, 2 in a second call.
  EXPECT_EQ(check("scale_add", scale_add_args()), "");
  ta_.shape[1] = tb_.shape[1] = tc_.shape[1] = 2;
  EXPECT_EQ(check("scale_add", scale_add_args()), "");
}

TEST_F(ArgCheck, NegativeExtent) {
  ta_.shape[1] = -3;
  EXPECT_EQ(check("scale_add", scale_add_args()),
            "scale_add: argument A: dimension 1 has negative extent -3");
}

TEST_F(ArgCheck, NullData) {
  tc_.tensor.data = nullptr;
  EXPECT_EQ(check("scale_add", scale_add_args()), "scale_add: argument C: data pointer is NULL");
}

TEST_F(ArgCheck, Misaligned) {
  tc_.tensor.data = c_.data() + 1;
  std::string message = check("scale_add", scale_add_args());
  EXPECT_EQ(message.rfind("scale_add: argument C: data pointer 0x", 0), 0u) << message;
  EXPECT_NE(message.find(" is not aligned to 64 bytes"), std::string::npos) << message;
}

TEST_F(ArgCheck, ByteOffsetThatBreaksAlignment) {
  tc_.tensor.byte_offset = 4;
  std::string message = check("scale_add", scale_add_args());
  EXPECT_NE(message.find(" + byte_offset 4 is not aligned to 64 bytes"), std::string::npos)
      << message;
}

TEST_F(ArgCheck, ByteOffsetThatKeepsAlignment) {
  AlignedBuffer<float> wide(4 * 8 + 16);
  TensorView tc(wide.data(), {4, 8}, float32());
  tc.tensor.byte_offset = 64;
  PackedArgs args;
  args.tensor(&ta_.tensor).tensor(&tb_.tensor).floating(2.0).tensor(&tc.tensor);
  EXPECT_EQ(check("scale_add", args), "");
}

TEST_F(ArgCheck, NonCompactStrides) {
  ta_.shape = {4, 4};
  tb_.shape = {4, 4};
  tc_.shape = {4, 4};
  ta_.set_strides({1, 4});
  EXPECT_EQ(check("scale_add", scale_add_args()),
            "scale_add: argument A: expected a compact row-major tensor, found strides (1, 4) "
            "for shape (4, 4)");
}

TEST_F(ArgCheck, ExplicitCompactStridesAccepted) {
  ta_.set_strides({8, 1});
  EXPECT_EQ(check("scale_add", scale_add_args()), "");
}

TEST_F(ArgCheck, StrideOfUnitDimensionIsFree) {
  TensorView a(a_.data(), {4, 1}, float32()), b(b_.data(), {4, 1}, float32()),
      c(c_.data(), {4, 1}, float32());
  a.set_strides({1, 99});
  PackedArgs args;
  args.tensor(&a.tensor).tensor(&b.tensor).floating(2.0).tensor(&c.tensor);
  EXPECT_EQ(check("scale_add", args), "");
}

TEST_F(ArgCheck, Device) {
  ta_.tensor.device = DLDevice{kDLCUDA, 0};
  EXPECT_EQ(check("scale_add", scale_add_args()),
            "scale_add: argument A: device: expected cpu, found cuda:0");
}

TEST_F(ArgCheck, PinnedHostMemoryCountsAsCpu) {
  ta_.tensor.device = DLDevice{kDLCUDAHost, 0};
  EXPECT_EQ(check("scale_add", scale_add_args()), "");
}

TEST_F(ArgCheck, ScalarTypeMismatch) {
  PackedArgs args;
  args.tensor(&ta_.tensor).tensor(&tb_.tensor).integer(2).tensor(&tc_.tensor);
  EXPECT_EQ(check("scale_add", args, kKilnErrorType),
            "scale_add: argument alpha: expected a float32 scalar, found an int scalar (type "
            "code 0)");
}

TEST_F(ArgCheck, ScalarWhereTensorExpected) {
  PackedArgs args;
  args.floating(1.0).tensor(&tb_.tensor).floating(2.0).tensor(&tc_.tensor);
  EXPECT_EQ(check("scale_add", args, kKilnErrorType),
            "scale_add: argument A: expected a tensor (DLTensor*), found a float scalar (type "
            "code 2)");
}

TEST_F(ArgCheck, NullTensorHandle) {
  PackedArgs args;
  args.tensor(nullptr).tensor(&tb_.tensor).floating(2.0).tensor(&tc_.tensor);
  EXPECT_EQ(check("scale_add", args), "scale_add: argument A: DLTensor pointer is NULL");
  PackedArgs null_args;
  null_args.null().tensor(&tb_.tensor).floating(2.0).tensor(&tc_.tensor);
  EXPECT_EQ(check("scale_add", null_args, kKilnErrorType),
            "scale_add: argument A: expected a tensor (DLTensor*), found null (type code 4)");
}

TEST_F(ArgCheck, IntegerScalarRange) {
  std::vector<int64_t> out(3);
  TensorView t(out.data(), {3}, int64());
  PackedArgs args;
  args.tensor(&t.tensor).integer(5000000000).integer(1);
  EXPECT_EQ(check("fill", args), "fill: argument value: value 5000000000 does not fit in int32");
  PackedArgs bool_args;
  bool_args.tensor(&t.tensor).integer(1).integer(2);
  EXPECT_EQ(check("fill", bool_args), "fill: argument flag: value 2 does not fit in bool");
}

TEST_F(ArgCheck, EmptyTensorMayHaveNullData) {
  TensorView a(nullptr, {4, 0}, float32()), b(nullptr, {4, 0}, float32()),
      c(nullptr, {4, 0}, float32());
  PackedArgs args;
  args.tensor(&a.tensor).tensor(&b.tensor).floating(2.0).tensor(&c.tensor);
  EXPECT_EQ(check("scale_add", args), "");
}

// main's n is an int32 variable: a tensor of 3e9 elements (described, never allocated) would
// make the kernel's indices wrap, so the call is refused before it runs.
TEST_F(ArgCheck, SymbolicDimensionOutOfItsDtype) {
  const int64_t huge = 3000000000;
  TensorView a(a_.data(), {huge}, float32()), b(b_.data(), {huge}, float32()),
      c(c_.data(), {huge}, float32());
  PackedArgs args;
  args.tensor(&a.tensor).tensor(&b.tensor).tensor(&c.tensor);
  KilnFunctionHandle main_function = nullptr;
  ASSERT_EQ(KilnModuleGetFunction(module_, "main", &main_function), 0);
  EXPECT_EQ(KilnFuncCall(main_function, args.values.data(), args.codes.data(), args.size()),
            kKilnErrorValue);
  EXPECT_STREQ(KilnGetLastError(),
               "main: symbolic dimension n = 3000000000 of argument A does not fit int32 (the "
               "function computes with n as int32, whose values are -2147483648 to 2147483647)");
}

TEST_F(ArgCheck, SymbolicDimensionAtTheEndOfItsDtype) {
  const int64_t largest = INT32_MAX;
  TensorView a(a_.data(), {largest}, float32()), b(b_.data(), {largest}, float32()),
      c(c_.data(), {largest}, float32());
  PackedArgs args;
  args.tensor(&a.tensor).tensor(&b.tensor).tensor(&c.tensor);
  EXPECT_EQ(check("main", args), "");
}

TEST_F(ArgCheck, ElementCountOverflow) {
  // Described only: the check refuses the shape before anything could touch memory.
  const int64_t big = int64_t{1} << 40;
  TensorView x(a_.data(), {big, big}, float32());
  TensorView out(c_.data(), {big}, float32());
  PackedArgs row_args;
  row_args.tensor(&x.tensor).tensor(&out.tensor);
  EXPECT_EQ(check("row_sums", row_args),
            "row_sums: argument X: the shape (1099511627776, 1099511627776) has more than 2^63 - "
            "1 elements");
}

TEST_F(ArgCheck, ByteExtentOverflow) {
  // Two rows INT64_MAX / 2 elements apart: the element count is small, the distance in bytes is
  // not.
  TensorView x(a_.data(), {2, 3}, float32());
  x.set_strides({INT64_MAX / 2, 1});
  std::vector<float> sums(2);
  TensorView out(sums.data(), {2}, float32());
  PackedArgs args;
  args.tensor(&x.tensor).tensor(&out.tensor);
  std::string message = check("row_sums", args);
  EXPECT_EQ(message.rfind("row_sums: argument X: the shape (2, 3) with strides "
                          "(4611686018427387903, 1) reaches past the 64-bit address space from 0x",
                          0),
            0u)
      << message;
}

TEST_F(ArgCheck, NegativeStrideBelowAddressZero) {
  // A row stride that walks below address 0 describes no memory.
  TensorView x(a_.data(), {3, 2}, float32());
  x.set_strides({-(INT64_MAX / 8), 1});
  std::vector<float> sums(3);
  TensorView out(sums.data(), {3}, float32());
  PackedArgs args;
  args.tensor(&x.tensor).tensor(&out.tensor);
  std::string message = check("row_sums", args);
  EXPECT_NE(message.find("reaches past the 64-bit address space"), std::string::npos) << message;
}

TEST_F(ArgCheck, NullArgumentArrays) {
  EXPECT_NE(KilnFuncCheckArgs(spec("scale_add"), nullptr, nullptr, 4), 0);
  EXPECT_STREQ(KilnGetLastError(), "scale_add: the argument or type code array is NULL");
}

// A hand-written spec: out(X: float32[m, n] with strides [s, 1], Y: float32[m, n] with strides
// [s, 1], Z: bool[m]), for stride binding and bool spellings.
class HandSpec : public ::testing::Test {
 protected:
  HandSpec() {
    const int64_t m = -1, n = -2, s = -3;
    shape_ = {m, n};
    strides_ = {s, 1};
    bool_shape_ = {m};
    args_[0] = KilnArgSpec{
        "X", kKilnArgTensor, float32(), 2, shape_.data(), strides_.data(), kDLCPU, 1, 0, 0};
    args_[1] = KilnArgSpec{
        "Y", kKilnArgTensor, float32(), 2, shape_.data(), strides_.data(), kDLCPU, 1, 0, 0};
    args_[2] = KilnArgSpec{"Z",
                           kKilnArgTensor,
                           DLDataType{KILN_DL_BOOL, 8, 1},
                           1,
                           bool_shape_.data(),
                           nullptr,
                           kDLCPU,
                           1,
                           1,
                           0};
    spec_ = KilnFuncSpec{"strided", "kiln_strided", 3, args_, 3, names_, dtypes_, max_};
  }

  std::string check(DLTensor* x, DLTensor* y, DLTensor* z) {
    PackedArgs args;
    args.tensor(x).tensor(y).tensor(z);
    if (KilnFuncCheckArgs(&spec_, args.values.data(), args.codes.data(), args.size()) == 0) {
      return "";
    }
    return KilnGetLastError();
  }

  std::vector<int64_t> shape_, strides_, bool_shape_;
  const char* names_[3] = {"m", "n", "s"};
  DLDataType dtypes_[3] = {{kDLInt, 64, 1}, {kDLInt, 64, 1}, {kDLInt, 16, 1}};
  // n is limited below its dtype: the function's index arithmetic supports no more.
  int64_t max_[3] = {INT64_MAX, 1000, INT64_MAX};
  KilnArgSpec args_[3];
  KilnFuncSpec spec_;
  float data_[64] = {};
  uint8_t flags_[8] = {};
};

TEST_F(HandSpec, SymbolicStrideBoundByEarlierArgument) {
  TensorView x(data_, {2, 3}, float32()), y(data_, {2, 3}, float32()), z(flags_, {2}, {});
  z.tensor.dtype = DLDataType{KILN_DL_BOOL, 8, 1};
  x.set_strides({8, 1});
  y.set_strides({4, 1});
  EXPECT_EQ(check(&x.tensor, &y.tensor, &z.tensor),
            "strided: argument Y: stride 0 is s = 8 (bound by argument X), found 4");
}

TEST_F(HandSpec, FixedStride) {
  TensorView x(data_, {2, 3}, float32()), y(data_, {2, 3}, float32()), z(flags_, {2}, {});
  z.tensor.dtype = DLDataType{KILN_DL_BOOL, 8, 1};
  x.set_strides({8, 2});
  EXPECT_EQ(check(&x.tensor, &y.tensor, &z.tensor),
            "strided: argument X: stride 1: expected 1, found 2");
}

TEST_F(HandSpec, NullStridesMeanCompactForExplicitSpec) {
  TensorView x(data_, {2, 3}, float32()), y(data_, {2, 3}, float32()), z(flags_, {2}, {});
  z.tensor.dtype = DLDataType{KILN_DL_BOOL, 8, 1};
  y.set_strides({3, 1});  // x has NULL strides: compact, so s = 3 from x
  EXPECT_EQ(check(&x.tensor, &y.tensor, &z.tensor), "");
}

TEST_F(HandSpec, SymbolicStrideOutOfItsDtype) {
  // s is an int16 variable; a row stride of 40000 does not fit. The shape is a hand-written
  // view: only 2 rows are described, and nothing is read.
  TensorView x(data_, {2, 3}, float32()), y(data_, {2, 3}, float32()), z(flags_, {2}, {});
  z.tensor.dtype = DLDataType{KILN_DL_BOOL, 8, 1};
  x.set_strides({40000, 1});
  EXPECT_EQ(check(&x.tensor, &y.tensor, &z.tensor),
            "strided: symbolic stride s = 40000 of argument X does not fit int16 (the function "
            "computes with s as int16, whose values are -32768 to 32767)");
}

TEST_F(HandSpec, SymbolicDimensionAboveWhatTheFunctionSupports) {
  // The shape is described only: nothing is read.
  TensorView x(data_, {2, 1001}, float32()), y(data_, {2, 1001}, float32()), z(flags_, {2}, {});
  z.tensor.dtype = DLDataType{KILN_DL_BOOL, 8, 1};
  x.set_strides({1001, 1});
  y.set_strides({1001, 1});
  EXPECT_EQ(check(&x.tensor, &y.tensor, &z.tensor),
            "strided: symbolic dimension n = 1001 of argument X is larger than 1000, the largest "
            "the function supports: its int64 index arithmetic (e.g. a loop tiled past n) would "
            "overflow; declare the dimension as int64 for such sizes");
  TensorView x2(data_, {2, 1000}, float32()), y2(data_, {2, 1000}, float32());
  x2.set_strides({1000, 1});
  y2.set_strides({1000, 1});
  EXPECT_EQ(check(&x2.tensor, &y2.tensor, &z.tensor), "");
}

TEST_F(HandSpec, BoolSpelledAsUInt1) {
  TensorView x(data_, {2, 3}, float32()), y(data_, {2, 3}, float32()), z(flags_, {2}, {});
  z.tensor.dtype = DLDataType{kDLUInt, 1, 1};
  EXPECT_EQ(check(&x.tensor, &y.tensor, &z.tensor), "");
  z.tensor.dtype = DLDataType{kDLUInt, 8, 1};
  EXPECT_EQ(check(&x.tensor, &y.tensor, &z.tensor),
            "strided: argument Z: expected dtype bool, found uint8");
}

}  // namespace
}  // namespace testing
}  // namespace runtime
}  // namespace kiln
