// One worker process of the local runner, seen from the parent: started with posix_spawn, spoken
// to over a socket pair, waited for with poll and a deadline (never blocking for good, EINTR
// retried, the interrupt check asked every 100 ms), killed with SIGKILL and always reaped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>

#include "autotune/runner_protocol.h"
#include "kiln/autotune/runner.h"

namespace kiln::autotune::detail {

using Clock = std::chrono::steady_clock;

// A deadline `seconds` from now (seconds may be large: it is clamped to a year).
Clock::time_point deadline_after(double seconds);

// The worker executable to start: `configured` when not empty, else $KILN_TUNE_WORKER, else
// kiln_tune_worker next to the binary that holds this code (found with dladdr). Raises a
// kRuntime error naming the path and where it came from when it is not an executable file.
std::string locate_worker(const std::string& configured);

// "SIGSEGV (segmentation fault)", "SIGABRT (abort)" ..., or "signal 42".
std::string describe_signal(int signal);

class WorkerProcess {
 public:
  // How a wait ended.
  enum class Outcome {
    kDone,         // the message was sent or received
    kDied,         // the worker closed its end or exited (see death())
    kTimeout,      // the deadline passed
    kInterrupted,  // the interrupt check answered true
  };

  // Starts `path` in its own process group (so that a terminal's Ctrl-C reaches only the
  // parent), with the socket as fd 3, stdin from /dev/null, stdout and stderr into a pipe whose
  // end is kept for messages (the host's terminal stays quiet), and
  // waits for its hello. Raises a kRuntime error when it cannot start, does not say hello
  // within `startup_s`, or speaks another protocol version.
  static std::unique_ptr<WorkerProcess> start(const std::string& path, double startup_s,
                                              const InterruptCheck& interrupted);
  // Kills and reaps the worker.
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  Outcome send(const Message& message, Clock::time_point deadline,
               const InterruptCheck& interrupted);
  Outcome receive(Message* message, Clock::time_point deadline, const InterruptCheck& interrupted);

  // Kills the worker (SIGKILL) and reaps it; idempotent.
  void kill();
  // How the worker ended, once it has died: "was killed by SIGSEGV (segmentation fault)",
  // "exited with status 3"; empty while it lives. Reaps it when it is exiting.
  std::string death();
  // The end of what the worker wrote to stderr (at most a few kilobytes), for messages.
  std::string output_tail();
  pid_t pid() const { return pid_; }

 private:
  WorkerProcess() = default;
  // Waits until the socket is ready for `events`, reading stderr meanwhile.
  Outcome wait_for(short events, Clock::time_point deadline, const InterruptCheck& interrupted);
  void drain_stderr();
  // Collects the exit status, waiting at most `grace_ms` for an exiting worker.
  void reap(int grace_ms);

  pid_t pid_ = -1;
  pid_t owner_ = -1;  // the process that started the worker
  int socket_ = -1;   // non-blocking
  int stderr_ = -1;   // non-blocking read end of the worker's stderr
  FrameReader reader_;
  std::string output_;  // the tail of the worker's stderr
  std::string death_;   // set when reaped
};

}  // namespace kiln::autotune::detail
