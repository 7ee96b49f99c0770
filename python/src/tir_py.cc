// Python bindings of the lowering pipeline and its passes (kiln._kiln.tir.lower and the
// submodule kiln._kiln.tir.transform), re-exported as kiln.tir.lower and kiln.tir.transform.
#include <optional>
#include <string>

#include "bindings.h"
#include "convert.h"
#include "kiln/codegen/target.h"
#include "kiln/driver/build.h"
#include "kiln/support/error.h"
#include "kiln/tir/compact_buffer_allocation.h"
#include "kiln/tir/flatten_buffers.h"
#include "kiln/tir/inject_virtual_threads.h"
#include "kiln/tir/loop_partition.h"
#include "kiln/tir/lower_init_block.h"
#include "kiln/tir/lower_intrinsics.h"
#include "kiln/tir/lower_opaque_block.h"
#include "kiln/tir/lower_warp_memory.h"
#include "kiln/tir/make_packed_api.h"
#include "kiln/tir/pipeline.h"
#include "kiln/tir/plan_buffer_allocation.h"
#include "kiln/tir/promote_to_registers.h"
#include "kiln/tir/simplify.h"
#include "kiln/tir/storage_rewrite.h"
#include "kiln/tir/unroll_loops.h"
#include "kiln/tir/vectorize_loops.h"
#include "kiln/tir/verify_ir.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::ir;

namespace {

tir::LowerOptions lower_options(py::handle dump_ir, py::handle verify) {
  tir::LowerOptions options;
  if (auto dir = to_optional_path(dump_ir, "tir.lower", "dump_ir")) options.dump_dir = *dir;
  if (auto check = to_optional_bool(verify, "tir.lower", "verify")) options.verify = *check;
  return options;
}

// Lowers for a GPU target: the host functions and their device kernels in one module, the
// kernels under their global symbols.
Ref<IRModule> lower_for_gpu(const FuncOrModule& input, const codegen::Target& target,
                            tir::LowerOptions options) {
  std::vector<Ref<PrimFunc>> kernels;
  driver::set_gpu_lower_options(target, &kernels, &options);
  Ref<IRModule> result;
  if (input.func) {
    result = make<IRModule>();
    result->functions["main"] = tir::lower(input.func, options);
  } else {
    result = copy(tir::lower(input.mod, options).get());
  }
  for (const Ref<PrimFunc>& kernel : kernels) {
    result->functions[kernel->attrs.at("global_symbol").as<StringImm>()->value] = kernel;
  }
  return result;
}

using Pass = Ref<PrimFunc> (*)(const Ref<PrimFunc>&);

// Binds one pass as tir.transform.<name>(func), converting its argument with a kiln error.
void def_pass(py::module_& transform, const char* name, Pass pass, const char* doc) {
  std::string api = std::string("tir.transform.") + name;
  transform.def(
      name,
      [pass, api](py::handle func) {
        return pass(to_node<PrimFunc>(func, api.c_str(), "func", "a PrimFunc"));
      },
      py::arg("func"), doc);
}

}  // namespace

void bind_tir_passes(py::module_& tir) {
  tir.def(
      "lower",
      [](py::handle func, py::handle dump_ir, py::handle verify, py::handle target) -> py::object {
        FuncOrModule input = to_func_or_module(func, "tir.lower", "func");
        tir::LowerOptions options = lower_options(dump_ir, verify);
        if (auto text = to_optional_str(target, "tir.lower", "target")) {
          codegen::Target parsed = codegen::parse_target(*text);
          if (parsed.is_gpu()) return py::cast(lower_for_gpu(input, parsed, options));
        }
        if (input.func) return py::cast(tir::lower(input.func, options));
        return py::cast(tir::lower(input.mod, options));
      },
      py::arg("func"), py::arg("dump_ir") = py::none(), py::arg("verify") = py::none(),
      py::arg("target") = py::none(),
      "Lowers a PrimFunc, an IRModule or a tir.Schedule (see kiln.tir.lower).");
  auto transform = tir.def_submodule("transform", "The lowering passes, one function each");
  def_pass(transform, "lower_init_block", &tir::lower_init_block,
           R"doc(Turns each reduction block's init into a statement guarded by "every reduce
iterator is at the start of its domain", in front of the block's body.

Returns the very same function when no block has an init.)doc");
  def_pass(transform, "lower_warp_memory", &tir::lower_warp_memory,
           R"doc(Gives each "warp" buffer (shape [..., 32, n]: a warp's registers, lane second to
last) its memory: each thread's registers ("local", the lane dimension dropped) when every
access indexes the lane with the variable of a threadIdx.x loop over [0, 32) around it, else
"shared" memory (a lane reads another lane's elements).

Returns the very same function when it has no "warp" buffer.)doc");
  def_pass(transform, "plan_buffer_allocation", &tir::plan_buffer_allocation,
           R"doc(Moves each buffer a block allocates down to the innermost block or loop that
encloses every access to it, so that compact_buffer_allocation can shrink it to one tile.

A buffer never moves into a loop whose iterations pass values through it (a reduction loop of a
block that stores into it). Returns the very same function when nothing moves.)doc");
  def_pass(transform, "compact_buffer_allocation", &tir::compact_buffer_allocation,
           R"doc(Shrinks each intermediate buffer to the region its allocating block touches, and
shifts the accesses to start at 0.

Run after plan_buffer_allocation. Parameter buffers never change; a buffer with strides
(storage_align) keeps them. Returns the very same function when no buffer shrinks.)doc");
  def_pass(transform, "lower_opaque_block", &tir::lower_opaque_block,
           R"doc(Removes blocks: iterators become their bound values, a predicate becomes an if,
alloc_buffers become Allocate statements; regions and block annotations are dropped.

Raises KilnValueError for a block that still has an init (run lower_init_block first). Returns
the very same function when it has no blocks.)doc");
  def_pass(transform, "flatten_buffers", &tir::flatten_buffers,
           R"doc(Makes every buffer access one-dimensional: row-major offsets over the shape (or the
strides), plus the element offset. A vector last index stays a vector (Ramp).

Raises KilnValueError for a block (run lower_opaque_block first). Returns the very same function
when every buffer is already flat.)doc");
  def_pass(transform, "simplify", &tir::simplify,
           R"doc(Simplifies every expression with what is known where it appears (loop ranges,
conditions, lets) and drops decided branches and statements without effect.

