// JIT-compiled arithmetic checked against C++ references: floor division, integer wrap, casts,
// float16 and bfloat16, float min/max with NaN, math and bit builtins, extern calls and LLVM
// intrinsics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "codegen_test_util.h"

namespace kiln::codegen::testing {
namespace {

// out[i] = f(x[i], y[i]) for i < n, n from x's shape.
Ref<PrimFunc> binary_func(const std::string& symbol, DataType in, DataType out,
                          const std::function<Expr(Expr, Expr)>& f) {
  Ref<Var> n = make_var("n");
  Ref<Buffer> x = buffer_1d("x", in, n);
  Ref<Buffer> y = buffer_1d("y", in, n);
  Ref<Buffer> o = buffer_1d("out", out, n);
  Ref<Var> i = make_var("i");
  Stmt loop = serial(i, n, buffer_store(o, f(buffer_load(x, {i}), buffer_load(y, {i})), {i}));
  return packed_func(symbol, {x, y, o}, bind_shape(n, 0, 0, loop));
}

// Runs a binary_func over the pairs (x[k], y[k]).
template <class TI, class TO>
std::vector<TO> run_binary(const Ref<PrimFunc>& func, DataType in, DataType out,
                           const std::vector<TI>& x, const std::vector<TI>& y,
                           const std::map<std::string, void*>& symbols = {},
                           const Target& target = host_target()) {
  auto module = compile_jit({func}, target, "", symbols);
  Tensor<TI> tx(x.size(), in), ty(y.size(), in);
  Tensor<TO> to(x.size(), out);
  for (size_t k = 0; k < x.size(); ++k) {
    tx[k] = x[k];
    ty[k] = y[k];
  }
  std::string symbol = module->function_symbols()[0];
  EXPECT_EQ(
      call_packed(*module, symbol, {tensor_arg(tx.dl()), tensor_arg(ty.dl()), tensor_arg(to.dl())}),
      0);
  std::vector<TO> result(x.size());
  for (size_t k = 0; k < x.size(); ++k) result[k] = to[k];
  return result;
}

int64_t floordiv_ref(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floormod_ref(int64_t a, int64_t b) {
  return a - floordiv_ref(a, b) * b;
}

TEST(JitArith, FloorDivAndFloorModMatchTheReference) {
  std::vector<int32_t> x, y;
  for (int a = -13; a <= 13; ++a) {
    for (int b : {-7, -4, -3, -1, 1, 2, 3, 4, 7}) {
      x.push_back(a);
      y.push_back(b);
    }
  }
  DataType t = DataType::int32();
  auto div_var = run_binary<int32_t, int32_t>(
      binary_func("fdiv", t, t, [](Expr a, Expr b) { return floordiv(a, b); }), t, t, x, y);
  auto mod_var = run_binary<int32_t, int32_t>(
      binary_func("fmod", t, t, [](Expr a, Expr b) { return floormod(a, b); }), t, t, x, y);
  for (size_t k = 0; k < x.size(); ++k) {
    EXPECT_EQ(div_var[k], floordiv_ref(x[k], y[k])) << x[k] << " // " << y[k];
    EXPECT_EQ(mod_var[k], floormod_ref(x[k], y[k])) << x[k] << " % " << y[k];
  }
  // Constant divisors take the fast paths (shift, mask, multiply): same results.
  for (int c : {-3, 1, 3, 4, 8, 7}) {
    auto div_c = run_binary<int32_t, int32_t>(
        binary_func("fdivc", t, t, [c](Expr a, Expr) { return floordiv(a, int32_const(c)); }), t, t,
        x, y);
    auto mod_c = run_binary<int32_t, int32_t>(
        binary_func("fmodc", t, t, [c](Expr a, Expr) { return floormod(a, int32_const(c)); }), t, t,
        x, y);
    for (size_t k = 0; k < x.size(); ++k) {
      EXPECT_EQ(div_c[k], floordiv_ref(x[k], c)) << x[k] << " // " << c;
      EXPECT_EQ(mod_c[k], floormod_ref(x[k], c)) << x[k] << " % " << c;
    }
  }
}

TEST(JitArith, TruncatedDivisionIsC) {
  std::vector<int32_t> x = {7, -7, 7, -7, 0, -1};
  std::vector<int32_t> y = {2, 2, -2, -2, 5, 3};
  DataType t = DataType::int32();
  auto q = run_binary<int32_t, int32_t>(
      binary_func("tdiv", t, t, [](Expr a, Expr b) { return truncdiv(a, b); }), t, t, x, y);
  auto r = run_binary<int32_t, int32_t>(
      binary_func("tmod", t, t, [](Expr a, Expr b) { return truncmod(a, b); }), t, t, x, y);
  for (size_t k = 0; k < x.size(); ++k) {
    EXPECT_EQ(q[k], x[k] / y[k]);
    EXPECT_EQ(r[k], x[k] % y[k]);
  }
}

TEST(JitArith, NarrowIntegersWrap) {
  DataType i8 = DataType::int_(8), i16 = DataType::int_(16), u8 = DataType::uint(8);
  auto add8 =
      run_binary<int8_t, int8_t>(binary_func("add8", i8, i8, [](Expr a, Expr b) { return a + b; }),
                                 i8, i8, {127, -128, 100}, {1, -1, 100});
  EXPECT_EQ(add8, (std::vector<int8_t>{-128, 127, -56}));
  auto mul16 = run_binary<int16_t, int16_t>(
      binary_func("mul16", i16, i16, [](Expr a, Expr b) { return a * b; }), i16, i16,
      {300, -300, 256}, {300, 300, 256});
  EXPECT_EQ(mul16, (std::vector<int16_t>{static_cast<int16_t>(90000 - 65536 * 1),
                                         static_cast<int16_t>(-90000 + 65536 * 1), 0}));
  auto sub_u8 = run_binary<uint8_t, uint8_t>(
      binary_func("subu8", u8, u8, [](Expr a, Expr b) { return a - b; }), u8, u8, {0, 10, 255},
      {1, 20, 255});
  EXPECT_EQ(sub_u8, (std::vector<uint8_t>{255, 246, 0}));
  // Unsigned division and comparison use the unsigned value.
  DataType u32 = DataType::uint(32);
  auto div_u32 = run_binary<uint32_t, uint32_t>(
      binary_func("divu32", u32, u32, [](Expr a, Expr b) { return floordiv(a, b); }), u32, u32,
      {0xFFFFFFF0u, 7}, {16, 2});
  EXPECT_EQ(div_u32, (std::vector<uint32_t>{0x0FFFFFFFu, 3}));
  auto lt_u32 = run_binary<uint32_t, uint32_t>(
      binary_func("ltu32", u32, u32, [u32](Expr a, Expr b) { return cast(u32, lt(a, b)); }), u32,
      u32, {0xFFFFFFF0u, 1}, {16, 2});
  EXPECT_EQ(lt_u32, (std::vector<uint32_t>{0, 1}));
}

TEST(JitArith, CastsFollowTheIrSemantics) {
  DataType f32 = DataType::float32(), i32 = DataType::int32();
  // float -> int truncates toward zero.
  auto to_int = run_binary<float, int32_t>(
      binary_func("f2i", f32, i32, [i32](Expr a, Expr) { return cast(i32, a); }), f32, i32,
      {-2.7f, 2.7f, -0.5f, 1e6f}, {0, 0, 0, 0});
  EXPECT_EQ(to_int, (std::vector<int32_t>{-2, 2, 0, 1000000}));
  // int -> narrower int wraps; int -> uint8 keeps the low byte; bool -> int is 0/1.
  auto narrow = run_binary<int32_t, int32_t>(
      binary_func("narrow", i32, i32,
                  [i32](Expr a, Expr) {
                    return cast(i32, cast(DataType::int_(8), a)) * 1000 +
                           cast(i32, cast(DataType::uint(8), a)) +
                           cast(i32, cast(DataType::bool_(), a)) * 100000;
                  }),
      i32, i32, {300, -1, 0}, {0, 0, 0});
  EXPECT_EQ(narrow, (std::vector<int32_t>{44 * 1000 + 44 + 100000, -1000 + 255 + 100000, 0}));
  // float -> bool is "!= 0" (NaN is true).
  auto to_bool = run_binary<float, int32_t>(
      binary_func("f2b", f32, i32,
                  [i32](Expr a, Expr) { return cast(i32, cast(DataType::bool_(), a)); }),
      f32, i32, {0.0f, -0.0f, 0.25f, std::nanf("")}, {0, 0, 0, 0});
  EXPECT_EQ(to_bool, (std::vector<int32_t>{0, 0, 1, 1}));
  // Widening float.
  auto widen = run_binary<float, double>(
      binary_func("f2d", f32, DataType::float64(),
                  [](Expr a, Expr) { return cast(DataType::float64(), a); }),
      f32, DataType::float64(), {0.1f}, {0.0f});
  EXPECT_EQ(widen[0], static_cast<double>(0.1f));
}

TEST(JitArith, FloatMinMaxIgnoreNaN) {
  DataType f32 = DataType::float32();
  float nan = std::numeric_limits<float>::quiet_NaN();
  auto mn = run_binary<float, float>(
      binary_func("fmin", f32, f32, [](Expr a, Expr b) { return min(a, b); }), f32, f32,
      {nan, 1.0f, -3.0f}, {1.0f, nan, 2.0f});
  auto mx = run_binary<float, float>(
      binary_func("fmax", f32, f32, [](Expr a, Expr b) { return max(a, b); }), f32, f32,
      {nan, 1.0f, -3.0f}, {1.0f, nan, 2.0f});
  EXPECT_EQ(mn, (std::vector<float>{1.0f, 1.0f, -3.0f}));
  EXPECT_EQ(mx, (std::vector<float>{1.0f, 1.0f, 2.0f}));
}

TEST(JitArith, Float16ComputesInFloat32AndRoundsAfterEachOperation) {
  DataType f16 = DataType::float_(16);
  std::vector<_Float16> x, y;
  for (int k = 0; k < 64; ++k) {
    x.push_back(static_cast<_Float16>(0.37f * static_cast<float>(k) - 7.1f));
    y.push_back(static_cast<_Float16>(1.0f / (static_cast<float>(k) + 0.3f)));
  }
  // (x * y + x) / y, with float16 intermediates. Without -fp-contract=off a CPU with float16
  // FMAs (AVX512-FP16) may fuse x * y + x and round once.
  Target strict = host_target();
  strict.fp_contract = false;
  auto out = run_binary<_Float16, _Float16>(
      binary_func("f16", f16, f16, [](Expr a, Expr b) { return div(a * b + a, b); }), f16, f16, x,
      y, {}, strict);
  for (size_t k = 0; k < x.size(); ++k) {
    float xf = static_cast<float>(x[k]), yf = static_cast<float>(y[k]);
    _Float16 prod = static_cast<_Float16>(xf * yf);
    _Float16 sum = static_cast<_Float16>(static_cast<float>(prod) + xf);
    _Float16 expected = static_cast<_Float16>(static_cast<float>(sum) / yf);
    EXPECT_EQ(static_cast<float>(out[k]), static_cast<float>(expected)) << k;
  }
}

uint16_t bf16_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}
float bf16_value(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST(JitArith, BFloat16RoundsToNearestEvenAndKeepsNaN) {
  DataType bf = DataType::bfloat16();
  std::vector<uint16_t> x, y;
  for (float v : {1.0f, 1.00390625f, 3.14159f, -2.5f, 65504.0f, 1e-3f}) x.push_back(bf16_bits(v));
  for (float v : {1.00390625f, 1.0f, 2.71828f, 0.125f, 2.0f, 3e-3f}) y.push_back(bf16_bits(v));
  x.push_back(bf16_bits(std::nanf("")));
  y.push_back(bf16_bits(1.0f));
  auto out = run_binary<uint16_t, uint16_t>(
      binary_func("bf16", bf, bf, [](Expr a, Expr b) { return a * b + b; }), bf, bf, x, y);
  for (size_t k = 0; k < x.size(); ++k) {
    float prod = bf16_value(bf16_bits(bf16_value(x[k]) * bf16_value(y[k])));
    uint16_t expected = bf16_bits(prod + bf16_value(y[k]));
    EXPECT_EQ(out[k], expected) << k;
  }
  EXPECT_TRUE(std::isnan(bf16_value(out.back())));
  // Ties go to even: 1 + 2^-8 is halfway between two bfloat16 values.
  auto tie = run_binary<float, uint16_t>(
      binary_func("to_bf16", DataType::float32(), bf, [bf](Expr a, Expr) { return cast(bf, a); }),
      DataType::float32(), bf, {1.00390625f, 1.01171875f, -0.0f}, {0, 0, 0});
  EXPECT_EQ(tie, (std::vector<uint16_t>{0x3f80, 0x3f82, 0x8000}));
}

TEST(JitArith, MathBuiltins) {
  DataType f32 = DataType::float32();
  std::vector<float> x = {-2.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.7f};
  auto run = [&](const char* symbol, Builtin op) {
    return run_binary<float, float>(
        binary_func(symbol, f32, f32, [op](Expr a, Expr) { return call(op, {a}); }), f32, f32, x,
        x);
  };
  auto round = run("round", Builtin::Round);
  EXPECT_EQ(round, (std::vector<float>{-2.0f, -0.0f, 0.0f, 2.0f, 2.0f, 4.0f}));
  auto floor = run("floor", Builtin::Floor);
  auto ceil = run("ceil", Builtin::Ceil);
  auto trunc = run("trunc", Builtin::Trunc);
  auto exp = run("exp", Builtin::Exp);
  auto tanh = run("tanh", Builtin::Tanh);
  auto erf = run("erf", Builtin::Erf);
  auto sigmoid = run("sigmoid", Builtin::Sigmoid);
  auto abs = run("abs", Builtin::Abs);
  for (size_t k = 0; k < x.size(); ++k) {
    EXPECT_EQ(floor[k], std::floor(x[k]));
    EXPECT_EQ(ceil[k], std::ceil(x[k]));
    EXPECT_EQ(trunc[k], std::trunc(x[k]));
    EXPECT_EQ(exp[k], std::exp(x[k]));
    EXPECT_EQ(tanh[k], std::tanh(x[k]));
    EXPECT_EQ(erf[k], std::erf(x[k]));
    EXPECT_FLOAT_EQ(sigmoid[k], 1.0f / (1.0f + std::exp(-x[k])));
    EXPECT_EQ(abs[k], std::fabs(x[k]));
  }
  auto pow = run_binary<float, float>(binary_func("pow", f32, f32,
                                                  [](Expr a, Expr b) {
                                                    return call(Builtin::Pow, {a, b});
                                                  }),
                                      f32, f32, {2.0f, 9.0f}, {10.0f, 0.5f});
  EXPECT_EQ(pow, (std::vector<float>{1024.0f, 3.0f}));
}

TEST(JitArith, VectorMathWithALibmFunctionRunsLaneByLane) {
  // out[ramp] = tanh(x[ramp]) on 4 lanes: libm has no vector entry point.
  Ref<Buffer> x = buffer_1d("x", DataType::float32(), int32_const(8));
  Ref<Buffer> out = buffer_1d("out", DataType::float32(), int32_const(8));
  Ref<Var> j = make_var("j");
  Expr index = ramp(j * 4, int32_const(1), 4);
  Stmt loop = serial(j, int32_const(2),
                     buffer_store(out, call(Builtin::Tanh, {buffer_load(x, {index})}), {index}));
  auto module = jit(packed_func("vtanh", {x, out}, loop));
  Tensor<float> tx(8, DataType::float32()), tout(8, DataType::float32());
  for (int k = 0; k < 8; ++k) tx[k] = 0.3f * static_cast<float>(k) - 1.0f;
  ASSERT_EQ(call_packed(*module, "vtanh", {tensor_arg(tx.dl()), tensor_arg(tout.dl())}), 0);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(tout[k], std::tanh(tx[k])) << k;
}

TEST(JitArith, BitBuiltins) {
  DataType i32 = DataType::int32(), u32 = DataType::uint(32);
  auto bits = run_binary<int32_t, int32_t>(
      binary_func("bits", i32, i32,
                  [](Expr a, Expr b) {
                    return call(Builtin::BitwiseXor,
                                {call(Builtin::ShiftLeft, {a, b}), call(Builtin::Popcount, {a})}) +
                           call(Builtin::ShiftRight, {a, b}) * 1000;
                  }),
      i32, i32, {-16, 5}, {2, 1});
  EXPECT_EQ(bits[0], (-64 ^ 28) + (-4) * 1000);  // -16 << 2, popcount 28, arithmetic >> 2
  EXPECT_EQ(bits[1], ((5 << 1) ^ 2) + (5 >> 1) * 1000);
  auto logical =
      run_binary<uint32_t, uint32_t>(binary_func("lshr", u32, u32,
                                                 [](Expr a, Expr b) {
                                                   return call(Builtin::ShiftRight, {a, b});
                                                 }),
                                     u32, u32, {0x80000000u}, {4});
  EXPECT_EQ(logical[0], 0x08000000u);
  auto reinterpret = run_binary<float, int32_t>(
      binary_func("reinterpret", DataType::float32(), i32,
                  [i32](Expr a, Expr) { return call(i32, Builtin::Reinterpret, {a}); }),
      DataType::float32(), i32, {1.0f}, {0.0f});
  EXPECT_EQ(reinterpret[0], 0x3f800000);
}

extern "C" float kiln_test_scale(float x, int32_t k) {
  return x * static_cast<float>(k);
}

TEST(JitArith, CallExternCallsAHostFunctionByName) {
  DataType f32 = DataType::float32();
  auto out = run_binary<float, float>(
      binary_func("ext", f32, f32,
                  [f32](Expr a, Expr) {
                    return call(f32, Builtin::CallPureExtern,
                                {make<StringImm>("kiln_test_scale"), a, int32_const(3)});
                  }),
      f32, f32, {1.5f, -2.0f}, {0, 0},
      {{"kiln_test_scale", reinterpret_cast<void*>(&kiln_test_scale)}});
  EXPECT_EQ(out, (std::vector<float>{4.5f, -6.0f}));
}

extern "C" float kiln_test_sum2(const float* values) {
  return values[0] + values[1];
}

TEST(JitArith, AddressOfPassesAPointerIntoABuffer) {
  // out[i] = kiln_test_sum2(&x[i]) for i < n - 1 (x[i] + x[i + 1]).
  Ref<Var> n = make_var("n");
  Ref<Buffer> x = buffer_1d("x", DataType::float32(), n);
  Ref<Buffer> out = buffer_1d("out", DataType::float32(), n);
  Ref<Var> i = make_var("i");
  Expr address = call(DataType::handle(), Builtin::AddressOf, {buffer_load(x, {i})});
  Expr sum =
      call(DataType::float32(), Builtin::CallExtern, {make<StringImm>("kiln_test_sum2"), address});
  Stmt loop = serial(i, n - 1, buffer_store(out, sum, {i}));
  auto module =
      compile_jit({packed_func("pairs", {x, out}, bind_shape(n, 0, 0, loop))}, host_target(), "",
                  {{"kiln_test_sum2", reinterpret_cast<void*>(&kiln_test_sum2)}});
  Tensor<float> tx(6, DataType::float32()), tout(6, DataType::float32());
  for (int k = 0; k < 6; ++k) tx[k] = static_cast<float>(k * k);
  ASSERT_EQ(call_packed(*module, "pairs", {tensor_arg(tx.dl()), tensor_arg(tout.dl())}), 0);
  for (int k = 0; k < 5; ++k) EXPECT_EQ(tout[k], static_cast<float>(k * k + (k + 1) * (k + 1)));
}

TEST(JitArith, CallLLVMPureIntrinLooksUpTheIntrinsic) {
  DataType f32 = DataType::float32();
  auto out = run_binary<float, float>(binary_func("fma", f32, f32,
                                                  [f32](Expr a, Expr b) {
                                                    return call(
                                                        f32, Builtin::CallLLVMPureIntrin,
                                                        {make<StringImm>("llvm.fma.f32"), a, b, a});
                                                  }),
                                      f32, f32, {2.0f, -1.0f}, {3.0f, 4.0f});
  EXPECT_EQ(out, (std::vector<float>{8.0f, -5.0f}));
}

TEST(JitArith, Vpdpbusd) {
  if (!host_target().has_feature("avx512vnni")) GTEST_SKIP() << "this CPU has no avx512vnni";
  // acc[16 x i32] += dot(u8 x 4, s8 x 4) per lane, through the x86 intrinsic.
  DataType i32x16 = DataType::int_(32, 16);
  Ref<Buffer> acc = buffer_1d("acc", DataType::int32(), int32_const(16));
  Ref<Buffer> a = buffer_1d("a", DataType::int32(), int32_const(16));
  Ref<Buffer> b = buffer_1d("b", DataType::int32(), int32_const(16));
  Expr index = ramp(int32_const(0), int32_const(1), 16);
  Expr dot = call(i32x16, Builtin::CallLLVMPureIntrin,
                  {make<StringImm>("llvm.x86.avx512.vpdpbusd.512"), buffer_load(acc, {index}),
                   buffer_load(a, {index}), buffer_load(b, {index})});
  auto module = jit(packed_func("vnni", {acc, a, b}, buffer_store(acc, dot, {index})));
  Tensor<int32_t> tacc(16, DataType::int32()), ta(16, DataType::int32()), tb(16, DataType::int32());
  for (int k = 0; k < 16; ++k) {
    tacc[k] = k;
    ta[k] = 0x01020304;                         // u8: 4, 3, 2, 1
    tb[k] = static_cast<int32_t>(0xff01ff01u);  // s8: 1, -1, 1, -1
  }
  ASSERT_EQ(call_packed(*module, "vnni",
                        {tensor_arg(tacc.dl()), tensor_arg(ta.dl()), tensor_arg(tb.dl())}),
            0);
  for (int k = 0; k < 16; ++k) EXPECT_EQ(tacc[k], k + (4 - 3 + 2 - 1)) << k;
}

TEST(JitArithErrors, UnknownIntrinsicAndWrongSignature) {
  DataType f32 = DataType::float32();
  std::string msg = error_of([&] {
    jit(binary_func("bad", f32, f32, [f32](Expr a, Expr) {
      return call(f32, Builtin::CallLLVMPureIntrin, {make<StringImm>("llvm.not.a.thing"), a});
    }));
  });
  EXPECT_NE(msg.find("call_llvm_pure_intrin: 'llvm.not.a.thing' is not an LLVM intrinsic"),
            std::string::npos)
      << msg;
  msg = error_of([&] {
    jit(binary_func("bad2", f32, f32, [f32](Expr a, Expr) {
      return call(f32, Builtin::CallLLVMPureIntrin, {make<StringImm>("llvm.fma.f32"), a});
    }));
  });
  EXPECT_NE(msg.find("do not match the signature of llvm.fma.f32"), std::string::npos) << msg;
}

TEST(JitArithErrors, UnresolvedExternIsReported) {
  DataType f32 = DataType::float32();
  std::string msg = error_of([&] {
    jit(binary_func("missing", f32, f32, [f32](Expr a, Expr) {
      return call(f32, Builtin::CallExtern, {make<StringImm>("kiln_no_such_function"), a});
    }));
  });
  EXPECT_NE(msg.find("compile_jit: could not link missing"), std::string::npos) << msg;
  EXPECT_NE(msg.find("kiln_no_such_function"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kiln::codegen::testing
