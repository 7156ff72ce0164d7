// FlightRecorder: torch's NCCL flight recorder (ProcessGroupNCCL, torch 2.3
// and later), dumped when the agent finds a hang, so the report says which
// collective each rank was in, not only its Python line.
//
// torch's part: a process group made with a flight recorder (its ring's
// size, TORCH_NCCL_TRACE_BUFFER_SIZE or in later versions
// TORCH_FR_BUFFER_SIZE, above 0) and TORCH_NCCL_DEBUG_INFO_PIPE_FILE=STEM
// creates the FIFO STEM<rank>.pipe (rank: the global rank) and, for each
// write to it, dumps its last collectives to TORCH_FR_DUMP_TEMP_FILE<rank>
// (TORCH_NCCL_DEBUG_INFO_TEMP_FILE in earlier versions; default
// /tmp/nccl_trace_rank_).
//
// muster's part:
//   - SetUpFlightRecorder() gives workers the pipe's stem, in the run's
//     log directory, unless the user set one (then the user's is used).
//     The ring's size and the dump's place stay the user's and torch's:
//     their names changed across versions, and an old name set makes
//     later torch warn on every rank;
//   - AskForDumps() writes one byte to each rank's FIFO, without blocking:
//     a missing pipe (gloo, torch 1.x, no NCCL process group yet), a path
//     that is not a FIFO and a FIFO nobody reads (ENXIO) are skipped;
//   - FinishedDumps() says which asked ranks' dumps are written: present,
//     modified since they were asked for, and no longer growing.
// CPU runs create no pipe, so none of this costs them anything. Tests:
// tests/unit/launcher_flight_recorder_test.cc (a FIFO read by a thread, as
// torch's monitor thread reads it).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace muster {

struct FlightRecorderFiles {
  std::string pipe_stem;  // STEM of STEM<rank>.pipe
  std::string dump_stem;  // the dump of rank R is dump_stem + R
  bool empty() const { return pipe_stem.empty() || dump_stem.empty(); }
};

struct FlightRecorderSetup {
  FlightRecorderFiles files;
  std::map<std::string, std::string> variables;  // to add to the worker's environment
};

inline constexpr char kDefaultDumpStem[] = "/tmp/nccl_trace_rank_";

// The setup for workers whose logs go to `attempt_dir`, given the
// environment they inherit ("NAME=VALUE" entries).
FlightRecorderSetup SetUpFlightRecorder(const std::string& attempt_dir,
                                        const std::vector<std::string>& inherited_env);

// One dump request per rank whose FIFO is read; returns those ranks.
std::vector<int> AskForDumps(const FlightRecorderFiles& files, const std::vector<int>& ranks);

// What FinishedDumps() remembers between two looks: each file's size.
using DumpSizes = std::map<int, int64_t>;

// The dumps of `asked` that are complete: modified at or after `asked_at`
// and the same size as at the last look (`sizes`, updated here). Paths, by
// rank.
std::map<int, std::string> FinishedDumps(const FlightRecorderFiles& files,
                                         const std::vector<int>& asked,
                                         std::chrono::system_clock::time_point asked_at,
                                         DumpSizes& sizes);

}  // namespace muster
