// Python binding of the tuner's design space (kiln._kiln.autotune.SpaceGenerator, wrapped by
// kiln.autotune.space): the sketches of a task, sampled, replayed and mutated candidates.
#include <pybind11/stl.h>

#include <random>

#include "bindings.h"
#include "convert.h"
#include "kiln/autotune/space.h"

namespace py = pybind11;

namespace kiln::python {

void bind_autotune_space(py::module_& m) {
  using autotune::Candidate;
  using autotune::SpaceGenerator;
  py::class_<Candidate>(m, "Candidate", "A point of the design space (see kiln.autotune.space).")
      .def_readonly("sketch", &Candidate::sketch, "The index of the sketch it samples.")
      .def_readonly("decisions", &Candidate::decisions,
                    "The sketch's trace with this candidate's decisions.")
      .def_readonly("trace", &Candidate::trace,
                    "The whole schedule: the decisions and the postprocessors' instructions.")
      .def_readonly("mod", &Candidate::mod, "The scheduled IRModule (function \"main\").")
      .def_readonly("hash", &Candidate::hash, "The structural hash of the scheduled function.");

  // The generator keeps the task it was made from alive with it.
  struct PySpace {
    autotune::TuneTask task;
    std::unique_ptr<SpaceGenerator> space;
  };
  py::class_<PySpace>(m, "SpaceGenerator", "The design space of one function on one target.")
      .def(py::init([](py::handle func, py::handle target, py::handle num_threads,
                       py::handle tensor_intrinsics, py::handle sketches, py::handle space_name) {
             const char* api = "kiln.autotune.SpaceGenerator";
             auto result = std::make_unique<PySpace>();
             result->task =
                 autotune::make_task(to_node<ir::PrimFunc>(func, api, "func", "a PrimFunc"),
                                     to_str(target, api, "target"), "", 1.0, api);
             autotune::SpaceConfig config;
             config.num_threads = static_cast<int>(to_int(num_threads, api, "num_threads"));
             if (!tensor_intrinsics.is_none()) {
               if (!py::isinstance<py::list>(tensor_intrinsics) &&
                   !py::isinstance<py::tuple>(tensor_intrinsics)) {
                 raise_type_error(api, "tensor_intrinsics", "a list of str", tensor_intrinsics);
               }
               config.tensor_intrinsics.clear();
               for (py::handle name : tensor_intrinsics) {
                 config.tensor_intrinsics.push_back(to_str(name, api, "tensor_intrinsics[i]"));
               }
             }
             if (!sketches.is_none()) {
               autotune::UserSpace user{to_str(space_name, api, "space_name"), {}};
               for (py::handle sketch : sketches) {
                 user.sketches.push_back(to_str(sketch, api, "sketches[i]"));
               }
               result->task.space = std::move(user);
             }
             result->space = std::make_unique<SpaceGenerator>(result->task, config);
             return result;
           }),
           py::arg("func"), py::arg("target") = "llvm", py::arg("num_threads") = 0,
           py::arg("tensor_intrinsics") = py::none(), py::arg("sketches") = py::none(),
           py::arg("space_name") = "space",
           "Builds the sketches of ``func`` for ``target`` (``num_threads`` 0: the runtime's). "
           "``tensor_intrinsics``: the intrinsics the rule tensorize tries (None: the shipped x86 "
           "ones); it uses those whose required features the target has. ``sketches``: the traces "
           "(JSON text) of a user design space's sketches, named ``space_name``, instead of the "
           "rules' (kiln.autotune.SpaceGenerator makes them from a schedule function).")
      .def_property_readonly(
          "sketches", [](const PySpace& s) { return s.space->sketches(); },
          "The sketches' traces (decisions drawn once; sample() draws them anew).")
      .def_property_readonly(
          "space_id", [](const PySpace& s) { return s.space->space_id(); },
          "Which design space this is in the records' search JSON: \"\" for kiln's rules, else "
          "the user space's name and a hash of its sketches.")
      .def(
          "sample",
          [](PySpace& s, py::handle sketch, py::handle seed) {
            const char* api = "kiln.autotune.SpaceGenerator.sample";
            return s.space->sample(static_cast<int>(to_int(sketch, api, "sketch")),
                                   static_cast<uint64_t>(to_int(seed, api, "seed")));
          },
          py::arg("sketch"), py::arg("seed"),
          "A random candidate of a sketch, or None when it is refused (see rejections). On a "
          "GPU target, tiles drawn outside their limits (threads per block, outputs per thread, "
          "shared memory) are drawn again, each refused draw counted.")
      .def(
          "replay",
          [](PySpace& s, py::handle sketch, const schedule::Trace& decisions) {
            const char* api = "kiln.autotune.SpaceGenerator.replay";
            return s.space->replay(static_cast<int>(to_int(sketch, api, "sketch")), decisions);
          },
          py::arg("sketch"), py::arg("decisions"),
          "The candidate of a sketch with the decisions of a trace, or None.")
      .def(
          "mutate",
          [](PySpace& s, const schedule::Trace& decisions, py::handle seed) {
            std::mt19937_64 rng(
                static_cast<uint64_t>(to_int(seed, "kiln.autotune.SpaceGenerator.mutate", "seed")));
            return s.space->mutate(decisions, rng);
          },
          py::arg("decisions"), py::arg("seed"),
          "A trace with one decision changed, or None when no mutator finds a change (on a GPU "
          "target, one whose tiles keep their limits).")
      .def(
          "neighbours", [](PySpace& s, const schedule::Trace& t) { return s.space->neighbours(t); },
          py::arg("decisions"), "The traces that move one prime factor of one tile size.")
      .def_property_readonly(
          "rejections", [](const PySpace& s) { return s.space->rejections(); },
          "Why candidates were refused: reason -> count.");
}

}  // namespace kiln::python
