// Which of a worker's output streams reach the console: pure rules on the
// options (--local-ranks-filter, --tee, --redirects), read by the output
// routes (output/output_routes.h) and by the launch plan's warnings.
#pragma once

#include "launcher/plan/launch_options.h"

namespace muster {

// Whether local rank `local_rank`'s output reaches the console
// (--local-ranks-filter).
bool ShownOnConsole(const LaunchOptions& options, int local_rank);

// Whether `stream` (kStdOut or kStdErr) of local rank `local_rank` is tee'd:
// written to its file and shown on the console (tee'd, shown, not
// redirected). Only such streams feed the filtered copies, as torchrun
// duplicates only the streams it tails to the console.
bool TeedToConsole(const LaunchOptions& options, int local_rank, int stream);

}  // namespace muster
