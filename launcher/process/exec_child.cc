#include "launcher/process/exec_child.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "launcher/process/close_on_exec.h"
#include "launcher/process/process_spawner.h"

namespace muster {
namespace {

// A sanitizer's runtime keeps per-thread state that a child sharing the
// caller's memory would change under it: those builds fork.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kShareMemory = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
constexpr bool kShareMemory = false;
#else
constexpr bool kShareMemory = true;
#endif
#else
constexpr bool kShareMemory = true;
#endif

// The child's steps that can fail, as its report names them.
enum class Step : int { kSetsid, kDeathSignal, kPlaceFd, kExec };

const char* StepName(int step) {
  switch (static_cast<Step>(step)) {
    case Step::kSetsid:
      return "setsid";
    case Step::kDeathSignal:
      return "prctl(PR_SET_PDEATHSIG)";
    case Step::kPlaceFd:
      return "placing its descriptors";
    case Step::kExec:
      return "exec";
  }
  return "setup";
}

// What a failed child writes to the report pipe: one write, far below
// PIPE_BUF, so it arrives whole or not at all.
struct ChildReport {
  int step;
  int error;
};

struct ChildArgs {
  const ExecChildSpec* spec;
  pid_t parent;
  int report_fd;
};

// Everything from here to ChildMain's end runs in the child, possibly on the
// caller's memory: system calls only (async-signal-safe), no allocation, no
// lock, no write to anything but this stack and errno.

[[noreturn]] void Fail(int report_fd, Step step) {
  const ChildReport report{static_cast<int>(step), errno};
  const ssize_t written = write(report_fd, &report, sizeof report);
  (void)written;  // nothing more to do if even that fails: the exit says it
  _exit(127);
}

// Makes `fd` the inherited descriptor `target`: dup2 clears close-on-exec,
// except when `fd` already is `target`.
bool PlaceAt(int fd, int target) {
  if (fd == target) return fcntl(target, F_SETFD, 0) == 0;
  return dup2(fd, target) >= 0;
}

int ChildMain(void* raw) {
  const ChildArgs& args = *static_cast<const ChildArgs*>(raw);
  const ExecChildSpec& spec = *args.spec;
  int report_fd = args.report_fd;

  // Every signal is blocked (the caller blocked them around the clone). A
  // handler of the caller's must never run here: with CLONE_VM it would run
  // on the caller's memory. Default dispositions first, so that a signal
  // pending when the mask opens below acts as it would on the worker. The
  // agent ignores SIGPIPE, and an ignored disposition survives exec: the
  // worker gets the default; other ignored signals stay ignored.
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction action;
    if (sigaction(sig, nullptr, &action) != 0 || action.sa_handler == SIG_DFL) continue;
    if (action.sa_handler == SIG_IGN && sig != SIGPIPE) continue;
    struct sigaction reset = {};
    reset.sa_handler = SIG_DFL;
    sigaction(sig, &reset, nullptr);
  }
  // A new session: the worker leads its own process group (a signal to the
  // group reaches its children too) and has no controlling terminal, so
  // reading a terminal never stops it with SIGTTIN.
  if (setsid() < 0) Fail(report_fd, Step::kSetsid);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) Fail(report_fd, Step::kDeathSignal);
  // The caller may have died between the clone and prctl(): then nobody
  // would ever send the death signal.
  if (getppid() != args.parent) _exit(128 + SIGKILL);

