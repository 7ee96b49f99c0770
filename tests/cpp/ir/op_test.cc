// Correctness and error tests of the expression builders (kiln/ir/op.h): promotion, folding,
// and the messages of type errors.
#include <gtest/gtest.h>

#include <functional>

#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::ir {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DataType, ParsesAndPrints) {
  EXPECT_EQ(DataType::parse("float32"), DataType::float32());
  EXPECT_EQ(DataType::parse("int8x4"), DataType::int_(8, 4));
  EXPECT_EQ(DataType::parse("bfloat16").str(), "bfloat16");
  EXPECT_EQ(DataType::parse("bool").str(), "bool");
  EXPECT_EQ(DataType::parse("uint64x2").str(), "uint64x2");
  EXPECT_EQ(DataType::parse("float16").bytes(), 2);
}

TEST(DataType, RejectsUnknownNames) {
  EXPECT_NE(error_of([] {
              DataType::parse("float31", "te.placeholder");
            }).find("te.placeholder: 'float31' is not a dtype"),
            std::string::npos);
  EXPECT_THROW(DataType::parse("int7"), Error);
  EXPECT_THROW(DataType::parse("floatx"), Error);
}

TEST(Promotion, IntWithFloatCastsTheInt) {
  Ref<Var> i = make_var("i");
  Ref<Var> f = make_var("f", DataType::float32());
  Expr e = i + f;
  EXPECT_EQ(e->dtype, DataType::float32());
  const auto* a = e.as<Add>();
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->a.is<Cast>());
}

TEST(Promotion, WidensIntegers) {
  Ref<Var> a = make_var("a", DataType::int32());
  Ref<Var> b = make_var("b", DataType::int64());
  EXPECT_EQ((a + b)->dtype, DataType::int64());
}

TEST(Promotion, RejectsSignedWithUnsignedOfTheSameWidth) {
  Ref<Var> a = make_var("a", DataType::int32());
  Ref<Var> b = make_var("b", DataType::uint(32));
  std::string msg = error_of([&] { add(a, b); });
  EXPECT_NE(msg.find("+: operands of dtype int32 and uint32"), std::string::npos) << msg;
  EXPECT_EQ(add(a, make_var("c", DataType::uint(8)))->dtype, DataType::int32());
}

TEST(Promotion, RejectsFloat16WithBFloat16) {
  EXPECT_THROW(add(make_var("a", DataType::float_(16)), make_var("b", DataType::bfloat16())),
               Error);
}

TEST(Promotion, LiteralsAdoptTheOtherType) {
  Ref<Var> x = make_var("x", DataType::int64());
  EXPECT_EQ((x + 1)->dtype, DataType::int64());
  Ref<Var> h = make_var("h", DataType::float_(16));
  EXPECT_EQ(add(h, literal_like(0.5, h))->dtype, DataType::float_(16));
  EXPECT_EQ(mul(make_var("i"), literal_like(0.5, make_var("j")))->dtype, DataType::float32());
}

TEST(Promotion, BroadcastsScalarsToVectors) {
  Expr v = make_var("v", DataType::float32().with_lanes(8));
  Expr e = v + make_var("s", DataType::float32());
  EXPECT_EQ(e->dtype, DataType::float_(32, 8));
  EXPECT_THROW(add(v, make_var("w", DataType::float_(32, 4))), Error);
}

TEST(Folding, WrapsUnsignedAndNarrowIntegersToTheirWidth) {
  EXPECT_EQ(*as_const_int(make_const(DataType::uint(8), int64_t{250}) + 10), 4);
  EXPECT_EQ(*as_const_int(make_const(DataType::int_(8), int64_t{100}) + 100), -56);
  EXPECT_EQ(*as_const_int(make_const(DataType::uint(32), int64_t{2}) - 7), 4294967291LL);
}

