// Python bindings of the primitives of tir.Schedule that move or inline a block: compute_at,
// reverse_compute_at and sample_compute_location (kiln/schedule/compute_at.h), compute_inline and
// reverse_compute_inline (kiln/schedule/compute_inline.h).
#include "kiln/schedule/compute_at.h"
#include "kiln/schedule/compute_inline.h"
#include "schedule_py.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::schedule;

void bind_schedule_compute_location(ScheduleClass& cls) {
  cls.def(
         "compute_at",
         [](Schedule& s, py::handle block, py::handle loop, py::handle preserve_unit_loops) {
           const char* api = "Schedule.compute_at";
           apply(s, api, [&](Handles& h) {
             RV b = h.block(block, "block");
             compute_at(s, b, h.loop(loop, "loop"),
                        to_bool(preserve_unit_loops, api, "preserve_unit_loops"));
           });
         },
         py::arg("block"), py::arg("loop"), py::arg("preserve_unit_loops") = false,
         R"doc(Moves a producer block under a loop of its consumers.

The block goes before the first consumer under ``loop``, with new loops (ax0, ax1, …) that
compute exactly the region the consumers read in one iteration of ``loop``.

Args:
    block (BlockRV or str): the producer, or its name.
    loop (LoopRV): a loop above its consumers.
    preserve_unit_loops (bool): keep new loops of extent 1.

Raises:
    NotInSameScopeError: the block and the loop are not in one scope, or the loop is above the
        block.
    NotStagePipelineError, NotCompleteOrReductionBlockError, NotCompactDataflowError,
    NotAllRequiredBlocksAreVisitedError, RegionNotCoverableError, …: a precondition on the
        block, its consumers or their regions fails (the message says which).
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    i, j = sch.get_loops("C")
    io, ii = sch.split(i, factors=[None, 8])
    sch.compute_at("B", io))doc")
      .def(
          "reverse_compute_at",
          [](Schedule& s, py::handle block, py::handle loop, py::handle preserve_unit_loops) {
            const char* api = "Schedule.reverse_compute_at";
            apply(s, api, [&](Handles& h) {
              RV b = h.block(block, "block");
              reverse_compute_at(s, b, h.loop(loop, "loop"),
                                 to_bool(preserve_unit_loops, api, "preserve_unit_loops"));
            });
          },
          py::arg("block"), py::arg("loop"), py::arg("preserve_unit_loops") = false,
          R"doc(Moves a consumer block under a loop of its producers.

The block goes after the last producer under ``loop``, with new loops that consume exactly the
region the producers write in one iteration of ``loop``.

Args:
    block (BlockRV or str): the consumer, or its name.
    loop (LoopRV): a loop above its producers.
    preserve_unit_loops (bool): keep new loops of extent 1.

Raises:
    NotInSameScopeError, NotStagePipelineError, NotCompleteBlockError,
    NotAllRequiredBlocksAreVisitedError, RegionNotCoverableError, …: a precondition fails
        (the message says which).
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    C_local = sch.cache_write("C", 0, "local")
    sch.reverse_compute_at(C_local, jo))doc")
      .def(
          "compute_inline",
          [](Schedule& s, py::handle block) {
            apply(s, "Schedule.compute_inline",
                  [&](Handles& h) { compute_inline(s, h.block(block, "block")); });
          },
          py::arg("block"),
          R"doc(Substitutes a block's expression into its consumers and removes the block, its
loops and its buffer.

Args:
    block (BlockRV or str): the producer, or its name; its body must be one store
        ``B[v0, v1, …] = f(…)`` indexed by all its iterators.

Raises:
    OutputBlockError: the block writes a parameter of the function.
    NotCompleteBlockError, BodyAnalysisError, OpaqueAccessError, NotStagePipelineError: a
        precondition fails (the message says which).
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    sch.compute_inline("B")   # C reads A[…] * 2.0 directly)doc")
      .def(
          "reverse_compute_inline",
          [](Schedule& s, py::handle block) {
            apply(s, "Schedule.reverse_compute_inline",
                  [&](Handles& h) { reverse_compute_inline(s, h.block(block, "block")); });
          },
          py::arg("block"),
          R"doc(Folds a consumer into its single producer, which then writes the consumer's output,
and removes the consumer, its loops and the intermediate buffer.

Args:
    block (BlockRV or str): the consumer, or its name (e.g. a ReLU after a matmul).

Raises:
    NonSingleProducerError: the block has not exactly one producer, or the producer has other
        consumers.
    NotBijectiveAffineIndexError, ConsumerPredicateError, BodyAnalysisError, OutputBlockError,
    NotCompleteBlockError, OpaqueAccessError: a precondition fails (the message says which).
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    sch.reverse_compute_inline("relu"))doc")
      .def(
          "sample_compute_location",
          [](Schedule& s, py::handle block, py::handle decision) {
            const char* api = "Schedule.sample_compute_location";
            return apply(s, api, [&](Handles& h) {
              RV b = h.block(block, "block");
              return to_python(
                  sample_compute_location(s, b, to_optional_int(decision, api, "decision")));
            });
          },
          py::arg("block"), py::arg("decision") = py::none(),
          R"doc(Draws a place where compute_at can put the block, uniformly among the valid ones.

The decision is -2 (inline), -1 (leave it where it is) or the number of a loop of the scope in
pre-order; it is recorded in the trace.

Args:
    block (BlockRV or str): the block, or its name.
    decision (int, optional): use this decision instead of drawing one.

Returns:
    LoopRV: pass it to compute_at.

Raises:
    InvalidDecisionError: the decision is not a valid location.
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    loc = sch.sample_compute_location("B")
    sch.compute_at("B", loc))doc");
}

}  // namespace kiln::python
