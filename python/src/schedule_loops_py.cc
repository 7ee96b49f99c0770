// Python bindings of the loop transformations of tir.Schedule: split, fuse, reorder and
// add_unit_loop (kiln/schedule/loop_transformation.h).
#include "kiln/schedule/loop_transformation.h"
#include "schedule_py.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::schedule;

namespace {

SplitFactor to_factor(py::handle obj, const char* param) {
  const char* api = "Schedule.split";
  if (obj.is_none()) return std::monostate{};
  if (py::isinstance<ExprRV>(obj)) return obj.cast<RV>();
  if (py::isinstance<RV>(obj) || py::isinstance<py::bool_>(obj) ||
      py::isinstance<py::float_>(obj)) {
    raise_type_error(api, param, "an int, an ExprRV or None", obj);
  }
  return to_int(obj, api, param);
}

}  // namespace

void bind_schedule_loops(ScheduleClass& cls) {
  cls.def(
         "split",
         [](Schedule& s, py::handle loop, py::handle factors, py::handle preserve_unit_iters) {
           return apply(s, "Schedule.split", [&](Handles& h) {
             RV l = h.loop(loop, "loop");
             if (!py::isinstance<py::list>(factors) && !py::isinstance<py::tuple>(factors)) {
               raise_type_error("Schedule.split", "factors", "a list of ints, ExprRVs or None",
                                factors);
             }
             std::vector<SplitFactor> fs;
             for (py::handle f : factors) {
               fs.push_back(to_factor(f, entry_name("factors", fs.size()).c_str()));
             }
             return to_python(split(
                 s, l, fs, to_bool(preserve_unit_iters, "Schedule.split", "preserve_unit_iters")));
           });
         },
         py::arg("loop"), py::arg("factors"), py::arg("preserve_unit_iters") = true,
         R"doc(Splits a loop into nested loops whose extents are ``factors``, outermost first.

At most one factor may be None: it becomes ceil(extent / product of the others). When the
product exceeds the extent, the block gets a predicate that keeps it inside the original range.
The block's bindings become ``i_0 * f1 + i_1`` (for two factors); the new loops are serial.

Args:
    loop (LoopRV): the loop to split.
    factors (list of int, ExprRV or None): the extents of the new loops; an ExprRV comes from
        sample_perfect_tile.
    preserve_unit_iters (bool): accepted for TVM compatibility and recorded in the trace; it
        does not change the result.

Returns:
    list of LoopRV: the new loops, outermost first. The original loop's handle goes stale.

Raises:
    InvalidSplitFactorsError: more than one None, a factor that is not positive, or factors
        whose product is less than the extent.
    StaleHandleError: a primitive removed the loop.
    KilnTypeError: loop is not a LoopRV, or a factor is not an int, an ExprRV or None.

Example:
    i, j = sch.get_loops("C")
    io, ii = sch.split(i, factors=[None, 32]))doc")
      .def(
          "fuse",
          [](Schedule& s, const py::args& loops, py::handle preserve_unit_iters) {
            return apply(s, "Schedule.fuse", [&](Handles& h) {
              return to_python(
                  fuse(s, h.loops(loops, "loops"),
                       to_bool(preserve_unit_iters, "Schedule.fuse", "preserve_unit_iters")));
            });
          },
          py::arg("preserve_unit_iters") = true,
          R"doc(Fuses directly nested loops into one loop whose extent is the product of theirs.

The block's bindings become ``fused // 16`` and ``fused % 16`` (for an inner extent of 16).

Args:
    *loops (LoopRV): the loops, outermost first, each the only statement in the body of the
        one before; a list of them works too.
    preserve_unit_iters (bool): accepted for TVM compatibility and recorded in the trace; it
        does not change the result.

Returns:
    LoopRV: the fused loop. The handles of the given loops go stale.

Raises:
    InvalidLoopsError: no loop, or a loop given twice.
    LoopsNotNestedError: a loop is not the only statement in the body of the previous one.
    StaleHandleError: a primitive removed one of the loops.
    KilnTypeError: an argument is not a LoopRV.

Example:
    i, j = sch.get_loops("B")
    ij = sch.fuse(i, j)
    sch.parallel(ij))doc")
      .def(
          "reorder",
          [](Schedule& s, const py::args& ordered_loops) {
            apply(s, "Schedule.reorder",
                  [&](Handles& h) { reorder(s, h.loops(ordered_loops, "ordered_loops")); });
          },
          R"doc(Puts loops of one nest in the given order.

The given loops take the positions that loops of the set occupy, outermost first; the other
loops of the nest keep their places.

Args:
    *ordered_loops (LoopRV): the loops in their new order (or one list of them).

Raises:
    InvalidLoopsError: a loop is given twice.
    LoopsNotNestedError: the loops are not on one chain of directly nested loops.
    LoopIterTypeError: a loop binds both a spatial and a reduction iterator of a block.
    LoopDependenceError: a loop's extent depends on a loop that would move inside it.
    KilnTypeError: an argument is not a LoopRV.

Example:
    i, j, k = sch.get_loops("C")
    io, ii = sch.split(i, factors=[None, 4])
    sch.reorder(io, k, ii, j))doc")
      .def(
          "add_unit_loop",
          [](Schedule& s, py::handle block_or_loop) {
            return apply(s, "Schedule.add_unit_loop", [&](Handles& h) {
              return to_python(add_unit_loop(s, h.block_or_loop(block_or_loop, "block_or_loop")));
            });
          },
          py::arg("block_or_loop"),
          R"doc(Adds a loop of extent 1 directly above a block (inside its loops) or above a loop.

No iterator uses the new loop. It gives a block without spatial loops (a reduction to one value,
a 0-d element-wise block) a loop to bind to ``blockIdx.x`` on a GPU target.

Args:
    block_or_loop (BlockRV, LoopRV or str): what the loop encloses; a str names a block.

Returns:
    LoopRV: the new loop.

Raises:
    RootBlockError: the block is the root block.
    StaleHandleError: a primitive removed the block or the loop.
    KilnTypeError: block_or_loop is not a BlockRV, a LoopRV or a str.

Example:
    (k,) = sch.get_loops("B")          # B = sum(A): a 0-d output, one reduction loop
    u = sch.add_unit_loop(k)
    sch.bind(u, "blockIdx.x"))doc");
}

}  // namespace kiln::python
