// Tests of structural equality, the difference report and the structural hash: what equality
// ignores (variable and buffer names), what it does not (operand order, dtypes, block names),
// free variables with and without map_free_vars, and hashes that are stable across processes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "kiln/ir/structural.h"
#include "tests/cpp/ir/sample_funcs.h"

namespace kiln::ir {
namespace {

using samples::matmul;
using samples::scale_symbolic;
using samples::vector_add_loop;

// --- Equality ---------------------------------------------------------------------------------

TEST(StructuralEqual, FunctionsBuiltTwiceAreEqualWithEqualHashes) {
  Ref<PrimFunc> a = matmul();
  Ref<PrimFunc> b = matmul();
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_EQ(structural_diff(a, b), "");
  // The loop's buffer A is free (no function declares it): two builds match only when mapped.
  EXPECT_FALSE(structural_equal(vector_add_loop(), vector_add_loop()));
  EXPECT_TRUE(structural_equal(vector_add_loop(), vector_add_loop(), true));
  EXPECT_EQ(structural_hash(vector_add_loop(), true), structural_hash(vector_add_loop(), true));
}

TEST(StructuralEqual, IgnoresVariableAndBufferNames) {
  Ref<PrimFunc> a = matmul(128, "C", "C", "i");
  Ref<PrimFunc> b = matmul(128, "C", "Out", "row");
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}

TEST(StructuralEqual, SymbolicDimensionsAreDefinedByParameterBuffers) {
  Ref<PrimFunc> a = scale_symbolic();
  Ref<PrimFunc> b = scale_symbolic();
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}

TEST(StructuralEqual, ComparesBlockNames) {
  Ref<PrimFunc> a = matmul(128, "C");
  Ref<PrimFunc> b = matmul(128, "D");
  EXPECT_FALSE(structural_equal(a, b));
  EXPECT_NE(structural_hash(a), structural_hash(b));
  std::string diff = structural_diff(a, b);
  EXPECT_NE(diff.find("root.body.block.body.body.body.body.block: Block.name differs: \"C\" vs "
                      "\"D\""),
            std::string::npos)
      << diff;
  EXPECT_NE(diff.find("lhs: with T.block(\"C\"):"), std::string::npos) << diff;
}

TEST(StructuralEqual, ReportsTheFirstDifferenceWithItsPath) {
  std::string diff = structural_diff(matmul(128), matmul(64));
  EXPECT_EQ(diff,
            "root.buffer_map[0].buffer.shape[0]: IntImm.value differs: 128 vs 64\n"
            "  lhs: 128\n"
            "  rhs: 64");
}

TEST(StructuralEqual, OperandOrderMatters) {
  Ref<Var> x = make_var("x");
  EXPECT_FALSE(structural_equal(x - 1, 1 - x));
  EXPECT_FALSE(structural_equal(x - 1, 1 - x, true));

  Ref<Buffer> a = decl_buffer({int32_const(8)}, DataType::float32(), "A");
  Ref<Buffer> b = decl_buffer({int32_const(8)}, DataType::float32(), "B");
  auto loop = [&](bool swap) {
    Ref<Var> i = make_var("i");
    Expr la = buffer_load(a, {i});
    Expr lb = buffer_load(b, {i});
    Stmt store = buffer_store(a, swap ? lb - la : la - lb, {i});
    return make<For>(i, int32_const(0), int32_const(8), ForKind::kSerial, store);
  };
  EXPECT_TRUE(structural_equal(loop(false), loop(false)));
  EXPECT_FALSE(structural_equal(loop(false), loop(true)));
  EXPECT_FALSE(structural_equal(loop(false), loop(true), true));
  EXPECT_NE(structural_hash(loop(false), true), structural_hash(loop(true), true));
}

TEST(StructuralEqual, DifferentDtypesAreUnequal) {
  EXPECT_FALSE(structural_equal(int32_const(1), make_const(DataType::int64(), int64_t{1})));
  Ref<Var> x32 = make_var("x", DataType::int32());
  Ref<Var> x64 = make_var("x", DataType::int64());
  EXPECT_FALSE(structural_equal(x32, x64, true));
  std::string diff = structural_diff(x32 + 1, x64 + 1, true);
  EXPECT_NE(diff.find("Add.dtype differs: int32 vs int64"), std::string::npos) << diff;
  EXPECT_NE(structural_hash(int32_const(1)),
            structural_hash(make_const(DataType::int64(), int64_t{1})));
}

TEST(StructuralEqual, FreeVariablesMustBeTheSameObjectUnlessMapped) {
  Ref<Var> x = make_var("x");
  Ref<Var> y = make_var("x");
  EXPECT_TRUE(structural_equal(x + 1, x + 1));
  EXPECT_FALSE(structural_equal(x + 1, y + 1));
  EXPECT_NE(structural_diff(x + 1, y + 1).find("free variables are different objects"),
            std::string::npos);
  EXPECT_TRUE(structural_equal(x + 1, y + 1, true));
  EXPECT_EQ(structural_hash(x + 1, true), structural_hash(y + 1, true));
  // Mapped consistently: x is matched to y at its first use.
  EXPECT_TRUE(structural_equal(x * x, y * y, true));
  EXPECT_FALSE(structural_equal(x * x, x * y, true));
  EXPECT_NE(structural_hash(x * x, true), structural_hash(x * y, true));
}

TEST(StructuralEqual, DefinedVariablesCorrespondByPosition) {
  Ref<Buffer> a = decl_buffer({int32_const(4), int32_const(4)}, DataType::float32(), "A");
  auto nest = [&](bool transpose) {
    Ref<Var> i = make_var("i"), j = make_var("j");
    Stmt store = buffer_store(a, make_zero(DataType::float32()),
                              transpose ? std::vector<Expr>{j, i} : std::vector<Expr>{i, j});
    return samples::serial(i, int32_const(4), samples::serial(j, int32_const(4), store));
  };
  EXPECT_TRUE(structural_equal(nest(false), nest(false)));
  EXPECT_FALSE(structural_equal(nest(false), nest(true)));
  EXPECT_NE(structural_diff(nest(false), nest(true)).find("variables do not correspond"),
            std::string::npos);
}

TEST(StructuralEqual, LetVariablesAreDefinitions) {
  Ref<Var> x = make_var("x");
  Ref<Var> v = make_var("v"), w = make_var("w");
  EXPECT_TRUE(structural_equal(let(v, x * 2, v + 1), let(w, x * 2, w + 1)));
  EXPECT_EQ(structural_hash(let(v, x * 2, v + 1)), structural_hash(let(w, x * 2, w + 1)));
  EXPECT_FALSE(structural_equal(let(v, x * 2, v + 1), let(w, x * 2, x + 1)));
}

TEST(StructuralEqual, AVariableReusedBySiblingLoopsMatchesTwoVariables) {
  Ref<Buffer> a = decl_buffer({int32_const(4)}, DataType::float32(), "A");
  auto loop = [&](const Ref<Var>& i) {
    return samples::serial(i, int32_const(4), buffer_store(a, make_zero(a->dtype), {i}));
  };
  Ref<Var> i = make_var("i"), j = make_var("j"), k = make_var("k");
  Stmt reused = seq({loop(i), loop(i)});
  Stmt distinct = seq({loop(j), loop(k)});
  EXPECT_TRUE(structural_equal(reused, distinct));
  EXPECT_EQ(structural_hash(reused), structural_hash(distinct));
}

TEST(StructuralEqual, FreeBuffersMustBeTheSameObjectUnlessMapped) {
  Ref<Buffer> a = decl_buffer({int32_const(4)}, DataType::float32(), "A");
  Ref<Buffer> b = decl_buffer({int32_const(4)}, DataType::float32(), "A");
  Expr la = buffer_load(a, {int32_const(0)});
  Expr lb = buffer_load(b, {int32_const(0)});
  EXPECT_FALSE(structural_equal(la, lb));
  EXPECT_TRUE(structural_equal(la, lb, true));
  Ref<Buffer> c = decl_buffer({int32_const(5)}, DataType::float32(), "A");
  EXPECT_FALSE(structural_equal(la, buffer_load(c, {int32_const(0)}), true));
}

TEST(StructuralEqual, FloatConstantsCompareByBitsWithAllNaNsEqual) {
  DataType f32 = DataType::float32();
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(structural_equal(make_const(f32, nan), make_const(f32, -nan)));
  EXPECT_EQ(structural_hash(make_const(f32, nan)), structural_hash(make_const(f32, -nan)));
  EXPECT_FALSE(structural_equal(make_const(f32, 0.0), make_const(f32, -0.0)));
  EXPECT_TRUE(structural_equal(make_const(f32, 0.5), make_const(f32, 0.5)));
}

TEST(StructuralEqual, ComparesAnnotations) {
  auto loop = [](int64_t step) {
    Ref<Var> i = make_var("i");
    auto f = make<For>(i, int32_const(0), int32_const(4), ForKind::kSerial,
                       make<Evaluate>(int32_const(0)));
    f->annotations["pragma_auto_unroll_max_step"] = int32_const(step);
    return Stmt(f);
  };
  EXPECT_TRUE(structural_equal(loop(16), loop(16)));
  EXPECT_FALSE(structural_equal(loop(16), loop(8)));
  EXPECT_NE(structural_diff(loop(16), loop(8))
                .find("root.annotations[\"pragma_auto_unroll_max_step\"]: IntImm.value differs"),
            std::string::npos);
}

TEST(StructuralEqual, ComparesModulesByFunctionNames) {
  auto module = [](const std::string& name) {
    auto m = make<IRModule>();
    m->functions[name] = matmul();
    return m;
  };
  EXPECT_TRUE(structural_equal(module("main"), module("main")));
  EXPECT_FALSE(structural_equal(module("main"), module("other")));
  EXPECT_EQ(structural_hash(module("main")), structural_hash(module("main")));
}

TEST(StructuralEqual, NullEqualsOnlyNull) {
  EXPECT_TRUE(structural_equal(nullptr, nullptr));
  EXPECT_FALSE(structural_equal(nullptr, int32_const(0)));
  EXPECT_NE(structural_diff(int32_const(0), nullptr).find("one side is null"), std::string::npos);
}

// --- Hash stability ---------------------------------------------------------------------------

// Golden hashes of the functions and expressions built by hash_probe.cc. Updating these values
// means the hash function changed: every tuning database keyed by the old hashes becomes
// unusable, so change them only together with a deliberate change of the hash.
const char* const kGoldenHashes =
    "matmul_128 a656d17a9b66042f\n"
    "matmul_64 4a4d702ede066f70\n"
    "scale_symbolic 61abd2b2b1db4fc4\n"
    "vector_add_loop 974206648f7aa1d5\n"
    "expr_arith a40179e83376fe67\n"
    "expr_free_strict 3eeb3fc4224c1d8f\n"
    "expr_let b9acad255e909165\n"
    "expr_float c27a06fde9781baa\n"
    "expr_call a01caa44d708e2ef\n"
    "expr_string 6c5b2f6c8ae0f840\n";

std::string run_probe() {
  std::string out;
  FILE* pipe = popen(KILN_HASH_PROBE, "r");
  if (pipe == nullptr) return "popen failed";
  char buffer[256];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) out += buffer;
  int status = pclose(pipe);
  if (status != 0) out += "exit status " + std::to_string(status);
  return out;
}

TEST(StructuralHash, IsTheSameInSeparateProcessesAndMatchesTheGoldenValues) {
  std::string first = run_probe();
  std::string second = run_probe();
  EXPECT_EQ(first, second);
  EXPECT_EQ(first, kGoldenHashes);
}

TEST(StructuralHash, InProcessValueMatchesTheProbe) {
  char expected[64];
  std::snprintf(expected, sizeof(expected), "matmul_128 %016llx\n",
                static_cast<unsigned long long>(structural_hash(matmul())));
  EXPECT_EQ(std::string(kGoldenHashes).rfind(expected, 0), 0u);
}

}  // namespace
}  // namespace kiln::ir
