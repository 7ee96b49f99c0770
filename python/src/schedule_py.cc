// Python bindings of tir.Schedule (module kiln._kiln.schedule). This file holds the entry point,
// bind_schedule, with the handle classes (BlockRV, LoopRV, ExprRV), traces, and the Schedule
// class with its getters; the primitives are bound by family, one file each, declared in
// schedule_py.h and called below in order. ScheduleErrors become the kiln.tir.ScheduleError
// subclass named by their error class.
//
// Every argument is taken as a Python object and converted in the bindings, so that a wrong type
// raises a KilnTypeError naming the method and the parameter. Where a primitive takes a block, a
// block name also works (sch.get_loops("C")): it is looked up with get_block, as TVM does.
#include "schedule_py.h"
#include "bindings.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/schedule_error.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::schedule;
using ir::Ref;

namespace {

// JSON data (numbers, strings, lists, dicts, None) through Python's json module.
Json to_json(py::handle obj, const char* api, const char* param) {
  std::string text;
  try {
    text = py::module_::import("json").attr("dumps")(obj).cast<std::string>();
  } catch (const py::error_already_set&) {
    raise_type_error(api, param, "JSON data (numbers, strings, lists, dicts or None)", obj);
  }
  return Json::parse(text);
}

py::object from_json(const Json& json) {
  return py::module_::import("json").attr("loads")(json.dump());
}

Ref<ir::IRModule> to_module(py::handle obj) {
  if (py::isinstance<ir::IRModule>(obj)) return obj.cast<Ref<ir::IRModule>>();
  if (py::isinstance<ir::PrimFunc>(obj)) {
    auto mod = ir::make<ir::IRModule>();
    mod->functions["main"] = obj.cast<Ref<ir::PrimFunc>>();
    return mod;
  }
  raise_type_error("tir.Schedule", "mod", "a PrimFunc or an IRModule", obj);
}

// A seed: a non-negative int.
uint64_t to_seed(py::handle obj, const char* api) {
  return static_cast<uint64_t>(to_int(obj, api, "seed", 0));
}

void bind_handles(py::module_& m) {
  py::class_<RV>(m, "RV", "A handle of a schedule: the base class of BlockRV, LoopRV and ExprRV.")
      .def_property_readonly("name", &RV::name,
                             "The handle's name in traces: b<n> for a block, l<n> for a loop, "
                             "v<n> for a value.")
      .def("__repr__", [](const RV& rv) { return rv.name(); })
      .def("__eq__",
           [](const RV& a, py::handle b) { return py::isinstance<RV>(b) && a == b.cast<RV>(); })
      .def("__hash__", [](const RV& rv) { return std::hash<int64_t>()(rv.id); });
  py::class_<BlockRV, RV>(m, "BlockRV", R"doc(A handle of a block of a schedule's function.

Made by get_block, get_child_blocks, get_producers, get_consumers and by the primitives that add
blocks (cache_read, cache_write, rfactor, decompose_reduction, blockize). It names the block, so
it stays valid while the block exists; once a primitive removes the block (compute_inline …),
using it raises StaleHandleError. ``sch.get(block_rv)`` gives the tir.Block.)doc");
  py::class_<LoopRV, RV>(m, "LoopRV", R"doc(A handle of a loop of a schedule's function.

Made by get_loops, split, fuse, and sample_compute_location. It names the loop variable, so it
stays valid while primitives rebuild the loop; once a primitive removes the loop (split, fuse,
compute_at …), using it raises StaleHandleError. ``sch.get(loop_rv)`` gives the tir.For.)doc");
  py::class_<ExprRV, RV>(m, "ExprRV", R"doc(A handle of a value sampled by the schedule.

Made by sample_perfect_tile and sample_categorical; split takes it as a factor.
``sch.get(expr_rv)`` gives the value (an int).)doc");
}

void bind_trace(py::module_& m) {
  py::class_<Trace>(m, "Trace", R"doc(The program of a schedule: every primitive applied, in order.

Each instruction records its kind (the Schedule method), its handle inputs and outputs, its other
arguments, and the decision of a sampling primitive. A trace replays on a fresh schedule of the
same function (apply_to_schedule), prints as the Python that applies it (as_python, str) and
serializes to JSON (as_json).

Example:
    trace = sch.trace
    fresh = tir.Schedule(func)
    trace.apply_to_schedule(fresh)   # fresh.mod equals sch.mod)doc")
      .def(
          "as_json", [](const Trace& t) { return from_json(t.as_json()); },
          R"doc(The trace as JSON data (a dict with "version" and "instructions"), ready for
json.dumps. Trace.apply_json_to_schedule reads it back.)doc")
      .def("as_python", &Trace::as_python,
           R"doc(The trace as Python text, one Schedule call per line, e.g.
``b0 = sch.get_block(func_name="main", name="C")``.)doc")
      .def("__str__", &Trace::as_python)
      .def("__len__", [](const Trace& t) { return t.instructions().size(); })
      .def(
          "with_decision",
          [](const Trace& t, py::handle index, py::handle decision) {
            const char* api = "Trace.with_decision";
            return t.with_decision(static_cast<size_t>(to_int(index, api, "index", 0)),
                                   to_json(decision, api, "decision"));
          },
          py::arg("index"), py::arg("decision"),
          R"doc(A copy of the trace with the decision of instruction ``index`` replaced.

Args:
    index (int): the position of a sampling instruction in the trace.
    decision: its new decision, as JSON data (a list of factors for sample_perfect_tile, an
        index for sample_categorical, a loop number for sample_compute_location).

Returns:
    Trace: the new trace; replaying it checks the decision.

Raises:
    KilnIndexError: index is past the end of the trace.
    KilnValueError: instruction index does not sample.
    KilnTypeError: index is not an int, or decision is not JSON data.)doc")
      .def(
          "apply_to_schedule",
          [](const Trace& t, py::handle sch) {
            t.apply_to(
                &to_object<Schedule>(sch, "Trace.apply_to_schedule", "sch", "a tir.Schedule"));
          },
          py::arg("sch"),
          R"doc(Replays the trace on ``sch``, a schedule of the same function.

Args:
    sch (tir.Schedule): the schedule to apply every instruction to.

Raises:
    ScheduleError: an instruction fails on this schedule (its primitive's error).
    KilnTypeError: sch is not a tir.Schedule.)doc")
      .def_static(
          "apply_json_to_schedule",
          [](py::handle json, py::handle sch) {
            const char* api = "Trace.apply_json_to_schedule";
            Trace::apply_json(to_json(json, api, "json_obj"),
                              &to_object<Schedule>(sch, api, "sch", "a tir.Schedule"));
          },
          py::arg("json_obj"), py::arg("sch"),
          R"doc(Replays a trace given as JSON data (what Trace.as_json gives) on ``sch``.

Args:
    json_obj: the trace's JSON data.
    sch (tir.Schedule): the schedule to apply it to.

Raises:
    KilnValueError: the JSON is not a trace (a missing field, an unknown instruction kind, a
        handle that no earlier instruction defines).
    ScheduleError: an instruction fails on this schedule.
    KilnTypeError: json_obj is not JSON data, or sch is not a tir.Schedule.)doc");
}

// The schedule itself, its getters and its handles' values.
void bind_schedule_core(ScheduleClass& cls) {
  cls.def(py::init([](py::handle mod, py::handle seed) {
            std::optional<uint64_t> s;
            if (!seed.is_none()) s = to_seed(seed, "tir.Schedule");
            return Schedule(to_module(mod), s);
          }),
          py::arg("mod"), py::arg("seed") = py::none(),
          R"doc(A schedule of a PrimFunc (as the function "main") or of an IRModule.

Args:
    mod (PrimFunc or IRModule): what to schedule; it is not modified (IR is immutable), and
        ``sch.mod`` gives the scheduled module.
    seed (int, optional): the random state of the sampling primitives; None seeds it from the
        clock.

Raises:
    KilnTypeError: mod is not a PrimFunc or an IRModule, or seed is not an int.
    KilnValueError: seed is negative.

Example:
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    i, j, k = sch.get_loops("C"))doc")
      .def_property_readonly("mod", &Schedule::mod,
                             "The scheduled IRModule (a new object after each primitive).")
      .def_property_readonly("trace", &Schedule::trace,
                             "The Trace of every primitive applied so far.")
      .def("copy", &Schedule::copy,
           "An independent copy: the same module, handles, trace and random state.")
      .def(
          "seed", [](Schedule& s, py::handle seed) { s.seed(to_seed(seed, "Schedule.seed")); },
          py::arg("seed"),
          R"doc(Re-seeds the random state of the sampling primitives.

Raises:
    KilnTypeError: seed is not an int.
    KilnValueError: seed is negative.)doc")
      .def(
          "get",
          [](Schedule& sch, py::handle handle) -> py::object {
            const char* api = "Schedule.get";
            if (!py::isinstance<RV>(handle)) {
              raise_type_error(api, "rv", "a BlockRV, a LoopRV or an ExprRV", handle);
            }
            RV rv = handle.cast<RV>();
            if (rv.kind == RVKind::kBlock)
              return py::cast(Ref<ir::Block>(sch.block(rv, "get").block));
            if (rv.kind == RVKind::kLoop) return py::cast(Ref<ir::For>(sch.loop(rv, "get").loop));
            ir::Expr value = sch.expr(rv, "get");
            if (const int64_t* c = ir::as_const_int(value)) return py::int_(*c);
            return py::cast(value);
          },
          py::arg("rv"),
          R"doc(What a handle stands for in the current module.

Args:
    rv (BlockRV, LoopRV or ExprRV): the handle.

Returns:
    tir.Block for a BlockRV, tir.For for a LoopRV, an int (or PrimExpr) for an ExprRV.

Raises:
    StaleHandleError: a primitive removed the block or loop.
    KilnTypeError: rv is not a handle.

Example:
    (i,) = sch.get_loops("B")
    sch.get(i).extent   # 1024)doc")
      .def(
          "get_block",
          [](Schedule& s, py::handle name, py::handle func_name) {
            const char* api = "Schedule.get_block";
            std::optional<std::string> func = to_optional_str(func_name, api, "func_name");
            return to_python(
                get_block(s, to_str(name, api, "name"), func.value_or(default_func_name(s))));
          },
          py::arg("name"), py::arg("func_name") = py::none(),
          R"doc(The block called ``name``.

Block names are unique within a function. Primitives that take a block also take its name and
call get_block themselves.

Args:
    name (str): the block's name, e.g. the name of the te.compute that made it.
    func_name (str, optional): the function to look in; default: the module's only function,
        else "main".

Returns:
    BlockRV

Raises:
    BlockNotFoundError: the function has no block of that name (the message lists its blocks).
    KilnValueError: the module has no function func_name.
    KilnTypeError: name or func_name is not a str.

Example:
    block = sch.get_block("C"))doc")
      .def(
          "get_loops",
          [](Schedule& s, py::handle block) {
            return apply(s, "Schedule.get_loops", [&](Handles& h) {
              return to_python(get_loops(s, h.block(block, "block")));
            });
          },
          py::arg("block"),
          R"doc(The loops above a block, outermost first (up to the block's enclosing block).

Args:
    block (BlockRV or str): the block, or its name.

Returns:
    list of LoopRV

Raises:
    BlockNotFoundError: no block has that name.
    StaleHandleError: a primitive removed the block.
    KilnTypeError: block is not a BlockRV or a str.

Example:
    i, j, k = sch.get_loops("C"))doc")
      .def(
          "get_child_blocks",
          [](Schedule& s, py::handle block_or_loop) {
            return apply(s, "Schedule.get_child_blocks", [&](Handles& h) {
              return to_python(
                  get_child_blocks(s, h.block_or_loop(block_or_loop, "block_or_loop")));
            });
          },
          py::arg("block_or_loop"),
          R"doc(The blocks directly under a block or a loop, in program order (not those nested in
a child block).

Args:
    block_or_loop (BlockRV, LoopRV or str): the parent; a str names a block.

Returns:
    list of BlockRV

Raises:
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    root = sch.get_block("root")
    blocks = sch.get_child_blocks(root)   # every stage of the function)doc")
      .def(
          "get_producers",
          [](Schedule& s, py::handle block) {
            return apply(s, "Schedule.get_producers", [&](Handles& h) {
              return to_python(get_producers(s, h.block(block, "block")));
            });
          },
          py::arg("block"),
          R"doc(The blocks of the same scope that write a buffer the block reads, in program order.

Args:
    block (BlockRV or str): the consumer, or its name.

Returns:
    list of BlockRV

Raises:
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    (b,) = sch.get_producers("C")   # the block that computes C's input)doc")
      .def(
          "get_consumers",
          [](Schedule& s, py::handle block) {
            return apply(s, "Schedule.get_consumers", [&](Handles& h) {
              return to_python(get_consumers(s, h.block(block, "block")));
            });
          },
          py::arg("block"),
          R"doc(The blocks of the same scope that read a buffer the block writes, in program order.

Args:
    block (BlockRV or str): the producer, or its name.

Returns:
    list of BlockRV

Raises:
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    (c,) = sch.get_consumers("B"))doc");
}

}  // namespace

void bind_schedule(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ScheduleError& e) {
      py::object cls =
          py::module_::import("kiln.tir.schedule").attr("_error_class")(e.error_class());
      PyErr_SetString(cls.ptr(), e.what());
    }
  });

  bind_handles(m);
  bind_trace(m);
  bind_index_map(m);
  py::class_<Schedule> cls(m, "Schedule", R"doc(Transforms the loops and blocks of a PrimFunc.

Each primitive (split, reorder, compute_at, cache_write, …) checks its preconditions, raises a
ScheduleError subclass named after the failure and leaves the schedule as it was, or replaces
the scheduled module and appends an instruction to the trace. Primitives refer to blocks and
loops through handles (BlockRV, LoopRV) that stay valid across other primitives; where a
primitive takes a block, its name works too.

Example:
    sch = tir.Schedule(func)
    i, j, k = sch.get_loops("C")
    io, ii = sch.split(i, factors=[None, 32])
    sch.reorder(io, j, k, ii)
    sch.vectorize(ii)
    rt = kiln.build(sch, target="llvm"))doc");
  bind_schedule_core(cls);
  bind_schedule_loops(cls);
  bind_schedule_for_kinds(cls);
  bind_schedule_buffers(cls);
  bind_schedule_compute_location(cls);
  bind_schedule_reduction(cls);
  bind_schedule_tensorize(cls);
  bind_schedule_sampling(cls);
  bind_tensor_intrin(m);
}

}  // namespace kiln::python
