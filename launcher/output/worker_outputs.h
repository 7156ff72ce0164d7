// WorkerOutputs: where the output of this node's workers goes, worker by
// worker (WorkerOutput, worker_output.h, routed as output_routes.h says),
// with the end of each worker's stderr kept for the failure report and one
// timer that shows held partial lines (progress bars) when they are due.
//
// An attempt's workers may open in several batches (in place: the failed
// ranks); the filtered copies (--duplicate-std*-filters) of an attempt are
// opened (truncated) once, by its first batch, and shared by the rest.
//
// Single-threaded: on the agent's io_context. Tests:
// tests/unit/launcher_worker_outputs_test.cc.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "launcher/output/output_routes.h"
#include "launcher/output/output_tail.h"
#include "launcher/output/worker_output.h"
#include "launcher/plan/launch_options.h"
#include "launcher/process/worker_group.h"

namespace muster {

class WorkerOutputs {
 public:
  // REQUIRES: both outlive this object.
  WorkerOutputs(boost::asio::io_context& io, const LaunchOptions& options);

  // Opens the routes of `specs`' workers in `attempt_dir` (each worker's
  // files in <attempt_dir>/<local rank>), each line prefixed with its rank
  // under --prefix-output (options.prefix_output).
  Status Open(const std::vector<WorkerSpec>& specs, const std::string& attempt_dir);
  // A new attempt starts: forgets every worker's routes and stderr tail.
  void Clear();

  // Bytes a worker wrote; `tag` unknown (a worker of an earlier attempt):
  // its stderr tail only.
  void Write(uint64_t tag, Stream stream, std::string_view bytes);
  // One of a worker's streams reached its end.
  void Closed(uint64_t tag, Stream stream);
  // Every stream of every worker opened since the last CloseAll is closed.
  bool all_closed() const { return open_streams_.empty(); }
  // The attempt is over: closes every route, and calls `stop_reading(tag)`
  // for each worker (a grandchild may still hold its pipes). The stderr
  // tails stay for the failure report.
  void CloseAll(const std::function<void(uint64_t tag)>& stop_reading);

  // A survivor that rejoins in place now writes as `rank`.
  void SetRank(uint64_t tag, int rank);
  // The end of the worker's stderr; nullopt when it wrote none.
  std::optional<std::string_view> StderrTail(uint64_t tag) const;

 private:
  // Sets the timer for `due` unless it is set for earlier; when it fires,
  // writes every worker's held partial line that is due and sets it for the
  // next.
  void ReleaseHeldAt(Time due);
  std::string PrefixFor(int rank) const;

  const LaunchOptions& options_;
  std::map<uint64_t, std::unique_ptr<WorkerOutput>> outputs_;
  std::map<uint64_t, int> open_streams_;
  // Cleared at each full restart only, not when the attempt's output closes.
  std::map<uint64_t, OutputTail> stderr_tails_;
  // The filtered copies of the attempt whose directory is `filtered_dir_`.
  std::string filtered_dir_;
  FilteredCopies filtered_;
  boost::asio::steady_timer held_timer_;
  std::optional<Time> held_due_;  // when held_timer_ is set for
};

}  // namespace muster
