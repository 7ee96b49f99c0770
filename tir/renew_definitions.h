// A helper of the passes that duplicate code (loop_partition, unroll_loops): a copy of a
// statement in which every variable and buffer it defines is a new object, so that each
// definition in the program stays unique after the copy is placed beside the original.
#pragma once

#include "kiln/ir/stmt.h"

namespace kiln::tir {

// `s` with a fresh variable for every loop variable, LetStmt and Let variable defined inside
// it, and a fresh buffer (with a fresh data variable) for every Allocate inside it; every use
// refers to the new objects. Free variables and buffers stay the same objects.
ir::Stmt renew_definitions(const ir::Stmt& s);

}  // namespace kiln::tir
