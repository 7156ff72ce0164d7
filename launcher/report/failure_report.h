// The summary muster prints when workers fail: the root cause (first failure
// in time) with everything needed to find it, then the other failures.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/process/worker_group.h"

namespace muster {

struct ReportContext {
  std::string host;
  int attempt = 0;  // restart count of the failed attempt
  int max_restarts = 0;
  bool will_restart = false;
  // The restart is an in-place recovery: only the failed workers start again.
  bool in_place = false;
  // The workers' files (error files, logs) outlive muster: the report names
  // them. false: they live in a temporary directory removed when muster
  // exits, so the report quotes the error file's message but names no path.
  bool files_kept = true;
  // What runs a Python worker, as the user would choose another:
  // InterpreterText (launch_plan.h). Empty: the workers are not run
  // by muster's interpreter (--no-python); no interpreter hint then.
  std::string interpreter = {};
  // The end of each failed worker's stderr, by local rank (absent: none
  // kept); read for what the report can explain, never printed.
  std::map<int, std::string> stderr_tails = {};
};

// The message a worker left in its TORCHELASTIC_ERROR_FILE (torch's
// @record format: {"message": {"message": "...", "extraInfo": {...}}} or
// {"message": "..."}), or "" if there is no readable file.
std::string ReadErrorFileMessage(const std::string& path);

// Whether `worker_text` (an error file's message or the end of a worker's
// stderr) says Python could not import torch itself ("No module named
// 'torch'"; a missing submodule of an installed torch is not that).
bool SaysTorchIsMissing(std::string_view worker_text);

// ISO 8601 UTC with milliseconds: 2026-11-21T09:12:03.123Z
std::string FormatWallTime(WallTime t);

// Multi-line report, ending in '\n': the attempt and the restarts used of
// the budget, then per failure its rank, host, pid, exit code or signal,
// time, its log directory and error file (when `context.files_kept`), the
// error file's message, and when the worker's Python had no torch, which
// interpreter ran it and how to choose another. REQUIRES: !failures.empty().
std::string FormatFailureReport(const std::vector<WorkerFailure>& failures,
                                const ReportContext& context);

}  // namespace muster
