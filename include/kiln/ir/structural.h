// Structural equality and hashing of IR: two trees are equal when they compute the same thing
// written the same way, whatever their variables are called. The tuning database keys workloads
// by structural_hash, so the hash is a contract that holds across processes, runs and machines.
//
// Equality. Two nodes are structurally equal when they are of the same kind and their fields
// are equal, field by field, in order:
//  * Expressions compare their dtype; constants their value. Float constants compare by bit
//    pattern, except that every NaN equals every NaN; so -0.0 and 0.0 differ (1 / x tells them
//    apart).
//  * A variable or a buffer *defined* inside the trees is matched to its counterpart by the
//    position of its definition, so names are ignored. Definition sites: function params,
//    buffers in a PrimFunc's buffer_map (which also define their `data` variable and any
//    variable first seen in their shape, strides or elem_offset, e.g. a symbolic dimension n),
//    loop variables, block iterators, Let/LetStmt variables, buffers of Block::alloc_buffers and
//    Allocate, CommReducer lhs/rhs, and Reduce axis variables. A definition compares the
//    variable's dtype and is_size_var (a buffer's dtype, shape, strides, elem_offset, scope,
//    data_alignment and offset_factor) and from then on the two must correspond one to one.
//  * A free variable or buffer (used, never defined) must be the very same object on both
//    sides, unless map_free_vars is true: then it is matched on first use, consistently, like
//    a definition.
//  * Block names ARE compared: schedules and traces refer to blocks by name. Buffer and
//    variable names are not. Annotations and function attributes compare as sorted maps.
//  * IRModules compare their function names and functions.
//
// Hash. structural_hash(x) is consistent with structural_equal: equal trees (with the same
// map_free_vars) have the same hash. It is computed by the same traversal with a fixed 64-bit
// mixing (splitmix64 finalizer; strings by FNV-1a 64), never from a pointer, a name hint or
// std::hash, so it is the same in every process, run and build on any machine:
//  * Node kinds, builtins, loop kinds and iterator types enter the hash by their NAMES, so
//    reordering the lists in node.h / builtin.h does not change hashes; renaming does.
//  * dtypes enter as (code, bits, lanes); integers as their 64-bit value; floats as their bits,
//    with every NaN replaced by the canonical quiet NaN (-0.0 and 0.0 hash differently).
//  * A defined variable or buffer enters as the index of its definition (0, 1, 2 … in traversal
//    order); a free one, when map_free_vars is false, as a fixed tag plus its dtype.
// Changing any of this changes every hash and so invalidates every tuning database; the golden
// values in tests/cpp/ir/structural_test.cc are there to catch it.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/ir/node.h"

namespace kiln::ir {

// Whether `a` and `b` are structurally equal (see the file comment). Null equals null.
bool structural_equal(const Ref<Node>& a, const Ref<Node>& b, bool map_free_vars = false);

// The structural hash of `node` (see the file comment); stable across processes and machines.
uint64_t structural_hash(const Ref<Node>& node, bool map_free_vars = false);

// The hash structural_hash gives a string (FNV-1a 64 over its bytes, then its length, mixed):
// the same in every process, run and build.
uint64_t stable_string_hash(const std::string& text);

// The first difference between `a` and `b` in traversal order, as a readable field path (e.g.
// `root.body.block.body.seq[1].value.b`) with what differs and both sides printed; the empty
// string when they are equal.
std::string structural_diff(const Ref<Node>& a, const Ref<Node>& b, bool map_free_vars = false);

}  // namespace kiln::ir
