// Annotations: attach or remove a key-value pair on a block or a loop. Passes and the code
// generators read them (e.g. "pragma_auto_unroll_max_step", "kiln.vectorize_fallback").
#pragma once

#include <string>

#include "kiln/ir/expr.h"
#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// Sets annotation `key` of a block or loop to `value` (an IntImm, FloatImm or StringImm).
// Preconditions:
//  1. The value is a constant int, float, bool or string (InvalidAnnotationError).
void annotate(Schedule& sch, const RV& block_or_loop, const std::string& key,
              const ir::Expr& value);

// Sets annotation `key` to the value of a sampled handle (an ExprRV from sample_categorical or
// sample_perfect_tile), recorded as the handle: replaying a trace with another decision
// annotates the other value. Preconditions: as above.
void annotate(Schedule& sch, const RV& block_or_loop, const std::string& key, const RV& value);

// Removes annotation `key` of a block or loop.
// Preconditions:
//  1. The block or loop has that annotation (AnnotationNotFoundError).
void unannotate(Schedule& sch, const RV& block_or_loop, const std::string& key);

}  // namespace kiln::schedule
