// Tuning tasks: the workload key, the checks of make_task and the operation count.
#include <gtest/gtest.h>

#include "kiln/autotune/task.h"
#include "kiln/ir/buffer.h"
#include "kiln/ir/op.h"
#include "kiln/ir/structural.h"
#include "kiln/support/error.h"
#include "kiln/te/create_prim_func.h"
#include "kiln/te/reduction.h"
#include "kiln/te/tensor.h"
#include "lowered_workloads.h"

namespace kiln::autotune {
namespace {

using namespace ir;

using testing::c;
using testing::matmul;

TEST(Task, CountsAMultiplyAddAsTwoOperations) {
  EXPECT_DOUBLE_EQ(count_flops(*matmul(64, 32, 16)), 2.0 * 64 * 32 * 16);
}

TEST(Task, IndexArithmeticIsNotCounted) {
  te::Tensor a = te::placeholder({c(8)}, DataType::int32(), "A");
  te::Tensor out = te::compute(
      {c(4)}, [&](const std::vector<Ref<Var>>& i) { return a({i[0] * 2 + 1}) * 3; }, "B");
  EXPECT_DOUBLE_EQ(count_flops(*te::create_prim_func({a, out})), 4.0);
}

TEST(Task, MakeTaskKeysTheWorkload) {
  Ref<PrimFunc> f = matmul(8, 8, 8);
  TuneTask task = make_task(f, "llvm", "mm", 2.0);
  EXPECT_EQ(task.name, "mm");
  EXPECT_EQ(task.weight, 2.0);
  EXPECT_EQ(task.workload_hash, structural_hash(f));
  EXPECT_EQ(task.workload_hash, make_task(matmul(8, 8, 8), "llvm").workload_hash);
  EXPECT_NE(task.workload_hash, make_task(matmul(8, 8, 16), "llvm").workload_hash);
  EXPECT_DOUBLE_EQ(task.flops, 1024.0);
  EXPECT_EQ(make_task(f, "llvm").name, "main");
}

TEST(Task, SymbolicShapesAreRefused) {
  Ref<Var> n = make_size_var("n");
  te::Tensor a = te::placeholder({n}, DataType::float32(), "A");
  te::Tensor out = te::compute(
      {n},
      [&](const std::vector<Ref<Var>>& i) {
        return a({i[0]}) + make_const(DataType::float32(), 1.0);
      },
      "B");
  try {
    make_task(te::create_prim_func({a, out}), "llvm", "", 1.0, "tune_tir");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find("tune_tir: buffer A has the symbolic dimension n; "
                                         "tuning measures one concrete size"),
              std::string::npos)
        << e.what();
  }
}

TEST(Task, BadTargetAndWeightAreRefused) {
  EXPECT_THROW(make_task(matmul(4, 4, 4), "rocm"), Error);
  EXPECT_THROW(make_task(matmul(4, 4, 4), "llvm", "x", 0.0), Error);
}

TEST(Task, GpuTargetsMakeTasks) {
  // Building and measuring need a device; the task itself does not (a build may look its records
  // up on any machine).
  TuneTask task = make_task(matmul(4, 4, 4), "cuda -arch=sm_80");
  EXPECT_TRUE(task.target.is_gpu());
  EXPECT_EQ(task.target.kind, "cuda");
}

}  // namespace
}  // namespace kiln::autotune
