// The IR verifier: checks that a function is well formed, between the passes of the lowering
// pipeline (pipeline.h runs it after every pass when LowerOptions::verify is on).
#pragma once

#include <string>

#include "kiln/ir/function.h"

namespace kiln::tir {

// Checks, in one walk of `func`:
//  1. Every variable used is defined in scope: a parameter, a variable of a parameter buffer's
//     shape, strides or offset, a loop variable, a let variable, the data variable of a
//     parameter buffer or of an allocation (Allocate or a block's alloc_buffers), or a block
//     iterator inside its block (not in the values that bind it).
//  2. Every variable is defined once.
//  3. A load or store has one index per dimension of its buffer (one, once flattened).
//  4. The operands of a binary operation have the same dtype, as do the arms of a Select.
//  5. A BlockRealize binds each iterator of its block: as many values as iterators.
//  6. Loop bounds (min and extent) are scalar integers.
// On the first violation, throws an internal error that names `after_pass` (the pass after
// which the IR broke), says what is wrong, and prints the function with the offending
// statement or expression underlined.
//
// Tested by tests/cpp/tir/verify_ir_test.cc.
void verify_ir(const ir::Ref<ir::PrimFunc>& func, const std::string& after_pass);

}  // namespace kiln::tir
