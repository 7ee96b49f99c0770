// The tuner's cost model: an analytical prior that ranks candidates before anything is measured,
// an XGBoost ranking model trained on the measured candidates, the blend of the two that the
// search picks candidates by, and top-k recall, the measure of how well they rank.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/autotune/features.h"
#include "kiln/codegen/target.h"
#include "kiln/ir/function.h"

namespace kiln::autotune {

// ---------------------------------------------------------------------------------------------
// The analytical prior.
//
// An estimate of the cycles of one call of a lowered function on the target, from the same
// analysis as the features; it needs no data. Loops of one iteration are no loops. Each store
// costs, over all its executions, the larger of its compute time and its memory time, divided
// by its parallel speedup:
//
//  * Compute: per execution, the vector instructions of its value (a value of n lanes needs
//    ceil(n / target lanes) per operation; a multiply feeding an add is one FMA where the
//    target has FMA and allows contraction; division and math calls cost more), its load and
//    store instructions (a contiguous vector one per register, a broadcast one, a gather or a
//    strided vector two per lane), two vector pipes, two loads and one store per cycle, four
//    instructions issued per cycle, and the loop's overhead shared by the stores of one loop
//    body. What the compiler does to scalar code is assumed: a load repeated by an unrolled
//    copy of a statement is made once, a load that does not change in the innermost loop is
//    hoisted out of it, and an innermost loop of scalar unit-stride stores and unit-stride or
//    invariant loads, without an if in it, runs as vectors of the target's lanes (LLVM's loop
//    vectorizer; a float reduction along the loop stays scalar, as kiln does not reassociate).
//  * The register tile of a reduction: the innermost loop whose variable the stored element does
//    not depend on carries the reduction; the loops inside it form the tile. Its accumulators
//    (tile iterations times the vector registers of each store) stay in registers when the tile
//    is small enough for the compiler to unroll (at most 64 vector registers' worth) and the
//    accumulators are contiguous; then each iteration of the carrying loop lasts at least the
//    FMA latency (4 cycles) times the updates of one accumulator per iteration (a dependence
//    chain; independent accumulators overlap), and loads that do not depend on the tile loops
//    are made once per iteration. Accumulators plus the operand vectors beyond the target's
//    vector registers spill: each costs a load and a store per iteration. A tile too big to
//    unroll keeps its accumulators in memory: a load and a store per execution, and a chain
//    through memory (9 cycles).
//  * Memory: every loop's working set is the cache lines its subtree touches in one run (per
//    buffer, the most of its access patterns; unrolled copies of an access a constant apart
//    are one pattern). When the working set of a loop fits a cache, consecutive iterations of
//    the loop around it find their lines there, so an access's lines over that outer loop move
//    in once per run of it; a stream brings each line once. Bytes moved into L1, L2 and L3 cost
//    32, 16 and 8 bytes per cycle (L2, L3 and memory bandwidth per core).
//  * Parallel balance: a store under a parallel loop of extent P on C cores takes
//    ceil(P / C) / P of its time (the idle share of the last round is lost), and each start of
//    a parallel loop costs 5000 cycles.
//
// Caches are the target's (the host's, read from the system) or 32 KiB L1, 1 MiB L2 and 2 MiB of
// L3 when unknown. The numbers are typical of current x86-64 and AArch64 cores; only their
// ratios matter for ranking candidates of one function. On random schedules of a 256^3 and a
// 192^3 matmul measured on an AVX2 machine, the rank correlation of the prior with the measured
// speed is about 0.78.
//
// GPU targets ("cuda", "opencl") have a model of their own (autotune/cost_model_prior_gpu.cc),
// per kernel (an outermost loop nest bound to thread indices):
//
//  * Occupancy: registers per thread are estimated as 32 plus one per 4-byte word of the
//    thread's local arrays (a register tile indexed by constants lives in registers), at most
//    what the kernel's __launch_bounds__ leaves each thread (the rest spills); the thread blocks
//    a multiprocessor holds are the fewest its threads, blocks, shared memory and registers
//    allow. The busiest multiprocessor runs ceil(blocks / multiprocessors) blocks, in rounds of
//    the resident ones.
//  * Throughput on the busiest multiprocessor: its warp instructions (float ones on the float
//    lanes, all of them, loads and stores included, four per cycle), its tensor cores'
//    operations (a warp's mma.sync of M x N x K does 2 M N K of them; per multiprocessor and
//    cycle, float16 with float32 accumulation: A100 2048, H100 about two thirds of its dense
//    peak, 2730, as mma.sync reaches without wgmma), its shared-memory
//    wavefronts (one per cycle, by the bank model of the gpu.* features), its global-memory
//    sectors (four per cycle through L1, the L2's bandwidth). Loads are counted as the compiler
//    makes them: an element read again in the same iteration of the innermost loop that is not
//    unrolled (unrolled statements and unrolled copies of a loop) is loaded once, and a
//    thread's loads of 2 or 4 neighbouring elements of a shared array at an address the
//    compiler can prove aligned are one vector read: neighbouring loads of one iteration, and
//    a load that moves one element per iteration of a serial innermost loop (which NVRTC
//    unrolls: fully up to 32 iterations, by 4 or 8 beyond); a load that does not change in its
//    serial innermost loop, which stores nothing to its buffer, is hoisted out of the loop.
//    (NVRTC's PTX of 11 tiled GEMM and conv2d candidates whose padding for scalar reads changed
//    their shared-load count: the model's requests moved the same way in 9.)
//  * Latency per round: a warp's instructions wait 4 cycles per group of independent ones (as
//    many as its local words, at most 8), its mma.sync 32 cycles per group of independent ones
//    (a fragment of the accumulator per 8 local words); its global loads wait the memory latency
//    (500 cycles) per 4 in flight. The resident warps overlap.
//  * The kernel takes the larger of that and its global buffers moved once at the chip's memory
//    bandwidth, plus a launch (4000 cycles).
//
// Multiprocessors and their resources are those of a typical part of the target's CUDA
// architecture (sm_70 V100 ... sm_90 H100, sm_100 B200, sm_120 RTX 50; an OpenCL target: the
// A100's; a warp of 32 where the target gives none), or of the device's architecture and with
// its multiprocessor count where MachineOptions gives them (the tuner gives those of the
// device it measures on). Against the times of 13 hand-written and topi.default_schedule
// kernels on an H200 (README's tables: GEMM, conv2d, batch matmul, softmax, the norms, GELU,
// add, a row sum) its cycles at 1.98 GHz are 0.60x to 1.03x the measured times (rank
// correlation 0.91); the batch matmul's shared rows at a stride of 4 modulo 8 (8-way
// conflicts), measured 1.36x slower, it puts at 2.15x. Its ranking of the tuner's candidates
// of one function has not been measured on a GPU (benchmarks/bench_gpu_prior.py does).
struct PriorEstimate {
  double cycles = 0;      // one call
  double operations = 0;  // arithmetic operations of one call (as count_flops: FMA counts 2,
                          // conversions none); elements stored when there is no arithmetic
  double throughput = 0;  // operations / cycles: the prior
  double compute_cycles = 0, memory_cycles = 0, latency_cycles = 0;  // summed over stores
  double parallel_efficiency = 1;    // cycle-weighted over the stores (1: no idle cores)
  double accumulator_registers = 0;  // of the store with the most cycles
  double spilled_registers = 0;      // of the store with the most cycles
};

// The estimate above for `lowered` (a function after kiln::tir::lower) on `target`. Raises what
// extract_features raises. Tested by tests/cpp/autotune/cost_model_test.cc.
PriorEstimate estimate_prior(const ir::Ref<ir::PrimFunc>& lowered, const codegen::Target& target,
                             const MachineOptions& options = {},
                             const char* api = "analytical_prior");

// The prior: estimated operations per cycle (higher is faster), estimate_prior(...).throughput.
double analytical_prior(const ir::Ref<ir::PrimFunc>& lowered, const codegen::Target& target,
                        const MachineOptions& options = {}, const char* api = "analytical_prior");

// Features and prior of one candidate from one analysis (what the search computes for each).
struct CandidateAnalysis {
  std::vector<float> features;
  double prior = 0;
};
CandidateAnalysis analyze_candidate(const ir::Ref<ir::PrimFunc>& lowered,
                                    const codegen::Target& target,
                                    const MachineOptions& options = {},
                                    const char* api = "analyze_candidate");

// ---------------------------------------------------------------------------------------------
// Ranking metrics.

// |top-k by score ∩ top-k by measurement| / k: how many of the k candidates predicted fastest
// (highest scores) are among the k measured fastest (lowest seconds). Ties are broken by
// position. k larger than the number of candidates is reduced to it. Raises a kValue error
// naming `api` for empty or mismatched inputs, k < 1, NaN values, or seconds that are not
// positive (+inf, a failed run, is allowed: it ranks last).
double top_k_recall(const std::vector<double>& scores, const std::vector<double>& seconds, int k,
                    const char* api = "top_k_recall");

// Ranks of `values` scaled to [0, 1] (0: the smallest; equal values share their mean rank; one
// value gets 0.5). The blend of the cost model mixes these.
std::vector<double> rank_normalize(const std::vector<double>& values);

// ---------------------------------------------------------------------------------------------
// The learned model.

struct CostModelOptions {
  // XGBoost: boosting rounds, tree depth, learning rate, threads (0: XGBoost's default), seed.
  int num_rounds = 30;
  int max_depth = 4;
  double learning_rate = 0.3;
  int num_threads = 1;
  int seed = 0;
  // "rank:pairwise" or "rank:ndcg": each group is one task's measured candidates.
  std::string objective = "rank:pairwise";
  // The blend: XGBoost's weight is n / (n + half_weight_rows) with n measured rows of the group
  // predicted, and 0 below min_group_rows (the prior alone). On measured matmul schedules the
  // blend ranked best with 16 (XGBoost catches up with the prior after about 16 rows).
  double half_weight_rows = 16;
  int min_group_rows = 8;
  // k of the held-out recall that update() reports (reduced to the batch size).
  int recall_k = 8;
};

// What update() did.
struct UpdateResult {
  int64_t rows = 0;  // rows stored after it, all groups
  // top_k_recall of XGBoost's predictions on the new batch before it was trained on (held out);
  // NaN when there was no trained model or the batch had no successful measurement.
  double holdout_recall = 0;
  bool trained = false;  // a model was trained (the data had a group with two distinct times)
  double train_seconds = 0;
};

// A ranking model of candidate run times. Rows are feature vectors (extract_features) of
// measured candidates, each in a group: one tuning task. Labels are normalized throughput
// within the group, min_seconds / seconds (1 for the fastest, 0 for a failed run), recomputed
// when faster candidates arrive, so every update retrains from scratch on all rows (measured on
// one thread of an AMD Zen 3: 25 ms for 100 rows, 85 ms for 2000; continuing the old trees would
// fit stale labels). XGBoost runs on one thread by default: its OpenMP threads spin, and with
// two of them on a busy two-core machine the same training took 9 s instead of 0.1 s.
// Predictions are scores, higher = faster. Not safe to use from several threads at once.
// Tested by tests/cpp/autotune/cost_model_test.cc and tests/python/test_autotune_cost_model.py.
class CostModel {
 public:
  explicit CostModel(CostModelOptions options = {});
  ~CostModel();
  CostModel(CostModel&&) noexcept;
  CostModel& operator=(CostModel&&) noexcept;
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  // Adds measured rows of `group` and retrains. `seconds` are run times, +inf for a failed
  // candidate. Raises a kValue error for empty or mismatched inputs, rows whose length is not
  // feature_names().size() or that hold NaN or inf, and NaN, zero or negative seconds; the model
  // is unchanged then. An XGBoost failure is a kRuntime error naming the call.
  UpdateResult update(const std::vector<std::vector<float>>& rows,
                      const std::vector<double>& seconds, int64_t group);

