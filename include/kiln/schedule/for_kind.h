// Loop kinds: parallel, vectorize, unroll and bind (GPU thread binding). They change how a loop
// runs, not which iterations it has.
#pragma once

#include <string>

#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// Marks a loop parallel: its iterations run on the runtime's thread pool.
// Preconditions:
//  1. No block iterator bound by an expression of the loop variable is a reduction (or other
//     non-spatial) iterator: iterations of a reduction must not run concurrently
//     (WrongBlockIterTypeError).
void parallel(Schedule& sch, const RV& loop);

// Marks a loop vectorized: its iterations become the lanes of vector instructions.
// Preconditions: as parallel (1).
void vectorize(Schedule& sch, const RV& loop);

// Marks a loop unrolled.
void unroll(Schedule& sch, const RV& loop);

// Binds a loop to a GPU thread axis (Python: Schedule.bind; named bind_loop here so that it
// never collides with std::bind through argument-dependent lookup): "blockIdx.x|y|z",
// "threadIdx.x|y|z" or "vthread.x|y|z". Preconditions:
//  1. The thread axis is one of those names (InvalidThreadTagError).
//  2. A blockIdx or vthread axis binds only spatial block iterators; a threadIdx axis may bind a
//     reduction iterator (a cross-thread reduction) (WrongBlockIterTypeError).
void bind_loop(Schedule& sch, const RV& loop, const std::string& thread_axis);

}  // namespace kiln::schedule
