// The tune worker: the process in which the local runner builds, checks and times candidates,
// so that a candidate that crashes or hangs takes only this process down. kiln_tune_worker's
// main() calls run_worker; the conversation is described in runner_protocol.h.
#pragma once

namespace kiln::autotune::detail {

// Says hello on `fd` (a connected stream socket), then answers the runner's requests until its
// end closes; returns the process's exit status (0). Errors of the conversation itself (a
// malformed message, a write that fails) are thrown.
int run_worker(int fd);

}  // namespace kiln::autotune::detail
