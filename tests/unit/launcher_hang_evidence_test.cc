// HangEvidence (launcher/agent/hang_evidence.h) against real processes:
// three Python interpreters that register faulthandler as a warm worker
// does, two waiting in one function and one in another, and a process that
// dumps no stacks. The verdict names the odd one out, and the stacks file
// holds every rank's dump.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "launcher/agent/hang_evidence.h"
#include "launcher/plan/worker_env.h"

namespace muster {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Waits in wait_here() (or stuck_here() with "stuck"), with faulthandler on
// the stack signal writing to argv[2].
constexpr char kScript[] = R"(
import faulthandler, sys, time
f = open(sys.argv[2], "a")
faulthandler.register(int(sys.argv[3]), file=f, all_threads=True, chain=False)
open(sys.argv[2] + ".ready", "w").close()
def wait_here():
    time.sleep(600)
def stuck_here():
    time.sleep(600)
(stuck_here if sys.argv[1] == "stuck" else wait_here)()
)";

struct Child {
  pid_t pid = 0;
  ~Child() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

pid_t Spawn(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_CASE("evidence from real processes names the rank not where the others wait") {
  REQUIRE(access("/usr/bin/python3", X_OK) == 0);  // Debian's, which the suite installs
  const fs::path dir =
      fs::temp_directory_path() / ("muster_hang_evidence_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string signal = std::to_string(StackDumpSignal());
  Child children[4];
  std::vector<HangSubject> subjects;
  for (int rank = 0; rank < 3; ++rank) {
    const std::string file = (dir / ("stacks" + std::to_string(rank))).string();
    children[rank].pid =
        Spawn({"/usr/bin/python3", "-c", kScript, rank == 1 ? "stuck" : "wait", file, signal});
    subjects.push_back({rank, 10 + rank, children[rank].pid, true, file});
  }
  children[3].pid = Spawn({"/bin/sleep", "600"});
  subjects.push_back({3, 13, children[3].pid, false, ""});
  for (int rank = 0; rank < 3; ++rank) {
    const std::string ready = subjects[static_cast<size_t>(rank)].stack_file + ".ready";
    for (int i = 0; i < 200 && !fs::exists(ready); ++i) usleep(50'000);
    REQUIRE(fs::exists(ready));
  }

  boost::asio::io_context io;
  HangEvidence evidence(io, StackDumpSignal(), {.settle = 200ms, .window = 300ms});
  // Rank 11 runs an NCCL process group (a FIFO read as torch's monitor
  // thread reads it); the others none (gloo): only it is asked for a dump.
  const FlightRecorderFiles recorder{(dir / "nccl_pipe_rank_").string(),
                                     (dir / "nccl_trace_rank_").string()};
  evidence.SetFlightRecorder(recorder);
  const std::string pipe = recorder.pipe_stem + "11.pipe";
  REQUIRE(mkfifo(pipe.c_str(), 0666) == 0);
  std::thread monitor([&] {
    const int fd = open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
    if (fd < 0) return;
    pollfd wait{fd, POLLIN, 0};
    char byte = 0;
    if (poll(&wait, 1, 10'000) == 1 && read(fd, &byte, 1) == 1) {
      std::ofstream(recorder.dump_stem + "11") << "rank 11's last collectives";
    }
    close(fd);
  });
  std::optional<HangVerdict> verdict;
  std::string written;
  const std::string report = (dir / "hang.txt").string();
  evidence.Gather(subjects, report, [&](const HangVerdict& v, const std::string& path) {
    verdict = v;
    written = path;
  });
  CHECK(evidence.busy());
  io.run_for(5s);
  REQUIRE(verdict);
  CHECK_FALSE(evidence.busy());
  CHECK_FALSE(verdict->alive);
  CHECK(verdict->culprits == std::vector<int>{11});
  CHECK_THAT(verdict->summary,
             Catch::Contains("rank 11 at File \"<string>\", line 9 in stuck_here"));
  CHECK(written == report);
  const std::string text = Read(report);
  CHECK_THAT(text, Catch::Contains("== rank 13 (local_rank 3"));
  CHECK_THAT(text, Catch::Contains("(no stacks: not a warm-started Python worker)"));
  CHECK_THAT(text, Catch::Contains("in wait_here"));
  monitor.join();
  CHECK_THAT(text, Catch::Contains("== NCCL flight recorder"));
  CHECK_THAT(text, Catch::Contains("rank 11: " + recorder.dump_stem + "11\n"));
  CHECK_THAT(text, !Catch::Contains("rank 10: "));
  // The processes live on: the signal only dumped their stacks.
  for (const Child& child : children) CHECK(kill(child.pid, 0) == 0);
  fs::remove_all(dir);
}

TEST_CASE("a cancelled gathering never calls back") {
  boost::asio::io_context io;
  HangEvidence evidence(io, StackDumpSignal(), {.settle = 10ms, .window = 10ms});
  bool called = false;
  evidence.Gather({}, "", [&](const HangVerdict&, const std::string&) { called = true; });
  evidence.Cancel();
  io.run_for(200ms);
  CHECK_FALSE(called);
  CHECK_FALSE(evidence.busy());
}

TEST_CASE("a process's activity is read from /proc, and a gone one has none") {
  const ProcessActivity self = ReadProcessActivity(getpid());
  CHECK(self.cpu_ticks.has_value());
  CHECK(self.io_bytes.has_value());
  const ProcessActivity gone = ReadProcessActivity(999'999'999);
  CHECK_FALSE(gone.cpu_ticks);
  CHECK_FALSE(gone.io_bytes);
}

}  // namespace
}  // namespace muster
