// Sampling: primitives that draw random decisions from the schedule's random state and return
// them as value handles. The decision is recorded in the trace; replaying the trace (or passing
// `decision`) reuses it, so the same seed, or the same trace, gives the same schedule.
#pragma once

#include <optional>
#include <vector>

#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// Draws n factors whose product is the loop's extent, the innermost at most
// `max_innermost_factor`, uniformly over such factorizations built from the extent's prime
// factors.
// Preconditions:
//  1. n >= 1 and max_innermost_factor >= 1 (else InvalidSampleError).
//  2. The loop's extent is a constant (else NonConstantExtentError).
//  3. A given decision has n positive factors whose product is the extent and whose innermost
//     is at most max_innermost_factor (else InvalidDecisionError).
std::vector<RV> sample_perfect_tile(Schedule& sch, const RV& loop, int n, int max_innermost_factor,
                                    const std::optional<std::vector<int64_t>>& decision = {});

// Draws one of `candidates` with the given probabilities (normalized here).
// Preconditions:
//  1. candidates and probs are non-empty, of equal length, probs >= 0 with a positive sum
//     (else InvalidSampleError).
//  2. A given decision is an index into candidates (else InvalidDecisionError).
RV sample_categorical(Schedule& sch, const std::vector<int64_t>& candidates,
                      const std::vector<double>& probs,
                      const std::optional<int64_t>& decision = {});

}  // namespace kiln::schedule
