// Python bindings of the sampling primitives of tir.Schedule: sample_perfect_tile and
// sample_categorical (kiln/schedule/sampling.h). sample_compute_location is bound with
// compute_at, in schedule_compute_location_py.cc.
#include "kiln/schedule/sampling.h"
#include "schedule_py.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::schedule;

void bind_schedule_sampling(ScheduleClass& cls) {
  cls.def(
         "sample_perfect_tile",
         [](Schedule& s, py::handle loop, py::handle n, py::handle max_innermost_factor,
            py::handle decision) {
           const char* api = "Schedule.sample_perfect_tile";
           return apply(s, api, [&](Handles& h) {
             RV l = h.loop(loop, "loop");
             int count = static_cast<int>(to_int(n, api, "n", INT32_MIN, INT32_MAX));
             int innermost = static_cast<int>(
                 to_int(max_innermost_factor, api, "max_innermost_factor", INT32_MIN, INT32_MAX));
             return to_python(sample_perfect_tile(s, l, count, innermost,
                                                  to_optional_int_list(decision, api, "decision")));
           });
         },
         py::arg("loop"), py::arg("n"), py::arg("max_innermost_factor") = 16,
         py::arg("decision") = py::none(),
         R"doc(Draws ``n`` factors whose product is the loop's extent, for split.

Args:
    loop (LoopRV): a loop of constant extent.
    n (int): the number of factors.
    max_innermost_factor (int): the largest innermost factor allowed.
    decision (list of int, optional): use these factors instead of drawing them.

Returns:
    list of ExprRV: the factors, outermost first; the decision is recorded in the trace.

Raises:
    InvalidSampleError: n or max_innermost_factor is less than 1.
    NonConstantExtentError: the loop's extent is not a constant.
    InvalidDecisionError: the decision does not fit the loop.
    StaleHandleError, KilnTypeError: as split.

Example:
    i, j = sch.get_loops("C")
    factors = sch.sample_perfect_tile(i, n=2, max_innermost_factor=16)
    io, ii = sch.split(i, factors=factors))doc")
      .def(
          "sample_categorical",
          [](Schedule& s, py::handle candidates, py::handle probs, py::handle decision) {
            const char* api = "Schedule.sample_categorical";
            return to_python(sample_categorical(s, to_int_list(candidates, api, "candidates"),
                                                to_float_list(probs, api, "probs"),
                                                to_optional_int(decision, api, "decision")));
          },
          py::arg("candidates"), py::arg("probs"), py::arg("decision") = py::none(),
          R"doc(Draws one of ``candidates`` with the probabilities ``probs`` (normalized here).

Args:
    candidates (list of int): the values.
    probs (list of float): their weights, >= 0 with a positive sum.
    decision (int, optional): the index of the candidate to take instead of drawing one.

Returns:
    ExprRV: the value; the decision (an index) is recorded in the trace.

Raises:
    InvalidSampleError: empty lists, lengths that differ, or bad probabilities.
    InvalidDecisionError: the decision is not an index into candidates.
    KilnTypeError: an argument has the wrong type.

Example:
    unroll = sch.sample_categorical([0, 16, 64], [0.25, 0.5, 0.25])
    sch.annotate(i, "pragma_auto_unroll_max_step", sch.get(unroll)))doc");
}

}  // namespace kiln::python
