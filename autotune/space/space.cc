// SpaceGenerator: the sketches of a task (the rules applied to every block, outputs first, or a
// user space's), and sampling, replaying and mutating them (the postprocessors finish every
// candidate). The rules and postprocessors are those of the target's kind: CPU or GPU.
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>

#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/ir/structural.h"
#include "kiln/runtime/c_runtime_api.h"
#include "kiln/support/error.h"

namespace kiln::autotune {

using schedule::Json;
using schedule::Schedule;
using schedule::Trace;

namespace {

// How many draws a sample takes at most to find tiles within their limits, and how far apart
// the seeds of two draws are. (GPU tiles drawn one prime factor at a time meet a warp's threads
// and the register tile together in some 5 to 10% of the draws; CPU register tiles fit the
// registers in more than half.)
constexpr int kTileDraws = 64;
constexpr uint64_t kDrawSeedStride = 0x9e3779b97f4a7c15ULL;

// The number of leading instructions of a trace (JSON) up to its last annotation of a tile
// limit, which multi_level_tiling (CPU: the register tile) and multi_level_tiling_gpu write right
// after the loops the limits constrain; 0 when it has none.
size_t limits_prefix(const Json& json) {
  size_t prefix = 0;
  const Json& instructions = json.at("instructions");
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Json& inst = instructions[i];
    if (inst.value("kind", "") != "annotate" || !inst.contains("attrs")) continue;
    std::string key = inst["attrs"].value("ann_key", "");
    if (key == kThreadExtentLowAnnotation || key == kRegisterTileAnnotation ||
        key == kRegisterColumnsAnnotation) {
      prefix = i + 1;
    }
  }
  return prefix;
}

// A schedule of `mod` whose compute locations are drawn among those that compute each value
// once (is_useful_compute_location): the others are refused by refuse_recomputation, and were
// more than half of the draws of softmax and norm sketches.
Schedule drawing_schedule(const ir::Ref<ir::IRModule>& mod, uint64_t seed) {
  Schedule sch(mod, seed);
  sch.set_location_filter(is_useful_compute_location);
  return sch;
}

// The sketches of a user space, each replayed on `mod` (decisions kept: sample draws them anew).
std::vector<Trace> user_sketches(const ir::Ref<ir::IRModule>& mod, const UserSpace& space) {
  user_check(!space.sketches.empty()) << "design space '" << space.name << "' has no sketches";
  std::vector<Trace> sketches;
  for (size_t i = 0; i < space.sketches.size(); ++i) {
    Json json = Json::parse(space.sketches[i], nullptr, false);
    user_check(json.is_object() && json.contains("instructions"))
        << "design space '" << space.name << "': sketch " << i
        << " is not a trace in JSON (an object with \"instructions\"), found '"
        << space.sketches[i].substr(0, 80) << "'";
    Schedule sch(mod, 0);
    try {
      Trace::apply_json(json, &sch);
    } catch (const Error& e) {
      user_error(ErrorKind::kValue) << "design space '" << space.name << "': sketch " << i
                                    << " does not replay on the task's function: " << e.what();
    }
    sketches.push_back(sch.trace());
  }
  return sketches;
}

// A user space's identity: its name and a stable hash of its sketches without decisions.
std::string user_space_id(const UserSpace& space, const std::vector<Trace>& sketches) {
  std::string text;
  for (const Trace& sketch : sketches) {
    Json json = sketch.as_json();
    for (Json& inst : json.at("instructions")) inst.erase("decision");
    text += json.dump() + ";";
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(ir::stable_string_hash(text)));
  return space.name + "#" + hex;
}

}  // namespace

struct SpaceGenerator::Impl {
  SpaceContext context;
  ir::Ref<ir::IRModule> mod;  // the task's function as "main"
  std::vector<std::unique_ptr<ScheduleRule>> block_rules;
  std::unique_ptr<ScheduleRule> root_rule;  // null: none (GPU targets)
  std::vector<std::unique_ptr<Postproc>> postprocs;
  std::vector<std::unique_ptr<Mutator>> mutators;
  std::vector<double> mutator_weights;
  std::vector<Trace> sketches;
  std::string space_id;  // empty: kiln's rules
  std::map<std::string, int64_t> rejections;
  std::mutex rejections_mutex;  // sample, replay and mutate run on several threads

