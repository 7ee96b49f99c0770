// The lowering pipeline, in order. Each line runs one pass and hands its result to the log,
// which verifies it, dumps it and times it (see LowerOptions). Reading this file tells how a
// scheduled TensorIR function becomes the flat loop program that code generators take.
#include "kiln/tir/pipeline.h"

#include <filesystem>

#include "kiln/tir/compact_buffer_allocation.h"
#include "kiln/tir/flatten_buffers.h"
#include "kiln/tir/guard_redundant_stores.h"
#include "kiln/tir/inject_virtual_threads.h"
#include "kiln/tir/insert_barriers.h"
#include "kiln/tir/loop_partition.h"
#include "kiln/tir/lower_cross_thread_reduction.h"
#include "kiln/tir/lower_init_block.h"
#include "kiln/tir/lower_intrinsics.h"
#include "kiln/tir/lower_opaque_block.h"
#include "kiln/tir/lower_warp_memory.h"
#include "kiln/tir/make_packed_api.h"
#include "kiln/tir/merge_dynamic_shared_memory.h"
#include "kiln/tir/plan_buffer_allocation.h"
#include "kiln/tir/prefetch_shared.h"
#include "kiln/tir/promote_to_registers.h"
#include "kiln/tir/simplify.h"
#include "kiln/tir/split_host_device.h"
#include "kiln/tir/storage_rewrite.h"
#include "kiln/tir/unroll_loops.h"
#include "kiln/tir/vectorize_loops.h"
#include "tir/pass_log.h"

namespace kiln::tir {

using namespace ir;

Ref<PrimFunc> lower(Ref<PrimFunc> f, const LowerOptions& options) {
  PassLog log(f, options);
  bool gpu = options.device_kernels != nullptr;
  // clang-format off
  // GPU: reductions over loops bound to threads combine the threads' parts in shared memory.
  if (gpu) {
    f = lower_cross_thread_reduction(f, options.gpu_limits.warp_shuffle_width);
    log.step("lower_cross_thread_reduction", f);
  }
  // Blocks to loops: reductions get explicit init statements, intermediate buffers move to
  // where they are used and shrink to what is used there, then blocks disappear.
  f = lower_init_block(f);          log.step("lower_init_block", f);
  // GPU: a warp's fragments (tensor-core intrinsics) become registers, or shared memory where
  // lanes read each other's.
  if (gpu) { f = lower_warp_memory(f); log.step("lower_warp_memory", f); }
  f = plan_buffer_allocation(f);    log.step("plan_buffer_allocation", f);
  f = compact_buffer_allocation(f); log.step("compact_buffer_allocation", f);
  f = lower_opaque_block(f);        log.step("lower_opaque_block", f);
  // Memory becomes one-dimensional.
  f = flatten_buffers(f);           log.step("flatten_buffers", f);
  f = simplify(f);                  log.step("simplify", f);
  // GPU: copies into shared memory of a loop's next step loaded into registers (or copied
  // asynchronously into a second stage of the tiles) during this one, where the schedule asked
  // for it.
  if (gpu) {
    f = prefetch_shared(f, options.gpu_limits.async_copy);
    log.step("prefetch_shared", f);
  }
  // Virtual threads (vthread loops) run inside their thread, each with its own copy of the
  // buffers it keeps, around the statements they share.
  f = inject_virtual_threads(f);    log.step("inject_virtual_threads", f);
  // Loops: bound checks leave the steady state, vector loops become vector code (on GPUs only
  // of the lane counts the language has vector types for), small unrolled loops become copies
  // of their bodies.
  f = loop_partition(f);            log.step("loop_partition", f);
  if (gpu) {
    f = vectorize_loops(f, options.gpu_limits.vector_lanes); log.step("vectorize_loops", f);
  } else {
    f = vectorize_loops(f);         log.step("vectorize_loops", f);
  }
  f = unroll_loops(f);              log.step("unroll_loops", f);
  f = simplify(f);                  log.step("simplify", f);
  // CPU: a loop that reaches a register tile only at constant offsets works on a copy of it
  // that LLVM's SROA splits into registers at once.
  if (!gpu) { f = promote_to_registers(f); log.step("promote_to_registers", f); }
  // Allocations: hoisted out of loops, storage shared between buffers that do not overlap.
  f = storage_rewrite(f);           log.step("storage_rewrite", f);
  // GPU: barriers where threads pass values through shared memory, the dynamic shared buffers
  // of a kernel laid out in one block, then the kernels leave the function, which keeps the
  // launches, and each kernel is checked against the device limits.
  if (gpu) {
    f = guard_redundant_stores(f);                                   log.step("guard_redundant_stores", f);
    f = insert_barriers(f);                                          log.step("insert_barriers", f);
    f = merge_dynamic_shared_memory(f);                              log.step("merge_dynamic_shared_memory", f);
    f = split_host_device(f, options.name, options.device_kernels);  log.step("split_host_device", f);
    for (const Ref<PrimFunc>& kernel : *options.device_kernels) {
      if (options.verify_gpu_kernels) verify_gpu_code(*kernel, options.gpu_limits);
    }
  }
  // The entry point for the code generator (LowerOptions::packed_entry).
  if (options.packed_entry) {
    f = lower_intrinsics(f);              log.step("lower_intrinsics", f);
    f = make_packed_api(f, options.name, options.device); log.step("make_packed_api", f);
  }
  // clang-format on
  log.finish();
  return f;
}

Ref<IRModule> lower(const Ref<IRModule>& mod, const LowerOptions& options) {
  auto result = make<IRModule>();
  bool changed = false;
  std::string dump_dir = resolve_dump_dir(options);
  for (const auto& [name, func] : mod->functions) {
    LowerOptions func_options = options;
    func_options.name = name;
    if (!dump_dir.empty())
      func_options.dump_dir = (std::filesystem::path(dump_dir) / name).string();
    Ref<PrimFunc> lowered = lower(func, func_options);
    changed |= !lowered.same_as(func);
    result->functions[name] = lowered;
  }
  return changed ? result : mod;
}

}  // namespace kiln::tir
