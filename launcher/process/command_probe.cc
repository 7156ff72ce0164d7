// The machine side of command_check.h: stat(2) and a short-lived interpreter.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <thread>

#include "common/clock.h"
#include "launcher/process/command_check.h"

extern char** environ;

namespace muster {
namespace {

// Exit codes the lookup gives; anything else means "no answer".
constexpr int kModuleFound = 0;
constexpr int kModuleNotFound = 86;
// Past this the lookup is abandoned: a slow interpreter must not hold the job.
constexpr auto kLookupDeadline = std::chrono::seconds(10);

PathKind StatPath(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return errno == ENOENT ? PathKind::kMissing : PathKind::kOther;
  if (S_ISREG(st.st_mode)) return PathKind::kFile;
  if (S_ISDIR(st.st_mode)) return PathKind::kDirectory;
  return PathKind::kOther;
}

ModuleLookup FindModule(const std::string& interpreter, const std::string& name) {
  // find_spec of a top-level name imports nothing; sys.path[0] is the
  // working directory under -c, as under -m.
  const std::string code = "import importlib.util, sys; sys.exit(" + std::to_string(kModuleFound) +
                           " if importlib.util.find_spec(sys.argv[1]) else " +
                           std::to_string(kModuleNotFound) + ")";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    posix_spawn_file_actions_addopen(&actions, fd, "/dev/null",
                                     fd == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0);
  }
  std::vector<std::string> args = {interpreter, "-c", code, name};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, interpreter.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return ModuleLookup::kUnknown;

  const auto deadline = Clock::now() + kLookupDeadline;
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return ModuleLookup::kUnknown;
    if (Clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return ModuleLookup::kUnknown;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!WIFEXITED(status)) return ModuleLookup::kUnknown;
  if (WEXITSTATUS(status) == kModuleFound) return ModuleLookup::kFound;
  if (WEXITSTATUS(status) == kModuleNotFound) return ModuleLookup::kNotFound;
  return ModuleLookup::kUnknown;
}

}  // namespace

CommandProbe ThisMachineProbe() { return CommandProbe{StatPath, FindModule}; }

}  // namespace muster
