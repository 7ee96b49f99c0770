// Error cases of rfactor, decompose_reduction, blockize and the tensor intrinsic registry on
// hand-built functions that te.create_prim_func cannot produce (a binding that is not affine, a
// predicate over both kinds of loops that the first step does not decide, an update of another
// element, a description with two blocks). Each schedule failure must leave the schedule unchanged.
#include <gtest/gtest.h>

#include <functional>

#include "kiln/ir/buffer.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/schedule/blockize_tensorize.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/reduction.h"
#include "kiln/schedule/tensor_intrin.h"

namespace kiln::schedule {
namespace {

using namespace kiln::ir;

// A row reduction over loops i in [0, 8) and k in [0, 8):
//   B[vi] = B[vi] + A[vi, vk], init B[vi] = 0
// with the bindings, predicate and stored buffer given.
struct Reduction {
  Expr vk_binding(const Ref<Var>& k) const { return binding ? binding(k) : Expr(k); }
  std::function<Expr(const Ref<Var>&)> binding;  // of the reduce iterator; none: k
  int64_t vk_extent = 8;
  std::function<Expr(const Ref<Var>&, const Ref<Var>&)> predicate;  // of i, k; none: true
  bool update_other_buffer = false;
};

Ref<PrimFunc> row_sum(const Reduction& spec) {
  Ref<Buffer> a =
      decl_buffer({int32_const(8), int32_const(spec.vk_extent)}, DataType::float32(), "A");
  Ref<Buffer> b = decl_buffer({int32_const(8)}, DataType::float32(), "B");
  Ref<Buffer> c = decl_buffer({int32_const(8)}, DataType::float32(), "C");
  Ref<Var> i = make_var("i"), k = make_var("k");
  Ref<Var> vi = make_var("vi"), vk = make_var("vk");
  auto block = make<Block>();
  block->name = "B";
  block->iter_vars = {
      IterVar{vi, Range{int32_const(0), int32_const(8)}, IterType::kDataPar},
      IterVar{vk, Range{int32_const(0), int32_const(spec.vk_extent)}, IterType::kCommReduce}};
  block->reads = {BufferRegion{a, {Range{vi, int32_const(1)}, Range{vk, int32_const(1)}}}};
  block->writes = {BufferRegion{b, {Range{vi, int32_const(1)}}}};
  block->init = buffer_store(b, make_const(DataType::float32(), 0.0), {vi});
  const Ref<Buffer>& target = spec.update_other_buffer ? c : b;
  block->body = buffer_store(target, buffer_load(target, {vi}) + buffer_load(a, {vi, vk}), {vi});
  Expr predicate = spec.predicate ? spec.predicate(i, k) : bool_const(true);
  Stmt realize = make<BlockRealize>(std::vector<Expr>{i, spec.vk_binding(k)}, predicate, block);
  Stmt nest = make<For>(i, int32_const(0), int32_const(8), ForKind::kSerial,
                        make<For>(k, int32_const(0), int32_const(8), ForKind::kSerial, realize));
  auto root = make<Block>();
  root->name = "root";
  root->body = nest;
  auto func = make<PrimFunc>();
  for (const Ref<Buffer>& buffer : {a, b, c}) {
    Ref<Var> handle = make_var(buffer->name + "_handle", DataType::handle());
    func->params.push_back(handle);
    func->buffer_map.emplace_back(handle, buffer);
  }
  func->body = make<BlockRealize>(std::vector<Expr>{}, bool_const(true), root);
  return func;
}

Schedule schedule_of(const Ref<PrimFunc>& func) {
  auto mod = make<IRModule>();
  mod->functions["main"] = func;
  return Schedule(mod, 0);
}

// Runs `f`, which must throw a ScheduleError of `error_class` whose message contains `text`, and
// checks that the schedule did not change.
void expect_error(Schedule& sch, const std::function<void()>& f, const std::string& error_class,
                  const std::string& text) {
  Ref<IRModule> before = sch.mod();
  size_t length = sch.trace().instructions().size();
  try {
    f();
    ADD_FAILURE() << "expected " << error_class;
  } catch (const ScheduleError& e) {
    EXPECT_EQ(e.error_class(), error_class);
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
  EXPECT_TRUE(sch.mod().same_as(before));
  EXPECT_EQ(sch.trace().instructions().size(), length);
}

TEST(ReductionErrors, NonAffineBindingIsRejectedByRfactorAndBlockize) {
  Reduction spec;
  spec.binding = [](const Ref<Var>& k) { return k * k; };
  spec.vk_extent = 64;
  Schedule sch = schedule_of(row_sum(spec));
  RV block = get_block(sch, "B");
  std::vector<RV> loops = get_loops(sch, block);
  expect_error(
      sch, [&] { rfactor(sch, loops[1], 0); }, "NotAffineBindingError",
      "rfactor: the bindings of block 'B' are not affine in its loops");
  expect_error(
      sch, [&] { blockize(sch, loops[1]); }, "NotAffineBindingError",
      "blockize: the bindings of block 'B' are not affine in its loops");
  expect_error(
      sch, [&] { tensorize(sch, loops[1], "x86.avx512.vnni.dot_16x4_u8s8s32"); },
      "NotAffineBindingError", "tensorize: the bindings of block 'B' are not affine");
}

TEST(ReductionErrors, UpdateOfAnotherBufferIsNotAReduction) {
  Reduction spec;
  spec.update_other_buffer = true;
  Schedule sch = schedule_of(row_sum(spec));
  std::vector<RV> loops = get_loops(sch, get_block(sch, "B"));
  expect_error(
      sch, [&] { rfactor(sch, loops[1], 0); }, "NotReductionBlockError",
      "block 'B' initializes B[vi] but updates C[vi]");
}

TEST(ReductionErrors, DecomposeRejectsAPredicateOverBothKindsOfLoopsUnknownAtTheFirstStep) {
  // The reduce iterator runs backwards (vk = 7 - k): loop k at its minimum is not the step that
  // runs the init, so the condition over i and k cannot be taken there.
  Reduction spec;
  spec.binding = [](const Ref<Var>& k) { return int32_const(7) - k; };
  spec.predicate = [](const Ref<Var>& i, const Ref<Var>& k) { return lt(i + k, int32_const(12)); };
  Schedule sch = schedule_of(row_sum(spec));
  RV block = get_block(sch, "B");
  std::vector<RV> loops = get_loops(sch, block);
  expect_error(
      sch, [&] { decompose_reduction(sch, block, loops[0]); }, "LoopHeightError",
      "the condition i + k < 12 of block 'B' depends both on loops the init keeps and on reduce "
      "loops");
  // Below the spatial loop only the reduce loop is left, so the condition is dropped.
  RV init = decompose_reduction(sch, block, loops[1]);
  EXPECT_EQ(sch.block(init, "test").block->name, "B_init");
}

TEST(ReductionErrors, DecomposeTakesAPredicateOverBothKindsOfLoopsAtTheFirstStep) {
  // At k = 0, the step that runs the init, i + k < 6 is i < 6; i + k < 12 holds for every i.
  for (int64_t bound : {6, 12}) {
    Reduction spec;
    spec.predicate = [bound](const Ref<Var>& i, const Ref<Var>& k) {
      return lt(i + k, int32_const(bound));
    };
    Schedule sch = schedule_of(row_sum(spec));
    RV block = get_block(sch, "B");
    RV init = decompose_reduction(sch, block, get_loops(sch, block)[0]);
    const BlockRealize* realize = sch.block(init, "test").realize;
    EXPECT_EQ(to_script(realize->predicate), bound == 6 ? "i_init < 6" : "T.bool(True)") << bound;
  }
}

TEST(ReductionErrors, DecomposeKeepsConditionsOverCopiedLoops) {
  Reduction spec;
  spec.predicate = [](const Ref<Var>& i, const Ref<Var>&) { return lt(i, int32_const(6)); };
  Schedule sch = schedule_of(row_sum(spec));
  RV block = get_block(sch, "B");
  RV init = decompose_reduction(sch, block, get_loops(sch, block)[0]);
  const BlockRealize* realize = sch.block(init, "test").realize;
  EXPECT_EQ(realize->predicate->kind(), NodeKind::LT);
}

TEST(TensorIntrinRegistry, DescriptionMustBeOneBlockUnderLoops) {
  Reduction spec;
  Ref<PrimFunc> func = row_sum(spec);
  // Two copies of the nest under the root block.
  auto root = copy(func->body.as<BlockRealize>()->block.get());
  root->body = seq({root->body, root->body});
  auto two = copy(func.get());
  two->body = make<BlockRealize>(std::vector<Expr>{}, bool_const(true), root);
  try {
    register_tensor_intrin("test.two_blocks", two, two);
    ADD_FAILURE() << "expected a kValue error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the description of intrinsic 'test.two_blocks' must be "
                                         "a nest of loops around one block, found a SeqStmt"),
              std::string::npos)
        << e.what();
  }
  register_tensor_intrin("test.row_sum", func, func);
  EXPECT_EQ(get_tensor_intrin("test.row_sum").name, "test.row_sum");
}

}  // namespace
}  // namespace kiln::schedule
