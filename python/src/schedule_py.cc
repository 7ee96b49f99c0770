// Python bindings of tir.Schedule (module kiln._kiln.schedule): the schedule, its handles
// (BlockRV, LoopRV, ExprRV), traces, index maps, tensor intrinsics, and one definition per
// primitive with its docstring. ScheduleErrors become the kiln.tir.ScheduleError subclass named
// by their error class.
//
// Every argument is taken as a Python object and converted here, so that a wrong type raises a
// KilnTypeError naming the method and the parameter. Where a primitive takes a block, a block
// name also works (sch.get_loops("C")): it is looked up with get_block, as TVM does.
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>

#include "bindings.h"
#include "convert.h"
#include "kiln/codegen/target.h"
#include "kiln/schedule/annotation.h"
#include "kiln/schedule/blockize_tensorize.h"
#include "kiln/schedule/buffer_scope.h"
#include "kiln/schedule/cache_read_write.h"
#include "kiln/schedule/compute_at.h"
#include "kiln/schedule/compute_inline.h"
#include "kiln/schedule/for_kind.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/layout_transformation.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/schedule/reduction.h"
#include "kiln/schedule/sampling.h"
#include "kiln/schedule/schedule.h"
#include "kiln/schedule/tensor_intrin.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::schedule;
using ir::Ref;

namespace {

// The three Python handle classes share the C++ RV.
struct BlockRV : RV {};
struct LoopRV : RV {};
struct ExprRV : RV {};

py::object to_python(const RV& rv) {
  switch (rv.kind) {
    case RVKind::kBlock:
      return py::cast(BlockRV{rv});
    case RVKind::kLoop:
      return py::cast(LoopRV{rv});
    case RVKind::kExpr:
      return py::cast(ExprRV{rv});
  }
  return py::none();
}

py::list to_python(const std::vector<RV>& rvs) {
  py::list out;
  for (const RV& rv : rvs) out.append(to_python(rv));
  return out;
}

// "param[index]", naming one entry of a list argument in messages.
std::string entry_name(const char* param, size_t index) {
  return std::string(param) + "[" + std::to_string(index) + "]";
}

// The function a block name refers to: the schedule's only function, else "main".
std::string default_func_name(const Schedule& sch) {
  const auto& functions = sch.mod()->functions;
  if (functions.size() == 1) return functions.begin()->first;
  return "main";
}

// Converts the handle arguments of one primitive call. A block given by name is looked up with
// get_block, which records a get_block instruction; the schedule is saved before the first
// look-up so that restore() can undo it when the call then fails, because a failed primitive
// must leave the schedule exactly as it was.
class Handles {
 public:
  Handles(Schedule& sch, const char* api) : sch_(sch), api_(api) {}

  RV block(py::handle obj, const char* param) {
    if (py::isinstance<py::str>(obj)) {
      if (!saved_) saved_ = sch_.copy();
      return get_block(sch_, obj.cast<std::string>(), default_func_name(sch_));
    }
    if (!py::isinstance<BlockRV>(obj)) {
      raise_type_error(api_, param, "a BlockRV or a block name (str)", obj);
    }
    return obj.cast<RV>();
  }

  RV loop(py::handle obj, const char* param) {
    if (!py::isinstance<LoopRV>(obj)) raise_type_error(api_, param, "a LoopRV", obj);
    return obj.cast<RV>();
  }

  RV block_or_loop(py::handle obj, const char* param) {
    if (py::isinstance<LoopRV>(obj)) return obj.cast<RV>();
    if (py::isinstance<BlockRV>(obj) || py::isinstance<py::str>(obj)) return block(obj, param);
    raise_type_error(api_, param, "a BlockRV, a LoopRV or a block name (str)", obj);
  }

  // A list of blocks (BlockRVs or names).
  std::vector<RV> blocks(py::handle obj, const char* param) {
    if (!py::isinstance<py::list>(obj) && !py::isinstance<py::tuple>(obj)) {
      raise_type_error(api_, param, "a list of BlockRVs or block names", obj);
    }
    std::vector<RV> rvs;
    for (py::handle item : obj) rvs.push_back(block(item, entry_name(param, rvs.size()).c_str()));
    return rvs;
  }

