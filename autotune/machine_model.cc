// The numbers the features and the prior take from the target: vector width and registers,
// FMA, cache sizes and the cores that run a parallel loop. Targets whose caches the system does
// not report get typical sizes of current cores.
#include <algorithm>
#include <cmath>

#include "autotune/program_analysis.h"
#include "kiln/runtime/c_runtime_api.h"

namespace kiln::autotune::detail {

namespace {

constexpr double kDefaultL1Bytes = 32 * 1024;
constexpr double kDefaultL2Bytes = 1024 * 1024;
constexpr double kDefaultL3Bytes = 2 * 1024 * 1024;

}  // namespace

double slog(double x) {
  return x >= 0 ? std::log2(1 + x) : -std::log2(1 - x);
}

int MachineModel::lanes(const ir::DataType& scalar) const {
  int bits = std::max(8, scalar.bits());
  return std::max(1, vector_bits / bits);
}

double MachineModel::vectors(const ir::DataType& type) const {
  int per_register = lanes(type.element_of());
  return std::max(1, (type.lanes() + per_register - 1) / per_register);
}

MachineModel machine_model(const codegen::Target& target, const MachineOptions& options) {
  MachineModel machine;
  // A target without vector registers still computes one element at a time.
  machine.vector_bits = std::max(64, target.vector_register_bits);
  machine.num_vector_registers = target.num_vector_registers > 0 ? target.num_vector_registers : 16;
  machine.fma = target.has_fma && target.fp_contract;
  machine.l1_bytes = static_cast<double>(target.l1d_cache_bytes.value_or(kDefaultL1Bytes));
  machine.l2_bytes = static_cast<double>(target.l2_cache_bytes.value_or(kDefaultL2Bytes));
  machine.l3_bytes = static_cast<double>(target.l3_cache_bytes.value_or(kDefaultL3Bytes));
  if (target.is_gpu()) machine.warp_size = static_cast<int>(target.gpu.thread_warp_size);
  if (options.num_cores > 0) {
    machine.cores = options.num_cores;
  } else if (target.is_host) {
    // The pool that runs parallel loops, not the machine's core count: KILN_NUM_THREADS and the
    // process's CPU affinity decide how many threads share a parallel loop.
    machine.cores = std::max(1, static_cast<int>(KilnGetNumThreads()));
  } else {
    machine.cores = std::max(1, options.other_target_cores);
  }
  return machine;
}

}  // namespace kiln::autotune::detail