TEST(Folding, RefusesSignedIndexOverflow) {
  Expr big = make_const(DataType::int32(), int64_t{2147483647});
  try {
    (void)(big + 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find("constant folding: 2147483647 + 1 = 2147483648 does not "
                                         "fit int32 (its range is [-2147483648, 2147483647])"),
              std::string::npos)
        << e.what();
  }
  Expr huge = make_const(DataType::int64(), int64_t{1} << 62);
  EXPECT_THROW((void)(huge * 4), Error);
  EXPECT_EQ(*as_const_int(make_const(DataType::int64(), int64_t{65536}) * 65536), 4294967296LL);
}

TEST(Constants, RefuseValuesOutsideTheirDtype) {
  EXPECT_THROW(make_const(DataType::int_(8), int64_t{300}), Error);
  EXPECT_THROW(make_const(DataType::uint(8), int64_t{-1}), Error);
  EXPECT_THROW(make_const(DataType::int32(), int64_t{1} << 31), Error);
  EXPECT_THROW(make_const(DataType::int32(), 1e10), Error);
  EXPECT_EQ(*as_const_int(make_const(DataType::int_(8), int64_t{-128})), -128);
  EXPECT_EQ(*as_const_int(make_const(DataType::uint(8), int64_t{255})), 255);
  Expr x = make_var("x", DataType::int_(8));
  try {
    (void)(x * 300);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the literal 300 does not fit int8, the dtype of the "
                                         "other operand (its range is [-128, 127])"),
              std::string::npos)
        << e.what();
  }
}

TEST(Folding, FloorDivisionOfNegatives) {
  EXPECT_EQ(*as_const_int(floordiv(int32_const(-7), int32_const(2))), -4);
  EXPECT_EQ(*as_const_int(floormod(int32_const(-7), int32_const(2))), 1);
  EXPECT_EQ(*as_const_int(truncdiv(int32_const(-7), int32_const(2))), -3);
  EXPECT_EQ(*as_const_int(truncmod(int32_const(-7), int32_const(2))), -1);
  EXPECT_EQ(*as_const_int(floormod(int32_const(7), int32_const(-2))), -1);
}

TEST(Folding, LeavesDivisionByZeroAlone) {
  Expr e = floordiv(int32_const(1), int32_const(0));
  EXPECT_TRUE(e.is<FloorDiv>());
}

TEST(Builders, IntegerTrueDivisionIsATypeError) {
  std::string msg = error_of([] { div(make_var("a"), make_var("b")); });
  EXPECT_NE(msg.find("use // (floordiv) or truncdiv"), std::string::npos) << msg;
}

TEST(Builders, MathWantsFloats) {
  std::string msg = error_of([] { call(Builtin::Exp, {make_var("i")}); });
  EXPECT_NE(msg.find("exp: expected a float expression, found dtype int32"), std::string::npos)
      << msg;
  EXPECT_EQ(call(Builtin::Exp, {make_var("x", DataType::float32())})->dtype, DataType::float32());
}

TEST(Builders, BufferLoadChecksArityAndIndexType) {
  Ref<Buffer> a = decl_buffer({int32_const(4), int32_const(8)}, DataType::float32(), "A");
  std::string msg = error_of([&] { buffer_load(a, {make_var("i")}); });
  EXPECT_NE(msg.find("buffer A has 2 dimensions but 1 index was given"), std::string::npos) << msg;
  msg = error_of([&] { buffer_load(a, {make_var("i"), make_var("f", DataType::float32())}); });
  EXPECT_NE(msg.find("index 1 of buffer A must be an integer expression, found dtype float32"),
            std::string::npos)
      << msg;
  try {
    buffer_load(a, {make_var("i")});
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIndex);
  }
}

TEST(Builders, SelectFoldsConstantConditions) {
  Expr x = make_var("x");
  Expr y = make_var("y");
  EXPECT_TRUE(select(bool_const(true), x, y).same_as(x));
  EXPECT_TRUE(if_then_else(bool_const(false), x, y).same_as(y));
}

}  // namespace
}  // namespace kiln::ir
