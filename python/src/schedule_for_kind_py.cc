// Python bindings of the primitives of tir.Schedule that mark loops and blocks: the loop kinds
// (parallel, vectorize, unroll, bind; kiln/schedule/for_kind.h) and annotate and unannotate
// (kiln/schedule/annotation.h).
#include "kiln/schedule/annotation.h"
#include "kiln/schedule/for_kind.h"
#include "schedule_py.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::schedule;

void bind_schedule_for_kinds(ScheduleClass& cls) {
  cls.def(
         "parallel",
         [](Schedule& s, py::handle loop) {
           apply(s, "Schedule.parallel",
                 [&](Handles& h) { schedule::parallel(s, h.loop(loop, "loop")); });
         },
         py::arg("loop"),
         R"doc(Runs a loop's iterations on the runtime's thread pool.

Args:
    loop (LoopRV): the loop.

Raises:
    WrongBlockIterTypeError: the loop binds a reduction (or opaque) iterator of a block below.
    StaleHandleError, KilnTypeError: as split.

Example:
    i, j = sch.get_loops("B")
    sch.parallel(i))doc")
      .def(
          "vectorize",
          [](Schedule& s, py::handle loop) {
            apply(s, "Schedule.vectorize",
                  [&](Handles& h) { schedule::vectorize(s, h.loop(loop, "loop")); });
          },
          py::arg("loop"),
          R"doc(Turns a loop's iterations into the lanes of vector instructions.

The loop's extent becomes the vector length; split it first to a multiple of the target's vector
width. When lowering cannot vectorize the body, the loop runs serially and carries the reason
in its annotation "kiln.vectorize_fallback".

Args:
    loop (LoopRV): the loop, usually the innermost.

Raises:
    WrongBlockIterTypeError: the loop binds a reduction (or opaque) iterator of a block below.
    StaleHandleError, KilnTypeError: as split.

Example:
    (i,) = sch.get_loops("B")
    io, ii = sch.split(i, factors=[None, 16])
    sch.vectorize(ii))doc")
      .def(
          "unroll",
          [](Schedule& s, py::handle loop) {
            apply(s, "Schedule.unroll",
                  [&](Handles& h) { schedule::unroll(s, h.loop(loop, "loop")); });
          },
          py::arg("loop"),
          R"doc(Marks a loop to be unrolled: lowering replaces a loop of small constant extent by
copies of its body, and leaves a longer or symbolic one to LLVM's unroller.

Args:
    loop (LoopRV): the loop.

Raises:
    StaleHandleError, KilnTypeError: as split.

Example:
    i, j, k = sch.get_loops("C")
    sch.unroll(k))doc")
      .def(
          "bind",
          [](Schedule& s, py::handle loop, py::handle thread_axis) {
            apply(s, "Schedule.bind", [&](Handles& h) {
              bind_loop(s, h.loop(loop, "loop"),
                        to_str(thread_axis, "Schedule.bind", "thread_axis"));
            });
          },
          py::arg("loop"), py::arg("thread_axis"),
          R"doc(Binds a loop to a GPU thread axis.

kiln has no GPU code generator yet: bound loops lower (tir.lower) and run on the reference
interpreter, and kiln.build for "llvm" refuses them.

Args:
    loop (LoopRV): the loop.
    thread_axis (str): "blockIdx.x", "threadIdx.x", "vthread.x" (and .y, .z).

Raises:
    InvalidThreadTagError: thread_axis is not one of those names.
    WrongBlockIterTypeError: a blockIdx or vthread axis would bind a reduction iterator.
    StaleHandleError, KilnTypeError: as split.

Example:
    i, j = sch.get_loops("B")
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x"))doc")
      .def(
          "annotate",
          [](Schedule& s, py::handle block_or_loop, py::handle ann_key, py::handle ann_val) {
            apply(s, "Schedule.annotate", [&](Handles& h) {
              RV target = h.block_or_loop(block_or_loop, "block_or_loop");
              std::string key = to_str(ann_key, "Schedule.annotate", "ann_key");
              if (py::isinstance<ExprRV>(ann_val)) {
                annotate(s, target, key, ann_val.cast<RV>());
              } else {
                annotate(s, target, key, to_attr_value(ann_val, "Schedule.annotate"));
              }
            });
          },
          py::arg("block_or_loop"), py::arg("ann_key"), py::arg("ann_val"),
          R"doc(Sets the annotation ``ann_key`` of a block or a loop to ``ann_val``.

Lowering passes and code generators read some keys on loops: "pragma_auto_unroll_max_step"
(unroll the loops under it up to that many steps), "pragma_unroll_explicit",
"pragma_llvm_unroll" and "pragma_nontemporal" (1: the contiguous vector stores under the loop
to outputs it does not read go past the caches, where the output's data is aligned to 64 bytes
when the loop starts; a fence ends them. For outputs written once and larger than the caches).

Args:
    block_or_loop (BlockRV, LoopRV or str): where to put it; a str names a block.
    ann_key (str): the key.
    ann_val (int, float, bool, str or ExprRV): the value; a sampled ExprRV (from
        sample_categorical) is recorded as the handle, so a trace with another decision
        annotates the other value.

Raises:
    InvalidAnnotationError: the value is not a constant int, float, bool or string.
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    i, j = sch.get_loops("C")
    sch.annotate(i, "pragma_auto_unroll_max_step", 16))doc")
      .def(
          "unannotate",
          [](Schedule& s, py::handle block_or_loop, py::handle ann_key) {
            apply(s, "Schedule.unannotate", [&](Handles& h) {
              unannotate(s, h.block_or_loop(block_or_loop, "block_or_loop"),
                         to_str(ann_key, "Schedule.unannotate", "ann_key"));
            });
          },
          py::arg("block_or_loop"), py::arg("ann_key"),
          R"doc(Removes the annotation ``ann_key`` of a block or a loop.

Args:
    block_or_loop (BlockRV, LoopRV or str): where it is; a str names a block.
    ann_key (str): the key.

Raises:
    AnnotationNotFoundError: the block or loop has no such annotation.
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    sch.unannotate(i, "pragma_auto_unroll_max_step"))doc");
}

}  // namespace kiln::python
