// The tune worker's main function, in the module kiln_tune_worker_main.so that the executable
// kiln_tune_worker loads (see kiln_tune_worker.cc for why it is a module). The runner starts
// the executable, never by hand:
//   kiln_tune_worker --fd 3 --parent PID
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

#include "autotune/worker.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "kiln_tune_worker: started by kiln's local tuning runner, with the arguments "
               "--fd N --parent PID\n");
  return 2;
}

// Ends this process when its parent has gone (killed with SIGKILL, say): a worker stuck in a
// hanging kernel never reads the end of its input, so it checks from another thread.
void watch_parent(pid_t parent) {
  std::thread([parent] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      if (getppid() != parent) std::_Exit(3);
    }
  }).detach();
}

}  // namespace

// The worker's main function: argc and argv as the executable got them.
extern "C" __attribute__((visibility("default"))) int kiln_tune_worker_main(int argc, char** argv) {
  int fd = -1;
  long parent = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--fd") == 0) fd = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--parent") == 0) parent = std::atol(argv[i + 1]);
  }
  if (fd < 0 || parent <= 0 || argc != 5) return usage();
  if (getppid() != static_cast<pid_t>(parent)) return 3;
  watch_parent(static_cast<pid_t>(parent));
  // A candidate that crashes is reported by its signal; a core file would only cost time.
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  try {
    return kiln::autotune::detail::run_worker(fd);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_tune_worker: %s\n", e.what());
    return 2;
  }
}
