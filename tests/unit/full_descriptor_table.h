// FullDescriptorTable: puts this process out of file descriptors, so a
// listener's accept fails with EMFILE as on a daemon that ran out of them;
// and ThreadCpuSeconds(), to tell a listener that waits from one that spins.
// For the listeners' out-of-descriptors tests (common/accept_retry.h).
//
//   asio::ip::tcp::socket client(io);
//   client.open(asio::ip::tcp::v4());  // its descriptor, before the table is full
//   FullDescriptorTable full;
//   client.connect(...);  // completes into the backlog; accept fails
//   ...
//   full.Free();          // the listener accepts at its next retry
//
// Not thread-safe: the limit and the table are the whole process's.
#pragma once

#include <sys/resource.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <ctime>
#include <vector>

namespace muster::testing {

// The soft RLIMIT_NOFILE is lowered to 256 and descriptors are taken until
// none is left. Undone when it goes out of scope, whatever the test did.
class FullDescriptorTable {
 public:
  FullDescriptorTable() {
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved_) == 0);
    rlimit lowered = saved_;
    lowered.rlim_cur = std::min<rlim_t>(saved_.rlim_cur, 256);
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &lowered) == 0);
    for (;;) {
      const int fd = ::dup(STDERR_FILENO);
      if (fd < 0) break;
      taken_.push_back(fd);
    }
  }
  ~FullDescriptorTable() {
    Free();
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  FullDescriptorTable(const FullDescriptorTable&) = delete;
  FullDescriptorTable& operator=(const FullDescriptorTable&) = delete;
  // Gives every descriptor taken back; the lowered limit stays until the end.
  void Free() {
    for (const int fd : taken_) ::close(fd);
    taken_.clear();
  }

 private:
  rlimit saved_{};
  std::vector<int> taken_;
};

// CPU time the calling thread has used, in seconds.
inline double ThreadCpuSeconds() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

}  // namespace muster::testing