  // Step 1 of a candidate: the trace replayed on a fresh schedule (decisions that are null are
  // drawn with `seed`). Step 2: the postprocessors. Any kiln error refuses the candidate.
  // A draw whose tiles exceed their limits (check_gpu_tiles on a GPU target,
  // check_register_tiles on a CPU) is refused before the postprocessors, and `*redraw` says so.
  std::optional<Candidate> finish(int sketch, const Json& trace_json, uint64_t seed,
                                  bool* redraw = nullptr) {
    Schedule sch = drawing_schedule(mod, seed);
    try {
      Trace::apply_json(trace_json, &sch, /*redraw_invalid_decisions=*/true);
    } catch (const Error& e) {
      reject("replay", e);
      return std::nullopt;
    }
    if (!within_tile_limits(sch, "sample")) {
      if (redraw != nullptr) *redraw = true;
      return std::nullopt;
    }
    Candidate candidate;
    candidate.sketch = sketch;
    candidate.decisions = sch.trace();
    for (const std::unique_ptr<Postproc>& postproc : postprocs) {
      try {
        postproc->apply(sch);
      } catch (const Error& e) {
        reject(std::string("postproc ") + postproc->name(), e);
        return std::nullopt;
      }
    }
    candidate.trace = sch.trace();
    candidate.mod = sch.mod();
    candidate.hash = ir::structural_hash(sch.mod()->lookup("main"));
    return candidate;
  }

  // Whether `sch` keeps the limits of its tiles (GPU: threads, outputs per thread, shared
  // memory; CPU: the register tile); a refusal is counted under `where`.
  bool within_tile_limits(Schedule& sch, const std::string& where) {
    try {
      if (context.task->target.is_gpu()) {
        check_gpu_tiles(sch, context.task->target);
      } else {
        check_register_tiles(sch, context.task->target);
      }
    } catch (const Error& e) {
      reject(where, e);
      return false;
    }
    return true;
  }

  // Replays the first `prefix` instructions of `*json`, drawing their null decisions with
  // `seed`, and checks the limits of the tiles made so far (GPU: the threads and the outputs
  // per thread, the shared copies come later; CPU: the register tiles). Within them, the drawn
  // decisions go into `*json`. A refusal is counted under `where`. Replaying the loops alone costs
  // a fraction of the whole sketch, and most draws fail here.
  bool draw_within_tile_limits(Json* json, size_t prefix, uint64_t seed, const std::string& where) {
    Json head = *json;
    Json& instructions = head.at("instructions");
    instructions.erase(instructions.begin() + static_cast<std::ptrdiff_t>(prefix),
                       instructions.end());
    Schedule sch = drawing_schedule(mod, seed);
    try {
      Trace::apply_json(head, &sch, /*redraw_invalid_decisions=*/true);
    } catch (const Error& e) {
      reject("replay", e);
      return false;
    }
    if (!within_tile_limits(sch, where)) return false;
    Json decided = sch.trace().as_json();
    for (size_t i = 0; i < prefix; ++i) {
      (*json)["instructions"][i]["decision"] = decided["instructions"][i]["decision"];
    }
    return true;
  }

  // Whether the decisions of `trace` keep the limits of their tiles. On a GPU the whole trace:
  // its shared copies, and the stages of them that a later decision asks for
  // (kiln.prefetch_shared), count against the shared memory.
  bool replays_within_tile_limits(const Trace& trace) {
    Json json = trace.as_json();
    size_t prefix = limits_prefix(json);
    if (prefix == 0) return true;
    if (!context.task->target.is_gpu()) return draw_within_tile_limits(&json, prefix, 0, "mutate");
    return draw_within_tile_limits(&json, json.at("instructions").size(), 0, "mutate");
  }

