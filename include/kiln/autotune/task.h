// A tuning task: one function to tune for one target, identified in the tuning database by its
// workload key (the structural hash of the function, confirmed by structural equality).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/codegen/target.h"
#include "kiln/ir/function.h"

namespace kiln::autotune {

// A schedule of a task's function written without the search (topi.default_schedule's, or a
// user's), measured as one candidate of the task's first round so that the best record is never
// slower than it.
struct BaselineSchedule {
  std::string name;        // what it is, for the log and its record: "topi.default_schedule"
  std::string trace_json;  // its trace as JSON text; it replays on the task's function
};

// A schedule of a task's function that computes the reference results the candidates are checked
// against, instead of the function as written: the plain loops of a large workload take minutes
// (a 2048-token feed-forward layer: hours). It runs on this CPU, also for a GPU task. A wrong
// reference cannot pass unseen: every candidate then disagrees with it.
struct ReferenceSchedule {
  std::string name;            // what it is, for messages: "topi.default_schedule"
  ir::Ref<ir::PrimFunc> func;  // the scheduled function, taking the task function's arguments
};

// A design space written by the user instead of kiln's rules (MetaSchedule's ScheduleFn): the
// traces of the sketches a schedule function made, whose sampling instructions (tile sizes,
// categorical choices, compute locations) the search draws, mutates and refines. Its candidates
// are finished by the same postprocessors as the rules' candidates.
struct UserSpace {
  std::string name;                   // what it is, for the log and the records: "my_tiling"
  std::vector<std::string> sketches;  // the traces as JSON text; each replays on the function
};

struct TuneTask {
  std::string name;            // for logs and tables, e.g. "matmul"
  ir::Ref<ir::PrimFunc> func;  // the function as written (the workload); its schedules replay on it
  codegen::Target target;
  double weight = 1.0;         // how often the function runs per run of the whole model
  uint64_t workload_hash = 0;  // ir::structural_hash(func)
  double flops = 0.0;          // the arithmetic operations of one call (count_flops)
  std::optional<BaselineSchedule> baseline;    // none: the search measures only its own candidates
  std::optional<ReferenceSchedule> reference;  // none: the function as written gives the results
  std::optional<UserSpace> space;              // none: the design space of kiln's rules
};

// A task for `func` on `target` (a target string). Raises a kValue error naming `api` for a
// function with a symbolic dimension (tuning measures one concrete size: substitute the
// dimensions first) or for a target kiln cannot parse.
TuneTask make_task(const ir::Ref<ir::PrimFunc>& func, const std::string& target,
                   const std::string& name = "", double weight = 1.0,
                   const char* api = "make_task");

// The arithmetic operations of one call of `func`: every integer or float +, -, *, /, min, max
// and math call in the values its blocks store, times the iterations of the loops and block
// iterators around it (a multiply-add counts 2, as GFLOP/s figures count). Loops of symbolic
// extent count once. Tested by tests/cpp/autotune/task_test.cc.
double count_flops(const ir::PrimFunc& func);

// The bytes of `func`'s tensor arguments (a symbolic dimension counts 1; make_task refuses
// them).
double argument_bytes(const ir::PrimFunc& func);

}  // namespace kiln::autotune
