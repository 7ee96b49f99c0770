// The GPU code generators: device kernels (tir/split_host_device) as CUDA C or OpenCL C, and
// NVRTC, which compiles CUDA C to PTX and cubin in process.
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/function.h"

namespace kiln::codegen {

// CUDA C for `kernels`: one `extern "C" __global__` function per kernel, named by its
// global_symbol, with __launch_bounds__ from its threadIdx launch extents. Needs no CUDA header.
// Raises a kValue error naming the kernel for a construct CUDA C cannot express here (a dtype
// other than bool, integers, float32 and float64; a parallel loop; an assertion).
std::string codegen_cuda(const std::vector<ir::Ref<ir::PrimFunc>>& kernels);

// OpenCL C for `kernels`: one `__kernel` function per kernel, shared arrays as `__local` at
// kernel scope, cl_khr_fp64 enabled when a kernel uses float64. Errors as codegen_cuda.
std::string codegen_opencl(const std::vector<ir::Ref<ir::PrimFunc>>& kernels);

// Code NVRTC made from CUDA C for one architecture.
struct CudaBinary {
  std::string arch;   // "sm_80"
  std::string ptx;    // PTX for compute_XY, which newer GPUs JIT-compile
  std::string cubin;  // machine code for sm_XY
};

// Whether NVRTC can be loaded; when not, `why` says what was tried.
bool nvrtc_available(std::string* why = nullptr);

// Compiles `source` with NVRTC for `arch` ("sm_80", "sm_90", …): PTX for the virtual
// architecture compute_XY and a cubin for sm_XY. NVRTC is opened with dlopen on first use (no
// link dependency): libnvrtc.so from the library path, $CUDA_HOME/lib64 or /usr/local/cuda/lib64.
// Raises a kRuntime error naming the library when NVRTC is missing, and a kValue error with
// NVRTC's log when the source does not compile.
CudaBinary compile_cuda(const std::string& source, const std::string& arch);

}  // namespace kiln::codegen