Returns the very same function when nothing simplifies.)doc");
  def_pass(transform, "inject_virtual_threads", &tir::inject_virtual_threads,
           R"doc(Runs the iterations of each loop bound to vthread.x/y/z inside their thread:
statements that depend on the virtual thread are wrapped in an unrolled loop over it, the
statements the virtual threads share (a shared-memory fetch) run once, and a buffer a virtual
thread keeps across them (an accumulator tile) gets one copy per virtual thread.

Runs on the flat program (after flatten_buffers). Raises KilnValueError for a vthread loop of
symbolic extent. Returns the very same function when no loop is bound to a vthread.)doc");
  def_pass(transform, "storage_rewrite", &tir::storage_rewrite,
           R"doc(Reuses the storage of intermediate buffers whose lifetimes do not overlap, and
hoists allocations out of serial loops. Runs on the flat program (after flatten_buffers).

Returns the very same function when nothing changes.)doc");
  def_pass(transform, "loop_partition", &tir::loop_partition,
           R"doc(Splits a loop whose body checks an affine bound on it (the check a non-divisible
split leaves) into a steady part without the check and a part that keeps it.

Runs on the flat program. Returns the very same function when no loop is split.)doc");
  def_pass(transform, "vectorize_loops", &tir::vectorize_loops,
           R"doc(Turns vectorized loops of constant extent into vector code (Ramp, Broadcast,
vector loads and stores).

A loop whose body cannot be vectorized becomes serial, with the reason in its annotation
"kiln.vectorize_fallback". Returns the very same function when it has no vectorized loop.)doc");
  def_pass(transform, "unroll_loops", &tir::unroll_loops,
           R"doc(Replaces unrolled loops of small constant extent by copies of their body, and
unrolls what the loop annotation "pragma_auto_unroll_max_step" asks for.

Returns the very same function when nothing is unrolled.)doc");
  def_pass(transform, "promote_to_registers", &tir::promote_to_registers,
           R"doc(Moves the outermost serial loops that access a "local" buffer only at constant
offsets (and store to it) onto a copy of it, copied in before the loop and out after it, which
LLVM keeps in registers.

Runs on the flat program after unroll_loops. Returns the very same function when nothing is
promoted.)doc");
  def_pass(transform, "lower_intrinsics", &tir::lower_intrinsics,
           R"doc(Replaces float32 math calls (exp, log, tanh, sigmoid, erf, sin, cos, …) by
arithmetic that vectorizes, instead of scalar libm calls; float16 and bfloat16 go through
float32, float64 is left to libm.

Returns the very same function when it has no such call.)doc");
  transform.def(
      "make_packed_api",
      [](py::handle func, py::handle name) {
        const char* api = "tir.transform.make_packed_api";
        return tir::make_packed_api(to_node<PrimFunc>(func, api, "func", "a PrimFunc"),
                                    to_str(name, api, "name"));
      },
      py::arg("func"), py::arg("name") = "main",
      R"doc(Makes a lowered function the packed entry point that the code generator compiles
and the runtime calls: the body reads its arguments from the packed call, and the attribute
"kiln.arg_spec" holds the function's entry of the module manifest (name, symbol, symbolic
variables, and per argument kind, dtype, shape, strides, device, alignment).

Args:
    func (PrimFunc): a lowered function (tir.lower).
    name (str): its name in the module.

Raises:
    KilnValueError: a dimension that is neither a constant nor a variable, a stride variable
        that is not a dimension, a nonzero element offset, or a free variable of the body;
        the message names the parameter.)doc");
  transform.def(
      "verify_ir",
      [](py::handle func, py::handle after_pass) {
        const char* api = "tir.transform.verify_ir";
        tir::verify_ir(to_node<PrimFunc>(func, api, "func", "a PrimFunc"),
                       to_str(after_pass, api, "after_pass"));
      },
      py::arg("func"), py::arg("after_pass") = "a pass",
      R"doc(Checks that a function is well formed: every variable defined once and in scope, one
index per buffer dimension, operands of one dtype, every block iterator bound, integer loop
bounds.

Args:
    func (PrimFunc): the function.
    after_pass (str): the pass to name in the message.

Raises:
    InternalError: the first violation, naming after_pass and marking the place in the
        printed function.)doc");
}

}  // namespace kiln::python
