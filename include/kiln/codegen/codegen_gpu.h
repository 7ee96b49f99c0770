// The GPU code generators: device kernels (tir/split_host_device) as CUDA C or OpenCL C, and
// NVRTC, which compiles CUDA C to PTX and cubin in process.
#pragma once

#include <string>
#include <vector>

#include "kiln/codegen/target.h"
#include "kiln/ir/function.h"

namespace kiln::codegen {

// CUDA C for `kernels`, made for `target` ("cuda"): one `extern "C" __global__` function per
// kernel, named by its global_symbol, with __launch_bounds__ from its threadIdx launch extents.
// Needs no CUDA header. Types: bool, integers of 8 to 64 bits, float32, float64, and float16 /
// bfloat16 stored as their bits and computed in float32, converted by the cvt instructions
// (inline PTX; bfloat16 in software before sm_80). Vector code (vectorize_loops with 2 or
// 4 lanes) is computed lane by lane, and its loads and stores of global and shared memory are
// one access of a vector type (float4, int2, ushort4, ...) where the index is a ramp of stride 1
// proven aligned to the vector's size: global data is kCudaTensorAlignment-aligned
// (kiln/ir/buffer.h), shared arrays are declared aligned. Other vector accesses are done lane by
// lane, each with a sentence in `notes` (when not null) saying why. A kernel's block of dynamic
// shared memory (merge_dynamic_shared_memory) is an `extern __shared__` array of bytes, 16-byte
// aligned, that its buffers view with pointer casts. Raises a kValue error naming
// the kernel for a construct CUDA C cannot express here (another dtype; a parallel loop; an
// assertion).
std::string codegen_cuda(const std::vector<ir::Ref<ir::PrimFunc>>& kernels, const Target& target,
                         std::vector<std::string>* notes = nullptr);

// OpenCL C for `kernels`, made for `target` ("opencl"): one `__kernel` function per kernel,
// shared arrays as `__local` at kernel scope, cl_khr_fp64 enabled when a kernel uses float64.
// Vector code (2, 4, 8 or 16 lanes) is computed lane by lane; its loads and stores of global
// and shared memory with a ramp of stride 1 are vloadn/vstoren, or a pointer cast to the vector
// type where the address is proven aligned (global data is assumed aligned to its element only).
// float16 is converted with the core vload_half / vstore_half_rte, bfloat16 in software. The
// block of dynamic shared memory is a `__local uint4*` parameter after the kernel's others, which
// the runtime sizes with the launch's dynamic shared bytes. Types, notes and errors as
// codegen_cuda.
std::string codegen_opencl(const std::vector<ir::Ref<ir::PrimFunc>>& kernels, const Target& target,
                           std::vector<std::string>* notes = nullptr);

// The lane counts of the vector types of a GPU target's language: {2, 4} for "cuda", {2, 4, 8,
// 16} for "opencl". vectorize_loops leaves a vectorized loop of another extent serial.
std::vector<int> gpu_vector_lanes(const Target& target);

// Code NVRTC made from CUDA C for one architecture.
struct CudaBinary {
  std::string arch;         // "sm_80"
  std::string ptx;          // PTX for compute_XY, which newer GPUs JIT-compile
  std::string cubin;        // machine code for sm_XY
  bool from_cache = false;  // loaded from the cache directory instead of compiled
};

// Whether NVRTC can be loaded; when not, `why` says what was tried.
bool nvrtc_available(std::string* why = nullptr);

// Compiles `source` with NVRTC for `arch` ("sm_80", "sm_90", …) in one compilation: the PTX
// (that of the virtual architecture compute_XY) and the cubin for sm_XY made from it, with
// --use_fast_math when `fast_math`. With a `cache_dir` (BuildOptions::object_cache_dir), the
// result is kept there under a hash of the source, architecture, options and NVRTC's version,
// and a later compilation of the same is loaded instead (the tuner builds its best candidates
// again for the final rounds). NVRTC is opened with dlopen on first use (no link dependency):
// libnvrtc.so from the library path, $CUDA_HOME/lib64 or /usr/local/cuda/lib64. Raises a
// kRuntime error naming the library when NVRTC is missing, and a kValue error with NVRTC's log
// when the source does not compile.
CudaBinary compile_cuda(const std::string& source, const std::string& arch, bool fast_math = false,
                        const std::string& cache_dir = "");

// The options that build a module's OpenCL C for `target`: "-cl-fast-relaxed-math" with
// -fast-math, else "" (the manifest's OpenCL blob carries them as "build_options").
std::string opencl_build_options(const Target& target);

}  // namespace kiln::codegen
