// Lowering pass compact_buffer_allocation: shrinks each intermediate buffer to the region its
// allocating block actually touches.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// For every buffer in a block's alloc_buffers, computes per dimension the interval of indices
// that the accesses inside the block (loads, stores, and the read and write regions of the
// blocks inside) reach while the loops and block iterators inside it range over their domains
// (arith::eval_set), and replaces the buffer by one of that extent, with each access shifted by
// the interval's start (and simplified). Run after plan_buffer_allocation, which moves an
// allocation under the loops that tile its uses; the start may then depend on those loops.
// A "shared" buffer allocated inside loops bound to threadIdx serves every thread of its block:
// those loops are relaxed as well, so its extent covers all the block's threads.
//
// A dimension keeps its extent (and is not shifted) when its interval is unbounded, when the
// interval's length has no constant upper bound, when that bound is not smaller than a constant
// extent, or when the extent is symbolic and the length is not an exact constant (a symbolic
// dimension of n elements used whole stays n). The alignments that storage_align recorded on
// the blocks writing a buffer ("kiln.storage_align") then give the strides of its final shape,
// compacted or not: a (1024, 1024) buffer aligned on axis 0 and compacted to a (32, 32) tile
// gets strides (33, 1), not (1025, 1). A buffer with explicit strides keeps them; only its
// extents shrink. A buffer with an element offset,
// or whose data variable is used other than by loads and stores, is left alone. Parameter
// buffers never change. Returns `func` itself when no buffer shrinks.
//
//   for i0 in range(32):                      for i0 in range(32):
//     with block(""):                           with block(""):
//       T = alloc_buffer((1024,))      =>          T = alloc_buffer((32,))
//       for i1 in range(32):                       for i1 in range(32):
//         T[i0 * 32 + i1] = ...                       T[i1] = ...
//
// Tested by tests/cpp/tir/compact_buffer_allocation_test.cc and tests/python/test_lower_passes.py.
ir::Ref<ir::PrimFunc> compact_buffer_allocation(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
