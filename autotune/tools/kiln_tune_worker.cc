// kiln_tune_worker: the process that the local runner starts to build, check and time candidate
// schedules (see autotune/worker.h). It is started by the runner, never by hand:
//   kiln_tune_worker --fd 3 --parent PID
// This executable links no part of kiln: it loads the module kiln_tune_worker_main.so from its
// own directory with RTLD_LOCAL and runs its main function. kiln's LLVM then stays out of the
// process's global symbol scope, as it does in Python (which loads the extension the same way),
// so that a GPU driver loaded later that links another LLVM (PoCL's OpenCL compiler does) binds
// to its own and not to kiln's, which would crash it.
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  char self[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0) {
    std::fprintf(stderr, "kiln_tune_worker: cannot find its own path (/proc/self/exe)\n");
    return 2;
  }
  std::string path(self, static_cast<size_t>(length));
  path = path.substr(0, path.rfind('/') + 1) + "kiln_tune_worker_main.so";
  void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (module == nullptr) {
    std::fprintf(stderr, "kiln_tune_worker: cannot load %s: %s\n", path.c_str(), dlerror());
    return 2;
  }
  using Main = int (*)(int, char**);
  auto run = reinterpret_cast<Main>(dlsym(module, "kiln_tune_worker_main"));
  if (run == nullptr) {
    std::fprintf(stderr, "kiln_tune_worker: %s has no kiln_tune_worker_main\n", path.c_str());
    return 2;
  }
  return run(argc, argv);
}
