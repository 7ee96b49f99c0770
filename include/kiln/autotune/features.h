// Program features for the cost model: one fixed-length vector of numbers per lowered candidate,
// computed from its loops, the arithmetic of its stores and its buffer accesses, against the
// target's vector width, registers and caches.
//
// The vector aggregates per-store analyses (each store's arithmetic by kind, its loop nest, its
// accesses) into one row: sums weighted by how often each store runs, maxima, shares (how much of
// the arithmetic is vectorized, how much runs under a parallel loop), the buffer accesses of the
// store that does the most work, allocations by scope, the analytical prior's terms (see
// cost_model.h) and a few whole-program totals. Counts that grow with the problem size are
// log-scaled, log2(1 + x), so that a tree splits them evenly. feature_names() lists every entry.
#pragma once

#include <string>
#include <vector>

#include "kiln/codegen/target.h"
#include "kiln/ir/function.h"

namespace kiln::autotune {

// What the analysis needs to know about the machine beyond the target.
struct MachineOptions {
  // Threads that run a parallel loop. 0: the runtime's thread pool size (KILN_NUM_THREADS, else
  // the cores this process may use) for the host target, `other_target_cores` for another target.
  int num_cores = 0;
  int other_target_cores = 8;
  // GPU targets: the device's multiprocessors (SMs) and CUDA compute capability (major * 10 +
  // minor); 0: those of a typical part of the target's architecture (-arch). The tuner
  // gives those of the device it measures on.
  int gpu_multiprocessors = 0;
  int gpu_compute_capability = 0;
};

// The names of the features, in the order extract_features writes them: the length of every
// feature vector. Stable for one kiln version; a saved cost model records them.
const std::vector<std::string>& feature_names();

// The features of `lowered`, a function after kiln::tir::lower (no blocks; 1-D buffer accesses),
// for `target`: feature_names().size() finite numbers. Deterministic. Loops of symbolic extent
// count one iteration; what cannot be analysed (an index that is not affine in the loops) counts
// as a gather. Raises a kValue error naming `api` for a null function or one that still has
// blocks (it must be lowered first). Tested by tests/cpp/autotune/features_test.cc.
std::vector<float> extract_features(const ir::Ref<ir::PrimFunc>& lowered,
                                    const codegen::Target& target,
                                    const MachineOptions& options = {},
                                    const char* api = "extract_features");

}  // namespace kiln::autotune
