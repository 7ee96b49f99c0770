// The parts of the design space (private to autotune/): schedule rules, which write the
// sketches' sampling instructions; postprocessors, which finish a sampled schedule; mutators,
// which change one decision of a trace. One file each in autotune/space/.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kiln/autotune/space.h"
#include "kiln/schedule/schedule.h"

namespace kiln::tir {
struct GpuLimits;
}  // namespace kiln::tir

namespace kiln::autotune {

// What every part may ask about the task.
struct SpaceContext {
  const TuneTask* task = nullptr;
  SpaceConfig config;
  int num_threads = 1;  // config.num_threads, or the runtime's
};

// Annotations through which rules hand their decisions to postprocessors (values are sampled
// handles, so that a replay with other decisions annotates the other values).
constexpr const char* kPackReadAnnotation = "kiln.pack_read";         // block: 0 or 1
constexpr const char* kPackIndexAnnotation = "kiln.pack_read_index";  // block: read index
// The dimension of that operand the innermost tile runs along, where it is not its last (the
// filters of a convolution's weight): packed as [f // NR, .., f % NR].
constexpr const char* kPackDimAnnotation = "kiln.pack_read_dim";  // block: its dimension
// The operand read along the rows of the register tile (A of a matmul), packed so that the
// micro-kernel reads its MR rows of one k step side by side ([i // MR, k, i % MR]).
constexpr const char* kPackRowsAnnotation = "kiln.pack_rows";             // block: 0 or 1
constexpr const char* kPackRowsIndexAnnotation = "kiln.pack_rows_index";  // block: read index
constexpr const char* kPackRowsDimAnnotation = "kiln.pack_rows_dim";      // block: its row dim
// CPU: the register tile multi_level_tiling drew for a block (its rows MR and columns NR), which
// check_register_tiles holds to the target's vector registers.
constexpr const char* kRegisterRowsAnnotation = "kiln.register_tile_rows";        // block: MR
constexpr const char* kRegisterColumnsAnnotation = "kiln.register_tile_columns";  // block: NR
constexpr const char* kParallelMaxAnnotation = "kiln.parallel_max";    // root: max extent
constexpr const char* kVectorizeMaxAnnotation = "kiln.vectorize_max";  // root: max extent
constexpr const char* kUnrollMaxAnnotation = "kiln.unroll_max_step";   // root: unroll depth
constexpr const char* kStreamingAnnotation = "kiln.nontemporal";       // root: 0 or 1
// GPU: a shared-memory copy that rewrite_cooperative_fetch spreads over the block's threads, its
// value the vector width to copy with; on a tiled block, the fewest threads per block and the
// most outputs per thread that verify_gpu_code accepts (check_gpu_tiles).
constexpr const char* kCooperativeFetchAnnotation = "kiln.cooperative_fetch";  // block: lanes
// GPU: whether pad_shared_tiles pads the rows of a shared-memory copy by the bank model: 0 no,
// 1 for a thread's reads along a row merged into vectors, 2 for scalar reads.
constexpr const char* kPadSharedAnnotation = "kiln.pad_shared";               // block: 0, 1 or 2
constexpr const char* kThreadExtentLowAnnotation = "kiln.thread_extent_low";  // block: threads
constexpr const char* kRegisterTileAnnotation = "kiln.max_register_tile";     // block: outputs
// GPU: on a block tensorized with warp-level intrinsics (multi_level_tiling_tensor_core) and its
// shared copies, the lanes of threadIdx.x the intrinsics run inside the block (32): a block under
// W warps (threadIdx.y) runs on 32 W threads, and the copies are spread over both axes.
constexpr const char* kWarpLanesAnnotation = "kiln.warp_lanes";  // block: lanes

// ---------------------------------------------------------------------------------------------
// Schedule rules

class ScheduleRule {
 public:
  virtual ~ScheduleRule() = default;
  virtual const char* name() const = 0;
  // The schedules `sch` becomes when the rule is applied to block `block_name` (the block may be
  // gone: then `sch` itself). Several results are alternatives (several sketches).
  virtual std::vector<schedule::Schedule> apply(const schedule::Schedule& sch,
                                                const std::string& block_name) = 0;
};

// Inlines an injective spatial block (element-wise, padding, layout changes) into its consumers
// when it is not an output:
//   b1 = sch.get_block(name="pad")
//   sch.compute_inline(block=b1)
std::unique_ptr<ScheduleRule> make_auto_inline(const SpaceContext& context);

// Tiles a reduction block with data reuse (matmul, batch matmul, convolution) in the CPU
// structure SSRSRS: each spatial loop in four levels and each reduction loop in two, drawn by
// sample_perfect_tile, ordered S0 S1 R0 S2 R1 S3, the innermost spatial levels drawn from the
// register tiles of the target; accumulates in a "local" cache written back after S1; and
// samples whether to pack the operand read along the innermost spatial tile (the
// postprocessor pack_operand does it; always where that operand reads it along another
// dimension than its last, as a dense layer's weight [n, k]). Where the target has a register tile
// for the block, a second sketch SSRRS (no S2) keeps the accumulators in registers across the
// reduction. A convolution whose innermost spatial loop slides a window over its input (NCHW), or a
// product whose innermost spatial extent is no whole vectors, gets a third, SSRRS with the vectors
// along the filters (rows): a register tile of NR filters x MR output
// columns, its accumulator tile laid out with the filters last (transform_layout), the weight
// always packed as [f // NR, .., f % NR] (kiln.pack_read_dim). Each tiling comes a second time with
// the block's output epilogue fused, where its result has one consumer that is a spatial block:
// inlined into the write-back of the accumulator tile (bias, activation), else computed under the
// outermost tile loop (SwiGLU reads two columns):
//   v4, v5, v6, v7 = sch.sample_perfect_tile(loop=l1, n=4, max_innermost_factor=64)
//   l8, l9, l10, l11 = sch.split(loop=l1, factors=[v4, v5, v6, v7])
std::unique_ptr<ScheduleRule> make_multi_level_tiling(const SpaceContext& context);

// The limit of the register tiles multi_level_tiling draws (kiln.register_tile_rows and
// kiln.register_tile_columns on a tiled block): the MR x NR float accumulators, one row of NR
// operand values and a broadcast fit the target's vector registers (MR * V + V + 1 <=
// registers, V = NR / lanes). Raises a ScheduleError (RegisterTileSpillError) for the first
// block that needs more: such tiles spill accumulators in every step of the reduction (the
// tuned GEMM and convolution tiles that did ran at 0.4x to 0.6x the best of their run). Integer
// accumulators are not held to it (a spilled int32 tile of the int8 matmul ran at 0.94x the
// best). Reads only the blocks' annotations: checked right after each draw.
void check_register_tiles(schedule::Schedule& sch, const codegen::Target& target);

// What the tiling rules (multi_level_tiling, tensorize) share. The innermost tile of a loop
// other than the innermost spatial one (rows of a register tile, or the reduction steps between
// two passes over the tile) is at most kMaxInnerTile.
constexpr int kMaxInnerTile = 16;
// Splits `loop` into `levels` parts by sample_perfect_tile, the innermost at most `max_inner`.
std::vector<schedule::RV> split_perfect(schedule::Schedule& sch, const schedule::RV& loop,
                                        int levels, int max_inner);
// Splits `loop` into `levels` parts: the innermost drawn from `candidates` by
// sample_categorical, the outer part by split_perfect into `levels - 1` (innermost at most
// kMaxInnerTile).
// The sampled innermost factor goes into `*inner` where given.
std::vector<schedule::RV> split_with_inner(schedule::Schedule& sch, const schedule::RV& loop,
                                           int levels, const std::vector<int64_t>& candidates,
                                           schedule::RV* inner = nullptr);

// Gives a reduction block that a tensor intrinsic of config.tensor_intrinsics computes, on a
// target with the intrinsic's required_features, a sketch of its own besides the block as it
// is: the operand read along the intrinsic's lanes and depth is packed into contiguous tiles
// when it is read at plain iterators, the block is tiled SSRSRS around the intrinsic's tile
// (the lane loop split by the lanes, the depth loop by the depth) and tensorized there:
//   l9, l10 = sch.split(loop=l3, factors=[None, 16])
//   sch.tensorize(block_or_loop=l10, tensor_intrin="x86.avx512.vnni.dot_16x4_u8s8s32")
// Of two intrinsics that compute the same dot product on different lane counts (AVX-512 VNNI,
// AVX-VNNI), a target that has both gets sketches of the wider only.
std::unique_ptr<ScheduleRule> make_tensorize(const SpaceContext& context);

// Gives a spatial block that reads a buffer across the rows it writes (a transpose, NCHW ->
// NHWC) a second sketch with the loop along the read's rows and the loop along the written rows
// split in two (the inner parts at most kMaxTransposeTile) and their tile loops innermost, the
// written rows' last; the block as it is stays a sketch:
//   v3, v4 = sch.sample_perfect_tile(loop=l1, n=2, max_innermost_factor=32)
//   l5, l6 = sch.split(loop=l1, factors=[v3, v4])
//   sch.reorder(l5, l9, l6, l10)
std::unique_ptr<ScheduleRule> make_transpose_tiling();
constexpr int kMaxTransposeTile = 32;

// Adds, for a reduction with fewer spatial iterations than the threads can share, two sketches
// that split its (fused) reduction loop in two and factor the reduction over the outer half (to
// run in parallel) or over the inner half (to run in vectors); the block as it is stays a sketch:
//   v2, v3 = sch.sample_perfect_tile(loop=l1, n=2, max_innermost_factor=64)
//   l4, l5 = sch.split(loop=l1, factors=[v2, v3])
//   b6 = sch.rfactor(loop=l4, factor_axis=0)
std::unique_ptr<ScheduleRule> make_add_rfactor(const SpaceContext& context);

// Computes a block that is neither inlined nor tiled (not an output, alone in its loop nest)
// at a sampled loop of its consumers, when some loop can hold it:
//   l1 = sch.sample_compute_location(block=b0)
//   sch.compute_at(block=b0, loop=l1)
std::unique_ptr<ScheduleRule> make_random_compute_location(const SpaceContext& context);

// Samples, on the root block, the largest parallel extent, the largest vectorized extent and the
// automatic unroll depth that the postprocessor parallel_vectorize_unroll applies:
//   v1 = sch.sample_categorical(candidates=[0, 16, 64, 512], probs=[0.25, 0.25, 0.25, 0.25])
//   sch.annotate(block_or_loop=b0, ann_val=v1, ann_key="kiln.unroll_max_step")
// and, for a function whose buffers hold more bytes than the target's last-level cache (what it
// writes would leave the cache before anyone read it), whether its nests store their outputs
// past the caches (kiln.nontemporal: 0 or 1; see kiln/tir/nontemporal.h).
std::unique_ptr<ScheduleRule> make_parallel_vectorize_unroll(const SpaceContext& context);

// The GPU rules (targets "cuda" and "opencl"; space.cc picks the rules by the target's kind).
//
// Binds a block that no loop binds to a GPU thread yet: its outer spatial loops are fused,
// split by a thread count drawn from the powers of two the target allows (32 up to
// min(1024, -max_threads_per_block), none much past the loop's extent) and bound:
//   l3 = sch.fuse(l1, l2)
//   v4 = sch.sample_categorical(candidates=[32, 64, 128, 256], probs=[0.25, 0.25, 0.25, 0.25])
//   l5, l6 = sch.split(loop=l3, factors=[None, v4])
//   sch.bind(loop=l5, thread_axis="blockIdx.x")
//   sch.bind(loop=l6, thread_axis="threadIdx.x")
std::unique_ptr<ScheduleRule> make_auto_bind(const SpaceContext& context);

// Adds, for a reduction whose spatial iterations are fewer than its reduction steps (a row sum
// of a few long rows; not a scalar result, which has no loop for blockIdx.x), a sketch in which the
// threads of a block share each output element: the (fused) reduction loop is split into a thread
// count drawn from the powers of two up to the reduction's extent and the target's limit, bound to
// threadIdx.x (outer) and the steps of one thread (inner), and the (fused) spatial loop is bound to
// blockIdx.x; lowering combines the threads' partial results (lower_cross_thread_reduction). The
// block as it is stays a sketch:
//   v3 = sch.sample_categorical(candidates=[16, 32, 64, 128], probs=[0.25, 0.25, 0.25, 0.25])
//   l4, l5 = sch.split(loop=l2, factors=[v3, None])
//   sch.bind(loop=l4, thread_axis="threadIdx.x")
//   sch.bind(loop=l1, thread_axis="blockIdx.x")
std::unique_ptr<ScheduleRule> make_cross_thread_reduction(const SpaceContext& context);

// Tiles a reduction block with data reuse (matmul, batch matmul, convolution) in the GPU
// structure SSSRRSRS (MetaSchedule's): each spatial loop in five levels and each reduction loop
// in three, drawn by sample_perfect_tile (innermost at most max_innermost_factor), ordered
// S0 S1 S2 R0 R1 S3 R2 S4; the fused S0, S1 and S2 loops bound to blockIdx.x, vthread.x and
// threadIdx.x. The accumulators of a thread live in a "local" cache written back under the thread
// loop (an element-wise consumer inlined into the write-back); each operand's tile of one R0
// step is copied into "shared" memory under the last R0 loop, annotated for
// rewrite_cooperative_fetch with a sampled vector width and for pad_shared_tiles with a sampled
// padding (none, for vector reads, for scalar reads); the init leaves the reduction loops
// (decompose_reduction) and the thread loop gets a sampled unroll depth. The block carries the
// limits check_gpu_tiles holds its samples to (a warp of threads at least, kMaxRegisterTile
// outputs per thread at most):
//   v5, v6, v7, v8, v9 = sch.sample_perfect_tile(loop=l1, n=5, max_innermost_factor=64)
//   l10, l11, l12, l13, l14 = sch.split(loop=l1, factors=[v5, v6, v7, v8, v9])
std::unique_ptr<ScheduleRule> make_multi_level_tiling_gpu(const SpaceContext& context);
// The most outputs one thread of a GPU tiling accumulates (its register tile over its virtual
// threads): more would spill registers on a GPU.
constexpr int64_t kMaxRegisterTile = 64;

// Tiles a float16 or bfloat16 matrix product accumulated in float32 (C[.., i, j] += A[.., i, k]
// * B[.., j, k], or B[.., k, j]; the extents of i, j and k multiples of 16) for tensor cores, on
// a CUDA target that has the features of cuda.mma_f16f16f32 or cuda.mma_bf16bf16f32 (sm_80)
// when config.tensor_intrinsics names it: a sketch of its own besides the block as it is. i and j
// are split [thread blocks, warps, fragments, 16] and k [stages, steps, 16] by sample_perfect_tile;
// the fused thread-block loops (with the batch's) are bound to blockIdx.x and the fused warp loops
// to threadIdx.y; the accumulator's fragments live in "warp" memory (the warp's registers), the
// operands' tiles of a stage in "shared" memory (copied by rewrite_cooperative_fetch with a
// sampled width, padded by pad_shared_tiles where sampled), their fragments loaded one step
// at a time; the fragments get the
// intrinsics' layout (transform_layout) and the loads, the update, the fill and the store are
// tensorized with cuda.mma_*; the warp's nest gets a sampled unroll depth. An element-wise
// epilogue (the product's one consumer) is folded into a copy of a shared tile of the block's
// outputs (reverse_compute_inline), which rewrite_cooperative_fetch spreads over the threads. The
// block carries the limits check_gpu_tiles holds its draws to (kiln.warp_lanes: the warps' 32 lanes
// count as threads):
//   l7, l8 = sch.split(loop=l1, factors=[None, 16])
//   v9, v10, v11 = sch.sample_perfect_tile(loop=l7, n=3, max_innermost_factor=4)
//   sch.tensorize(block_or_loop=l30, tensor_intrin="cuda.mma_f16f16f32")
std::unique_ptr<ScheduleRule> make_multi_level_tiling_tensor_core(const SpaceContext& context);
// The most float32 accumulators one thread of a tensor-core tiling holds: 8 per 16x16 fragment
// of its warp's tile (16 fragments, a warp tile of 64x64).
constexpr int64_t kMaxTensorCoreAccumulators = 128;

// What the GPU tilings share. Copies the operand `read` of `block` into "shared" memory under the
// loop `at`, with a sampled vector width for rewrite_cooperative_fetch and a sampled padding
// among `paddings` for pad_shared_tiles; returns the copy:
//   b20 = sch.cache_read(block=b0, read_buffer_index=0, storage_scope="shared")
//   sch.compute_at(block=b20, loop=l12)
//   v21 = sch.sample_categorical(candidates=[1, 2, 4], probs=[1.0, 1.0, 1.0])
//   sch.annotate(block_or_loop=b20, ann_val=v21, ann_key="kiln.cooperative_fetch")
schedule::RV stage_in_shared(schedule::Schedule& sch, const schedule::RV& block, int64_t read,
                             const schedule::RV& at, const std::vector<int64_t>& paddings);
// The one consumer of `block` when it is a spatial block other than an extern call (an
// epilogue candidate), else nothing.
std::optional<schedule::RV> spatial_consumer(schedule::Schedule& sch, const schedule::RV& block);
// Samples whether the copies into shared memory under `step` are prefetched ahead: 0 not, 1 a
// step ahead into registers, 2 or 3 (where `target` copies asynchronously: CUDA sm_80) into 2 or
// 3 stages of the tiles; and annotates the loop with the draw (tir::prefetch_shared):
//   v30 = sch.sample_categorical(candidates=[0, 1, 2, 3], probs=[1.0, 1.0, 1.0, 1.0])
//   sch.annotate(block_or_loop=l12, ann_val=v30, ann_key="kiln.prefetch_shared")
// check_gpu_tiles and pad_shared_tiles count the tiles of each stage (shared_stages).
void sample_prefetch(schedule::Schedule& sch, const schedule::RV& step,
                     const codegen::Target& target);
// The stages of the shared tile the copy at `copy` fills: n when a loop around it asks for n >= 2
// (kiln.prefetch_shared) and `limits` allow asynchronous copies, else 1.
int64_t shared_stages(const schedule::BlockLocation& copy, const tir::GpuLimits& limits);

// The thread counts the GPU rules draw from: the powers of two from `smallest` up to `largest`
// (at most the target's -max_threads_per_block), those past twice `extent` left out (at least
// one stays).
std::vector<int64_t> gpu_thread_counts(const codegen::Target& target, int64_t smallest,
                                       int64_t largest, int64_t extent);

// ---------------------------------------------------------------------------------------------
// Postprocessors: they finish a sampled schedule; their instructions go into its trace. A
// ScheduleError (or any kiln error) refuses the candidate with the postprocessor's name.

class Postproc {
 public:
  virtual ~Postproc() = default;
  virtual const char* name() const = 0;
  virtual void apply(schedule::Schedule& sch) = 0;
};

// Refuses a candidate in which a reduction block runs each of its iterations twice or more
// (recomputes_reduction in block_analysis.h): a compute location under a loop that its result
// does not depend on.
std::unique_ptr<Postproc> make_refuse_recomputation(const SpaceContext& context);
// Packs the operand a block annotated kiln.pack_read = 1 reads along its innermost tile: a
// global copy (cache_read) laid out as [n // NR, …, n % NR] (transform_layout), NR the
// innermost tile, copied with vectors; along the dimension kiln.pack_read_dim where the block
// names one (a convolution's weight: [f // NR, c, r, s, f % NR]). The copy is made under the
// block's outermost loops that iterate over slices of the operand (compute_at: a batch matmul packs
// one batch's B in its iteration of the parallel loop, while it is in cache), else in one parallel
// pass before it.
std::unique_ptr<Postproc> make_pack_operand(const SpaceContext& context);
// Moves the loop of a reduction block's lanes (its write's last index, read contiguously) inside
// the reduction loops among the block's own innermost loops, so that it can be a vector: the
// partial result of add_rfactor's row sketch after compute_at.
std::unique_ptr<Postproc> make_partial_result_lanes(const SpaceContext& context);
// GPU targets: refuses a candidate that no GPU of the target could run as scheduled, with the
// reason as the error class: a tiled block outside its limits (check_gpu_tiles), a block under
// no loop bound to blockIdx/threadIdx (UnboundBlockError), a schedule that does not lower for the
// target (GpuLoweringError), a kernel with more threads per block than -max_threads_per_block
// (GpuTooManyThreadsError), more shared memory than -max_shared_memory_per_block or of a size that
// is not a constant (GpuSharedMemoryError), or a barrier that some threads skip
// (GpuDivergentBarrierError).
std::unique_ptr<Postproc> make_verify_gpu_code(const SpaceContext& context);
// GPU targets: spreads each copy annotated kiln.cooperative_fetch over the threads of its
// thread block: the copy's own loops (those its consumer is not under) are fused, split into
// (steps, the threadIdx.x extent around it, lanes) and bound, the lanes vectorized where the
// annotated width divides the copied rows, the operand's rows and what the threads copy in one
// pass, and the copy is a plain load (a padded copy's guarded reads make no vector access);
// else it copies one element per thread and pass. A copy annotated kiln.warp_lanes (for
// warp-level intrinsics, under the loop of the warps bound to threadIdx.y, or after it: the
// write-back of a tensor-core tile, which has no consumer and shares its producers' loops) is
// split into (steps, warps, lanes, vector) and bound to threadIdx.y and threadIdx.x:
//   l20 = sch.fuse(l17, l18)
//   l21, l22, l23 = sch.split(loop=l20, factors=[None, 64, 4])
//   sch.bind(loop=l22, thread_axis="threadIdx.x")
//   sch.vectorize(loop=l23)
std::unique_ptr<Postproc> make_rewrite_cooperative_fetch(const SpaceContext& context);
// GPU targets: pads a dimension of each shared-memory copy annotated kiln.pad_shared = 1 or 2
// where the bank model (shared_memory_banks.h) finds that its threads' accesses (the copy's
// stores, its consumers' loads) take fewer wavefronts of shared memory padded, or as many with
// fewer instructions: with 1 taking a thread's reads of consecutive elements as vector reads
// (rows stay 16-byte aligned), with 2 as scalar reads. The copy's vector width stays aligned,
// and a padding past the target's shared memory is not made. The tile is left as it is where
// the model cannot read its accesses:
//   sch.storage_align(block=b40, buffer_index=0, axis=0, factor=32, offset=4)
std::unique_ptr<Postproc> make_pad_shared_tiles(const SpaceContext& context);
// The limits a tiled block's annotations ask for (multi_level_tiling_gpu, and
// multi_level_tiling_tensor_core, whose kiln.warp_lanes multiplies the threads around the block
// and divides the outputs per thread by the lanes): between
// kiln.thread_extent_low and the target's -max_threads_per_block threads around it
// (GpuThreadExtentError), at most kiln.max_register_tile outputs per thread: the extents of the
// vthread loops around it and of its spatial loops inside its innermost thread loop
// (GpuRegisterTileError), and its operands' shared copies within the target's shared memory
// (GpuSharedMemoryError; for warp-level intrinsics, the copies annotated kiln.warp_lanes of
// each kernel together, the write-back tile of a fused epilogue too). Raises the ScheduleError of
// the first limit a block exceeds. Reads only the loops of the schedule: cheap enough to check each
// draw before it is finished.
void check_gpu_tiles(schedule::Schedule& sch, const codegen::Target& target);

// Moves the init of every reduction block out of its reduction loops (decompose_reduction).
std::unique_ptr<Postproc> make_rewrite_reduction_block(const SpaceContext& context);
// Applies the root's annotations: fuses and parallelizes the outer spatial loops of each nest,
// vectorizes innermost spatial loops (not around a tensorized block, or a block holding blocks),
// marks each nest for automatic unrolling and, under kiln.nontemporal = 1, the outermost loop of
// each nest that is not a staging copy "pragma_nontemporal" (its stores to outputs stream).
std::unique_ptr<Postproc> make_parallel_vectorize_unroll_postproc(const SpaceContext& context);

// ---------------------------------------------------------------------------------------------
// Mutators

class Mutator {
 public:
  virtual ~Mutator() = default;
  virtual const char* name() const = 0;
  // A new decision for one instruction of `trace` (its index and the decision), or false. May
  // run on several threads at once (the search mutates on its threads).
  virtual bool propose(const schedule::Trace& trace, std::mt19937_64& rng, size_t* index,
                       schedule::Json* decision) const = 0;
};

// Moves a prime factor between two levels of a sample_perfect_tile decision.
std::unique_ptr<Mutator> make_mutate_tile_size(const SpaceContext& context);
// Picks another candidate of a sample_categorical decision.
std::unique_ptr<Mutator> make_mutate_categorical(const SpaceContext& context);
// Picks another location of a sample_compute_location decision, one that does not recompute a
// reduction.
std::unique_ptr<Mutator> make_mutate_compute_location(const SpaceContext& context);

// Every decision that moves one prime factor of one sample_perfect_tile decision from a level to
// another (the innermost within max_innermost_factor), as (index, decision) pairs.
std::vector<std::pair<size_t, schedule::Json>> tile_size_neighbours(const schedule::Trace& trace);

}  // namespace kiln::autotune
