// Starting, talking to, waiting for and reaping the local runner's worker processes.
#include "autotune/runner_process.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kiln/support/error.h"

extern char** environ;

namespace kiln::autotune::detail {

namespace {

constexpr const char* kWorkerName = "kiln_tune_worker";
constexpr int kWorkerFd = 3;  // the socket's number in the worker
constexpr auto kCheckEvery = std::chrono::milliseconds(100);
constexpr size_t kOutputTailBytes = 4096;
constexpr int kExitGraceMs = 2000;  // for a worker that closed its socket to finish exiting

// Moves `fd` to a number >= 10 (close-on-exec), so that the spawn's dup2 onto 2 and 3 cannot
// meet a descriptor that is already there (dup2(fd, fd) would keep close-on-exec set).
int move_high(int fd) {
  int high = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  runtime_check(high >= 0) << "tune worker: fcntl: " << std::strerror(errno);
  ::close(fd);
  return high;
}

void set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  runtime_check(flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0)
      << "tune worker: fcntl: " << std::strerror(errno);
}

bool is_executable_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) return "was killed by " + describe_signal(WTERMSIG(status));
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended with wait status " + std::to_string(status);
}

// Closes the descriptors of a spawn that failed.
struct SpawnFds {
  int fds[4] = {-1, -1, -1, -1};
  ~SpawnFds() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
};

}  // namespace

Clock::time_point deadline_after(double seconds) {
  double clamped = std::min(std::max(seconds, 0.0), 365.0 * 24 * 3600);
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(clamped));
}

std::string locate_worker(const std::string& configured) {
  std::string path, source;
  if (!configured.empty()) {
    path = configured;
    source = "RunnerConfig.worker";
  } else if (const char* env = std::getenv("KILN_TUNE_WORKER"); env != nullptr && *env != 0) {
    path = env;
    source = "the environment variable KILN_TUNE_WORKER";
  } else {
    // The worker is built next to the library that holds kiln's code (the Python extension in
    // python/kiln/), so an installed or in-place checkout finds it without configuration.
    Dl_info info;
    std::string library = "?";
    if (dladdr(reinterpret_cast<void*>(&locate_worker), &info) != 0 && info.dli_fname != nullptr) {
      library = info.dli_fname;
    }
    size_t slash = library.rfind('/');
    std::string dir = slash == std::string::npos ? "." : library.substr(0, slash);
    path = dir + "/" + kWorkerName;
    source = "the directory of " + library;
  }
  runtime_check(is_executable_file(path))
      << "make_local_runner: the tune worker executable '" << path << "' (from " << source
      << ") is not an executable file; build the CMake target kiln_tune_worker, or set "
      << "KILN_TUNE_WORKER or RunnerConfig.worker to its path";
  return path;
}

std::string describe_signal(int signal) {
  switch (signal) {
    case SIGSEGV:
      return "SIGSEGV (segmentation fault)";
    case SIGBUS:
      return "SIGBUS (bus error)";
    case SIGILL:
      return "SIGILL (illegal instruction)";
    case SIGFPE:
      return "SIGFPE (arithmetic exception)";
    case SIGABRT:
      return "SIGABRT (abort)";
    case SIGKILL:
      return "SIGKILL (killed, e.g. out of memory)";
    case SIGTERM:
      return "SIGTERM (terminated)";
    case SIGINT:
      return "SIGINT (interrupted)";
    case SIGTRAP:
      return "SIGTRAP (trap)";
    case SIGSYS:
      return "SIGSYS (bad system call)";
    case SIGPIPE:
      return "SIGPIPE (broken pipe)";
  }
  return "signal " + std::to_string(signal);
}

std::unique_ptr<WorkerProcess> WorkerProcess::start(const std::string& path, double startup_s,
                                                    const InterruptCheck& interrupted) {
  // Step 1. A socket pair for messages and a pipe for the worker's stderr; the worker's ends
  // are moved above 9 so that the spawn can place them at 3 and 2.
  SpawnFds fds;
  int pair[2], err[2];
  runtime_check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0)
      << "tune worker: socketpair: " << std::strerror(errno);
  fds.fds[0] = pair[0];
  fds.fds[1] = move_high(pair[1]);
  runtime_check(pipe2(err, O_CLOEXEC) == 0) << "tune worker: pipe: " << std::strerror(errno);
  fds.fds[2] = err[0];
  fds.fds[3] = move_high(err[1]);

  // Step 2. Spawn: its own process group, default signal dispositions and an empty mask
  // whatever the host process set (Python ignores SIGPIPE, threads block signals).
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds.fds[1], kWorkerFd);
  posix_spawn_file_actions_adddup2(&actions, fds.fds[3], STDERR_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds.fds[3], STDOUT_FILENO);  // not the host's
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string fd_text = std::to_string(kWorkerFd), parent_text = std::to_string(getpid());
  std::vector<char*> argv = {
      const_cast<char*>(path.c_str()), const_cast<char*>("--fd"), fd_text.data(),
      const_cast<char*>("--parent"),   parent_text.data(),        nullptr};
  pid_t pid = -1;
  int spawned = posix_spawn(&pid, path.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  runtime_check(spawned == 0) << "tune worker: cannot start '" << path
                              << "': " << std::strerror(spawned);

  // Step 3. Keep the parent's ends (non-blocking) and wait for the hello.
  std::unique_ptr<WorkerProcess> worker(new WorkerProcess());
  worker->pid_ = pid;
  worker->owner_ = getpid();
  worker->socket_ = fds.fds[0];
  worker->stderr_ = fds.fds[2];
  fds.fds[0] = fds.fds[2] = -1;
  set_nonblocking(worker->socket_);
  set_nonblocking(worker->stderr_);
  Message hello;
  Outcome outcome = worker->receive(&hello, deadline_after(startup_s), interrupted);
  if (outcome == Outcome::kInterrupted) return nullptr;
  if (outcome != Outcome::kDone) {
    std::string what = outcome == Outcome::kTimeout
                           ? "did not start within " + std::to_string(startup_s) + " s"
                           : worker->death();
    std::string output = worker->output_tail();
    runtime_check(false) << "tune worker '" << path << "' " << what
                         << (output.empty() ? "" : "; its output: " + output);
  }
  int version = hello.header.value("protocol", -1);
  runtime_check(type_of(hello) == "hello" && version == kProtocolVersion)
      << "tune worker '" << path << "' speaks protocol version " << version << ", expected "
      << kProtocolVersion << ": it belongs to another kiln build";
  return worker;
}

