// Where each worker's output goes, decided from the options: the console
// (unless --redirects or --local-ranks-filter keep it off), a file per stream
// (--log-dir, --redirects, --tee) and the attempt's filtered copies
// (--duplicate-stdout-filters, --duplicate-stderr-filters).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "launcher/output/worker_output.h"
#include "launcher/plan/console_streams.h"
#include "launcher/plan/launch_options.h"

namespace muster {

// One attempt's filtered copies; null where no filter was given.
struct FilteredCopies {
  std::shared_ptr<FilteredCopy> out;  // <attempt_dir>/filtered_stdout.log
  std::shared_ptr<FilteredCopy> err;  // <attempt_dir>/filtered_stderr.log
};

// Creates the filtered copies the options ask for, in `attempt_dir` (which
// must exist). Returns an error naming a file that cannot be created.
Result<FilteredCopies> OpenFilteredCopies(const LaunchOptions& options,
                                          const std::string& attempt_dir);

// ShownOnConsole and TeedToConsole: plan/console_streams.h.

struct WorkerRoutes {
  StreamRoute out;
  StreamRoute err;
};

// The routes of local rank `local_rank`, whose files live in `rank_dir`
// ("<attempt dir>/<local rank>"). Per stream: the console when shown and not
// redirected; "<rank_dir>/stdout.log" (or stderr.log) with --log-dir or when
// redirected or tee'd; the filtered copy when TeedToConsole. Pure.
WorkerRoutes RoutesFor(const LaunchOptions& options, int local_rank, const std::string& rank_dir,
                       const FilteredCopies& filtered);

}  // namespace muster
