// Asking torch's NCCL flight recorder for a dump (launcher/agent/flight_recorder.h),
// against a FIFO read the way torch's monitor thread reads it: one read per
// request, then the dump written to DUMP_STEM<rank>.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "launcher/agent/flight_recorder.h"

namespace muster {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

fs::path TempDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("muster_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// What torch does for `rank`: a FIFO at PIPE_STEM<rank>.pipe, read until a
// byte comes, then the dump written. Joined by the test.
std::thread TorchMonitor(const FlightRecorderFiles& files, int rank) {
  const std::string pipe = files.pipe_stem + std::to_string(rank) + ".pipe";
  REQUIRE(mkfifo(pipe.c_str(), 0666) == 0);
  return std::thread([files, pipe, rank] {
    // As torch: opened without waiting for a writer, then polled (here for
    // at most 5 s, so a failing test ends).
    const int fd = open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
    if (fd < 0) return;
    pollfd wait{fd, POLLIN, 0};
    char byte = 0;
    if (poll(&wait, 1, 5'000) == 1 && read(fd, &byte, 1) == 1) {
      std::ofstream(files.dump_stem + std::to_string(rank)) << "entries of rank " << rank;
    }
    close(fd);
  });
}

TEST_CASE("workers get the flight recorder's pipe in the run's directory, or the user's",
          "[flight-recorder]") {
  const FlightRecorderSetup fresh = SetUpFlightRecorder("/logs/run", {"PATH=/bin"});
  CHECK(fresh.files.pipe_stem == "/logs/run/nccl_pipe_rank_");
  CHECK(fresh.files.dump_stem == "/tmp/nccl_trace_rank_");  // torch's default
  // The ring's size and the dump's place stay torch's: only the pipe is set.
  CHECK(fresh.variables == std::map<std::string, std::string>{
                               {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "/logs/run/nccl_pipe_rank_"}});
  // What the user set stays, and is where muster looks.
  const FlightRecorderSetup own = SetUpFlightRecorder(
      "/logs/run", {"TORCH_FR_BUFFER_SIZE=100", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/mine/p_",
                    "TORCH_FR_DUMP_TEMP_FILE=/mine/d_", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/old/d_"});
  CHECK(own.variables.empty());
  CHECK(own.files.pipe_stem == "/mine/p_");
  CHECK(own.files.dump_stem == "/mine/d_");
  const FlightRecorderSetup old_name =
      SetUpFlightRecorder("/logs/run", {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/old/d_"});
  CHECK(old_name.files.dump_stem == "/old/d_");
}

TEST_CASE("a dump is asked of every rank whose pipe is read, and nothing blocks on the others",
          "[flight-recorder]") {
  const fs::path dir = TempDir("flight_recorder");
  const FlightRecorderFiles files{(dir / "pipe_").string(), (dir / "trace_").string()};
  std::thread monitor = TorchMonitor(files, 3);
  // Rank 4: a FIFO nobody reads (its process group is gone); rank 5: a
  // plain file where the pipe would be; rank 6: nothing (gloo, torch 1.x).
  REQUIRE(mkfifo((files.pipe_stem + "4.pipe").c_str(), 0666) == 0);
  std::ofstream(files.pipe_stem + "5.pipe") << "";
  // The monitor's open must be waiting before the non-blocking write finds it.
  std::vector<int> asked;
  for (int i = 0; i < 50 && asked.empty(); ++i) {
    std::this_thread::sleep_for(20ms);
    asked = AskForDumps(files, {3, 4, 5, 6});
  }
  CHECK(asked == std::vector<int>{3});
  monitor.join();
  CHECK(fs::file_size(files.pipe_stem + "5.pipe") == 0);  // not written to

  // Complete once seen twice at one size.
  DumpSizes sizes;
  const auto asked_at = std::chrono::system_clock::now();
  CHECK(FinishedDumps(files, asked, asked_at, sizes).empty());
  const auto finished = FinishedDumps(files, asked, asked_at, sizes);
  REQUIRE(finished.size() == 1);
  CHECK(finished.at(3) == files.dump_stem + "3");
  // A dump from long before the request is an old one: not this hang's.
  CHECK(FinishedDumps(files, asked, asked_at + 1h, sizes).empty());
  // No files at all: nothing asked.
  CHECK(AskForDumps(FlightRecorderFiles{}, {3}).empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace muster
