// Python bindings of tir.Schedule (module kiln._kiln.schedule): the schedule, its handles
// (BlockRV, LoopRV, ExprRV), traces, and one line per primitive. ScheduleErrors become the
// kiln.tir.ScheduleError subclass named by their error class.
#include <pybind11/stl.h>

#include <algorithm>

#include "bindings.h"
#include "convert.h"
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

RV to_rv(py::handle obj, const char* primitive, const char* what) {
  if (py::isinstance<RV>(obj)) return obj.cast<RV>();
  user_error(ErrorKind::kType)
      << primitive << ": " << what
      << " must be a schedule handle (BlockRV, LoopRV or ExprRV), found "
      << py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
}

SplitFactor to_factor(py::handle obj) {
  if (obj.is_none()) return std::monostate{};
  if (py::isinstance<RV>(obj)) return obj.cast<RV>();
  if (py::isinstance<py::int_>(obj) || py::hasattr(obj, "__index__")) return obj.cast<int64_t>();
  user_error(ErrorKind::kType) << "split: a factor must be an int, an ExprRV or None, found "
                               << py::str(obj).cast<std::string>();
}

std::vector<RV> to_rvs(const py::args& args, const char* primitive) {
  std::vector<RV> out;
  for (py::handle a : args) {
    if (py::isinstance<py::list>(a) || py::isinstance<py::tuple>(a)) {
      for (py::handle b : a) out.push_back(to_rv(b, primitive, "a loop"));
    } else {
      out.push_back(to_rv(a, primitive, "a loop"));
    }
  }
  return out;
}

Json to_json(py::handle obj) {
  return Json::parse(py::module_::import("json").attr("dumps")(obj).cast<std::string>());
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
  user_error(ErrorKind::kType)
      << "tir.Schedule: expected a PrimFunc or an IRModule, found "
      << py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
}

// transform_layout's buffer: ("read"|"write", index), given as a tuple or list, or a name.
BufferSpec to_buffer_spec(py::handle obj) {
  if (py::isinstance<py::str>(obj)) return obj.cast<std::string>();
  if ((py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj)) && py::len(obj) == 2) {
    py::sequence pair = py::reinterpret_borrow<py::sequence>(obj);
    if (py::isinstance<py::str>(pair[0]) && py::isinstance<py::int_>(pair[1])) {
      std::string kind = pair[0].cast<std::string>();
      user_check(kind == "read" || kind == "write")
          << "transform_layout: buffer must be (\"read\" or \"write\", index) or a name, "
             "found (\""
          << kind << "\", …)";
      return std::make_pair(kind == "read" ? BufferIndexType::kRead : BufferIndexType::kWrite,
                            pair[1].cast<int64_t>());
    }
  }
  user_error(ErrorKind::kType)
      << "transform_layout: buffer must be (\"read\" or \"write\", index) or a buffer name, "
         "found "
      << py::str(obj).cast<std::string>();
}

// An IndexMap from a Python callable: its parameters become the initial indices.
IndexMap index_map_from_func(const py::function& func) {
  py::object signature = py::module_::import("inspect").attr("signature")(func);
  py::object positional =
      py::module_::import("inspect").attr("Parameter").attr("POSITIONAL_OR_KEYWORD");
  std::vector<Ref<ir::Var>> vars;
  py::tuple args(py::len(signature.attr("parameters")));
  for (py::handle param : signature.attr("parameters").attr("values")()) {
    py::object kind = param.attr("kind");
    user_check(kind.equal(positional))
        << "IndexMap.from_func: parameter " << py::str(param).cast<std::string>()
        << " is not a plain positional parameter; write lambda i, j: […]";
    vars.push_back(ir::make_var(param.attr("name").cast<std::string>()));
    args[vars.size() - 1] = py::cast(vars.back());
  }
  py::object result = func(*args);
  std::vector<ir::Expr> finals;
  if (py::isinstance<py::list>(result) || py::isinstance<py::tuple>(result)) {
    for (py::handle item : result) {
      finals.push_back(to_expr(item, "IndexMap.from_func", "a final index"));
    }
  } else {
    finals.push_back(to_expr(result, "IndexMap.from_func", "the final index"));
  }
  return IndexMap(std::move(vars), std::move(finals));
}