  // Scores of `rows`, higher = faster: the rank-normalized XGBoost prediction and the
  // rank-normalized priors (one per row, e.g. analytical_prior; empty: none) blended with
  // XGBoost's weight (xgboost_weight(group)). Without priors and without a model every score
  // is 0.5. Raises a kValue error for rows of the wrong length and priors of another count.
  std::vector<double> predict(const std::vector<std::vector<float>>& rows,
                              const std::vector<double>& priors,
                              std::optional<int64_t> group = std::nullopt) const;
  // XGBoost's raw scores (no blend); empty when no model is trained.
  std::vector<double> predict_model(const std::vector<std::vector<float>>& rows) const;

  // The weight of XGBoost in the blend for `group` (all rows when none is given).
  double xgboost_weight(std::optional<int64_t> group = std::nullopt) const;

  // Writes the model to `dir` (created if needed): cost_model.json (XGBoost's model, when one is
  // trained) and cost_model_rows.txt (the options, the feature count and a hash of the feature
  // names, and the rows with their seconds and groups), each written to a temporary file and
  // renamed into place. A model loaded from it predicts exactly what this one does. A kRuntime
  // error when writing fails.
  void save(const std::string& dir) const;
  // Replaces this model by the one saved in `dir`. A kValue error names the file and what is
  // wrong when it is missing, damaged, or saved with other features.
  void load(const std::string& dir);

  int64_t num_rows() const;
  int64_t num_rows(int64_t group) const;
  bool trained() const;
  const CostModelOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::autotune
