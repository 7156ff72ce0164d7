// A real pipe for the worker runtime's tests of what muster hands a worker
// (MUSTER_PROGRESS_FD, MUSTER_CONTROL_FD): both ends, closed at the end of
// the test unless a test closed one itself (and set it to -1).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

namespace muster::testing {

struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() {
    int fds[2];
    REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
    read_end = fds[0];
    write_end = fds[1];
  }
  ~Pipe() {
    if (read_end >= 0) close(read_end);
    if (write_end >= 0) close(write_end);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;

  void Write(const std::string& bytes) const {
    REQUIRE(write(write_end, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  }
  // Everything written so far.
  std::string Drain() const {
    fcntl(read_end, F_SETFL, O_NONBLOCK);
    std::string out;
    char buffer[4096];
    for (ssize_t n; (n = read(read_end, buffer, sizeof buffer)) > 0;) out.append(buffer, n);
    return out;
  }
};

}  // namespace muster::testing
