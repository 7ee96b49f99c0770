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
      [](py::handle obj, py::handle target, py::handle name, py::handle dump_ir,
         py::handle object_cache) {
        const char* api = "kiln.build";
        FuncOrModule input = to_func_or_module(obj, api, "func");
        std::string target_text = to_str(target, api, "target");
        std::optional<std::string> func_name = to_optional_str(name, api, "name");
        driver::BuildOptions options;
        if (auto dir = to_optional_path(dump_ir, api, "dump_ir")) options.dump_dir = *dir;
        if (auto dir = to_optional_path(object_cache, api, "object_cache")) {
          options.object_cache_dir = *dir;
        }
        std::unique_ptr<driver::BuiltModule> built;
        if (input.func) {
          built = driver::build(input.func, target_text, func_name.value_or(""), options);
        } else {
          user_check(!func_name.has_value())
              << "kiln.build: name applies to a PrimFunc; the functions of an IRModule are "
                 "built under their names in the module";
          built = driver::build(input.mod, target_text, options);
        }
        auto module = std::make_shared<RuntimeModule>();
        module->built = std::move(built);
        return module;
      },
      py::arg("func"), py::arg("target"), py::arg("name") = py::none(),
      py::arg("dump_ir") = py::none(), py::arg("object_cache") = py::none(),
      "Builds a PrimFunc, an IRModule or a tir.Schedule (see kiln.build).");
}

}  // namespace kiln::python
