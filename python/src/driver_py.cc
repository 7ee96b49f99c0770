// Python binding of the build driver (kiln._kiln.driver.build, wrapped by kiln.build): lowers and
// compiles a PrimFunc or an IRModule and returns the runtime module that serves it.
#include <optional>
#include <string>

#include "bindings.h"
#include "convert.h"
#include "kiln/support/error.h"
#include "runtime_py.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::ir;

void bind_driver(py::module_& m) {
  m.def(
      "build",
      [](py::handle obj, const std::string& target, const std::optional<std::string>& name,
         const std::optional<std::string>& dump_ir) {
        driver::BuildOptions options;
        if (dump_ir.has_value()) options.dump_dir = *dump_ir;
        std::unique_ptr<driver::BuiltModule> built;
        if (py::isinstance<PrimFunc>(obj)) {
          built = driver::build(obj.cast<Ref<PrimFunc>>(), target, name.value_or(""), options);
        } else if (py::isinstance<IRModule>(obj)) {
          user_check(!name.has_value())
              << "kiln.build: name applies to a PrimFunc; the functions of an IRModule are "
                 "built under their names in the module";
          built = driver::build(obj.cast<Ref<IRModule>>(), target, options);
        } else {
          user_error(ErrorKind::kType)
              << "kiln.build: expected a PrimFunc, an IRModule or a tir.Schedule, found an "
                 "object of type "
              << py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
        }
        auto module = std::make_shared<RuntimeModule>();
        module->built = std::move(built);
        return module;
      },
      py::arg("func"), py::arg("target"), py::arg("name") = py::none(),
      py::arg("dump_ir") = py::none(), "Builds a PrimFunc or an IRModule (see kiln.build).");
}

}  // namespace kiln::python
