// Private to the bindings of tir.Schedule (module kiln._kiln.schedule): the Python handle
// classes, the conversion of handle arguments shared by every primitive, and one binding function
// per family of primitives, each in its own file and called by bind_schedule (schedule_py.cc).
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "convert.h"
#include "kiln/schedule/schedule.h"

namespace kiln::python {

// The three Python handle classes share the C++ RV.
struct BlockRV : schedule::RV {};
struct LoopRV : schedule::RV {};
struct ExprRV : schedule::RV {};

// A handle as the Python class of its kind (BlockRV, LoopRV or ExprRV).
pybind11::object to_python(const schedule::RV& rv);
pybind11::list to_python(const std::vector<schedule::RV>& rvs);

// The function a block name refers to: the schedule's only function, else "main".
std::string default_func_name(const schedule::Schedule& sch);

// Converts the handle arguments of one primitive call. A block given by name is looked up with
// get_block, which records a get_block instruction; the schedule is saved before the first
// look-up so that restore() can undo it when the call then fails, because a failed primitive
// must leave the schedule exactly as it was.
class Handles {
 public:
  Handles(schedule::Schedule& sch, const char* api) : sch_(sch), api_(api) {}

  schedule::RV block(pybind11::handle obj, const char* param);
  schedule::RV loop(pybind11::handle obj, const char* param);
  schedule::RV block_or_loop(pybind11::handle obj, const char* param);

  // A list of blocks (BlockRVs or names).
  std::vector<schedule::RV> blocks(pybind11::handle obj, const char* param);

  // Loops given one per argument, or as lists: fuse(i, j), fuse([i, j]).
  std::vector<schedule::RV> loops(const pybind11::args& args, const char* param);

  void restore();

 private:
  schedule::Schedule& sch_;
  const char* api_;
  std::optional<schedule::Schedule> saved_;
};

// Runs `body(handles)` for the primitive `api`; when it throws, undoes the block look-ups it
// made before rethrowing.
template <class F>
auto apply(schedule::Schedule& sch, const char* api, F&& body) {
  Handles handles(sch, api);
  try {
    return body(handles);
  } catch (...) {
    handles.restore();
    throw;
  }
}

using ScheduleClass = pybind11::class_<schedule::Schedule>;

// One function per family of primitives, in the order bind_schedule calls them.
void bind_schedule_loops(ScheduleClass& cls);      // schedule_loops_py.cc: split, fuse, reorder …
void bind_schedule_for_kinds(ScheduleClass& cls);  // schedule_for_kind_py.cc: parallel, annotate …
void bind_index_map(pybind11::module_& m);         // schedule_buffers_py.cc: tir.IndexMap
void bind_schedule_buffers(ScheduleClass& cls);    // schedule_buffers_py.cc: cache_read, scopes …
void bind_schedule_compute_location(ScheduleClass& cls);  // schedule_compute_location_py.cc
void bind_schedule_reduction(ScheduleClass& cls);         // schedule_reduction_py.cc: rfactor …
void bind_schedule_tensorize(ScheduleClass& cls);  // schedule_tensorize_py.cc: blockize, tensorize
void bind_tensor_intrin(pybind11::module_& m);     // schedule_tensorize_py.cc: tir.TensorIntrin
void bind_schedule_sampling(ScheduleClass& cls);  // schedule_sampling_py.cc: sample_perfect_tile …

}  // namespace kiln::python