  // Loops given one per argument, or as lists: fuse(i, j), fuse([i, j]).
  std::vector<RV> loops(const py::args& args, const char* param) {
    std::vector<RV> rvs;
    for (py::handle arg : args) {
      if (py::isinstance<py::list>(arg) || py::isinstance<py::tuple>(arg)) {
        for (py::handle item : arg)
          rvs.push_back(loop(item, entry_name(param, rvs.size()).c_str()));
      } else {
        rvs.push_back(loop(arg, entry_name(param, rvs.size()).c_str()));
      }
    }
    return rvs;
  }

  void restore() {
    if (saved_) sch_ = *saved_;
  }

 private:
  Schedule& sch_;
  const char* api_;
  std::optional<Schedule> saved_;
};

// Runs `body(handles)` for the primitive `api`; when it throws, undoes the block look-ups it
// made before rethrowing.
template <class F>
auto apply(Schedule& sch, const char* api, F&& body) {
  Handles handles(sch, api);
  try {
    return body(handles);
  } catch (...) {
    handles.restore();
    throw;
  }
}

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

// transform_layout's buffer: ("read"|"write", index), given as a tuple or list, or a name.
BufferSpec to_buffer_spec(py::handle obj) {
  const char* api = "Schedule.transform_layout";
  const char* expected = "(\"read\" or \"write\", index) or a buffer name (str)";
  if (py::isinstance<py::str>(obj)) return obj.cast<std::string>();
  if ((py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj)) && py::len(obj) == 2) {
    py::sequence pair = py::reinterpret_borrow<py::sequence>(obj);
    if (py::isinstance<py::str>(pair[0])) {
      std::string kind = pair[0].cast<std::string>();
      user_check(kind == "read" || kind == "write")
          << api << ": buffer must be " << expected << ", found (\"" << kind << "\", …)";
      int64_t index = to_int(pair[1], api, "the index of buffer", 0);
      return std::make_pair(kind == "read" ? BufferIndexType::kRead : BufferIndexType::kWrite,
                            index);
    }
  }
  raise_type_error(api, "buffer", expected, obj);
}

// An IndexMap from a Python callable: its parameters become the initial indices.
IndexMap index_map_from_func(py::handle func) {
  const char* api = "IndexMap.from_func";
  if (!PyCallable_Check(func.ptr())) raise_type_error(api, "func", "a function", func);
  py::module_ inspect = py::module_::import("inspect");
  py::object signature = inspect.attr("signature")(func);
  py::object positional = inspect.attr("Parameter").attr("POSITIONAL_OR_KEYWORD");
  std::vector<Ref<ir::Var>> vars;
  py::tuple args(py::len(signature.attr("parameters")));
  for (py::handle param : signature.attr("parameters").attr("values")()) {
    py::object kind = param.attr("kind");
    user_check(kind.equal(positional))
        << api << ": parameter " << py::str(param).cast<std::string>()
        << " is not a plain positional parameter; write lambda i, j: […]";
    vars.push_back(ir::make_var(param.attr("name").cast<std::string>()));
    args[vars.size() - 1] = py::cast(vars.back());
  }
  py::object result = func(*args);
  std::vector<ir::Expr> finals;
  if (py::isinstance<py::list>(result) || py::isinstance<py::tuple>(result)) {
    for (py::handle item : result) {
      finals.push_back(to_expr(item, api, entry_name("the result", finals.size()).c_str()));
    }
  } else {
    finals.push_back(to_expr(result, api, "the result"));
  }
  return IndexMap(std::move(vars), std::move(finals));
}

// A list of expressions (a final index list, indices to map).
std::vector<ir::Expr> to_expr_list(py::handle obj, const char* api, const char* param) {
  if (!py::isinstance<py::list>(obj) && !py::isinstance<py::tuple>(obj)) {
    raise_type_error(api, param, "a list of expressions", obj);
  }
  std::vector<ir::Expr> exprs;
  for (py::handle item : obj) {
    exprs.push_back(to_expr(item, api, entry_name(param, exprs.size()).c_str()));
  }
  return exprs;
}