  // A descriptor that sits where another one goes would be overwritten
  // before its turn: move it above them first (the report pipe too).
  if (report_fd <= kControlFd) {
    const int moved = fcntl(report_fd, F_DUPFD_CLOEXEC, kControlFd + 1);
    if (moved < 0) Fail(report_fd, Step::kPlaceFd);
    report_fd = moved;
  }
  int sources[] = {spec.stdout_fd, spec.stderr_fd, spec.progress_fd, spec.control_fd};
  constexpr int kTargets[] = {STDOUT_FILENO, STDERR_FILENO, kProgressFd, kControlFd};
  for (int i = 0; i < 4; ++i) {
    if (sources[i] > kControlFd || sources[i] == kTargets[i]) continue;
    sources[i] = fcntl(sources[i], F_DUPFD_CLOEXEC, kControlFd + 1);
    if (sources[i] < 0) Fail(report_fd, Step::kPlaceFd);
  }
  // Asio's sockets (the store's listener, its connections) are not
  // close-on-exec: mark every descriptor from 3 up close-on-exec so that no
  // worker inherits them, then place the four the worker gets.
  MarkCloseOnExecFrom(3);
  for (int i = 0; i < 4; ++i) {
    if (!PlaceAt(sources[i], kTargets[i])) Fail(report_fd, Step::kPlaceFd);
  }

  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(spec.executable, const_cast<char* const*>(spec.argv), const_cast<char* const*>(spec.envp));
  Fail(report_fd, Step::kExec);
}

// The child's stack under CLONE_VM, with a guard page below it. The child
// runs a few system calls: 64 KiB is plenty.
class ChildStack {
 public:
  ChildStack() = default;
  ChildStack(const ChildStack&) = delete;
  ChildStack& operator=(const ChildStack&) = delete;
  ~ChildStack() {
    if (base_ != MAP_FAILED) munmap(base_, kGuard + kSize);
  }
  bool Allocate() {
    base_ = mmap(nullptr, kGuard + kSize, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    return base_ != MAP_FAILED && mprotect(base_, kGuard, PROT_NONE) == 0;
  }
  void* top() const { return static_cast<char*>(base_) + kGuard + kSize; }

 private:
  static constexpr size_t kGuard = 64 * 1024;  // at least one page on every page size
  static constexpr size_t kSize = 64 * 1024;
  void* base_ = MAP_FAILED;
};

Status StartError(const ExecChildSpec& spec, const std::string& what, int error) {
  return Status::IoError("cannot start '" + std::string(spec.executable) + "': " + what + ": " +
                         std::strerror(error));
}

}  // namespace

Result<pid_t> ForkExec(const ExecChildSpec& spec) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return StartError(spec, "pipe", errno);
  ChildStack stack;
  if (kShareMemory && !stack.Allocate()) {
    const int error = errno;
    close(report[0]);
    close(report[1]);
    return StartError(spec, "stack", error);
  }
  const ChildArgs args{&spec, getpid(), report[1]};

  // Blocked until the child has its own dispositions (see ChildMain).
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  pid_t pid;
  if constexpr (kShareMemory) {
    // Returns once the child called execve or exited (CLONE_VFORK).
    pid = clone(ChildMain, stack.top(), CLONE_VM | CLONE_VFORK | SIGCHLD,
                const_cast<ChildArgs*>(&args));
  } else {
    pid = fork();
    if (pid == 0) {
      ChildMain(const_cast<ChildArgs*>(&args));
      _exit(127);  // not reached: ChildMain execs or exits
    }
  }
  // Only meaningful when the clone failed; else the child may have set it.
  const int clone_error = errno;
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  close(report[1]);
  if (pid < 0) {
    close(report[0]);
    return StartError(spec, "fork", clone_error);
  }

  // End of file: the exec closed the child's copy (close-on-exec). A report:
  // the child failed and exited.
  ChildReport child{};
  ssize_t n;
  do {
    n = read(report[0], &child, sizeof child);
  } while (n < 0 && errno == EINTR);
  const int read_error = errno;
  close(report[0]);
  if (n == 0) return pid;
  if (n != static_cast<ssize_t>(sizeof child)) kill(pid, SIGKILL);  // state unknown: end it
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (n < 0) return StartError(spec, "reading its start report", read_error);
  if (n != static_cast<ssize_t>(sizeof child)) {
    return Status::IoError("cannot start '" + std::string(spec.executable) +
                           "': a truncated start report");
  }
  return StartError(spec, StepName(child.step), child.error);
}

}  // namespace muster