WorkerProcess::~WorkerProcess() {
  kill();
}

WorkerProcess::Outcome WorkerProcess::wait_for(short events, Clock::time_point deadline,
                                               const InterruptCheck& interrupted) {
  Clock::time_point last_check = Clock::now();
  for (;;) {
    Clock::time_point now = Clock::now();
    if (now >= deadline) return Outcome::kTimeout;
    if (interrupted && now - last_check >= kCheckEvery) {
      last_check = now;
      if (interrupted()) return Outcome::kInterrupted;
    }
    auto slice = std::min<Clock::duration>(deadline - now, kCheckEvery);
    int ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(slice).count());
    pollfd polled[2] = {{socket_, events, 0}, {stderr_, POLLIN, 0}};
    int ready = ::poll(polled, stderr_ >= 0 ? 2 : 1, ms);
    if (ready < 0) {
      runtime_check(errno == EINTR) << "tune worker: poll: " << std::strerror(errno);
      // A signal for this thread (Ctrl-C): ask now rather than at the end of the slice.
      if (interrupted && interrupted()) return Outcome::kInterrupted;
      last_check = Clock::now();
      continue;
    }
    if (stderr_ >= 0 && polled[1].revents != 0) drain_stderr();
    if (polled[0].revents & events) return Outcome::kDone;
    if (polled[0].revents & (POLLHUP | POLLERR | POLLNVAL)) {
      // Reading still sees what the worker wrote before it went; writing cannot succeed.
      return events == POLLIN ? Outcome::kDone : Outcome::kDied;
    }
  }
}

void WorkerProcess::drain_stderr() {
  char chunk[4096];
  for (;;) {
    ssize_t n = ::read(stderr_, chunk, sizeof(chunk));
    if (n > 0) {
      output_.append(chunk, static_cast<size_t>(n));
      if (output_.size() > kOutputTailBytes) output_.erase(0, output_.size() - kOutputTailBytes);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      ::close(stderr_);
      stderr_ = -1;
    }
    return;
  }
}

WorkerProcess::Outcome WorkerProcess::send(const Message& message, Clock::time_point deadline,
                                           const InterruptCheck& interrupted) {
  if (socket_ < 0) return Outcome::kDied;
  std::string frame = encode_frame(message);
  size_t done = 0;
  while (done < frame.size()) {
    ssize_t n = ::send(socket_, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      Outcome outcome = wait_for(POLLOUT, deadline, interrupted);
      if (outcome != Outcome::kDone) return outcome;
      continue;
    }
    return Outcome::kDied;  // EPIPE, ECONNRESET: the worker is gone
  }
  return Outcome::kDone;
}

WorkerProcess::Outcome WorkerProcess::receive(Message* message, Clock::time_point deadline,
                                              const InterruptCheck& interrupted) {
  char chunk[1 << 16];
  for (;;) {
    if (std::optional<Message> next = reader_.next()) {
      *message = std::move(*next);
      return Outcome::kDone;
    }
    if (socket_ < 0) return Outcome::kDied;
    ssize_t n = ::recv(socket_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      reader_.feed(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return Outcome::kDied;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return Outcome::kDied;
    Outcome outcome = wait_for(POLLIN, deadline, interrupted);
    if (outcome != Outcome::kDone) return outcome;
  }
}

void WorkerProcess::reap(int grace_ms) {
  if (pid_ <= 0) return;
  int status = 0;
  for (int waited = 0;; waited += 5) {
    pid_t got = ::waitpid(pid_, &status, WNOHANG);
    if (got == pid_) {
      death_ = describe_status(status);
      break;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      // ECHILD: a host that ignores SIGCHLD has the kernel reap children itself.
      death_ = "exited (its status was collected elsewhere)";
      break;
    }
    if (waited >= grace_ms) {
      ::kill(pid_, SIGKILL);
      while ((got = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
      }
      death_ = got == pid_ && !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
                   ? describe_status(status)
                   : "stopped answering and was killed";
      break;
    }
    ::usleep(5000);
  }
  pid_ = -1;
}

void WorkerProcess::kill() {
  // A copy of this object in a forked child of the host (multiprocessing) must not kill the
  // host's worker: only the process that started it stops it.
  if (pid_ > 0 && owner_ != getpid()) pid_ = -1;
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    pid_t got;
    while ((got = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    }
    if (death_.empty()) death_ = "was stopped by the runner";
    pid_ = -1;
  }
  if (socket_ >= 0) ::close(socket_);
  if (stderr_ >= 0) ::close(stderr_);
  socket_ = stderr_ = -1;
}

std::string WorkerProcess::death() {
  if (pid_ > 0) reap(kExitGraceMs);
  return death_;
}

std::string WorkerProcess::output_tail() {
  if (stderr_ >= 0) drain_stderr();
  size_t end = output_.find_last_not_of(" \t\r\n");
  return end == std::string::npos ? "" : output_.substr(0, end + 1);
}

}  // namespace kiln::autotune::detail