// transform_layout's index map: an IndexMap, a callable, or the text form traces print.
IndexMap to_index_map(py::handle obj) {
  if (py::isinstance<IndexMap>(obj)) return obj.cast<IndexMap>();
  if (py::isinstance<py::str>(obj)) return IndexMap::parse(obj.cast<std::string>());
  if (PyCallable_Check(obj.ptr())) return index_map_from_func(obj);
  raise_type_error("Schedule.transform_layout", "index_map",
                   "an IndexMap, a function such as lambda i, j: [i // 16, j, i % 16], or its "
                   "text",
                   obj);
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

void bind_index_map(py::module_& m) {
  py::class_<IndexMap>(m, "IndexMap", R"doc(A function from a buffer's indices to new indices.

transform_layout applies it to a buffer. It is written with +, -, *, // and % of its initial
indices and integer constants, and prints as the Python lambda it reads back from
(``lambda i, j: [i // 16, j, i % 16]``), which is how traces store it.

Example:
    index_map = tir.IndexMap.from_func(lambda i, j: [i // 16, j, i % 16])
    sch.transform_layout("C", ("read", 1), index_map))doc")
      .def(py::init([](py::handle initial, py::handle finals) {
             const char* api = "IndexMap";
             if (!py::isinstance<py::list>(initial) && !py::isinstance<py::tuple>(initial)) {
               raise_type_error(api, "initial_indices", "a list of tir.Var", initial);
             }
             std::vector<Ref<ir::Var>> vars;
             for (py::handle item : initial) {
               vars.push_back(to_node<ir::Var>(
                   item, api, entry_name("initial_indices", vars.size()).c_str(), "a tir.Var"));
             }
             return IndexMap(std::move(vars), to_expr_list(finals, api, "final_indices"));
           }),
           py::arg("initial_indices"), py::arg("final_indices"),
           R"doc(An index map from its variables and the new indices written with them.

Args:
    initial_indices (list of tir.Var): one variable per dimension of the buffer.
    final_indices (list of PrimExpr or int): the new indices.

Raises:
    KilnTypeError: an initial index is not a tir.Var or a final index is not an expression.
    KilnValueError: the initial indices repeat a variable, or a final index uses anything but
        them, constants and + - * // %.)doc")
      .def_static(
          "from_func", &index_map_from_func, py::arg("func"),
          R"doc(The index map of a Python function, e.g. ``lambda i, j: [i // 16, j, i % 16]``.

func is called once with one tir.Var per parameter (named after the parameters) and returns
the new indices (a list or tuple, or one expression).

Raises:
    KilnTypeError: func is not callable, or returns something that is not an expression.
    KilnValueError: func has a parameter that is not plain positional (*args, keywords), or
        its result uses anything but its parameters, integer constants and + - * // %.)doc")
      .def_static(
          "parse",
          [](py::handle text) { return IndexMap::parse(to_str(text, "IndexMap.parse", "text")); },
          py::arg("text"),
          R"doc(Reads the text form, ``"lambda i, j: [i // 16, j, i % 16]"`` (what str() gives).

Raises:
    KilnValueError: the text does not parse; the message gives the position.
    KilnTypeError: text is not a str.)doc")
      .def_property_readonly("initial_indices", &IndexMap::initial_indices,
                             "The variables the map is a function of (list of tir.Var).")
      .def_property_readonly("final_indices", &IndexMap::final_indices,
                             "The new indices, expressions of the initial indices.")
      .def(
          "map_indices",
          [](const IndexMap& map, py::handle indices) {
            return map.map_indices(to_expr_list(indices, "IndexMap.map_indices", "indices"));
          },
          py::arg("indices"),
          R"doc(The new indices at ``indices`` (one per initial index).

Example:
    tir.IndexMap.from_func(lambda i, j: [j, i]).map_indices([3, 5])   # [5, 3]

Raises:
    KilnIndexError: the number of indices differs from the number of initial indices.
    KilnTypeError: indices is not a list of expressions or ints.)doc")
      .def("__str__", &IndexMap::to_text)
      .def("__repr__", [](const IndexMap& map) { return "IndexMap(" + map.to_text() + ")"; });
}

void bind_tensor_intrin(py::module_& m) {
  py::class_<TensorIntrin>(m, "TensorIntrin", R"doc(A tensor intrinsic for Schedule.tensorize.

A pair of PrimFuncs under a name: ``desc`` says what a hardware instruction computes, as ordinary
TensorIR over buffers of the tile's shape, and ``impl`` computes the same with the instruction
(or any other TensorIR). tensorize checks that a block computes what ``desc`` computes and
replaces its body by ``impl``. kiln ships x86.avx512.vnni.dot_16x4_u8s8s32, its 256-bit AVX-VNNI
form x86.avxvnni.dot_8x4_u8s8s32 and x86.avx512.bf16.dot_16x2_bf16bf16f32;
TensorIntrin.names() lists what is registered.)doc")
      .def_readonly("name", &TensorIntrin::name, "The name tensorize looks it up by.")
      .def_readonly("desc", &TensorIntrin::desc,
                    "The PrimFunc that describes what the intrinsic computes.")
      .def_readonly("impl", &TensorIntrin::impl,
                    "The PrimFunc whose body replaces a tensorized block's body.")
      .def_readonly("required_features", &TensorIntrin::required_features,
                    "The target features the implementation needs (LLVM's names, sorted).")
      .def_static(
          "register",
          [](py::handle name, py::handle desc, py::handle impl, py::handle override,
             py::handle required_features) {
            const char* api = "TensorIntrin.register";
            std::vector<std::string> features;
            if (!required_features.is_none()) {
              if (py::isinstance<py::str>(required_features) ||
                  !py::isinstance<py::sequence>(required_features)) {
                raise_type_error(api, "required_features", "a list of feature names",
                                 required_features);
              }
              for (py::handle f : required_features) {
                features.push_back(to_str(f, api, "a required feature"));
              }
            }
            register_tensor_intrin(to_str(name, api, "name"),
                                   to_node<ir::PrimFunc>(desc, api, "desc", "a PrimFunc"),
                                   to_node<ir::PrimFunc>(impl, api, "impl", "a PrimFunc"),
                                   to_bool(override, api, "override"), std::move(features));
          },
          py::arg("name"), py::arg("desc"), py::arg("impl"), py::arg("override") = false,
          py::arg("required_features") = py::none(),
          R"doc(Registers a tensor intrinsic under ``name``.

Both functions take the same buffers in the same order, with the same constant shapes and
dtypes; desc's body is one loop nest around one block (what te.create_prim_func makes of one
te.compute). An init of a reduction is dropped: the tensorized block keeps its own.

Args:
    name (str): the name tensorize takes.
    desc (PrimFunc): what the intrinsic computes.
    impl (PrimFunc): how it computes it.
    override (bool): replace an intrinsic already registered under the name.
    required_features (list of str, optional): the target features impl needs, as targets
        name them (e.g. ["avx512f", "avx512vnni"]); tensorize and kiln.build refuse the
        intrinsic for a target without them.

Raises:
    KilnValueError: the functions do not have the form above (the message says which rule
        fails), or the name is taken and override is False.
    KilnTypeError: an argument has the wrong type.)doc")
      .def_static(
          "get",
          [](py::handle name, py::handle allow_missing) -> py::object {
            const char* api = "TensorIntrin.get";
            std::string text = to_str(name, api, "name");
            if (to_bool(allow_missing, api, "allow_missing")) {
              std::vector<std::string> names = tensor_intrin_names();
              if (std::find(names.begin(), names.end(), text) == names.end()) return py::none();
            }
            return py::cast(get_tensor_intrin(text));
          },
          py::arg("name"), py::arg("allow_missing") = false,
          R"doc(The intrinsic registered under ``name``.

Args:
    name (str): the intrinsic's name.
    allow_missing (bool): return None instead of raising when there is none.

Raises:
    KilnValueError: no intrinsic has that name (the message lists the registered names).)doc")
      .def_static("names", &tensor_intrin_names, "The names of the registered intrinsics, sorted.");
}

// The schedule itself, its getters and its handles' values.
void bind_schedule_core(py::class_<Schedule>& cls) {
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

void bind_loop_primitives(py::class_<Schedule>& cls) {
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
    sch.bind(u, "blockIdx.x"))doc")
      .def(
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

Lowering passes read some keys, e.g. "pragma_auto_unroll_max_step" on a loop.

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

void bind_buffer_primitives(py::class_<Schedule>& cls) {
  cls.def(
         "cache_read",
         [](Schedule& s, py::handle block, py::handle read_buffer_index, py::handle storage_scope,
            py::handle consumer_blocks) {
           const char* api = "Schedule.cache_read";
           return apply(s, api, [&](Handles& h) {
             RV b = h.block(block, "block");
             std::vector<RV> consumers;
             if (!consumer_blocks.is_none())
               consumers = h.blocks(consumer_blocks, "consumer_blocks");
             return to_python(cache_read(s, b, to_int(read_buffer_index, api, "read_buffer_index"),
                                         to_str(storage_scope, api, "storage_scope"), consumers));
           });
         },
         py::arg("block"), py::arg("read_buffer_index"), py::arg("storage_scope"),
         py::arg("consumer_blocks") = py::none(),
         R"doc(Adds a block that copies a buffer the block reads into a new buffer in another
storage scope, and makes the readers read the copy.

The copy block is named "<buffer>_<scope>"; it copies the region the readers read, right before
the first of them. compute_at then moves it under a tile (packing a GEMM's operand).

Args:
    block (BlockRV or str): a block that reads the buffer, or its name.
    read_buffer_index (int): the position of the buffer in the block's reads.
    storage_scope (str): "global", "shared", "shared.dyn" (dynamic shared memory) or "local".
    consumer_blocks (list of BlockRV or str, optional): only these readers read the copy (and
        decide its region and place); the others keep reading the original. Default: all.

Returns:
    BlockRV: the copy block.

Raises:
    BufferIndexOutOfRangeError: the block reads fewer buffers.
    InvalidStorageScopeError: an unknown scope.
    ReadWriteBufferError: the block also writes the buffer.
    NotSingleWriteBlockError: more than one block writes the buffer.
    CacheLocationError: no place between the buffer's producer and its first reader.
    NotAConsumerError: a block of consumer_blocks does not read the buffer.
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    A_local = sch.cache_read("C", 0, "local")
    sch.compute_at(A_local, ko))doc")
      .def(
          "cache_write",
          [](Schedule& s, py::handle block, py::handle write_buffer_index,
             py::handle storage_scope) {
            const char* api = "Schedule.cache_write";
            return apply(s, api, [&](Handles& h) {
              RV b = h.block(block, "block");
              return to_python(cache_write(s, b,
                                           to_int(write_buffer_index, api, "write_buffer_index"),
                                           to_str(storage_scope, api, "storage_scope")));
            });
          },
          py::arg("block"), py::arg("write_buffer_index"), py::arg("storage_scope"),
          R"doc(Makes the block write a new buffer in another storage scope, and adds a block that
copies it into the original buffer.

Every access of the block (its stores, and the loads of a reduction) names the new buffer. The
copy block, "<buffer>_<scope>", goes before the first reader of the buffer (after the block when
nothing reads it); reverse_compute_at then moves it under a tile (a GEMM's register
accumulator).

Args:
    block (BlockRV or str): the writer, or its name.
    write_buffer_index (int): the position of the buffer in the block's writes.
    storage_scope (str): "global", "shared", "shared.dyn" (dynamic shared memory) or "local".

Returns:
    BlockRV: the copy block.

Raises:
    BufferIndexOutOfRangeError: the block writes fewer buffers.
    InvalidStorageScopeError: an unknown scope.
    NotSingleWriteBlockError: another block also writes the buffer.
    CacheLocationError: no place between the block and the buffer's first reader.
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    C_local = sch.cache_write("C", 0, "local")
    sch.reverse_compute_at(C_local, jo))doc")
      .def(
          "set_scope",
          [](Schedule& s, py::handle block, py::handle buffer_index, py::handle storage_scope) {
            const char* api = "Schedule.set_scope";
            apply(s, api, [&](Handles& h) {
              RV b = h.block(block, "block");
              set_scope(s, b, to_int(buffer_index, api, "buffer_index"),
                        to_str(storage_scope, api, "storage_scope"));
            });
          },
          py::arg("block"), py::arg("buffer_index"), py::arg("storage_scope"),
          R"doc(Moves a buffer the block writes to another storage scope (its declaration only).

Args:
    block (BlockRV or str): the writer, or its name.
    buffer_index (int): the position of the buffer in the block's writes.
    storage_scope (str): "global", "shared", "shared.dyn" (dynamic shared memory) or "local".

Raises:
    BufferIndexOutOfRangeError: the block writes fewer buffers.
    InvalidStorageScopeError: an unknown scope.
    FunctionParamBufferError: the buffer is a parameter of the function.
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    sch.set_scope("B", 0, "local"))doc")
      .def(
          "storage_align",
          [](Schedule& s, py::handle block, py::handle buffer_index, py::handle axis,
             py::handle factor, py::handle offset) {
            const char* api = "Schedule.storage_align";
            apply(s, api, [&](Handles& h) {
              RV b = h.block(block, "block");
              storage_align(s, b, to_int(buffer_index, api, "buffer_index"),
                            to_int(axis, api, "axis"), to_int(factor, api, "factor"),
                            to_int(offset, api, "offset"));
            });
          },
          py::arg("block"), py::arg("buffer_index"), py::arg("axis"), py::arg("factor"),
          py::arg("offset"),
          R"doc(Pads the stride of dimension ``axis`` of a buffer the block writes so that
stride % factor == offset (to avoid bank conflicts or cache-set aliasing).

The block records the alignment (its "kiln.storage_align" annotation); lowering applies it to
the buffer's final shape, so a tile compacted out of the buffer is padded by its own row length.
Aligning the same axis again replaces the alignment; several axes combine.

Args:
    block (BlockRV or str): the writer, or its name.
    buffer_index (int): the position of the buffer in the block's writes.
    axis (int): the dimension; negative counts from the last.
    factor (int): the modulus, > 0.
    offset (int): the remainder, 0 <= offset < factor.

Raises:
    BufferIndexOutOfRangeError: the block writes fewer buffers.
    FunctionParamBufferError: the buffer is a parameter of the function.
    InvalidStorageAlignError: axis, factor or offset is out of range.
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    sch.storage_align("B", 0, axis=0, factor=8, offset=1))doc")
      .def(
          "transform_layout",
          [](Schedule& s, py::handle block, py::handle buffer, py::handle index_map) {
            apply(s, "Schedule.transform_layout", [&](Handles& h) {
              RV b = h.block(block, "block");
              transform_layout(s, b, to_buffer_spec(buffer), to_index_map(index_map));
            });
          },
          py::arg("block"), py::arg("buffer"), py::arg("index_map"),
          R"doc(Rewrites a buffer to the layout of ``index_map``: its shape becomes the range of the
map, and every access in the function uses the mapped indices. A parameter changes the
function's signature (callers pass the array in the new layout).

Args:
    block (BlockRV or str): a block that accesses the buffer, or its name.
    buffer (tuple or str): ("read", i) or ("write", i) for the i-th read or write of the block,
        or the buffer's name.
    index_map (IndexMap, callable or str): the map, e.g. ``lambda k, j: [j // 16, k, j % 16]``.

Raises:
    BufferIndexOutOfRangeError, BufferNotFoundError: the block has no such buffer.
    InvalidIndexMapError: the map does not take one index per dimension.
    NonBijectiveIndexMapError: the map is not a bijection onto its range (padding is not
        supported).
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    sch.transform_layout("C", ("read", 1), lambda k, j: [j // 16, k, j % 16]))doc");
}

void bind_compute_location(py::class_<Schedule>& cls) {
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

void bind_reduction_primitives(py::class_<Schedule>& cls) {
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
    LoopHeightError: a loop above ``loop`` binds a reduction iterator.
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    i, j, k = sch.get_loops("C")
    init = sch.decompose_reduction("C", k))doc")
      .def(
          "blockize",
          [](Schedule& s, py::handle loop) {
            return apply(s, "Schedule.blockize",
                         [&](Handles& h) { return to_python(blockize(s, h.loop(loop, "loop"))); });
          },
          py::arg("loop"),
          R"doc(Wraps the loops under ``loop`` and their block into a new outer block "<name>_o".

Each binding is divided into an outer part over the loops above ``loop`` and an inner part over
``loop`` and the loops below it.

Args:
    loop (LoopRV): the outermost loop of the subtree.

Returns:
    BlockRV: the new outer block.

Raises:
    NotSingleChildBlockError: not exactly one block under the loop.
    NotAffineBindingError, SubspaceNotDivisibleError: the bindings do not divide at the loop.
    StaleHandleError, KilnTypeError: as split.

Example:
    i, j = sch.get_loops("B")
    jo, ji = sch.split(j, factors=[None, 16])
    outer = sch.blockize(ji))doc")
      .def(
          "tensorize",
          [](Schedule& s, py::handle block_or_loop, py::handle tensor_intrin, py::handle target) {
            const char* api = "Schedule.tensorize";
            std::optional<IntrinTarget> known;
            if (!target.is_none()) {
              codegen::Target parsed = codegen::parse_target(to_str(target, api, "target"));
              known = IntrinTarget{parsed.str(), parsed.isa_features()};
            }
            apply(s, api, [&](Handles& h) {
              schedule::tensorize(s, h.block_or_loop(block_or_loop, "block_or_loop"),
                                  to_str(tensor_intrin, api, "tensor_intrin"),
                                  known ? &*known : nullptr);
            });
          },
          py::arg("block_or_loop"), py::arg("tensor_intrin"), py::arg("target") = py::none(),
          R"doc(Replaces a block's body by the implementation of a tensor intrinsic.

The body must compute what the intrinsic's description computes (same loops, iterators and
expressions, over regions of the block's buffers). Given a loop, blockizes it first.

The block is annotated with the intrinsic's name; kiln.build refuses it for a target that lacks
the features the intrinsic needs (TensorIntrin.required_features).

Args:
    block_or_loop (BlockRV, LoopRV or str): the block (or its name), or the loop to blockize.
    tensor_intrin (str): a name registered with TensorIntrin.register.
    target (str, optional): the target the schedule is for; when given, an intrinsic that
        needs features the target lacks is refused now rather than at build time.

Raises:
    TensorizeMismatchError: the body differs from the description (the message shows both).
    TensorizeLayoutError: a region that the implementation reads as one vector is not
        contiguous.
    TensorizeTargetError: the target lacks features the intrinsic needs (the message names
        the intrinsic, the target and the missing features).
    KilnValueError: no intrinsic of that name.
    blockize's errors when given a loop; BlockNotFoundError, StaleHandleError, KilnTypeError.

Example:
    i, j, k = sch.get_loops("C")
    jo, ji = sch.split(j, factors=[None, 16])
    ko, ki = sch.split(k, factors=[None, 4])
    sch.reorder(jo, ko, ji, ki)
    sch.tensorize(ji, "x86.avx512.vnni.dot_16x4_u8s8s32"))doc");
}

void bind_sampling(py::class_<Schedule>& cls) {
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
  bind_loop_primitives(cls);
  bind_buffer_primitives(cls);
  bind_compute_location(cls);
  bind_reduction_primitives(cls);
  bind_sampling(cls);
  bind_tensor_intrin(m);
}

}  // namespace kiln::python
