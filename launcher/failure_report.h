// The summary muster prints when workers fail: the root cause (first failure
// in time) with everything needed to find it, then the other failures.
#pragma once

#include <string>
#include <vector>

#include "launcher/worker_group.h"

namespace muster {

struct ReportContext {
  std::string host;
  int attempt = 0;  // restart count of the failed attempt
  int max_restarts = 0;
  bool will_restart = false;
  // The restart is an in-place recovery: only the failed workers start again.
  bool in_place = false;
};

// The message a worker left in its TORCHELASTIC_ERROR_FILE (torch's
// @record format: {"message": {"message": "...", "extraInfo": {...}}} or
// {"message": "..."}), or "" if there is no readable file.
std::string ReadErrorFileMessage(const std::string& path);

// ISO 8601 UTC with milliseconds: 2026-11-21T09:12:03.123Z
std::string FormatWallTime(WallTime t);

// Multi-line report, ending in '\n'. REQUIRES: !failures.empty().
std::string FormatFailureReport(const std::vector<WorkerFailure>& failures,
                                const ReportContext& context);

}  // namespace muster
