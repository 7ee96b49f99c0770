// NVRTC, opened with dlopen on first use behind one table of function pointers: CUDA C to PTX
// and cubin in process, with no link dependency on the CUDA toolkit.
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "kiln/codegen/codegen_gpu.h"
#include "kiln/support/error.h"
#include "object_cache.h"

namespace kiln::codegen {

namespace {

// The part of nvrtc.h that kiln uses; the ABI has been stable since CUDA 11.
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

struct NvrtcTable {
  const char* (*GetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*Version)(int*, int*) = nullptr;
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*) = nullptr;
  nvrtcResult (*DestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
  std::string error;  // why the library could not be used; empty when it can
};

std::vector<std::string> candidate_paths() {
  std::vector<std::string> paths = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* home = std::getenv(env);
    if (home != nullptr && *home != '\0') paths.push_back(std::string(home) + "/lib64/libnvrtc.so");
  }
  paths.push_back("/usr/local/cuda/lib64/libnvrtc.so");
  return paths;
}

template <class F>
bool load_symbol(void* library, const char* name, F* out, std::string* error) {
  *out = reinterpret_cast<F>(dlsym(library, name));
  if (*out == nullptr) *error = std::string("the library lacks ") + name;
  return *out != nullptr;
}

const NvrtcTable& nvrtc() {
  static NvrtcTable table;
  static std::once_flag once;
  std::call_once(once, [] {
    void* library = nullptr;
    std::string tried;
    for (const std::string& path : candidate_paths()) {
      library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (library != nullptr) break;
      tried += (tried.empty() ? "" : ", ") + path;
    }
    if (library == nullptr) {
      table.error = "NVRTC: cannot load libnvrtc.so (tried " + tried +
                    "); install the CUDA toolkit or set CUDA_HOME";
      return;
    }
    std::string& e = table.error;
    bool ok = load_symbol(library, "nvrtcGetErrorString", &table.GetErrorString, &e) &&
              load_symbol(library, "nvrtcVersion", &table.Version, &e) &&
              load_symbol(library, "nvrtcCreateProgram", &table.CreateProgram, &e) &&
              load_symbol(library, "nvrtcDestroyProgram", &table.DestroyProgram, &e) &&
              load_symbol(library, "nvrtcCompileProgram", &table.CompileProgram, &e) &&
              load_symbol(library, "nvrtcGetPTXSize", &table.GetPTXSize, &e) &&
              load_symbol(library, "nvrtcGetPTX", &table.GetPTX, &e) &&
              load_symbol(library, "nvrtcGetCUBINSize", &table.GetCUBINSize, &e) &&
              load_symbol(library, "nvrtcGetCUBIN", &table.GetCUBIN, &e) &&
              load_symbol(library, "nvrtcGetProgramLogSize", &table.GetProgramLogSize, &e) &&
              load_symbol(library, "nvrtcGetProgramLog", &table.GetProgramLog, &e);
    if (!ok) e = "NVRTC: " + e + " (an NVRTC older than CUDA 11.1?)";
  });
  return table;
}

// One compilation of `source` for the real architecture `arch` ("sm_80"): NVRTC makes the PTX
// (for the virtual architecture of the same number, which newer GPUs JIT-compile) and then the
// cubin from it, and hands out both; a second compilation for "compute_80" would repeat the
// first, and costlier, half (the PTX is the same).
CudaBinary compile_program(const NvrtcTable& api, const std::string& source,
                           const std::string& arch, bool fast_math) {
  nvrtcProgram program = nullptr;
  nvrtcResult status =
      api.CreateProgram(&program, source.c_str(), "kiln_kernels.cu", 0, nullptr, nullptr);
  internal_check(status == 0) << "NVRTC: nvrtcCreateProgram failed: " << api.GetErrorString(status);
  std::string arch_option = "--gpu-architecture=" + arch;
  const char* options[] = {arch_option.c_str(), "--std=c++17", "-default-device",
                           "--use_fast_math"};
  status = api.CompileProgram(program, fast_math ? 4 : 3, options);
  std::string log;
  size_t log_size = 0;
  if (api.GetProgramLogSize(program, &log_size) == 0 && log_size > 1) {
    log.resize(log_size);
    api.GetProgramLog(program, log.data());
    log.resize(log_size - 1);
  }
  CudaBinary binary;
  binary.arch = arch;
  if (status == 0) {
    size_t size = 0;
    api.GetCUBINSize(program, &size);
    binary.cubin.resize(size);
    api.GetCUBIN(program, binary.cubin.data());
    size = 0;
    api.GetPTXSize(program, &size);
    binary.ptx.resize(size);
    api.GetPTX(program, binary.ptx.data());
    if (!binary.ptx.empty() && binary.ptx.back() == '\0') binary.ptx.pop_back();
  }
  api.DestroyProgram(&program);
  user_check(status == 0) << "NVRTC: the generated CUDA C does not compile for " << arch << " ("
                          << api.GetErrorString(status) << "):\n"
                          << log << "\nsource:\n"
                          << source;
  return binary;
}

}  // namespace

bool nvrtc_available(std::string* why) {
  const NvrtcTable& api = nvrtc();
  if (why != nullptr) *why = api.error;
  return api.error.empty();
}

CudaBinary compile_cuda(const std::string& source, const std::string& arch, bool fast_math,
                        const std::string& cache_dir) {
  const NvrtcTable& api = nvrtc();
  if (!api.error.empty()) user_error(ErrorKind::kRuntime) << api.error;
  user_check(arch.rfind("sm_", 0) == 0 && arch.size() > 3)
      << "compile_cuda: expected an architecture such as sm_80, found '" << arch << "'";
  if (cache_dir.empty()) return compile_program(api, source, arch, fast_math);
  int major = 0, minor = 0;
  api.Version(&major, &minor);
  detail::ObjectCache cache(cache_dir);
  std::string key =
      detail::ObjectCache::key({"nvrtc", std::to_string(major) + "." + std::to_string(minor), arch,
                                fast_math ? "fast-math" : "", source});
  // An entry: the PTX's length, a newline, the PTX, the cubin.
  if (std::optional<std::string> entry = cache.load(key)) {
    size_t newline = entry->find('\n');
    if (newline != std::string::npos && newline > 0 && newline <= 20) {
      size_t ptx_size = std::stoull(entry->substr(0, newline));
      if (ptx_size <= entry->size() - newline - 1) {
        CudaBinary binary;
        binary.arch = arch;
        binary.ptx = entry->substr(newline + 1, ptx_size);
        binary.cubin = entry->substr(newline + 1 + ptx_size);
        binary.from_cache = true;
        return binary;
      }
    }
  }
  CudaBinary binary = compile_program(api, source, arch, fast_math);
  cache.store(key, std::to_string(binary.ptx.size()) + "\n" + binary.ptx + binary.cubin);
  return binary;
}

}  // namespace kiln::codegen
