// Python bindings of the reduction primitives of tir.Schedule: rfactor and decompose_reduction
// (kiln/schedule/reduction.h).
#include "kiln/schedule/reduction.h"
#include "schedule_py.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::schedule;

void bind_schedule_reduction(ScheduleClass& cls) {
  cls.def(
         "rfactor",
         [](Schedule& s, py::handle loop, py::handle factor_axis) {
           const char* api = "Schedule.rfactor";
           return apply(s, api, [&](Handles& h) {
             RV l = h.loop(loop, "loop");
             int axis =
                 static_cast<int>(to_int(factor_axis, api, "factor_axis", INT32_MIN, INT32_MAX));
             return to_python(rfactor(s, l, axis));
           });
         },
         py::arg("loop"), py::arg("factor_axis"),
         R"doc(Factorizes a reduction: a new block "<name>_rf" reduces into a buffer with one more
dimension indexed by ``loop``, and the original block reduces that dimension.

This exposes the parallelism of a reduction loop (sum partial results in parallel, then
combine them). The combiner is recognized from the block: sum, product, max or min.

Args:
    loop (LoopRV): a loop that binds only reduction iterators of the block.
    factor_axis (int): where the new dimension goes in the "<buffer>_rf" buffer.

Returns:
    BlockRV: the rfactor block.

Raises:
    NotSingleChildBlockError, NotReductionBlockError, NoMatchedReducerError,
    NotAffineBindingError, LoopPropertyError, FactorAxisOutOfRangeError,
    PredicateNotSupportedError: a precondition fails (the message says which).
    StaleHandleError, KilnTypeError: as split.

Example:
    i, k = sch.get_loops("B")
    ko, ki = sch.split(k, factors=[None, 4])
    rf = sch.rfactor(ki, factor_axis=1))doc")
      .def(
          "decompose_reduction",
          [](Schedule& s, py::handle block, py::handle loop) {
            return apply(s, "Schedule.decompose_reduction", [&](Handles& h) {
              RV b = h.block(block, "block");
              return to_python(decompose_reduction(s, b, h.loop(loop, "loop")));
            });
          },
          py::arg("block"), py::arg("loop"),
          R"doc(Moves a reduction block's init into a new block "<name>_init" right before ``loop``.

Args:
    block (BlockRV or str): the reduction block, or its name.
    loop (LoopRV): one of its loops; the init goes before it.

Returns:
    BlockRV: the init block.

Raises:
    NotReductionBlockError: the block has no init.
    LoopPositionError: the loop is not above the block.
    LoopHeightError: a loop above ``loop`` binds a reduction iterator, or a condition of
        the block's predicate over loops the init keeps and reduction loops cannot be taken
        at the reduction's first step.
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    i, j, k = sch.get_loops("C")
    init = sch.decompose_reduction("C", k))doc");
}

}  // namespace kiln::python
