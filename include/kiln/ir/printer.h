// The IR printer: TVMScript-like Python text for expressions, statements, functions and modules.
// The output is deterministic (the same IR prints the same text in every run) and meant for
// people: `print(func)`, golden tests, and error messages that show where something failed.
//
// Variables print by their name hint. When two different variables (or buffers) of one function
// share a hint, the later one is printed with a suffix (`i`, `i_1`, …); this renaming is in the
// text only. Free symbolic variables of a function are declared at its top (`n = T.int32()`).
#pragma once

#include <iosfwd>
#include <string>

#include "kiln/ir/function.h"

namespace kiln::ir {

// How to print. `mark` flags one node (an expression, statement, buffer or function): its text,
// or the header line of a statement, is underlined with `^^^` followed by `mark_note`. Schedule
// errors use it to show where a failure is.
struct PrintOptions {
  const Node* mark = nullptr;
  std::string mark_note;
};

// An expression on one line, e.g. `A[i, k] * B[k, j] + T.float32(1)`.
std::string to_script(const Expr& e);
// A statement, one line per statement, four spaces of indentation per level.
std::string to_script(const Stmt& s, const PrintOptions& options = {});
// A function as `@T.prim_func def name(...)`.
std::string to_script(const Ref<PrimFunc>& f, const std::string& name = "main",
                      const PrintOptions& options = {});
// A module as `@I.ir_module class Module:` with its functions in name order.
std::string to_script(const Ref<IRModule>& m, const PrintOptions& options = {});
// Any node: dispatches on its kind. A PrimFunc is named by its "global_symbol" attribute (or
// main), a Buffer prints as `A: T.Buffer(...)`, a CommReducer as
// `T.comm_reducer(lambda x, y: ..., [identity])`. Null prints as `None`.
std::string to_script_node(const Ref<Node>& node, const PrintOptions& options = {});

// For error messages: `<< expr` and `<< stmt` write their script text.
std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);

}  // namespace kiln::ir