  void reject(const std::string& where, const Error& e) {
    const auto* schedule_error = dynamic_cast<const schedule::ScheduleError*>(&e);
    std::string what = schedule_error != nullptr ? schedule_error->error_class() : "error";
    std::lock_guard<std::mutex> lock(rejections_mutex);
    ++rejections[where + ": " + what];
  }
};

SpaceGenerator::SpaceGenerator(const TuneTask& task, const SpaceConfig& config)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.context.task = &task;
  s.context.config = config;
  s.context.num_threads = config.num_threads > 0 ? config.num_threads : KilnGetNumThreads();
  s.mod = ir::make<ir::IRModule>();
  s.mod->functions["main"] = task.func;
  if (task.target.is_gpu()) {
    // GPU: every block ends up bound to thread blocks and threads: products with reuse tiled
    // for thread blocks, virtual threads and threads with shared-memory staging, reductions of
    // few elements a block of threads per element, the rest one element per thread; the
    // verifier drops what the GPU could not run. There is no root rule.
    s.block_rules.push_back(make_auto_inline(s.context));
    s.block_rules.push_back(make_cross_thread_reduction(s.context));
    s.block_rules.push_back(make_multi_level_tiling_tensor_core(s.context));
    s.block_rules.push_back(make_multi_level_tiling_gpu(s.context));
    s.block_rules.push_back(make_auto_bind(s.context));
    s.postprocs.push_back(make_rewrite_cooperative_fetch(s.context));
    s.postprocs.push_back(make_pad_shared_tiles(s.context));
    s.postprocs.push_back(make_verify_gpu_code(s.context));
  } else {
    s.block_rules.push_back(make_auto_inline(s.context));
    s.block_rules.push_back(make_tensorize(s.context));
    s.block_rules.push_back(make_add_rfactor(s.context));
    s.block_rules.push_back(make_multi_level_tiling(s.context));
    s.block_rules.push_back(make_transpose_tiling());
    s.block_rules.push_back(make_random_compute_location(s.context));
    s.root_rule = make_parallel_vectorize_unroll(s.context);
    s.postprocs.push_back(make_refuse_recomputation(s.context));
    s.postprocs.push_back(make_pack_operand(s.context));
    s.postprocs.push_back(make_partial_result_lanes(s.context));
    s.postprocs.push_back(make_rewrite_reduction_block(s.context));
    s.postprocs.push_back(make_parallel_vectorize_unroll_postproc(s.context));
  }
  s.mutators.push_back(make_mutate_tile_size(s.context));
  s.mutator_weights.push_back(0.85);
  s.mutators.push_back(make_mutate_categorical(s.context));
  s.mutator_weights.push_back(0.15);
  s.mutators.push_back(make_mutate_compute_location(s.context));
  s.mutator_weights.push_back(0.1);

  if (task.space) {
    s.sketches = user_sketches(s.mod, *task.space);
    s.space_id = user_space_id(*task.space, s.sketches);
    return;
  }
  // The sketches: every rule on every block, outputs first (a consumer's schedule decides
  // what its producers are computed for), then the root rule.
  // A block a rule creates (the partial result of rfactor) is a producer of the block the rule
  // was applied to: the rules visit it next, in the sketches that have it (a rule leaves a
  // sketch without the block as it is).
  // The rules' own draws are not narrowed (drawing_schedule): where a sketch's first location
  // went decides which later rules apply (a softmax whose row sum stayed at the root has no
  // sketch that inlines its exp), and the sketches of these draws tuned softmax 10-18% faster.
  std::vector<Schedule> current = {Schedule(s.mod, 0)};
  std::vector<std::string> blocks = current[0].index("main").block_names();
  std::reverse(blocks.begin(), blocks.end());
  std::set<std::string> seen(blocks.begin(), blocks.end());
  for (size_t b = 0; b < blocks.size(); ++b) {
    const std::string name = blocks[b];
    // An extern block (a call of a C function) is fixed: the rules leave it as it is.
    if (name == "root" || is_extern_block(current[0], name)) continue;
    for (const std::unique_ptr<ScheduleRule>& rule : s.block_rules) {
      std::vector<Schedule> next;
      for (const Schedule& sch : current) {
        std::vector<Schedule> results = rule->apply(sch, name);
        next.insert(next.end(), results.begin(), results.end());
      }
      current = std::move(next);
    }
    std::vector<std::string> created;
    for (Schedule& sch : current) {
      for (const std::string& other : sch.index("main").block_names()) {
        if (seen.insert(other).second) created.push_back(other);
      }
    }
    std::reverse(created.begin(), created.end());
    blocks.insert(blocks.begin() + static_cast<std::ptrdiff_t>(b) + 1, created.begin(),
                  created.end());
  }
  for (Schedule& sch : current) {
    if (!s.root_rule) {
      s.sketches.push_back(sch.trace());
      continue;
    }
    std::vector<Schedule> results = s.root_rule->apply(sch, "root");
    s.sketches.push_back(results.front().trace());
  }
}

