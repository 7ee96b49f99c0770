// Tests of tensor expressions: placeholders, computes and reductions, and the errors their
// checks give (te/tensor.h, te/reduction.h).
#include "kiln/te/tensor.h"

#include <gtest/gtest.h>

#include <functional>

#include "kiln/ir/op.h"
#include "kiln/support/error.h"
#include "kiln/te/reduction.h"

namespace kiln::te {
namespace {

using namespace kiln::ir;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Expr c(int64_t v) {
  return int32_const(v);
}

TEST(Placeholder, OwnsABufferOfItsShapeAndDtype) {
  Tensor a = placeholder({c(4), c(8)}, DataType::float_(16), "A");
  EXPECT_EQ(a.name(), "A");
  EXPECT_EQ(a.ndim(), 2);
  EXPECT_EQ(a.dtype(), DataType::float_(16));
  EXPECT_TRUE(a.buffer()->data->dtype.is_handle());
  EXPECT_TRUE(a.op->input_tensors().empty());
}

TEST(Placeholder, RejectsNonPositiveExtents) {
  std::string msg = error_of([] { placeholder({c(4), c(0)}, DataType::float32(), "A"); });
  EXPECT_NE(msg.find("te.placeholder: dimension 1 of A has extent 0; extents must be positive"),
            std::string::npos)
      << msg;
}

TEST(Tensor, IndexingBuildsALoadOfItsBuffer) {
  Tensor a = placeholder({c(4), c(8)}, DataType::float32(), "A");
  Ref<Var> i = make_var("i");
  Expr load = a({i, i + 1});
  const auto* l = load.as<BufferLoad>();
  ASSERT_NE(l, nullptr);
  EXPECT_TRUE(l->buffer.same_as(a.buffer()));
  EXPECT_EQ(tensor_of_buffer(l->buffer.get()), a);
}

TEST(Tensor, IndexingChecksArityAndIndexType) {
  Tensor a = placeholder({c(4), c(8)}, DataType::float32(), "A");
  std::string msg = error_of([&] { a({make_var("i")}); });
  EXPECT_NE(msg.find("tensor A has 2 dimensions but 1 index was given"), std::string::npos) << msg;
  msg = error_of([&] { a({c(0), make_var("f", DataType::float32())}); });
  EXPECT_NE(msg.find("index 1 of tensor A must be an integer expression, found dtype float32"),
            std::string::npos)
      << msg;
}

TEST(Compute, RecordsAxesBodyAndInputs) {
  Tensor a = placeholder({c(4), c(8)}, DataType::float32(), "A");
  Tensor b = compute(
      {c(4), c(8)},
      [&](const std::vector<Ref<Var>>& v) {
        return a({v[0], v[1]}) * 2;
      },
      "B");
  const auto* op = dynamic_cast<const ComputeOp*>(b.op.get());
  ASSERT_NE(op, nullptr);
  ASSERT_EQ(op->axis.size(), 2u);
  EXPECT_EQ(op->axis[0].var->name, "i");
  EXPECT_EQ(op->axis[1].var->name, "j");
  EXPECT_TRUE(op->reduce_axis.empty());
  ASSERT_EQ(op->inputs.size(), 1u);
  EXPECT_EQ(op->inputs[0], a);
  EXPECT_EQ(b.dtype(), DataType::float32());
}

TEST(Compute, KeepsItsInputsAlive) {
  Tensor b;
  {
    Tensor a = placeholder({c(4)}, DataType::float32(), "A");
    b = compute(
        {c(4)}, [&](const std::vector<Ref<Var>>& v) { return a({v[0]}); }, "B");
  }
  const auto* op = dynamic_cast<const ComputeOp*>(b.op.get());
  EXPECT_EQ(op->inputs[0].name(), "A");
}

TEST(Compute, RejectsAReductionInsideArithmetic) {
  Tensor a = placeholder({c(4), c(8)}, DataType::float32(), "A");
  IterVar k = reduce_axis(Range{c(0), c(8)}, "k");
  std::string msg = error_of([&] {
    compute(
        {c(4)},
        [&](const std::vector<Ref<Var>>& v) {
          return sum(a({v[0], k.var}), {k}) + 1;
        },
        "B");
  });
  EXPECT_NE(msg.find("te.compute: compute B has a reduction inside an expression (the body's top "
                     "node is Add)"),
            std::string::npos)
      << msg;
}

TEST(Compute, RejectsAReduceAxisOutsideAReduction) {
  Tensor a = placeholder({c(4), c(8)}, DataType::float32(), "A");
  IterVar k = reduce_axis(Range{c(0), c(8)}, "k");
  std::string msg = error_of([&] {
    compute(
        {c(4)},
        [&](const std::vector<Ref<Var>>& v) {
          return a({v[0], k.var});
        },
        "B");
  });
  EXPECT_NE(msg.find("te.compute: compute B uses reduce axis k outside a reduction"),
            std::string::npos)
      << msg;
}

TEST(Reduction, SumBuildsAReduceWithAnAddCombiner) {
  Tensor a = placeholder({c(4), c(8)}, DataType::float32(), "A");
  IterVar k = reduce_axis(Range{c(0), c(8)}, "k");
  EXPECT_EQ(k.type, IterType::kCommReduce);
  Expr r = sum(a({c(0), k.var}), {k});
  const auto* reduce = r.as<Reduce>();
  ASSERT_NE(reduce, nullptr);
  EXPECT_TRUE(reduce->combiner->result[0].is<Add>());
  EXPECT_TRUE(is_const_int(reduce->condition, 1));
  const auto* identity = reduce->combiner->identity[0].as<FloatImm>();
  ASSERT_NE(identity, nullptr);
  EXPECT_EQ(identity->value, 0.0);
}

TEST(Reduction, MaxStartsFromTheLowestValue) {
  Tensor a = placeholder({c(8)}, DataType::int_(8), "A");
  IterVar k = reduce_axis(Range{c(0), c(8)}, "k");
  Expr r = max(a({k.var}), {k});
  const auto* reduce = r.as<Reduce>();
  ASSERT_NE(reduce, nullptr);
  EXPECT_TRUE(is_const_int(reduce->combiner->identity[0], -128));
}

TEST(Reduction, AcceptsAnAxisTheValuesDoNotUse) {
  Tensor a = placeholder({c(8)}, DataType::float32(), "A");
  IterVar k = reduce_axis(Range{c(0), c(8)}, "k");
  IterVar r = reduce_axis(Range{c(0), c(2)}, "r");
  const auto* reduce = sum(a({k.var}), {k, r}).as<Reduce>();
  ASSERT_NE(reduce, nullptr);
  EXPECT_EQ(reduce->axis.size(), 2u);
}

TEST(Reduction, RejectsAnEmptyRange) {
  std::string msg = error_of([] { reduce_axis(Range{c(2), c(-1)}, "k"); });
  EXPECT_NE(msg.find("te.reduce_axis: axis k has the empty range [2, 1) (extent -1)"),
            std::string::npos)
      << msg;
}

TEST(Reduction, RejectsASumOfBools) {
  Tensor a = placeholder({c(8)}, DataType::bool_(), "A");
  IterVar k = reduce_axis(Range{c(0), c(8)}, "k");
  std::string msg = error_of([&] { sum(a({k.var}), {k}); });
  EXPECT_NE(msg.find("te.sum: cannot reduce a bool expression arithmetically"), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace kiln::te
