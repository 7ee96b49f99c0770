// Python bindings of blockize and tensorize (kiln/schedule/blockize_tensorize.h) and of
// tir.TensorIntrin, the registry of tensor intrinsics they use (kiln/schedule/tensor_intrin.h).
#include <algorithm>

#include "kiln/codegen/target.h"
#include "kiln/schedule/blockize_tensorize.h"
#include "kiln/schedule/tensor_intrin.h"
#include "schedule_py.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::schedule;

void bind_schedule_tensorize(ScheduleClass& cls) {
  cls.def(
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
              known = IntrinTarget{parsed.str(), parsed.intrinsic_features()};
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
        the intrinsic, the target, the missing features and those the target has).
    KilnValueError: no intrinsic of that name.
    blockize's errors when given a loop; BlockNotFoundError, StaleHandleError, KilnTypeError.

Example:
    i, j, k = sch.get_loops("C")
    jo, ji = sch.split(j, factors=[None, 16])
    ko, ki = sch.split(k, factors=[None, 4])
    sch.reorder(jo, ko, ji, ki)
    sch.tensorize(ji, "x86.avx512.vnni.dot_16x4_u8s8s32"))doc");
}

void bind_tensor_intrin(py::module_& m) {
  py::class_<TensorIntrin>(m, "TensorIntrin", R"doc(A tensor intrinsic for Schedule.tensorize.

A pair of PrimFuncs under a name: ``desc`` says what a hardware instruction computes, as ordinary
TensorIR over buffers of the tile's shape, and ``impl`` computes the same with the instruction
(or any other TensorIR). tensorize checks that a block computes what ``desc`` computes and
replaces its body by ``impl``. kiln ships x86.avx512.vnni.dot_16x4_u8s8s32, its 256-bit AVX-VNNI
form x86.avxvnni.dot_8x4_u8s8s32, x86.avx512.bf16.dot_16x2_bf16bf16f32 and the CUDA tensor-core
family cuda.mma_* (kiln.tir.tensor_intrin.cuda); TensorIntrin.names() lists what is registered.)doc")
      .def_readonly("name", &TensorIntrin::name, "The name tensorize looks it up by.")
      .def_readonly("desc", &TensorIntrin::desc,
                    "The PrimFunc that describes what the intrinsic computes.")
      .def_readonly("impl", &TensorIntrin::impl,
                    "The PrimFunc whose body replaces a tensorized block's body.")
      .def_readonly("required_features", &TensorIntrin::required_features,
                    "The target features the implementation needs, sorted: LLVM's names for CPU "
                    "instructions, a CUDA architecture level such as \"sm_80\" for GPU ones.")
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
        name them (e.g. ["avx512f", "avx512vnni"], or ["sm_80"], which "cuda -arch=sm_80" and
        later architectures have); tensorize and kiln.build refuse the intrinsic for a target
        without them.

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

}  // namespace kiln::python
