// Tests of affine iterator maps: detection of identity, split, fuse, split of a fuse,
// non-divisible splits with predicates and symbolic extents; rejection of overlapping, unused and
// non-affine maps with their messages; the levels; iter_map_simplify; is_affine_binding;
// inverse_affine_map; and a fuzz test of random split/fuse/reorder chains checked by enumeration.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "kiln/arith/iter_map.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "tests/cpp/arith/index_eval.h"

namespace kiln::arith {
namespace {

using namespace ir;

// Builders with a literal right operand, for brevity.
Expr floordiv(const Expr& a, int64_t b) {
  return ir::floordiv(a, literal_like(b, a));
}
Expr floormod(const Expr& a, int64_t b) {
  return ir::floormod(a, literal_like(b, a));
}
Expr truncdiv(const Expr& a, int64_t b) {
  return ir::truncdiv(a, literal_like(b, a));
}
Expr truncmod(const Expr& a, int64_t b) {
  return ir::truncmod(a, literal_like(b, a));
}
Expr lt(const Expr& a, int64_t b) {
  return ir::lt(a, literal_like(b, a));
}
Expr le(const Expr& a, int64_t b) {
  return ir::le(a, literal_like(b, a));
}
Expr eq(const Expr& a, int64_t b) {
  return ir::eq(a, literal_like(b, a));
}

Range range(int64_t min, int64_t extent) {
  return Range{int32_const(min), int32_const(extent)};
}

Range range(int64_t min, Expr extent) {
  return Range{int32_const(min), std::move(extent)};
}

IterMapResult detect(const std::vector<Expr>& indices, const IterRanges& iters,
                     IterMapLevel level = IterMapLevel::kBijective, Expr predicate = nullptr) {
  Analyzer ana;
  return detect_iter_map(indices, iters, predicate.defined() ? predicate : bool_const(true), level,
                         &ana);
}

std::string joined(const std::vector<std::string>& errors) {
  std::string all;
  for (const std::string& e : errors) all += e + "\n";
  return all;
}

// Whether the normalized index equals `expected` (checked by the simplifier).
void expect_index(const IterSumExpr& index, const Expr& expected, const IterRanges& iters) {
  Analyzer ana;
  for (const auto& [var, r] : iters) ana.bind(Ref<Var>(var), r);
  EXPECT_TRUE(ana.can_prove_equal(to_expr(index), expected))
      << to_string(index) << " is " << to_script(to_expr(index)) << ", expected "
      << to_script(expected);
}

TEST(DetectIterMap, Identity) {
  Ref<Var> i = make_var("i"), j = make_var("j");
  IterRanges iters{{i.get(), range(0, 8)}, {j.get(), range(0, 4)}};
  IterMapResult r = detect({i, j}, iters);
  ASSERT_TRUE(r.ok()) << joined(r.errors);
  ASSERT_EQ(r.indices.size(), 2u);
  EXPECT_EQ(to_string(r.indices[0]), "split(i, 1, 8)");
  EXPECT_EQ(to_string(r.indices[1]), "split(j, 1, 4)");
  EXPECT_TRUE(to_expr(r.indices[0]).same_as(i));
}

TEST(DetectIterMap, Split) {
  Ref<Var> i = make_var("i");
  IterRanges iters{{i.get(), range(0, 32)}};
  IterMapResult r = detect({floordiv(i, 4), floormod(i, 4)}, iters);
  ASSERT_TRUE(r.ok()) << joined(r.errors);
  EXPECT_EQ(to_string(r.indices[0]), "split(i, 4, 8)");
  EXPECT_EQ(to_string(r.indices[1]), "split(i, 1, 4)");
  EXPECT_EQ(to_script(to_expr(r.indices[0])), "i // 4");
  EXPECT_EQ(to_script(to_expr(r.indices[1])), "i % 4");
}

TEST(DetectIterMap, Fuse) {
  Ref<Var> i = make_var("i"), j = make_var("j");
  IterRanges iters{{i.get(), range(0, 8)}, {j.get(), range(0, 16)}};
  IterMapResult r = detect({i * 16 + j}, iters);
  ASSERT_TRUE(r.ok()) << joined(r.errors);
  ASSERT_EQ(r.indices[0].args.size(), 1u);
  EXPECT_EQ(to_string(r.indices[0]),
            "split(fuse(split(i, 1, 8)*16 + split(j, 1, 16); extent 128), "
            "1, 128)");
  expect_index(r.indices[0], i * 16 + j, iters);
}

TEST(DetectIterMap, SplitOfAFuse) {
  Ref<Var> i = make_var("i"), j = make_var("j");
  IterRanges iters{{i.get(), range(0, 8)}, {j.get(), range(0, 16)}};
  Expr fused = i * 16 + j;
  IterMapResult r = detect({floordiv(fused, 8), floormod(fused, 8)}, iters);
  ASSERT_TRUE(r.ok()) << joined(r.errors);
  expect_index(r.indices[0], floordiv(i * 16 + j, 8), iters);
  // Digits that line up with the fused terms resolve to the terms themselves.
  IterMapResult aligned = detect({floordiv(fused, 16), floormod(fused, 16)}, iters);
  ASSERT_TRUE(aligned.ok()) << joined(aligned.errors);
  EXPECT_EQ(to_string(aligned.indices[0]), "split(i, 1, 8)");
  EXPECT_EQ(to_string(aligned.indices[1]), "split(j, 1, 16)");
}

TEST(DetectIterMap, FuseThenSplitLoops) {
  // for fo in [0, 4), fi in [0, 8): vi = (fo*8 + fi) // 4, vj = (fo*8 + fi) % 4, after
  // fuse(i, j) and split(f, [4, 8]) of i in [0, 8), j in [0, 4).
  Ref<Var> fo = make_var("fo"), fi = make_var("fi");
  IterRanges iters{{fo.get(), range(0, 4)}, {fi.get(), range(0, 8)}};
  Expr f = fo * 8 + fi;
  IterMapResult r = detect({floordiv(f, 4), floormod(f, 4)}, iters);
  ASSERT_TRUE(r.ok()) << joined(r.errors);
  expect_index(r.indices[0], fo * 2 + floordiv(fi, 4), iters);
  expect_index(r.indices[1], floormod(fi, 4), iters);
}

TEST(DetectIterMap, NonDivisibleSplitWithPredicate) {
  Ref<Var> xo = make_var("xo"), xi = make_var("xi");
  IterRanges iters{{xo.get(), range(0, 8)}, {xi.get(), range(0, 4)}};
  Expr x = xo * 4 + xi;
  IterMapResult r = detect({x}, iters, IterMapLevel::kBijective, lt(x, 30));
  ASSERT_TRUE(r.ok()) << joined(r.errors);
  EXPECT_EQ(to_string(r.indices[0]),
            "split(fuse(split(xo, 1, 8)*4 + split(xi, 1, 4); extent 30), 1, 30)");
  // The predicate shrinks the fusion, which the indices must then use whole.
  IterMapResult parts = detect({xo, xi}, iters, IterMapLevel::kBijective, lt(x, 30));
  ASSERT_FALSE(parts.ok());
  EXPECT_NE(joined(parts.errors)
                .find("the predicate xo * 4 + xi < 30 bounds xo * 4 + xi, which "
                      "no index uses whole"),
            std::string::npos)
      << joined(parts.errors);
  // <= and the mirrored > are understood too.
  EXPECT_TRUE(detect({x}, iters, IterMapLevel::kBijective, le(x, 29)).ok());
  EXPECT_TRUE(detect({x}, iters, IterMapLevel::kBijective, gt(int32_const(30), x)).ok());
  // A predicate on one loop shrinks that loop.
  IterMapResult single = detect({xo, xi}, iters, IterMapLevel::kBijective, lt(xo, 7));
  ASSERT_TRUE(single.ok()) << joined(single.errors);
  EXPECT_EQ(to_string(single.indices[0]), "split(xo, 1, 7)");
}

TEST(DetectIterMap, PredicatesOnDigitsAndTopDigits) {
  Ref<Var> i = make_var("i"), j = make_var("j");
  IterRanges iters{{i.get(), range(0, 8)}, {j.get(), range(0, 4)}};
  // A bound on a digit of a loop: floormod(i, 4) < 3 leaves 2 x 3 points of i.
  IterMapResult digit = detect({floordiv(i, 4), floormod(i, 4)}, iters, IterMapLevel::kSurjective,
                               lt(floormod(i, 4), 3));
  ASSERT_TRUE(digit.ok()) << joined(digit.errors);
  EXPECT_EQ(to_string(digit.indices[1]), "split(fuse(split(i, 1, 4); extent 3), 1, 3)");
  // A bound on a fusion that is a multiple of its lower digits bounds the top loop only.
  IterMapResult top = detect({i, j}, iters, IterMapLevel::kBijective, lt(i * 4 + j, 28));
  ASSERT_TRUE(top.ok()) << joined(top.errors);
  EXPECT_EQ(to_string(top.indices[0]), "split(i, 1, 7)");
  // floordiv(f, 4) < 5 bounds f < 20.
  Ref<Var> f = make_var("f");
  IterRanges fs{{f.get(), range(0, 32)}};
  IterMapResult high =
      detect({floordiv(f, 4), floormod(f, 4)}, fs, IterMapLevel::kBijective, lt(floordiv(f, 4), 5));
  ASSERT_TRUE(high.ok()) << joined(high.errors);
  EXPECT_EQ(to_string(high.indices[0]), "split(f, 4, 5)");
}

TEST(DetectIterMap, SplitOfANonDivisibleFusion) {
  // i in [0, 3), j in [0, 10) fused to 30 and split by 4: fo in [0, 8), fi in [0, 4).
  Ref<Var> fo = make_var("fo"), fi = make_var("fi");
  IterRanges iters{{fo.get(), range(0, 8)}, {fi.get(), range(0, 4)}};
  Expr f = fo * 4 + fi;
  std::vector<Expr> bindings{floordiv(f, 10), floormod(f, 10)};
  IterMapResult r = detect(bindings, iters, IterMapLevel::kBijective, lt(f, 30));
  ASSERT_TRUE(r.ok()) << joined(r.errors);
  // Without the predicate the last row of 10 is cut off: the splits do not tile 32.
  IterMapResult unbounded = detect(bindings, iters);
  ASSERT_FALSE(unbounded.ok());
  EXPECT_NE(joined(unbounded.errors).find("is not divisible by 10"), std::string::npos)
      << joined(unbounded.errors);
}

TEST(DetectIterMap, OverlappingTermsAreNotInjective) {
  Ref<Var> i = make_var("i"), j = make_var("j");
  IterRanges iters{{i.get(), range(0, 8)}, {j.get(), range(0, 4)}};
  IterMapResult r = detect({i * 3 + j}, iters);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(joined(r.errors),
            "index 0 (i * 3 + j): in i * 3 + j, the term j ranges over 4 values of step 1 but the "
            "next term i * 3 has scale 3: the terms overlap, so the map is not injective\n");
  IterMapResult sum = detect({i + j}, iters);
  ASSERT_FALSE(sum.ok());
  EXPECT_NE(joined(sum.errors).find("the terms overlap, so the map is not injective"),
            std::string::npos);
  IterMapResult gap = detect({i * 8 + j}, iters);
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(joined(gap.errors).find("the terms leave gaps"), std::string::npos);
  // Under kNoCheck the sum is affine, just not one iterator.
  IterMapResult loose = detect({i + j}, iters, IterMapLevel::kNoCheck);
  ASSERT_TRUE(loose.ok());
  EXPECT_EQ(loose.indices[0].args.size(), 2u);
}

TEST(DetectIterMap, OverlappingSplitsOfOneLoop) {
  Ref<Var> i = make_var("i");
  IterRanges iters{{i.get(), range(0, 32)}};
  IterMapResult r = detect({floordiv(i, 2), floormod(i, 4)}, iters);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(joined(r.errors),
            "iterator i (extent 32) is split into i // 2, i % 4, which do not tile it exactly: "
            "no split starts at digit 4, and a split that starts below it overlaps the splits "
            "before\n");
  EXPECT_FALSE(detect({floordiv(i, 2), floormod(i, 4)}, iters, IterMapLevel::kSurjective).ok());
}

TEST(DetectIterMap, NonAffine) {
  Ref<Var> i = make_var("i"), j = make_var("j");
  IterRanges iters{{i.get(), range(0, 8)}, {j.get(), range(0, 4)}};
  IterMapResult r = detect({i * i}, iters, IterMapLevel::kNoCheck);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(joined(r.errors),
            "index 0 (i * i): i * i is not affine: it multiplies i and i, which both use loop "
            "iterators\n");
  IterMapResult m = detect({min(i, j)}, iters, IterMapLevel::kNoCheck);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(joined(m.errors).find("is not affine: Min of loop iterators"), std::string::npos);
  IterMapResult d = detect({floordiv(i, j + 1)}, iters, IterMapLevel::kNoCheck);
  EXPECT_NE(joined(d.errors).find("its divisor j + 1 uses loop iterators"), std::string::npos)
      << joined(d.errors);
  // floordiv with an offset that is not a multiple of the divisor would need padding.
  IterMapResult offset = detect({floordiv(i + 1, 4)}, iters);
  EXPECT_NE(joined(offset.errors).find("the offset 1 of i + 1 is not a multiple of the divisor 4"),
            std::string::npos)
      << joined(offset.errors);
}

TEST(DetectIterMap, SymbolicExtents) {
  Ref<Var> i = make_var("i"), j = make_var("j");
  Ref<Var> n = make_size_var("n");
  IterRanges iters{{i.get(), range(0, n)}, {j.get(), range(0, 4)}};
  Expr f = i * 4 + j;
  IterMapResult fused = detect({f}, iters);
  ASSERT_TRUE(fused.ok()) << joined(fused.errors);
  IterMapResult split = detect({floordiv(f, 4), floormod(f, 4)}, iters);
  ASSERT_TRUE(split.ok()) << joined(split.errors);
  EXPECT_EQ(to_string(split.indices[0]), "split(i, 1, n)");
  Ref<Var> x = make_var("x");
  IterRanges xs{{x.get(), range(0, n * 4)}};
  IterMapResult by4 = detect({floordiv(x, 4), floormod(x, 4)}, xs);
  ASSERT_TRUE(by4.ok()) << joined(by4.errors);
  // With an extent n of unknown divisibility only the top split is possible.
  IterRanges ns{{x.get(), range(0, n)}};
  EXPECT_TRUE(detect({floordiv(x, 4)}, ns, IterMapLevel::kNoCheck).ok());
  IterMapResult mod = detect({floordiv(x, 4), floormod(x, 4)}, ns);
  ASSERT_FALSE(mod.ok());
  EXPECT_NE(joined(mod.errors).find("the extent n of x is not divisible by 4"), std::string::npos)
      << joined(mod.errors);
}

TEST(DetectIterMap, Levels) {
  Ref<Var> i = make_var("i"), j = make_var("j");
  IterRanges iters{{i.get(), range(0, 8)}, {j.get(), range(0, 4)}};
  IterMapResult unused = detect({i}, iters);
  ASSERT_FALSE(unused.ok());
  EXPECT_EQ(joined(unused.errors),
            "loop j (extent 4) is not used by any index, so the map is not injective\n");
  EXPECT_TRUE(detect({i}, iters, IterMapLevel::kSurjective).ok());
  // Skipped digits are surjective (every point is reached) but not bijective.
  Ref<Var> x = make_var("x");
  IterRanges xs{{x.get(), range(0, 32)}};
  std::vector<Expr> skip{floormod(x, 4), floordiv(x, 8)};
  EXPECT_FALSE(detect(skip, xs).ok());
  EXPECT_TRUE(detect(skip, xs, IterMapLevel::kSurjective).ok());
}

TEST(DetectIterMap, ConstantsOffsetsAndUnitLoops) {
  Ref<Var> i = make_var("i"), k = make_var("k"), n = make_var("n");
  IterRanges iters{{i.get(), range(2, 8)}, {k.get(), range(0, 1)}};
  IterMapResult r = detect({i + k, n * 2, i * 2 + 1}, iters, IterMapLevel::kNoCheck);
  ASSERT_TRUE(r.ok()) << joined(r.errors);
  EXPECT_EQ(to_string(r.indices[0]), "split(i - 2, 1, 8) + 2");
  expect_index(r.indices[0], i, iters);
  EXPECT_TRUE(r.indices[1].args.empty());
  expect_index(r.indices[2], i * 2 + 1, iters);
  EXPECT_TRUE(detect({i + k}, iters).ok());
  // A widening cast keeps the digits.
  IterMapResult wide = detect({cast(DataType::int64(), i) * 3 + cast(DataType::int64(), k)}, iters,
                              IterMapLevel::kNoCheck);
  ASSERT_TRUE(wide.ok()) << joined(wide.errors);
  EXPECT_EQ(to_expr(wide.indices[0])->dtype, DataType::int64());
  // Truncating division of a non-negative value is floor division.
  EXPECT_TRUE(detect({truncdiv(i, 2), truncmod(i, 2)}, iters).ok());
}

TEST(DetectIterMap, UnsupportedPredicates) {
  Ref<Var> i = make_var("i"), j = make_var("j");
  IterRanges iters{{i.get(), range(0, 8)}, {j.get(), range(0, 4)}};
  IterMapResult both = detect({i, j}, iters, IterMapLevel::kBijective, lt(i, j));
  EXPECT_EQ(joined(both.errors),
            "predicate i < j: only upper bounds `fused < bound` with a bound free of loop "
            "iterators are supported\n");
  IterMapResult scaled = detect({i, j}, iters, IterMapLevel::kBijective, lt(i * 2, 5));
  EXPECT_EQ(joined(scaled.errors),
            "predicate i * 2 < 5: it bounds i * 2, a scaled iterator; only `fused < bound` is "
            "supported\n");
  // Bounding a digit that no index uses whole leaves holes in the box.
  IterMapResult part = detect({i, j}, iters, IterMapLevel::kBijective, lt(floormod(i, 4), 3));
  EXPECT_EQ(joined(part.errors),
            "the predicate i % 4 < 3 bounds i % 4, which no index uses whole, so the indices do "
            "not cover a box\n");
  IterMapResult empty = detect({i, j}, iters, IterMapLevel::kBijective, lt(i * 4 + j, 0));
  EXPECT_NE(joined(empty.errors).find("no iteration satisfies it"), std::string::npos);
  IterMapResult equality = detect({i, j}, iters, IterMapLevel::kBijective, eq(i, 2));
  EXPECT_NE(joined(equality.errors).find("only conditions `fused < bound`"), std::string::npos);
  // A redundant bound and a condition free of loops change nothing.
  Ref<Var> n = make_var("n");
  EXPECT_TRUE(
      detect({i, j}, iters, IterMapLevel::kBijective, logical_and(lt(i, 100), lt(n, 5))).ok());
}

TEST(IterMapSimplify, NormalizesSplitsAndFusions) {
  Analyzer ana;
  Ref<Var> f = make_var("f"), i = make_var("i"), j = make_var("j");
  IterRanges iters{{f.get(), range(0, 256)}, {i.get(), range(0, 8)}, {j.get(), range(0, 4)}};
  std::vector<Expr> simplified =
      iter_map_simplify({floordiv(f, 16) * 16 + floormod(f, 16), floormod(i * 4 + j, 4),
                         floordiv(i * 4 + j, 4), i * i + 1},
                        iters, bool_const(true), &ana);
  ASSERT_EQ(simplified.size(), 4u);
  EXPECT_TRUE(simplified[0].same_as(f)) << to_script(simplified[0]);
  EXPECT_TRUE(simplified[1].same_as(j)) << to_script(simplified[1]);
  EXPECT_TRUE(simplified[2].same_as(i)) << to_script(simplified[2]);
  EXPECT_EQ(to_script(simplified[3]), "i * i + 1");
  // floordiv(f, 4)*4 + floormod(f, 4) of a shrunk fusion is the fusion.
  Ref<Var> xo = make_var("xo"), xi = make_var("xi");
  IterRanges split{{xo.get(), range(0, 8)}, {xi.get(), range(0, 4)}};
  Expr x = xo * 4 + xi;
  std::vector<Expr> merged =
      iter_map_simplify({floordiv(x, 2) * 2 + floormod(x, 2)}, split, lt(x, 30), &ana);
  EXPECT_TRUE(ana.can_prove_equal(merged[0], x)) << to_script(merged[0]);
}

Ref<BlockRealize> realize(std::vector<Expr> values, Expr predicate) {
  auto block = make<Block>();
  block->name = "B";
  return make<BlockRealize>(std::move(values), std::move(predicate), block);
}

TEST(IsAffineBinding, BlockBindings) {
  Analyzer ana;
  Ref<Var> io = make_var("io"), ii = make_var("ii"), j = make_var("j");
  IterRanges loops{{io.get(), range(0, 8)}, {ii.get(), range(0, 4)}, {j.get(), range(0, 5)}};
  Expr i = io * 4 + ii;
  EXPECT_TRUE(is_affine_binding(*realize({i, j}, bool_const(true)), loops, &ana));
  EXPECT_TRUE(is_affine_binding(*realize({i, j}, lt(i, 30)), loops, &ana));
  EXPECT_FALSE(is_affine_binding(*realize({io + ii, j}, bool_const(true)), loops, &ana));
  EXPECT_FALSE(is_affine_binding(*realize({i, j * j}, bool_const(true)), loops, &ana));
  // A block under a loop it does not use is affine only at kSurjective.
  EXPECT_FALSE(is_affine_binding(*realize({i}, bool_const(true)), loops, &ana));
  EXPECT_TRUE(
      is_affine_binding(*realize({i}, bool_const(true)), loops, &ana, IterMapLevel::kSurjective));
  EXPECT_TRUE(is_affine_binding(*realize({int32_const(0)}, bool_const(true)), {}, &ana));
}

TEST(InverseAffineMap, SolvesLoopsFromOutputs) {
  Analyzer ana;
  Ref<Var> f = make_var("f"), o0 = make_var("o0"), o1 = make_var("o1");
  IterRanges iters{{f.get(), range(0, 256)}};
  IterMapResult r = detect_iter_map({floordiv(f, 16), floormod(f, 16)}, iters, bool_const(true),
                                    IterMapLevel::kBijective, &ana);
  ASSERT_TRUE(r.ok()) << joined(r.errors);
  VarMap inverse = inverse_affine_map(r.indices, {o0, o1}, &ana);
  ASSERT_EQ(inverse.size(), 1u);
  EXPECT_TRUE(ana.can_prove_equal(inverse.at(f.get()), o0 * 16 + o1))
      << to_script(inverse.at(f.get()));
}

TEST(InverseAffineMap, RoundTripsThroughFusionsAndOffsets) {
  Analyzer ana;
  Ref<Var> i = make_var("i"), j = make_var("j"), o0 = make_var("o0"), o1 = make_var("o1");
  IterRanges iters{{i.get(), range(3, 6)}, {j.get(), range(0, 4)}};
  std::vector<Expr> indices{floordiv((i - 3) * 4 + j, 8) + 1, floormod((i - 3) * 4 + j, 8) * 2};
  IterMapResult r =
      detect_iter_map(indices, iters, bool_const(true), IterMapLevel::kBijective, &ana);
  ASSERT_TRUE(r.ok()) << joined(r.errors);
  VarMap inverse = inverse_affine_map(r.indices, {o0, o1}, &ana);
  ASSERT_EQ(inverse.size(), 2u);
  for (int64_t vi = 3; vi < 9; ++vi) {
    for (int64_t vj = 0; vj < 4; ++vj) {
      testing::IndexValues loop{{i.get(), vi}, {j.get(), vj}};
      testing::IndexValues out{{o0.get(), testing::eval_index(indices[0], loop)},
                               {o1.get(), testing::eval_index(indices[1], loop)}};
      EXPECT_EQ(testing::eval_index(inverse.at(i.get()), out), vi);
      EXPECT_EQ(testing::eval_index(inverse.at(j.get()), out), vj);
    }
  }
}

TEST(InverseAffineMap, RejectsMapsThatAreNotBijective) {
  Analyzer ana;
  Ref<Var> i = make_var("i"), o = make_var("o");
  IterRanges iters{{i.get(), range(0, 32)}};
  IterMapResult r = detect_iter_map({floordiv(i, 2), floormod(i, 4)}, iters, bool_const(true),
                                    IterMapLevel::kNoCheck, &ana);
  ASSERT_TRUE(r.ok());
  try {
    inverse_affine_map(r.indices, {o, o}, &ana);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("inverse_affine_map: the map is not bijective"),
              std::string::npos)
        << e.what();
  }
  try {
    inverse_affine_map(r.indices, {o}, &ana);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 indices but 1 outputs"), std::string::npos);
  }
}

// ---------------------------------------------------------------------------------------------
// Fuzz: random schedules of 2-4 loops (splits, possibly non-divisible with a predicate, fuses of
// adjacent loops, reorders) give bindings of the original iterators in the final loops. The map
// is bijective; detection must say so when every split divides, must never accept a map that
// enumeration shows is not bijective, and its normalized indices must equal the bindings.

int64_t env_or(const char* name, int64_t fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::strtoll(text, nullptr, 10) : fallback;
}

struct Loop {
  Ref<Var> var;
  int64_t extent;
};

struct Schedule {
  std::vector<Loop> original;
  std::vector<Loop> loops;
  std::vector<Expr> bindings;
  Expr predicate = bool_const(true);
  bool divisible = true;
};

void substitute_loop(Schedule* s, const Var* v, const Expr& value) {
  VarMap vmap{{v, value}};
  for (Expr& b : s->bindings) b = substitute(b, vmap);
  s->predicate = substitute(s->predicate, vmap);
}

Schedule random_schedule(std::mt19937* rng) {
  auto pick = [rng](int n) { return static_cast<int>((*rng)() % n); };
  const int64_t extents[] = {2, 3, 4, 5, 6, 8};
  Schedule s;
  int n = 2 + pick(3);
  for (int k = 0; k < n; ++k) {
    Loop loop{make_var("v" + std::to_string(k)), extents[pick(6)]};
    s.original.push_back(loop);
    s.loops.push_back(loop);
    s.bindings.push_back(loop.var);
  }
  int steps = 1 + pick(4);
  int fresh = 0;
  for (int step = 0; step < steps; ++step) {
    int op = pick(3);
    size_t at = pick(static_cast<int>(s.loops.size()));
    if (op == 0 && s.loops[at].extent >= 3) {
      Loop loop = s.loops[at];
      int64_t factor = 2 + pick(static_cast<int>(std::min<int64_t>(loop.extent - 1, 3)));
      int64_t outer = (loop.extent + factor - 1) / factor;
      Loop lo{make_var("s" + std::to_string(fresh++)), outer};
      Loop li{make_var("s" + std::to_string(fresh++)), factor};
      Expr value = lo.var * factor + li.var;
      substitute_loop(&s, loop.var.get(), value);
      if (outer * factor != loop.extent) {
        s.divisible = false;
        s.predicate = logical_and(s.predicate, lt(value, int32_const(loop.extent)));
      }
      s.loops[at] = lo;
      s.loops.insert(s.loops.begin() + at + 1, li);
    } else if (op == 1 && at + 1 < s.loops.size()) {
      Loop a = s.loops[at], b = s.loops[at + 1];
      Loop f{make_var("f" + std::to_string(fresh++)), a.extent * b.extent};
      substitute_loop(&s, a.var.get(), floordiv(f.var, int32_const(b.extent)));
      substitute_loop(&s, b.var.get(), floormod(f.var, int32_const(b.extent)));
      s.loops[at] = f;
      s.loops.erase(s.loops.begin() + at + 1);
    } else {
      std::shuffle(s.loops.begin(), s.loops.end(), *rng);
    }
  }
  return s;
}

// Every point of the final loops where the predicate holds, as values of the loop variables.
std::vector<testing::IndexValues> valid_points(const Schedule& s) {
  std::vector<testing::IndexValues> points;
  std::vector<int64_t> counter(s.loops.size(), 0);
  while (true) {
    testing::IndexValues values;
    for (size_t k = 0; k < s.loops.size(); ++k) values[s.loops[k].var.get()] = counter[k];
    if (testing::eval_index(s.predicate, values) != 0) points.push_back(values);
    size_t k = 0;
    while (k < counter.size() && ++counter[k] == s.loops[k].extent) counter[k++] = 0;
    if (k == counter.size()) break;
  }
  return points;
}

// Whether the indices map the points one to one onto the product of their value sets.
bool is_bijective_by_enumeration(const std::vector<Expr>& indices,
                                 const std::vector<testing::IndexValues>& points) {
  std::set<std::vector<int64_t>> image;
  std::vector<std::set<int64_t>> per_index(indices.size());
  for (const testing::IndexValues& p : points) {
    std::vector<int64_t> tuple;
    for (size_t k = 0; k < indices.size(); ++k) {
      tuple.push_back(testing::eval_index(indices[k], p));
      per_index[k].insert(tuple.back());
    }
    if (!image.insert(tuple).second) return false;
  }
  size_t product = 1;
  for (const auto& values : per_index) product *= values.size();
  return product == image.size();
}

IterRanges loop_ranges(const Schedule& s) {
  IterRanges ranges;
  for (const Loop& loop : s.loops) ranges[loop.var.get()] = range(0, loop.extent);
  return ranges;
}

TEST(DetectIterMapFuzz, RandomSchedulesAreBijective) {
  std::mt19937 rng(static_cast<uint32_t>(env_or("KILN_FUZZ_SEED", 20240611)));
  int iterations = static_cast<int>(env_or("KILN_FUZZ_ITERATIONS", 300));
  int detected_with_predicate = 0, with_predicate = 0, rejected_perturbations = 0;
  for (int iteration = 0; iteration < iterations; ++iteration) {
    Schedule s = random_schedule(&rng);
    std::vector<testing::IndexValues> points = valid_points(s);
    std::string context = "schedule " + std::to_string(iteration) + ": bindings";
    for (const Expr& b : s.bindings) context += " " + to_script(b);
    context += " under " + to_script(s.predicate);
    // The enumeration confirms that the schedule re-derives every original point once.
    size_t box = 1;
    for (const Loop& loop : s.original) box *= loop.extent;
    ASSERT_EQ(points.size(), box) << context;
    ASSERT_TRUE(is_bijective_by_enumeration(s.bindings, points)) << context;

    Analyzer ana;
    IterRanges ranges = loop_ranges(s);
    IterMapResult r =
        detect_iter_map(s.bindings, ranges, s.predicate, IterMapLevel::kBijective, &ana);
    if (s.divisible) {
      ASSERT_TRUE(r.ok()) << context << "\n" << joined(r.errors);
    } else {
      ++with_predicate;
      if (r.ok()) ++detected_with_predicate;
    }
    if (r.ok()) {
      // The normalized indices, their simplified form and the inverse agree with the bindings.
      std::vector<Expr> simplified = iter_map_simplify(s.bindings, ranges, s.predicate, &ana);
      std::vector<Ref<Var>> outputs;
      for (size_t k = 0; k < s.bindings.size(); ++k) {
        outputs.push_back(make_var("o" + std::to_string(k)));
      }
      VarMap inverse =
          inverse_affine_map(r.indices, std::vector<Expr>(outputs.begin(), outputs.end()), &ana);
      for (const testing::IndexValues& p : points) {
        testing::IndexValues out;
        for (size_t k = 0; k < s.bindings.size(); ++k) {
          int64_t expected = testing::eval_index(s.bindings[k], p);
          ASSERT_EQ(testing::eval_index(to_expr(r.indices[k]), p), expected)
              << context << "\nindex " << k << ": " << to_string(r.indices[k]);
          ASSERT_EQ(testing::eval_index(simplified[k], p), expected)
              << context << "\nsimplified " << to_script(simplified[k]);
          out[outputs[k].get()] = expected;
        }
        for (const Loop& loop : s.loops) {
          if (loop.extent == 1) continue;  // a constant, not solved for
          ASSERT_EQ(testing::eval_index(inverse.at(loop.var.get()), out), p.at(loop.var.get()))
              << context << "\ninverse of " << loop.var->name << ": "
              << to_script(inverse.at(loop.var.get()));
        }
      }
    }
    // A perturbed binding: detection may accept it only if enumeration shows a bijection.
    std::vector<Expr> perturbed = s.bindings;
    size_t k = rng() % perturbed.size();
    const Loop& other = s.loops[rng() % s.loops.size()];
    switch (rng() % 4) {
      case 0:
        perturbed[k] = perturbed[k] + other.var;
        break;
      case 1:
        perturbed[k] = perturbed[k] * 2 + other.var;
        break;
      case 2:
        perturbed[k] = perturbed[(k + 1) % perturbed.size()];
        break;
      default:
        perturbed[k] = floordiv(perturbed[k], int32_const(2));
        break;
    }
    Analyzer ana2;
    IterMapResult p =
        detect_iter_map(perturbed, ranges, s.predicate, IterMapLevel::kBijective, &ana2);
    bool truly = is_bijective_by_enumeration(perturbed, points);
    if (p.ok()) {
      std::string ptext;
      for (const Expr& b : perturbed) ptext += " " + to_script(b);
      ASSERT_TRUE(truly) << context << "\nperturbed:" << ptext << " was accepted";
    }
    if (!truly) ++rejected_perturbations;
  }
  // The generator exercises predicates and non-bijective perturbations.
  EXPECT_GT(with_predicate, iterations / 15);
  // Predicates are harder: nearly all such maps are recognized (every one at the default seed).
  EXPECT_GT(detected_with_predicate, with_predicate * 9 / 10);
  EXPECT_GT(rejected_perturbations, iterations / 3);
}

}  // namespace
}  // namespace kiln::arith
