// A user design space (TuneTask::space): its sketches replace the rules', samples draw their
// decisions anew and are finished by the postprocessors, mutations change a user decision, the
// space's identity ignores decisions, and a sketch that does not replay is refused with a
// message naming the space. tests/python/test_autotune_space_user.py tunes with one.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "kiln/autotune/space.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/schedule/sampling.h"
#include "kiln/support/error.h"
#include "lowered_workloads.h"

namespace kiln::autotune {
namespace {

using schedule::Json;
using schedule::RV;
using schedule::Schedule;
using testing::matmul;
using testing::module_of;

// The trace (JSON text) of a sketch that tiles the matmul's i and j by sampled factors, drawn
// with `seed`; with `reorder` the inner tiles go innermost (another structure).
std::string tiled_sketch(uint64_t seed, bool reorder = true) {
  Schedule sch(module_of(matmul(64)), seed);
  RV block = schedule::get_block(sch, "C");
  std::vector<RV> loops = schedule::get_loops(sch, block);
  std::vector<RV> fi = schedule::sample_perfect_tile(sch, loops[0], 2, 16);
  std::vector<RV> i = schedule::split(sch, loops[0], {fi[0], fi[1]});
  std::vector<RV> fj = schedule::sample_perfect_tile(sch, loops[1], 2, 64);
  std::vector<RV> j = schedule::split(sch, loops[1], {fj[0], fj[1]});
  if (reorder) schedule::reorder(sch, {i[0], j[0], loops[2], i[1], j[1]});
  return sch.trace().as_json().dump();
}

TuneTask task_with(std::vector<std::string> sketches) {
  TuneTask task = make_task(matmul(64), "llvm");
  task.space = UserSpace{"tiled", std::move(sketches)};
  return task;
}

// The decisions of the sample_perfect_tile instructions of a trace.
std::vector<Json> tile_decisions(const schedule::Trace& trace) {
  std::vector<Json> out;
  Json json = trace.as_json();
  for (const Json& inst : json.at("instructions")) {
    if (inst.value("kind", "") == "sample_perfect_tile") out.push_back(inst.at("decision"));
  }
  return out;
}

TEST(UserSpace, ItsSketchesReplaceTheRulesAndSamplesDrawTheirDecisionsAnew) {
  TuneTask task = task_with({tiled_sketch(1)});
  SpaceGenerator space(task, SpaceConfig{});
  ASSERT_EQ(space.sketches().size(), 1u);
  // The rules would have added a register tile, packing and parallel annotations.
  EXPECT_EQ(space.sketches()[0].instructions().size(),
            Json::parse(tiled_sketch(1))["instructions"].size());
  std::set<std::string> drawn;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    std::optional<Candidate> c = space.sample(0, seed);
    ASSERT_TRUE(c.has_value()) << "seed " << seed;
    drawn.insert(Json(tile_decisions(c->decisions)).dump());
    // The postprocessors finished it: the reduction's init is its own block.
    bool init = false;
    for (const schedule::Instruction& inst : c->trace.instructions()) {
      init |= inst.kind == "decompose_reduction";
    }
    EXPECT_TRUE(init) << "seed " << seed;
  }
  EXPECT_GT(drawn.size(), 4u);
  EXPECT_TRUE(space.rejections().empty());
}

TEST(UserSpace, MutationsChangeOneOfItsTileDecisions) {
  TuneTask task = task_with({tiled_sketch(1)});
  SpaceGenerator space(task, SpaceConfig{});
  std::optional<Candidate> c = space.sample(0, 3);
  ASSERT_TRUE(c.has_value());
  std::mt19937_64 rng(5);
  int changed = 0;
  for (int i = 0; i < 20; ++i) {
    std::optional<schedule::Trace> m = space.mutate(c->decisions, rng);
    if (!m) continue;
    std::vector<Json> before = tile_decisions(c->decisions), after = tile_decisions(*m);
    ASSERT_EQ(before.size(), after.size());
    int differ = 0;
    for (size_t k = 0; k < before.size(); ++k) differ += before[k] != after[k];
    EXPECT_EQ(differ, 1);
    changed += differ;
    EXPECT_TRUE(space.replay(0, *m).has_value());
  }
  EXPECT_GT(changed, 0);
  EXPECT_FALSE(space.neighbours(c->decisions).empty());
}

TEST(UserSpace, ItsIdentityIgnoresDecisionsButNotStructure) {
  TuneTask a = task_with({tiled_sketch(1)});
  TuneTask b = task_with({tiled_sketch(7)});
  TuneTask other = task_with({tiled_sketch(1, /*reorder=*/false)});
  std::string id_a = SpaceGenerator(a, SpaceConfig{}).space_id();
  EXPECT_EQ(id_a.rfind("tiled#", 0), 0u) << id_a;
  EXPECT_EQ(id_a, SpaceGenerator(b, SpaceConfig{}).space_id());
  EXPECT_NE(id_a, SpaceGenerator(other, SpaceConfig{}).space_id());
  // kiln's rules: no identity, as records written before user spaces.
  EXPECT_EQ(SpaceGenerator(make_task(matmul(64), "llvm"), SpaceConfig{}).space_id(), "");
}

TEST(UserSpace, ASketchThatDoesNotReplayIsRefusedNamingTheSpace) {
  auto message_of = [](std::vector<std::string> sketches) {
    TuneTask task = task_with(std::move(sketches));
    try {
      SpaceGenerator space(task, SpaceConfig{});
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kValue);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string text = message_of({"[1, 2]"});
  EXPECT_NE(text.find("design space 'tiled': sketch 0 is not a trace"), std::string::npos) << text;
  Json json = Json::parse(tiled_sketch(1));
  json["instructions"][0]["attrs"]["name"] = "D";
  text = message_of({tiled_sketch(1), json.dump()});
  EXPECT_NE(text.find("sketch 1 does not replay"), std::string::npos) << text;
  EXPECT_NE(text.find("D"), std::string::npos) << text;
  text = message_of({});
  EXPECT_NE(text.find("has no sketches"), std::string::npos) << text;
}

}  // namespace
}  // namespace kiln::autotune
