// Python bindings of the lowering pipeline and its passes (kiln._kiln.tir.lower and the
// submodule kiln._kiln.tir.transform), re-exported as kiln.tir.lower and kiln.tir.transform.
#include <optional>
#include <string>

#include "bindings.h"
#include "convert.h"
#include "kiln/support/error.h"
#include "kiln/tir/compact_buffer_allocation.h"
#include "kiln/tir/flatten_buffers.h"
#include "kiln/tir/loop_partition.h"
#include "kiln/tir/lower_init_block.h"
#include "kiln/tir/lower_intrinsics.h"
#include "kiln/tir/lower_opaque_block.h"
#include "kiln/tir/make_packed_api.h"
#include "kiln/tir/pipeline.h"
#include "kiln/tir/plan_buffer_allocation.h"
#include "kiln/tir/simplify.h"
#include "kiln/tir/storage_rewrite.h"
#include "kiln/tir/unroll_loops.h"
#include "kiln/tir/vectorize_loops.h"
#include "kiln/tir/verify_ir.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::ir;

namespace {

tir::LowerOptions lower_options(const std::optional<std::string>& dump_ir,
                                const std::optional<bool>& verify) {
  tir::LowerOptions options;
  if (dump_ir.has_value()) options.dump_dir = *dump_ir;
  if (verify.has_value()) options.verify = *verify;
  return options;
}

}  // namespace

void bind_tir_passes(py::module_& tir) {
  tir.def(
      "lower",
      [](const Ref<PrimFunc>& func, std::optional<std::string> dump_ir,
         std::optional<bool> verify) { return tir::lower(func, lower_options(dump_ir, verify)); },
      py::arg("func"), py::arg("dump_ir") = py::none(), py::arg("verify") = py::none(),
      "Lowers a scheduled PrimFunc to the flat loop program (see kiln.tir.lower).");
  tir.def(
      "lower",
      [](const Ref<IRModule>& mod, std::optional<std::string> dump_ir, std::optional<bool> verify) {
        return tir::lower(mod, lower_options(dump_ir, verify));
      },
      py::arg("mod"), py::arg("dump_ir") = py::none(), py::arg("verify") = py::none(),
      "Lowers every function of an IRModule.");
  auto transform = tir.def_submodule("transform", "The lowering passes, one function each");
  transform.def("lower_init_block", &tir::lower_init_block, py::arg("func"));
  transform.def("plan_buffer_allocation", &tir::plan_buffer_allocation, py::arg("func"));
  transform.def("compact_buffer_allocation", &tir::compact_buffer_allocation, py::arg("func"));
  transform.def("lower_opaque_block", &tir::lower_opaque_block, py::arg("func"));
  transform.def("flatten_buffers", &tir::flatten_buffers, py::arg("func"));
  transform.def("simplify", &tir::simplify, py::arg("func"));
  transform.def("storage_rewrite", &tir::storage_rewrite, py::arg("func"));
  transform.def("loop_partition", &tir::loop_partition, py::arg("func"));
  transform.def("vectorize_loops", &tir::vectorize_loops, py::arg("func"));
  transform.def("unroll_loops", &tir::unroll_loops, py::arg("func"));
  transform.def("lower_intrinsics", &tir::lower_intrinsics, py::arg("func"));
  transform.def("make_packed_api", &tir::make_packed_api, py::arg("func"),
                py::arg("name") = "main");
  transform.def("verify_ir", &tir::verify_ir, py::arg("func"), py::arg("after_pass") = "a pass",
                "Raises InternalError naming after_pass when the function is malformed.");
}

}  // namespace kiln::python
