// The handle arguments of tir.Schedule's primitives: handles as Python objects, and the
// conversion of BlockRVs, LoopRVs and block names that every primitive's binding uses.
#include "kiln/schedule/getters.h"
#include "schedule_py.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::schedule;

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

std::string default_func_name(const Schedule& sch) {
  const auto& functions = sch.mod()->functions;
  if (functions.size() == 1) return functions.begin()->first;
  return "main";
}

RV Handles::block(py::handle obj, const char* param) {
  if (py::isinstance<py::str>(obj)) {
    if (!saved_) saved_ = sch_.copy();
    return get_block(sch_, obj.cast<std::string>(), default_func_name(sch_));
  }
  if (!py::isinstance<BlockRV>(obj)) {
    raise_type_error(api_, param, "a BlockRV or a block name (str)", obj);
  }
  return obj.cast<RV>();
}

RV Handles::loop(py::handle obj, const char* param) {
  if (!py::isinstance<LoopRV>(obj)) raise_type_error(api_, param, "a LoopRV", obj);
  return obj.cast<RV>();
}

RV Handles::block_or_loop(py::handle obj, const char* param) {
  if (py::isinstance<LoopRV>(obj)) return obj.cast<RV>();
  if (py::isinstance<BlockRV>(obj) || py::isinstance<py::str>(obj)) return block(obj, param);
  raise_type_error(api_, param, "a BlockRV, a LoopRV or a block name (str)", obj);
}

std::vector<RV> Handles::blocks(py::handle obj, const char* param) {
  if (!py::isinstance<py::list>(obj) && !py::isinstance<py::tuple>(obj)) {
    raise_type_error(api_, param, "a list of BlockRVs or block names", obj);
  }
  std::vector<RV> rvs;
  for (py::handle item : obj) rvs.push_back(block(item, entry_name(param, rvs.size()).c_str()));
  return rvs;
}

std::vector<RV> Handles::loops(const py::args& args, const char* param) {
  std::vector<RV> rvs;
  for (py::handle arg : args) {
    if (py::isinstance<py::list>(arg) || py::isinstance<py::tuple>(arg)) {
      for (py::handle item : arg) rvs.push_back(loop(item, entry_name(param, rvs.size()).c_str()));
    } else {
      rvs.push_back(loop(arg, entry_name(param, rvs.size()).c_str()));
    }
  }
  return rvs;
}

void Handles::restore() {
  if (saved_) sch_ = *saved_;
}

}  // namespace kiln::python
