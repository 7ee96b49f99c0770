// Threads and memory of the tuner (private to autotune/): the cores this process may use (the
// runner's build workers, the search's threads), the memory its workers may take, and a loop
// whose iterations run on several threads. The search mutates, replays and analyzes candidates
// on them while no candidate is built or measured, and keeps whatever depends on order (the
// random draws, deduplication) on its own thread, so that a run does the same with any number
// of threads.
#pragma once

#include <cstddef>
#include <functional>

namespace kiln::autotune {

// The cores this process may run on (its affinity mask; the hardware's when that cannot be
// read), at least 1.
int available_cores();

// The memory new allocations may take on this machine: MemAvailable of /proc/meminfo (Linux),
// else the free pages; 0 when neither can be read.
double available_memory_bytes();

// How many of at most `at_most` things of `bytes_each` fit in `available_bytes`, at least 1;
// `at_most` when either size is unknown (0 or less).
size_t count_that_fits(double bytes_each, double available_bytes, size_t at_most);

// Runs body(0) .. body(count - 1), each once, on at most `threads` threads (the caller's among
// them; fewer when the system gives no more), and returns when all have finished. An exception
// thrown by a body stops the loop (indices not started are skipped) and is rethrown here (one of
// them when several threw).
void parallel_for(size_t count, int threads, const std::function<void(size_t)>& body);

}  // namespace kiln::autotune
