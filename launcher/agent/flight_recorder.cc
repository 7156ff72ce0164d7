#include "launcher/agent/flight_recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string_view>

namespace muster {

namespace {

// The value of `name` in `env` ("NAME=VALUE" entries), or empty.
std::string Inherited(const std::vector<std::string>& env, std::string_view name) {
  for (const std::string& entry : env) {
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
        entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return {};
}

}  // namespace

FlightRecorderSetup SetUpFlightRecorder(const std::string& attempt_dir,
                                        const std::vector<std::string>& inherited_env) {
  FlightRecorderSetup setup;
  // The ring's size is the user's: its name changed across torch versions
  // (TORCH_NCCL_TRACE_BUFFER_SIZE, later TORCH_FR_BUFFER_SIZE, the old one
  // then warned about on every rank), and without one torch makes no pipe,
  // so nothing is asked and nothing waits.
  setup.files.pipe_stem = Inherited(inherited_env, "TORCH_NCCL_DEBUG_INFO_PIPE_FILE");
  if (setup.files.pipe_stem.empty()) {
    setup.files.pipe_stem = attempt_dir + "/nccl_pipe_rank_";
    setup.variables["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] = setup.files.pipe_stem;
  }
  // Where torch writes the dump, under either of its names (later torch
  // reads TORCH_FR_DUMP_TEMP_FILE first), else its default. Not set by
  // muster, for the same reason as the size.
  setup.files.dump_stem = Inherited(inherited_env, "TORCH_FR_DUMP_TEMP_FILE");
  if (setup.files.dump_stem.empty()) {
    setup.files.dump_stem = Inherited(inherited_env, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE");
  }
  if (setup.files.dump_stem.empty()) setup.files.dump_stem = kDefaultDumpStem;
  return setup;
}

std::vector<int> AskForDumps(const FlightRecorderFiles& files, const std::vector<int>& ranks) {
  std::vector<int> asked;
  if (files.empty()) return asked;
  for (int rank : ranks) {
    const std::string pipe = files.pipe_stem + std::to_string(rank) + ".pipe";
    struct stat st {};
    if (lstat(pipe.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) continue;
    // Non-blocking: with no reader the open fails (ENXIO) instead of
    // waiting for one, and a full pipe (a dump already asked) takes no more.
    const int fd = open(pipe.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    const char byte = '1';
    const bool written = write(fd, &byte, 1) == 1 || errno == EAGAIN;
    close(fd);
    if (written) asked.push_back(rank);
  }
  return asked;
}

std::map<int, std::string> FinishedDumps(const FlightRecorderFiles& files,
                                         const std::vector<int>& asked,
                                         std::chrono::system_clock::time_point asked_at,
                                         DumpSizes& sizes) {
  std::map<int, std::string> finished;
  // Whole seconds: a file system may keep no finer modification times.
  const time_t since = std::chrono::system_clock::to_time_t(asked_at - std::chrono::seconds(1));
  for (int rank : asked) {
    const std::string path = files.dump_stem + std::to_string(rank);
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_mtime < since ||
        st.st_size == 0) {
      sizes.erase(rank);
      continue;
    }
    const auto last = sizes.find(rank);
    if (last != sizes.end() && last->second == st.st_size) finished[rank] = path;
    sizes[rank] = st.st_size;
  }
  return finished;
}

}  // namespace muster
