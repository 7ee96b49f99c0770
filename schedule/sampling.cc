// Sampling primitives: sample_perfect_tile and sample_categorical.
#include "kiln/schedule/sampling.h"

#include <numeric>
#include <string>

#include "instruction_registry.h"
#include "kiln/ir/op.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

std::vector<int64_t> prime_factors(int64_t n) {
  std::vector<int64_t> primes;
  for (int64_t p = 2; p * p <= n; ++p) {
    while (n % p == 0) {
      primes.push_back(p);
      n /= p;
    }
  }
  if (n > 1) primes.push_back(n);
  return primes;
}

std::string list_text(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

// A uniform double in [0, 1).
double uniform(Schedule& sch) {
  return (sch.next_random() >> 11) * 0x1.0p-53;
}

}  // namespace

std::vector<RV> sample_perfect_tile(Schedule& sch, const RV& loop, int n, int max_innermost_factor,
                                    const std::optional<std::vector<int64_t>>& decision) {
  const char* primitive = "sample_perfect_tile";
  // Step 1. Check the arguments and the loop.
  if (n < 1 || max_innermost_factor < 1) {
    schedule_error("InvalidSampleError", primitive,
                   "n and max_innermost_factor must be at least 1, found n = " + std::to_string(n) +
                       ", max_innermost_factor = " + std::to_string(max_innermost_factor));
  }
  const For* f = sch.loop(loop, primitive).loop;
  const int64_t* extent = as_const_int(f->extent);
  if (extent == nullptr) {
    schedule_error("NonConstantExtentError", primitive,
                   "loop '" + f->loop_var->name + "' has a non-constant extent",
                   sch.func(sch.func_name(loop)), f);
  }
  // Step 2. Take or draw the factors.
  std::vector<int64_t> factors;
  if (decision.has_value()) {
    factors = *decision;
    int64_t product = 1;
    bool positive = true;
    for (int64_t x : factors) {
      positive = positive && x >= 1;
      product *= positive ? x : 1;
    }
    if (static_cast<int>(factors.size()) != n || !positive || product != *extent ||
        factors.back() > max_innermost_factor) {
      schedule_error("InvalidDecisionError", primitive,
                     "decision " + list_text(factors) + " is not " + std::to_string(n) +
                         " positive factors of " + std::to_string(*extent) +
                         " with the innermost at most " + std::to_string(max_innermost_factor));
    }
  } else {
    std::vector<int64_t> primes = prime_factors(*extent);
    // Assign each prime to a random position; retry when the innermost is too large. The
    // innermost can always be made 1, so the fallback is valid.
    for (int attempt = 0; attempt < 64 && factors.empty(); ++attempt) {
      std::vector<int64_t> trial(n, 1);
      for (int64_t p : primes) trial[sch.next_random() % n] *= p;
      if (trial.back() <= max_innermost_factor) factors = trial;
    }
    if (factors.empty()) {
      factors.assign(n, 1);
      factors[0] = *extent;
    }
  }
  // Step 3. Make the handles and record.
  std::vector<RV> out;
  Json outputs_decision = Json::array();
  for (int64_t x : factors) {
    out.push_back(sch.new_expr_rv(make_const(f->extent->dtype, x)));
    outputs_decision.push_back(x);
  }
  sch.record(Instruction{primitive,
                         Json::array({loop.name()}),
                         {{"n", n}, {"max_innermost_factor", max_innermost_factor}},
                         out,
                         outputs_decision});
  return out;
}

RV sample_categorical(Schedule& sch, const std::vector<int64_t>& candidates,
                      const std::vector<double>& probs, const std::optional<int64_t>& decision) {
  const char* primitive = "sample_categorical";
  // Step 1. Check the distribution.
  double total = std::accumulate(probs.begin(), probs.end(), 0.0);
  bool nonnegative = true;
  for (double p : probs) nonnegative = nonnegative && p >= 0.0;
  if (candidates.empty() || candidates.size() != probs.size() || !nonnegative || !(total > 0.0)) {
    schedule_error("InvalidSampleError", primitive,
                   "expected as many non-negative probabilities (with a positive sum) as "
                   "candidates; found " +
                       std::to_string(candidates.size()) + " candidates and " +
                       std::to_string(probs.size()) + " probabilities");
  }
  // Step 2. Take or draw the index.
  int64_t index = 0;
  if (decision.has_value()) {
    index = *decision;
    if (index < 0 || index >= static_cast<int64_t>(candidates.size())) {
      schedule_error("InvalidDecisionError", primitive,
                     "decision " + std::to_string(index) + " is not an index into " +
                         std::to_string(candidates.size()) + " candidates");
    }
  } else {
    double r = uniform(sch) * total;
    index = static_cast<int64_t>(candidates.size()) - 1;
    for (size_t i = 0; i < probs.size(); ++i) {
      if (r < probs[i]) {
        index = static_cast<int64_t>(i);
        break;
      }
      r -= probs[i];
    }
  }
  // Step 3. Make the handle and record.
  RV out = sch.new_expr_rv(make_const(DataType::int32(), candidates[index]));
  sch.record(Instruction{primitive,
                         Json::array(),
                         {{"candidates", candidates}, {"probs", probs}},
                         {out},
                         Json(index)});
  return out;
}

void register_sampling_instructions(std::vector<InstructionKind>* kinds) {
  kinds->push_back({"sample_perfect_tile",
                    {"loop"},
                    true,
                    [](Schedule& sch, const Json& in, const Json& attrs, const Json& decision) {
                      std::optional<std::vector<int64_t>> d;
                      if (!decision.is_null()) d = decision.get<std::vector<int64_t>>();
                      return sample_perfect_tile(sch, rv_from_json(in.at(0), "sample_perfect_tile"),
                                                 attrs.at("n").get<int>(),
                                                 attrs.at("max_innermost_factor").get<int>(), d);
                    }});
  kinds->push_back({"sample_categorical",
                    {},
                    false,
                    [](Schedule& sch, const Json&, const Json& attrs, const Json& decision) {
                      std::optional<int64_t> d;
                      if (!decision.is_null()) d = decision.get<int64_t>();
                      return std::vector<RV>{sample_categorical(
                          sch, attrs.at("candidates").get<std::vector<int64_t>>(),
                          attrs.at("probs").get<std::vector<double>>(), d)};
                    }});
}

}  // namespace kiln::schedule