SpaceGenerator::~SpaceGenerator() = default;

const std::vector<Trace>& SpaceGenerator::sketches() const {
  return impl_->sketches;
}

const std::string& SpaceGenerator::space_id() const {
  return impl_->space_id;
}

std::optional<Candidate> SpaceGenerator::sample(int sketch, uint64_t seed) {
  internal_check(sketch >= 0 && sketch < static_cast<int>(impl_->sketches.size()))
      << "SpaceGenerator::sample: no sketch " << sketch;
  Json json = impl_->sketches[sketch].as_json();
  for (Json& inst : json.at("instructions")) inst["decision"] = nullptr;
  // Tiles drawn outside their limits (GPU: most draws, with a thread count below a warp or too
  // many outputs per thread; CPU: register tiles that spill) are drawn again with the next
  // seeds; each refused draw is counted.
  size_t prefix = limits_prefix(json);
  for (int draw = 0; draw < kTileDraws; ++draw) {
    uint64_t draw_seed = seed + static_cast<uint64_t>(draw) * kDrawSeedStride;
    Json drawn = json;
    if (prefix > 0 && !impl_->draw_within_tile_limits(&drawn, prefix, draw_seed, "sample")) {
      continue;
    }
    bool redraw = false;
    std::optional<Candidate> candidate = impl_->finish(sketch, drawn, draw_seed, &redraw);
    if (!redraw) return candidate;
  }
  return std::nullopt;
}

std::optional<Candidate> SpaceGenerator::replay(int sketch, const Trace& decisions) {
  return impl_->finish(sketch, decisions.as_json(), 0);
}

std::optional<Trace> SpaceGenerator::mutate(const Trace& decisions, std::mt19937_64& rng) {
  Impl& s = *impl_;
  std::discrete_distribution<size_t> pick(s.mutator_weights.begin(), s.mutator_weights.end());
  // A proposal counts only when its tiles keep their limits (the mutators see one decision,
  // not the thread count or register tile that several of them multiply into).
  bool gpu = s.context.task->target.is_gpu();
  for (int attempt = 0; attempt < (gpu ? kTileDraws : 4); ++attempt) {
    size_t index = 0;
    Json decision;
    if (s.mutators[pick(rng)]->propose(decisions, rng, &index, &decision)) {
      Trace mutated = decisions.with_decision(index, decision);
      if (s.replays_within_tile_limits(mutated)) return mutated;
    }
  }
  return std::nullopt;
}

std::vector<Trace> SpaceGenerator::neighbours(const Trace& decisions) {
  Impl& s = *impl_;
  std::vector<Trace> out;
  for (const auto& [index, decision] : tile_size_neighbours(decisions)) {
    Trace neighbour = decisions.with_decision(index, decision);
    if (s.replays_within_tile_limits(neighbour)) out.push_back(std::move(neighbour));
  }
  return out;
}

const std::map<std::string, int64_t>& SpaceGenerator::rejections() const {
  return impl_->rejections;
}

}  // namespace kiln::autotune
