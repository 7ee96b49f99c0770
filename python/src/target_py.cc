// Python binding of codegen::Target (kiln._kiln.target, wrapped by kiln.target.Target): a parsed
// target string with its ISA features and what schedules derive their tiles from.
#include <pybind11/stl.h>

#include <string>

#include "bindings.h"
#include "convert.h"
#include "kiln/codegen/codegen_gpu.h"
#include "kiln/codegen/target.h"

namespace py = pybind11;

namespace kiln::python {

using codegen::Target;

void bind_target(py::module_& parent) {
  py::module_ m = parent.def_submodule("target", "Targets and their properties (kiln.target)");
  py::class_<Target>(m, "Target", "A parsed target (wrapped by kiln.target.Target).")
      .def(py::init(&codegen::parse_target), py::arg("text"))
      .def("__str__", &Target::str)
      .def_readonly("triple", &Target::triple)
      .def_readonly("cpu", &Target::cpu)
      .def_readonly("attrs", &Target::attrs)
      .def_readonly("opt_level", &Target::opt_level)
      .def_readonly("fp_contract", &Target::fp_contract)
      .def_readonly("is_host", &Target::is_host)
      .def_readonly("kind", &Target::kind)
      .def_readonly("arch", &Target::arch)
      .def_readonly("device", &Target::device)
      .def_readonly("fast_math", &Target::fast_math)
      .def_property_readonly("max_threads_per_block",
                             [](const Target& t) { return t.gpu.max_threads_per_block; })
      .def_property_readonly("max_shared_memory_per_block",
                             [](const Target& t) { return t.gpu.max_shared_memory_per_block; })
      .def_property_readonly("thread_warp_size",
                             [](const Target& t) { return t.gpu.thread_warp_size; })
      .def_property_readonly("features", &Target::isa_features)
      .def_property_readonly(
          "intrinsic_features", &Target::intrinsic_features,
          "The features a tensor intrinsic may require of this target's code: the ISA features "
          "for llvm, the architecture levels sm_50 ... up to -arch for cuda, none for opencl.")
      .def("has_feature", &Target::has_feature, py::arg("name"))
      .def_readonly("vector_register_bits", &Target::vector_register_bits)
      .def_readonly("preferred_vector_bits", &Target::preferred_vector_bits)
      .def_readonly("num_vector_registers", &Target::num_vector_registers)
      .def_readonly("has_fma", &Target::has_fma)
      .def_readonly("l1d_cache_bytes", &Target::l1d_cache_bytes)
      .def_readonly("l2_cache_bytes", &Target::l2_cache_bytes)
      .def_readonly("l3_cache_bytes", &Target::l3_cache_bytes)
      .def(
          "vector_lanes",
          [](const Target& target, py::handle dtype) {
            return target.vector_lanes(to_dtype(dtype, "Target.vector_lanes"));
          },
          py::arg("dtype"))
      .def(
          "vector_lanes_dividing",
          [](const Target& target, py::handle dtype, int64_t extent) {
            return target.vector_lanes_dividing(to_dtype(dtype, "Target.vector_lanes_dividing"),
                                                extent);
          },
          py::arg("dtype"), py::arg("extent"));
  m.def("nvrtc_available", [] {
    std::string why;
    bool ok = codegen::nvrtc_available(&why);
    return py::make_tuple(ok, why);
  });
}

}  // namespace kiln::python
