// Error cases of compute_at, compute_inline and reverse_compute_inline on hand-built functions
// that te.create_prim_func cannot produce (a write after read, two writers of a buffer, an
// in-place update, a nested scope, opaque accesses, a restrictive predicate). Each failure must
// leave the schedule unchanged.
#include <gtest/gtest.h>

#include <functional>

#include "kiln/ir/buffer.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/compute_at.h"
#include "kiln/schedule/compute_inline.h"
#include "kiln/schedule/getters.h"

namespace kiln::schedule {
namespace {

using namespace kiln::ir;

constexpr int64_t kN = 8;

Ref<Buffer> buffer(const std::string& name, int64_t extent = kN) {
  return decl_buffer({int32_const(extent)}, DataType::float32(), name);
}

BufferRegion point(const Ref<Buffer>& b, const Expr& index) {
  return BufferRegion{b, {Range{index, int32_const(1)}}};
}

// A one-dimensional block over [0, kN) under its own loop: `body(v)` with v its iterator.
struct BlockSpec {
  std::string name;
  std::function<Stmt(const Expr&)> body;
  std::vector<std::pair<Ref<Buffer>, int64_t>> reads;  // buffer, offset
  std::vector<Ref<Buffer>> writes;
  std::function<Expr(const Expr&)> predicate;  // of the loop variable; none: true
};

Stmt block_realize(const BlockSpec& spec, const Ref<Var>& loop_var) {
  auto block = make<Block>();
  block->name = spec.name;
  Ref<Var> v = make_var("v_" + spec.name);
  block->iter_vars.push_back(IterVar{v, Range{int32_const(0), int32_const(kN)}});
  for (const auto& [b, offset] : spec.reads) block->reads.push_back(point(b, v + offset));
  for (const Ref<Buffer>& b : spec.writes) block->writes.push_back(point(b, v));
  block->body = spec.body(v);
  Expr predicate = spec.predicate ? spec.predicate(loop_var) : bool_const(true);
  return make<BlockRealize>(std::vector<Expr>{loop_var}, predicate, block);
}

Stmt nest(const BlockSpec& spec) {
  Ref<Var> i = make_var("i");
  return make<For>(i, int32_const(0), int32_const(kN), ForKind::kSerial, block_realize(spec, i));
}

// Blocks sharing one loop.
Stmt shared_nest(const std::vector<BlockSpec>& specs) {
  Ref<Var> i = make_var("i");
  std::vector<Stmt> body;
  for (const BlockSpec& s : specs) body.push_back(block_realize(s, i));
  return make<For>(i, int32_const(0), int32_const(kN), ForKind::kSerial, seq(body));
}

Ref<IRModule> module(const std::vector<Ref<Buffer>>& params, const std::vector<Ref<Buffer>>& allocs,
                     std::vector<Stmt> body) {
  auto root = make<Block>();
  root->name = "root";
  root->alloc_buffers = allocs;
  root->body = seq(std::move(body));
  auto func = make<PrimFunc>();
  for (const Ref<Buffer>& b : params) {
    Ref<Var> handle = make_var(b->name + "_handle", DataType::handle());
    func->params.push_back(handle);
    func->buffer_map.emplace_back(handle, b);
  }
  func->body = make<BlockRealize>(std::vector<Expr>{}, bool_const(true), root);
  auto mod = make<IRModule>();
  mod->functions["main"] = func;
  return mod;
}

Stmt store(const Ref<Buffer>& b, const Expr& index, const Expr& value) {
  return buffer_store(b, value, {index});
}

Expr load(const Ref<Buffer>& b, const Expr& index) {
  return buffer_load(b, {index});
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

TEST(ComputeLocationErrors, WriteAfterReadIsNotAStagePipeline) {
  Ref<Buffer> a = buffer("A"), out = buffer("Out"), t = buffer("T"), u = buffer("U");
  Ref<IRModule> mod = module(
      {a, out}, {t, u},
      {nest({"R", [&](const Expr& v) { return store(u, v, load(t, v)); }, {{t, 0}}, {u}, {}}),
       nest({"W", [&](const Expr& v) { return store(t, v, load(a, v)); }, {{a, 0}}, {t}, {}}),
       nest({"Y",
             [&](const Expr& v) { return store(out, v, load(u, v) + load(t, v)); },
             {{u, 0}, {t, 0}},
             {out},
             {}})});
  Schedule sch(mod, 0);
  RV w = get_block(sch, "W");
  RV y = get_block(sch, "Y");
  std::vector<RV> loops = get_loops(sch, y);
  const char* text = "block 'W' writes buffer 'T', which the earlier block 'R' reads";
  expect_error(
      sch, [&] { compute_at(sch, w, loops[0]); }, "NotStagePipelineError", text);
  expect_error(
      sch, [&] { compute_inline(sch, w); }, "NotStagePipelineError", text);
  expect_error(
      sch, [&] { reverse_compute_inline(sch, y); }, "NotStagePipelineError", text);
}

TEST(ComputeLocationErrors, RegionCoverFailureIsNotAStagePipeline) {
  Ref<Buffer> a = buffer("A"), out = buffer("Out"), t = buffer("T", kN + 1);
  Ref<IRModule> mod =
      module({a, out}, {t},
             {shared_nest(
                 {{"P", [&](const Expr& v) { return store(t, v, load(a, v)); }, {{a, 0}}, {t}, {}},
                  {"C",
                   [&](const Expr& v) { return store(out, v, load(t, v + 1)); },
                   {{t, 1}},
                   {out},
                   {}}})});
  Schedule sch(mod, 0);
  RV p = get_block(sch, "P");
  expect_error(
      sch, [&] { compute_inline(sch, p); }, "NotStagePipelineError",
      "in one iteration of loop 'i', block 'C' reads [i + 1, i + 1] of dimension 0 of "
      "buffer 'T', but block 'P' writes only [i, i] of it");
}

TEST(ComputeLocationErrors, SecondWriterIsNeitherCompleteNorReduction) {
  Ref<Buffer> a = buffer("A"), out = buffer("Out"), t = buffer("T");
  Ref<IRModule> mod = module(
      {a, out}, {t},
      {nest({"P1", [&](const Expr& v) { return store(t, v, load(a, v)); }, {{a, 0}}, {t}, {}}),
       nest({"P2", [&](const Expr& v) { return store(t, v, load(a, v) * 2); }, {{a, 0}}, {t}, {}}),
       nest({"Y", [&](const Expr& v) { return store(out, v, load(t, v)); }, {{t, 0}}, {out}, {}})});
  Schedule sch(mod, 0);
  RV p1 = get_block(sch, "P1");
  std::vector<RV> loops = get_loops(sch, get_block(sch, "Y"));
  expect_error(
      sch, [&] { compute_at(sch, p1, loops[0]); }, "NotCompleteOrReductionBlockError",
      "block 'P1' is neither a complete block (block 'P2' also writes a buffer that it "
      "writes) nor a reduction block (it has no init statement)");
  expect_error(
      sch, [&] { compute_inline(sch, p1); }, "NotCompleteBlockError",
      "block 'P1' is not a complete block: block 'P2' also writes a buffer that it writes");
}

TEST(ComputeLocationErrors, InPlaceUpdateInTheNestBreaksCompactDataflow) {
  Ref<Buffer> a = buffer("A"), out = buffer("Out"), t = buffer("T"), u = buffer("U");
  Ref<IRModule> mod = module(
      {a, out}, {t, u},
      {shared_nest(
           {{"X", [&](const Expr& v) { return store(t, v, load(a, v)); }, {{a, 0}}, {t}, {}},
            {"Z",
             [&](const Expr& v) { return store(u, v, load(u, v) + 1.0); },
             {{u, 0}},
             {u},
             {}}}),
       nest({"Y", [&](const Expr& v) { return store(out, v, load(t, v)); }, {{t, 0}}, {out}, {}})});
  Schedule sch(mod, 0);
  RV x = get_block(sch, "X");
  std::vector<RV> loops = get_loops(sch, get_block(sch, "Y"));
  expect_error(
      sch, [&] { compute_at(sch, x, loops[0]); }, "NotCompactDataflowError",
      "block 'Z', in the loop nest of block 'X' under loop 'i', is neither a complete "
      "block (it reads buffer 'U', which it writes)");
}

TEST(ComputeLocationErrors, LoopInANestedScope) {
  Ref<Buffer> a = buffer("A"), out = buffer("Out"), t = buffer("T");
  auto outer = make<Block>();
  outer->name = "outer";
  outer->reads = {BufferRegion{t, {Range{int32_const(0), int32_const(kN)}}}};
  outer->writes = {BufferRegion{out, {Range{int32_const(0), int32_const(kN)}}}};
  outer->body =
      nest({"Y", [&](const Expr& v) { return store(out, v, load(t, v)); }, {{t, 0}}, {out}, {}});
  Ref<IRModule> mod = module(
      {a, out}, {t},
      {nest({"X", [&](const Expr& v) { return store(t, v, load(a, v)); }, {{a, 0}}, {t}, {}}),
       make<BlockRealize>(std::vector<Expr>{}, bool_const(true), outer)});
  Schedule sch(mod, 0);
  RV x = get_block(sch, "X");
  std::vector<RV> loops = get_loops(sch, get_block(sch, "Y"));
  expect_error(
      sch, [&] { compute_at(sch, x, loops[0]); }, "NotInSameScopeError",
      "block 'X' and loop 'i' are not in the same scope: the block is in the scope of "
      "block 'root', the loop in that of block 'outer'");
}

TEST(ComputeLocationErrors, OpaqueAccesses) {
  Ref<Buffer> a = buffer("A"), out = buffer("Out"), t = buffer("T");
  Expr use_data = make<Call>(DataType::int32(), Builtin::CallExtern,
                             std::vector<Expr>{make<StringImm>("use"), t->data});
  Ref<IRModule> mod = module(
      {a, out}, {t},
      {nest({"X", [&](const Expr& v) { return store(t, v, load(a, v)); }, {{a, 0}}, {t}, {}}),
       nest({"Y",
             [&](const Expr& v) {
               return seq({store(out, v, load(t, v)), make<Evaluate>(use_data)});
             },
             {{t, 0}},
             {out},
             {}})});
  Schedule sch(mod, 0);
  RV x = get_block(sch, "X");
  expect_error(
      sch, [&] { compute_inline(sch, x); }, "OpaqueAccessError", "buffer 'T' is accessed opaquely");
}

TEST(ComputeLocationErrors, ConsumerPredicateThatRestrictsTheDomain) {
  Ref<Buffer> a = buffer("A"), out = buffer("Out"), t = buffer("T");
  Ref<IRModule> mod = module(
      {a, out}, {t},
      {nest({"X", [&](const Expr& v) { return store(t, v, load(a, v)); }, {{a, 0}}, {t}, {}}),
       nest({"Y",
             [&](const Expr& v) { return store(out, v, load(t, v) + 1.0); },
             {{t, 0}},
             {out},
             [](const Expr& i) { return lt(i, int32_const(5)); }})});
  Schedule sch(mod, 0);
  RV y = get_block(sch, "Y");
  expect_error(
      sch, [&] { reverse_compute_inline(sch, y); }, "ConsumerPredicateError",
      "block 'Y' has the predicate i < 5, which does not follow from its iterators being "
      "in their domains");
}

}  // namespace
}  // namespace kiln::schedule
