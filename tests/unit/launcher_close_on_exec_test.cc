// What a worker or the warm process inherits: every descriptor above the
// ones it is given is close-on-exec, with close_range and, on kernels
// without it (before 5.11), one by one. Each case runs in a child process
// (the marks would otherwise stay on the test's own descriptors), which
// exits 0 when every check held; a kernel without close_range is made with
// a seccomp filter that answers ENOSYS to it.
#include "launcher/process/close_on_exec.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstddef>
#include <functional>

namespace muster {
namespace {

// Exit codes of the child.
constexpr int kHeld = 0;
constexpr int kNotMarked = 1;
constexpr int kBelowMarked = 2;
constexpr int kNoSeccomp = 3;
constexpr int kCloseRangeWorks = 4;

bool CloseOnExec(int fd) { return (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }

// Runs `mark(first)` in a child holding descriptors without close-on-exec
// above `first` (a pipe, a dup far up the table) and one below it; `setup`
// runs first. Returns the child's exit code.
int MarkInChild(const std::function<int()>& setup, const std::function<void(int)>& mark) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (const int code = setup(); code != kHeld) _exit(code);
    const int below = dup(STDERR_FILENO);
    int pipe_fds[2];
    if (below < 0 || pipe(pipe_fds) != 0) _exit(kNotMarked);
    const int high = fcntl(pipe_fds[0], F_DUPFD, 900);
    const int first = pipe_fds[0];
    for (const int fd : {below, pipe_fds[0], pipe_fds[1], high}) {
      if (fd < 0 || CloseOnExec(fd)) _exit(kNotMarked);  // none is marked yet
    }
    if (below > first) _exit(kBelowMarked);
    mark(first);
    for (const int fd : {pipe_fds[0], pipe_fds[1], high}) {
      if (!CloseOnExec(fd)) _exit(kNotMarked);
    }
    _exit(CloseOnExec(below) ? kBelowMarked : kHeld);
  }
  REQUIRE(pid > 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

int NoSetup() { return kHeld; }

// Makes close_range fail with ENOSYS in this process, as on Linux 4.18.
int WithoutCloseRange() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    return kNoSeccomp;
  }
  if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0 || errno != ENOSYS) return kCloseRangeWorks;
  return kHeld;
}

TEST_CASE("descriptors above the first are marked close-on-exec, those below are not",
          "[launcher][exec]") {
  CHECK(MarkInChild(NoSetup, [](int first) { MarkCloseOnExecFrom(first); }) == kHeld);
}

TEST_CASE("on a kernel without close_range the descriptors are still marked close-on-exec",
          "[launcher][exec]") {
  const int code = MarkInChild(WithoutCloseRange, [](int first) { MarkCloseOnExecFrom(first); });
  if (code == kNoSeccomp) {
    WARN("no seccomp filter could be installed here: the fallback is tested by itself below");
  } else {
    CHECK(code == kHeld);
  }
}

TEST_CASE("the one-by-one fallback marks every descriptor, from /proc and without it",
          "[launcher][exec]") {
  CHECK(MarkInChild(NoSetup, [](int first) { MarkCloseOnExecOneByOne(first, true); }) == kHeld);
  CHECK(MarkInChild(NoSetup, [](int first) { MarkCloseOnExecOneByOne(first, false); }) == kHeld);
}

}  // namespace
}  // namespace muster
