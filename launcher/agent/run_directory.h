// RunDirectory: where one run's worker files go (error files, redirected
// output, filtered copies), attempt by attempt.
//   - With --log-dir: a directory of its own per run, <log dir>/<run id>_XXXXXX,
//     as torchrun makes, so that no run writes over another's files (static
//     runs all have the run id "none"), nor two agents of one elastic run
//     that share --log-dir. Kept.
//   - Without: <temp dir>/muster-<run id>-XXXXXX, removed when the
//     RunDirectory goes unless it holds files the user asked for
//     (--redirects, --tee), whose place is then logged as a warning.
// Tests: tests/unit/launcher_run_directory_test.cc.
#pragma once

#include <string>

#include "common/status.h"
#include "launcher/plan/launch_options.h"

namespace muster {

class RunDirectory {
 public:
  // Creates the directory and logs where it is; an error names the setting
  // and the path.
  static Result<RunDirectory> Create(const LaunchOptions& options, const std::string& run_id);

  RunDirectory() = default;  // none yet: path() is empty
  RunDirectory(RunDirectory&& other) noexcept;
  RunDirectory& operator=(RunDirectory&& other) noexcept;
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;
  ~RunDirectory();

  const std::string& path() const { return path_; }
  // attempt_<N> under it: the files of attempt `attempt`.
  std::string AttemptDir(int attempt) const;
  // Whether its files stay after the run (the failure report says where).
  bool kept() const { return !remove_at_end_; }

 private:
  RunDirectory(std::string path, bool remove_at_end)
      : path_(std::move(path)), remove_at_end_(remove_at_end) {}

  std::string path_;
  bool remove_at_end_ = false;
};

}  // namespace muster
