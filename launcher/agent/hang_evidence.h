// HangEvidence: what the agent gathers when its worker group suspects a hang
// (WorkerGroup::hang_evidence_wanted()), for JudgeHang
// (launcher/process/hang_judge.h) to decide on:
//   t = 0      each worker that dumps stacks gets the stack signal
//              (tgkill to its main thread: faulthandler's handler runs in C
//              even while the script is blocked in C++);
//   t = 0.3 s  each worker's CPU time and I/O bytes (/proc/PID/stat, io);
//   t = 1.3 s  the same again, then the second stack signal (a rank used
//              CPU when it ran for kBusyShare of the second between, and
//              did I/O when it read or wrote kBusyBytes: an idle process
//              still takes a clock tick now and then);
//   t = 1.6 s  both dumps read from each worker's stack file (the bytes
//              each signal added), the verdict judged; when hung, every
//              rank's stacks and the verdict are written to `report_path`;
//   then       when hung, each rank's NCCL process group is asked for its
//              flight recorder's dump (flight_recorder.h); the report
//              waits for those asked, up to kDumpWait, and names them (a
//              CPU run has none to ask: no wait).
// The activity window holds no dump, so a dump's own write is not taken
// for the rank's I/O. A worker that is stopped or blocked in the kernel
// writes nothing: it answered no dump.
//
// Single-threaded: on the agent's io_context. Tests:
// tests/unit/launcher_hang_evidence_test.cc (real child processes).
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "launcher/agent/flight_recorder.h"
#include "launcher/process/hang_judge.h"
#include "launcher/process/worker_group.h"

namespace muster {

// A worker's CPU time (clock ticks) and bytes read and written, from /proc;
// nullopt fields when the process is gone or the file unreadable.
struct ProcessActivity {
  std::optional<uint64_t> cpu_ticks;
  std::optional<uint64_t> io_bytes;
};
ProcessActivity ReadProcessActivity(pid_t pid);

class HangEvidence {
 public:
  // The verdict, and `report_path` when the stacks were written there
  // (empty when alive or when writing failed).
  using Done = std::function<void(const HangVerdict&, const std::string& report_path)>;

  static constexpr double kBusyShare = 0.05;
  static constexpr std::chrono::milliseconds kDumpWait{3'000};
  static constexpr std::chrono::milliseconds kDumpPoll{200};
  static constexpr uint64_t kBusyBytes = 64 * 1024;

  struct Timing {
    std::chrono::milliseconds settle{300};   // a dump's write to the first sample
    std::chrono::milliseconds window{1000};  // between the two samples
  };

  HangEvidence(boost::asio::io_context& io, int stack_signal, Timing timing);
  HangEvidence(boost::asio::io_context& io, int stack_signal)
      : HangEvidence(io, stack_signal, Timing{}) {}

  // Starts gathering; `done` runs on the io_context once it is judged,
  // unless Cancel() ran first. REQUIRES: !busy().
  void Gather(std::vector<HangSubject> subjects, std::string report_path, Done done);
  // Drops the gathering under way (the group it was for is gone).
  void Cancel();
  // Where the workers' flight recorders are asked for dumps (empty: not asked).
  void SetFlightRecorder(FlightRecorderFiles files) { flight_recorder_ = std::move(files); }
  bool busy() const { return busy_; }

 private:
  struct Gathered {
    HangSubject worker;
    uint64_t offset = 0;  // the stack file's size before a signal
    std::string first;    // the first dump's text
    ProcessActivity first_sample;
    ProcessActivity second_sample;
  };
  void SignalAll(std::vector<Gathered>& ranks);
  void After(std::chrono::milliseconds delay, std::function<void()> then);
  void Judge();
  // Hung: waits for the flight recorders' dumps asked for, until `deadline`.
  void WaitForDumps(std::chrono::steady_clock::time_point deadline);
  // Writes the report (when hung) and hands the verdict over.
  void Report();

  boost::asio::io_context& io_;
  int stack_signal_;
  Timing timing_;
  boost::asio::steady_timer timer_;
  bool busy_ = false;
  uint64_t round_ = 0;  // a Cancel() makes earlier timers' work stale
  std::vector<Gathered> ranks_;
  std::string report_path_;
  Done done_;
  // The judgement, kept while the dumps are awaited.
  HangVerdict verdict_;
  std::vector<RankEvidence> evidence_;
  std::vector<std::string> seconds_;  // each rank's second stack dump
  FlightRecorderFiles flight_recorder_;
  std::vector<int> dumps_asked_;
  std::chrono::system_clock::time_point dumps_asked_at_;
  DumpSizes dump_sizes_;
  std::map<int, std::string> dumps_;
};

}  // namespace muster
