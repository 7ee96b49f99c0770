"""The lowering passes of kiln.tir.lower, one function each, for running a single pass.

Each takes a PrimFunc and returns the transformed PrimFunc, or the very same object when the
pass changed nothing. The order in which kiln.tir.lower runs them is in tir/pipeline.cc.
"""
from .._kiln import tir as _tir_tools

_passes = _tir_tools.transform

lower_init_block = _passes.lower_init_block
lower_warp_memory = _passes.lower_warp_memory
plan_buffer_allocation = _passes.plan_buffer_allocation
compact_buffer_allocation = _passes.compact_buffer_allocation
lower_opaque_block = _passes.lower_opaque_block
flatten_buffers = _passes.flatten_buffers
simplify = _passes.simplify
inject_virtual_threads = _passes.inject_virtual_threads
storage_rewrite = _passes.storage_rewrite
loop_partition = _passes.loop_partition
vectorize_loops = _passes.vectorize_loops
unroll_loops = _passes.unroll_loops
promote_to_registers = _passes.promote_to_registers
lower_intrinsics = _passes.lower_intrinsics
make_packed_api = _passes.make_packed_api
verify_ir = _passes.verify_ir

__all__ = ["lower_init_block", "lower_warp_memory", "plan_buffer_allocation",
           "compact_buffer_allocation", "lower_opaque_block", "flatten_buffers", "simplify",
           "inject_virtual_threads", "storage_rewrite", "verify_ir",
           "loop_partition", "vectorize_loops", "unroll_loops", "promote_to_registers",
           "lower_intrinsics", "make_packed_api"]
