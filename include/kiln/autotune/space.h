// The design space of a tuning task. Schedule rules turn the function into sketches: schedules
// whose traces draw their decisions (tile sizes, unroll depth, whether to pack an operand …)
// with sampling instructions. A candidate is a sketch replayed with concrete decisions and then
// finished by the postprocessors (packing, parallel/vectorize/unroll, reduction inits), whose
// instructions its full trace records. Mutators propose neighbours by changing one decision.
//
// A sketch of a float32 matmul for an AVX2 CPU (abridged):
//   b0 = sch.get_block(name="C")
//   l1, l2, l3 = sch.get_loops(block=b0)
//   v4, v5, v6, v7 = sch.sample_perfect_tile(loop=l1, n=4, max_innermost_factor=16, decision=…)
//   l8, l9, l10, l11 = sch.split(loop=l1, factors=[v4, v5, v6, v7])
//   …                                      (j into four levels, k into two, SSRSRS order)
//   b20 = sch.cache_write(block=b0, write_buffer_index=0, storage_scope="local")
//   sch.reverse_compute_at(block=b20, loop=l16)
//   v21 = sch.sample_categorical(candidates=[0, 1], probs=[0.5, 0.5], decision=1)
//   sch.annotate(block_or_loop=b0, ann_val=v21, ann_key="kiln.pack_read")
//   v22 = sch.sample_categorical(candidates=[0, 16, 64, 512], …)
//   sch.annotate(block_or_loop=b23, ann_val=v22, ann_key="kiln.unroll_max_step")
// The rules and postprocessors are in autotune/space/, one file each.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kiln/autotune/task.h"
#include "kiln/schedule/schedule.h"

namespace kiln::autotune {

struct SpaceConfig {
  // Threads the kernels will run on; the parallel extents the space tries are multiples of it.
  // 0: the runtime's thread count.
  int num_threads = 0;
  // The largest innermost tile of a tiled loop.
  int max_innermost_factor = 64;
  // The depths of automatic unrolling the space tries (pragma_auto_unroll_max_step).
  std::vector<int64_t> unroll_steps = {0, 16, 64, 512};
  // Parallel loops get at most this many iterations per thread.
  int max_jobs_per_thread = 16;
  // Try packing the operand a tiled reduction reads along its innermost tile (B of A @ B) into
  // tiles laid out contiguously.
  bool pack_operands = true;
  // The tensor intrinsics the space tries on reduction blocks (schedule/intrin/), those whose
  // required_features the task's target has: the rule tensorize the dot products (of two forms
  // of one dot product, the wider), multi_level_tiling_tensor_core the multiply-accumulates
  // "cuda.mma_f16f16f32", "cuda.mma_bf16bf16f32", "cuda.mma_s8s8s32" and "cuda.mma_u8s8s32"
  // (each with the loads, fill and store of its family).
  std::vector<std::string> tensor_intrinsics = {"x86.avx512.vnni.dot_16x4_u8s8s32",
                                                "x86.avxvnni.dot_8x4_u8s8s32",
                                                "x86.avx512.bf16.dot_16x2_bf16bf16f32",
                                                "cuda.mma_f16f16f32",
                                                "cuda.mma_bf16bf16f32",
                                                "cuda.mma_s8s8s32",
                                                "cuda.mma_u8s8s32"};
};

// One point of the design space.
struct Candidate {
  int sketch = 0;             // which sketch it samples
  schedule::Trace decisions;  // the sketch's instructions with this candidate's decisions
  schedule::Trace trace;      // the whole schedule: decisions + postprocessors (what is stored)
  ir::Ref<ir::IRModule> mod;  // the scheduled module (function "main")
  uint64_t hash = 0;          // structural hash of the scheduled function: the dedupe key
};

// The sketches of a task and the ways to sample, replay and mutate them. sample, replay and
// mutate may run on several threads at once; the rest is not thread-safe.
class SpaceGenerator {
 public:
  // Raises a kValue error when a sketch of the task's user space does not replay on its
  // function. Keeps a reference to `task`, which must outlive the generator.
  SpaceGenerator(const TuneTask& task, const SpaceConfig& config);
  ~SpaceGenerator();
  SpaceGenerator(const SpaceGenerator&) = delete;
  SpaceGenerator& operator=(const SpaceGenerator&) = delete;

  // The sketches, at least one: those of the task's user space (TuneTask::space), else the
  // rules' (the function as it is, when no rule applies).
  const std::vector<schedule::Trace>& sketches() const;
  // Which design space this is, as the search's records keep it: empty for kiln's rules; for a
  // user space, its name and a hash of its sketches' instructions without their decisions (a
  // changed schedule function is another space). The search seeds a run only with records of
  // the same space.
  const std::string& space_id() const;

  // A random candidate of sketch `sketch`: its decisions drawn anew with `seed`. Nothing when
  // the replay or a postprocessor refuses it; the reason is counted (rejections()). On a GPU
  // target, decisions whose tiles exceed their limits (a thread count below a warp, say) are
  // drawn again, up to 64 draws, each refused draw counted under "sample: ...".
  std::optional<Candidate> sample(int sketch, uint64_t seed);
  // The candidate of sketch `sketch` with the decisions of `decisions` (a trace of the sketch).
  std::optional<Candidate> replay(int sketch, const schedule::Trace& decisions);
  // A trace like `decisions` with one decision changed by a mutator (tile sizes, categorical
  // choices, compute locations); nothing when no mutator finds a change. On a GPU target only a
  // change whose tiles keep their limits counts (a refused one under "mutate: ...").
  std::optional<schedule::Trace> mutate(const schedule::Trace& decisions, std::mt19937_64& rng);
  // The neighbours of `decisions` that move one prime factor of one tile between two levels:
  // the local search around the best candidate (on a GPU target, those within the tiles'
  // limits).
  std::vector<schedule::Trace> neighbours(const schedule::Trace& decisions);

  // Why candidates were refused, with counts ("postproc pack_operand: …": 3).
  const std::map<std::string, int64_t>& rejections() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::autotune
