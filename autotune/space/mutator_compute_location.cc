// The mutator mutate_compute_location: another location for a block that a
// sample_compute_location decision places, among those that do not recompute a reduction
// (is_useful_compute_location), drawn uniformly. The locations depend on the schedule at that
// point of the trace, so the trace up to the instruction is replayed to draw one.
#include <algorithm>
#include <optional>

#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/schedule/compute_at.h"
#include "kiln/support/error.h"

namespace kiln::autotune {

namespace {

using schedule::Instruction;
using schedule::Json;

class MutateComputeLocation : public Mutator {
 public:
  explicit MutateComputeLocation(const SpaceContext& context) : mod_(ir::make<ir::IRModule>()) {
    mod_->functions["main"] = context.task->func;
  }
  const char* name() const override { return "mutate_compute_location"; }

  bool propose(const schedule::Trace& trace, std::mt19937_64& rng, size_t* index,
               Json* decision) const override {
    std::vector<size_t> sites;
    for (size_t i = 0; i < trace.instructions().size(); ++i) {
      const Instruction& inst = trace.instructions()[i];
      if (inst.kind == "sample_compute_location" && inst.decision.is_number_integer()) {
        sites.push_back(i);
      }
    }
    std::shuffle(sites.begin(), sites.end(), rng);
    for (size_t i : sites) {
      std::optional<int64_t> other = draw_other(trace, i, rng);
      if (!other) continue;
      *index = i;
      *decision = *other;
      return true;
    }
    return false;
  }

 private:
  // A uniform draw among the useful locations instruction `site` of `trace` could take but the
  // one it took: the trace before it replayed on the function, then a draw for its block there.
  // None when there is no other, or the replay fails.
  std::optional<int64_t> draw_other(const schedule::Trace& trace, size_t site,
                                    std::mt19937_64& rng) const {
    schedule::Schedule sch(mod_, 0);
    try {
      Json json = trace.as_json();
      Json& instructions = json.at("instructions");
      instructions.erase(instructions.begin() + static_cast<std::ptrdiff_t>(site),
                         instructions.end());
      schedule::Trace::apply_json(json, &sch);
      // The replay records one instruction per instruction replayed, with as many outputs:
      // the block handle of the site is found at the same place in the new trace.
      const std::vector<Instruction>& old_trace = trace.instructions();
      const std::vector<Instruction>& new_trace = sch.trace().instructions();
      if (new_trace.size() != site) return std::nullopt;
      const Json& block_name = old_trace[site].inputs.at(0);
      int64_t taken = old_trace[site].decision.get<int64_t>();
      for (size_t i = 0; i < site; ++i) {
        const std::vector<schedule::RV>& outputs = old_trace[i].outputs;
        for (size_t k = 0; k < outputs.size() && k < new_trace[i].outputs.size(); ++k) {
          if (outputs[k].name() != block_name) continue;
          const schedule::RV& block = new_trace[i].outputs[k];
          return schedule::draw_compute_location(
              sch, block, [&rng] { return rng(); },
              [&](int64_t location) {
                return location != taken && is_useful_compute_location(sch, block, location);
              });
        }
      }
    } catch (const Error&) {
      // A trace the space cannot replay has no alternatives to offer; nor has a malformed one.
    } catch (const Json::exception&) {
    }
    return std::nullopt;
  }

  ir::Ref<ir::IRModule> mod_;
};

}  // namespace

std::unique_ptr<Mutator> make_mutate_compute_location(const SpaceContext& context) {
  return std::make_unique<MutateComputeLocation>(context);
}

}  // namespace kiln::autotune
