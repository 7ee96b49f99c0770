// The lowering pipeline: every pass from a scheduled TensorIR function to the flat loop program
// that code generators take, in order, in tir/pipeline.cc.
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/function.h"
#include "kiln/tir/verify_gpu_code.h"

namespace kiln::tir {

// How long one pass took and whether it changed the function.
struct PassTiming {
  std::string pass;
  double seconds = 0.0;
  bool changed = false;
};

struct LowerOptions {
  // When not empty, the IR after each pass is written there as NN_<pass>.py (00_input.py is the
  // function as given; "(unchanged)" stands for the text when a pass returned the very same
  // function), and the time of each pass to timing.txt. When empty, the environment variable
  // KILN_DUMP_IR is used if set.
  std::string dump_dir;
  // Run verify_ir on the input and after every pass. On by default in debug builds; the
  // environment variable KILN_VERIFY_IR=1 turns it on in any build.
#ifdef NDEBUG
  bool verify = false;
#else
  bool verify = true;
#endif
  // When not null, one entry per pass is appended to it, in order.
  std::vector<PassTiming>* timing = nullptr;
  // Finish with the entry point that the LLVM code generator compiles: math intrinsics become
  // vectorizable arithmetic (lower_intrinsics) and the function reads the runtime's packed
  // arguments (make_packed_api). The result is compiled, no longer interpreted.
  bool packed_entry = false;
  // The function's name in the module (the manifest's "name"; the default symbol is
  // "kiln_" + name). lower(IRModule) uses each function's name in the module.
  std::string name = "main";
  // For a GPU target: where the device kernels split from the function go (split_host_device);
  // the function itself becomes their host side. Null for a CPU target.
  std::vector<ir::Ref<ir::PrimFunc>>* device_kernels = nullptr;
  // For a GPU target: the device tensors' device in the argument spec ("cuda" or "opencl") and
  // the limits verify_gpu_code checks each kernel against.
  std::string device = "cpu";
  GpuLimits gpu_limits;
  // For a GPU target: raise verify_gpu_code's error for a kernel it refuses. The tuner turns
  // it off and asks check_gpu_code itself, to count why it drops a candidate.
  bool verify_gpu_kernels = true;
};

// Lowers a scheduled PrimFunc to the flat loop program: no blocks, one-dimensional buffer
// accesses, Allocates of one-dimensional buffers. Tested by tests/cpp/tir/pipeline_test.cc
// and tests/python/test_lower_pipeline.py.
ir::Ref<ir::PrimFunc> lower(ir::Ref<ir::PrimFunc> func, const LowerOptions& options = {});

// Lowers every function of a module. With a dump directory, each function's files go to a
// subdirectory named after the function.
ir::Ref<ir::IRModule> lower(const ir::Ref<ir::IRModule>& mod, const LowerOptions& options = {});

}  // namespace kiln::tir
