// Tests of several processes on one tuning database: two writers at once lose and duplicate
// nothing, and a writer killed with SIGKILL loses at most the batch it was committing. The
// assertions count records; no timing decides a result.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <set>

#include "database_test_util.h"

namespace kiln::autotune::testing {
namespace {

constexpr int kBatch = 25;

// Commits `batches` batches (forever when negative) of kBatch records with hashes tagged by
// `writer`, writing one byte to `report_fd` after each commit. Returns the exit status for the
// child process: 0 when everything was stored.
int write_batches(const std::string& path, uint64_t writer, int batches, int report_fd) {
  try {
    auto db = Database::open(path);
    int64_t workload_id = add_workload(*db).id;
    for (int b = 0; batches < 0 || b < batches; ++b) {
      std::vector<Measurement> batch;
      for (int i = 0; i < kBatch; ++i) {
        uint64_t hash = (writer << 32) | static_cast<uint64_t>(b * kBatch + i);
        batch.push_back(measurement(workload_id, hash, {1e-3 * (i + 1)}));
      }
      db->commit_records(batch);
      if (report_fd >= 0 && write(report_fd, "c", 1) != 1) return 3;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "writer %d: %s\n", static_cast<int>(writer), e.what());
    return 2;
  }
}

TEST_F(DatabaseTest, TwoProcessesWritingAtOnceLoseAndDuplicateNothing) {
  constexpr int kBatches = 40;
  std::vector<pid_t> children;
  for (uint64_t writer = 1; writer <= 2; ++writer) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(write_batches(path(), writer, kBatches, -1));
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  auto db = Database::open(path());
  ASSERT_EQ(db->workloads().size(), 1u);  // both committed the same function
  int64_t workload_id = db->workloads()[0].id;
  EXPECT_EQ(db->size(), 2 * kBatches * kBatch);
  std::vector<uint64_t> hashes = db->measured_hashes(workload_id, zen3());
  EXPECT_EQ(hashes.size(), static_cast<size_t>(2 * kBatches * kBatch));
  std::set<uint64_t> writers;
  for (uint64_t hash : hashes) writers.insert(hash >> 32);
  EXPECT_EQ(writers, (std::set<uint64_t>{1, 2}));
}

TEST_F(DatabaseTest, KilledWriterLosesAtMostItsBatchInFlight) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(pipe_fds[0]);
    _exit(write_batches(path(), 1, -1, pipe_fds[1]));
  }
  close(pipe_fds[1]);
  // Step 1. Let it commit a few batches, then kill it wherever it is (usually mid-batch).
  int reported = 0;
  char byte;
  while (reported < 4 && read(pipe_fds[0], &byte, 1) == 1) ++reported;
  ASSERT_EQ(reported, 4);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  // Step 2. Every commit it reported is there; at most one more (committed, not yet reported).
  while (read(pipe_fds[0], &byte, 1) == 1) ++reported;
  close(pipe_fds[0]);
  auto db = Database::open(path());
  int64_t size = db->size();
  EXPECT_EQ(size % kBatch, 0) << "a batch was stored in part";
  EXPECT_GE(size, reported * kBatch);
  EXPECT_LE(size, (reported + 1) * kBatch);
  EXPECT_EQ(static_cast<int64_t>(db->records().size()), size);
  EXPECT_TRUE(db->take_warnings().empty());
}

}  // namespace
}  // namespace kiln::autotune::testing
