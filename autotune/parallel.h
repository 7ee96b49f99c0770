// Threads of the tuner (private to autotune/): the cores this process may use (the runner's
// build workers, the search's threads), and a loop whose iterations run on several threads. The
// search replays and analyzes candidates on them while no candidate is built or measured, and
// keeps whatever depends on order (the random draws, deduplication) on its own thread, so that
// a run does the same with any number of threads.
#pragma once

#include <cstddef>
#include <functional>

namespace kiln::autotune {

// The cores this process may run on (its affinity mask; the hardware's when that cannot be
// read), at least 1.
int available_cores();

// Runs body(0) .. body(count - 1), each once, on at most `threads` threads (the caller's among
// them; fewer when the system gives no more), and returns when all have finished. An exception
// thrown by a body stops the loop (indices not started are skipped) and is rethrown here (one of
// them when several threw).
void parallel_for(size_t count, int threads, const std::function<void(size_t)>& body);

}  // namespace kiln::autotune
