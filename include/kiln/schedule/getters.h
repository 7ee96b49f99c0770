// Getters: primitives that return handles to the blocks and loops of the current IR. They
// change nothing but are recorded in the trace, since later instructions use their handles.
#pragma once

#include <string>
#include <vector>

#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// The block called `name` in function `func_name`.
// Preconditions:
//  1. The function exists and has a block with that name (else BlockNotFoundError, listing the
//     block names of the function).
RV get_block(Schedule& sch, const std::string& name, const std::string& func_name = "main");

// The loops between the block's scope block and the block, outermost first.
std::vector<RV> get_loops(Schedule& sch, const RV& block);

// The blocks directly under a block or a loop (not those nested in a child block), in order.
std::vector<RV> get_child_blocks(Schedule& sch, const RV& block_or_loop);

// The blocks of the same scope that write a buffer the block reads (producers) or read a
// buffer the block writes (consumers), in program order.
std::vector<RV> get_producers(Schedule& sch, const RV& block);
std::vector<RV> get_consumers(Schedule& sch, const RV& block);

}  // namespace kiln::schedule