// transform_layout's index map: an IndexMap, a callable, or the text form traces print.
IndexMap to_index_map(py::handle obj) {
  if (py::isinstance<IndexMap>(obj)) return obj.cast<IndexMap>();
  if (py::isinstance<py::str>(obj)) return IndexMap::parse(obj.cast<std::string>());
  if (py::isinstance<py::function>(obj)) {
    return index_map_from_func(py::reinterpret_borrow<py::function>(obj));
  }
  user_error(ErrorKind::kType)
      << "transform_layout: index_map must be an IndexMap, a function such as "
         "lambda i, j: [i // 16, j, i % 16], or its text, found "
      << py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
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

  py::class_<RV>(m, "RV")
      .def_property_readonly("name", &RV::name)
      .def("__repr__", [](const RV& rv) { return rv.name(); })
      .def("__eq__",
           [](const RV& a, py::handle b) { return py::isinstance<RV>(b) && a == b.cast<RV>(); })
      .def("__hash__", [](const RV& rv) { return std::hash<int64_t>()(rv.id); });
  py::class_<BlockRV, RV>(m, "BlockRV");
  py::class_<LoopRV, RV>(m, "LoopRV");
  py::class_<ExprRV, RV>(m, "ExprRV");

  py::class_<Trace>(m, "Trace")
      .def("as_json", [](const Trace& t) { return from_json(t.as_json()); })
      .def("as_python", &Trace::as_python)
      .def("__str__", &Trace::as_python)
      .def("__len__", [](const Trace& t) { return t.instructions().size(); })
      .def(
          "with_decision",
          [](const Trace& t, size_t index, py::handle decision) {
            return t.with_decision(index, to_json(decision));
          },
          py::arg("index"), py::arg("decision"))
      .def(
          "apply_to_schedule", [](const Trace& t, Schedule& sch) { t.apply_to(&sch); },
          py::arg("sch"))
      .def_static(
          "apply_json_to_schedule",
          [](py::handle json, Schedule& sch) { Trace::apply_json(to_json(json), &sch); },
          py::arg("json_obj"), py::arg("sch"));

  py::class_<IndexMap>(m, "IndexMap")
      .def(py::init([](std::vector<Ref<ir::Var>> initial, py::handle finals) {
             std::vector<ir::Expr> exprs;
             for (py::handle item : finals) {
               exprs.push_back(to_expr(item, "IndexMap", "a final index"));
             }
             return IndexMap(std::move(initial), std::move(exprs));
           }),
           py::arg("initial_indices"), py::arg("final_indices"))
      .def_static("from_func", &index_map_from_func, py::arg("func"))
      .def_static("parse", &IndexMap::parse, py::arg("text"))
      .def_property_readonly("initial_indices", &IndexMap::initial_indices)
      .def_property_readonly("final_indices", &IndexMap::final_indices)
      .def(
          "map_indices",
          [](const IndexMap& map, py::handle indices) {
            std::vector<ir::Expr> exprs;
            for (py::handle item : indices) {
              exprs.push_back(to_expr(item, "IndexMap.map_indices", "an index"));
            }
            return map.map_indices(exprs);
          },
          py::arg("indices"))
      .def("__str__", &IndexMap::to_text)
      .def("__repr__", [](const IndexMap& map) { return "IndexMap(" + map.to_text() + ")"; });

  py::class_<Schedule>(m, "Schedule")
      .def(py::init([](py::handle mod, std::optional<uint64_t> seed) {
             return Schedule(to_module(mod), seed);
           }),
           py::arg("mod"), py::arg("seed") = py::none())
      .def_property_readonly("mod", &Schedule::mod)
      .def_property_readonly("trace", &Schedule::trace)
      .def("copy", &Schedule::copy)
      .def("seed", &Schedule::seed, py::arg("seed"))
      .def(
          "get",
          [](Schedule& sch, py::handle handle) -> py::object {
            RV rv = to_rv(handle, "Schedule.get", "the argument");
            if (rv.kind == RVKind::kBlock)
              return py::cast(Ref<ir::Block>(sch.block(rv, "get").block));
            if (rv.kind == RVKind::kLoop) return py::cast(Ref<ir::For>(sch.loop(rv, "get").loop));
            ir::Expr value = sch.expr(rv, "get");
            if (const int64_t* c = ir::as_const_int(value)) return py::int_(*c);
            return py::cast(value);
          },
          py::arg("rv"))
      // Getters
      .def(
          "get_block",
          [](Schedule& s, const std::string& name, const std::string& func_name) {
            return to_python(get_block(s, name, func_name));
          },
          py::arg("name"), py::arg("func_name") = "main")
      .def(
          "get_loops", [](Schedule& s, const BlockRV& b) { return to_python(get_loops(s, b)); },
          py::arg("block"))
      .def(
          "get_child_blocks",
          [](Schedule& s, py::handle b) {
            return to_python(get_child_blocks(s, to_rv(b, "get_child_blocks", "block_or_loop")));
          },
          py::arg("block_or_loop"))
      .def(
          "get_producers",
          [](Schedule& s, const BlockRV& b) { return to_python(get_producers(s, b)); },
          py::arg("block"))
      .def(
          "get_consumers",
          [](Schedule& s, const BlockRV& b) { return to_python(get_consumers(s, b)); },
          py::arg("block"))
      // Loop transformations
      .def(
          "split",
          [](Schedule& s, const LoopRV& loop, const py::list& factors, bool preserve_unit_iters) {
            std::vector<SplitFactor> fs;
            for (py::handle f : factors) fs.push_back(to_factor(f));
            return to_python(split(s, loop, fs, preserve_unit_iters));
          },
          py::arg("loop"), py::arg("factors"), py::arg("preserve_unit_iters") = true)
      .def(
          "fuse",
          [](Schedule& s, const py::args& loops, bool preserve_unit_iters) {
            return to_python(fuse(s, to_rvs(loops, "fuse"), preserve_unit_iters));
          },
          py::arg("preserve_unit_iters") = true)
      .def("reorder",
           [](Schedule& s, const py::args& loops) { reorder(s, to_rvs(loops, "reorder")); })
      // Loop kinds
      .def(
          "parallel", [](Schedule& s, const LoopRV& l) { schedule::parallel(s, l); },
          py::arg("loop"))
      .def(
          "vectorize", [](Schedule& s, const LoopRV& l) { schedule::vectorize(s, l); },
          py::arg("loop"))
      .def(
          "unroll", [](Schedule& s, const LoopRV& l) { schedule::unroll(s, l); }, py::arg("loop"))
      .def(
          "bind", [](Schedule& s, const LoopRV& l, const std::string& t) { bind_loop(s, l, t); },
          py::arg("loop"), py::arg("thread_axis"))
      // Annotations
      .def(
          "annotate",
          [](Schedule& s, py::handle rv, const std::string& key, py::handle value) {
            annotate(s, to_rv(rv, "annotate", "block_or_loop"), key,
                     to_attr_value(value, "annotate"));
          },
          py::arg("block_or_loop"), py::arg("ann_key"), py::arg("ann_val"))
      .def(
          "unannotate",
          [](Schedule& s, py::handle rv, const std::string& key) {
            unannotate(s, to_rv(rv, "unannotate", "block_or_loop"), key);
          },
          py::arg("block_or_loop"), py::arg("ann_key"))
      // Cache stages, buffer storage and layout
      .def(
          "cache_read",
          [](Schedule& s, const BlockRV& b, int64_t index, const std::string& scope,
             const std::optional<std::vector<BlockRV>>& consumers) {
            std::vector<RV> consumer_rvs;
            if (consumers) consumer_rvs.assign(consumers->begin(), consumers->end());
            return to_python(cache_read(s, b, index, scope, consumer_rvs));
          },
          py::arg("block"), py::arg("read_buffer_index"), py::arg("storage_scope"),
          py::arg("consumer_blocks") = py::none())
      .def(
          "cache_write",
          [](Schedule& s, const BlockRV& b, int64_t index, const std::string& scope) {
            return to_python(cache_write(s, b, index, scope));
          },
          py::arg("block"), py::arg("write_buffer_index"), py::arg("storage_scope"))
      .def(
          "set_scope",
          [](Schedule& s, const BlockRV& b, int64_t index, const std::string& scope) {
            set_scope(s, b, index, scope);
          },
          py::arg("block"), py::arg("buffer_index"), py::arg("storage_scope"))
      .def(
          "storage_align",
          [](Schedule& s, const BlockRV& b, int64_t index, int64_t axis, int64_t factor,
             int64_t offset) { storage_align(s, b, index, axis, factor, offset); },
          py::arg("block"), py::arg("buffer_index"), py::arg("axis"), py::arg("factor"),
          py::arg("offset"))
      .def(
          "transform_layout",
          [](Schedule& s, const BlockRV& b, py::handle buffer, py::handle index_map) {
            transform_layout(s, b, to_buffer_spec(buffer), to_index_map(index_map));
          },
          py::arg("block"), py::arg("buffer"), py::arg("index_map"))
      // Compute location
      .def(
          "compute_at",
          [](Schedule& s, const BlockRV& b, const LoopRV& l, bool preserve_unit_loops) {
            compute_at(s, b, l, preserve_unit_loops);
          },
          py::arg("block"), py::arg("loop"), py::arg("preserve_unit_loops") = false)
      .def(
          "reverse_compute_at",
          [](Schedule& s, const BlockRV& b, const LoopRV& l, bool preserve_unit_loops) {
            reverse_compute_at(s, b, l, preserve_unit_loops);
          },
          py::arg("block"), py::arg("loop"), py::arg("preserve_unit_loops") = false)
      .def(
          "compute_inline", [](Schedule& s, const BlockRV& b) { compute_inline(s, b); },
          py::arg("block"))
      .def(
          "reverse_compute_inline",
          [](Schedule& s, const BlockRV& b) { reverse_compute_inline(s, b); }, py::arg("block"))
      .def(
          "sample_compute_location",
          [](Schedule& s, const BlockRV& b, std::optional<int64_t> decision) {
            return to_python(sample_compute_location(s, b, decision));
          },
          py::arg("block"), py::arg("decision") = py::none())
      // Reduction, blockize and tensorize
      .def(
          "rfactor",
          [](Schedule& s, const LoopRV& l, int factor_axis) {
            return to_python(rfactor(s, l, factor_axis));
          },
          py::arg("loop"), py::arg("factor_axis"))
      .def(
          "decompose_reduction",
          [](Schedule& s, const BlockRV& b, const LoopRV& l) {
            return to_python(decompose_reduction(s, b, l));
          },
          py::arg("block"), py::arg("loop"))
      .def(
          "blockize", [](Schedule& s, const LoopRV& l) { return to_python(blockize(s, l)); },
          py::arg("loop"))
      .def(
          "tensorize",
          [](Schedule& s, py::handle rv, const std::string& intrin) {
            schedule::tensorize(s, to_rv(rv, "tensorize", "block_or_loop"), intrin);
          },
          py::arg("block_or_loop"), py::arg("tensor_intrin"))
      // Sampling
      .def(
          "sample_perfect_tile",
          [](Schedule& s, const LoopRV& loop, int n, int max_innermost_factor,
             std::optional<std::vector<int64_t>> decision) {
            return to_python(sample_perfect_tile(s, loop, n, max_innermost_factor, decision));
          },
          py::arg("loop"), py::arg("n"), py::arg("max_innermost_factor") = 16,
          py::arg("decision") = py::none())
      .def(
          "sample_categorical",
          [](Schedule& s, std::vector<int64_t> candidates, std::vector<double> probs,
             std::optional<int64_t> decision) {
            return to_python(sample_categorical(s, candidates, probs, decision));
          },
          py::arg("candidates"), py::arg("probs"), py::arg("decision") = py::none());

  // Tensor intrinsics for tensorize: TensorIntrin.register(name, desc, impl) and .get(name).
  py::class_<TensorIntrin>(m, "TensorIntrin")
      .def_readonly("name", &TensorIntrin::name)
      .def_readonly("desc", &TensorIntrin::desc)
      .def_readonly("impl", &TensorIntrin::impl)
      .def_static(
          "register",
          [](const std::string& name, const Ref<ir::PrimFunc>& desc, const Ref<ir::PrimFunc>& impl,
             bool override) { register_tensor_intrin(name, desc, impl, override); },
          py::arg("name"), py::arg("desc"), py::arg("impl"), py::arg("override") = false)
      .def_static(
          "get",
          [](const std::string& name, bool allow_missing) -> py::object {
            if (allow_missing) {
              std::vector<std::string> names = tensor_intrin_names();
              if (std::find(names.begin(), names.end(), name) == names.end()) return py::none();
            }
            return py::cast(get_tensor_intrin(name));
          },
          py::arg("name"), py::arg("allow_missing") = false)
      .def_static("names", &tensor_intrin_names);
}

}  // namespace kiln::python
