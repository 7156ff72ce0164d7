// `muster --dry-run`: the launch as it would happen, printed instead of run.
// Every flag with its resolved value and where the value came from (flag,
// env, file, SLURM, default), then what this node would start.
//
// Thread-safety: pure.
#pragma once

#include <optional>
#include <string>

#include "launcher/cli/extra_options.h"
#include "launcher/cli/raw_settings.h"
#include "launcher/plan/launch_options.h"
#include "launcher/plan/launch_plan.h"

namespace muster {

// The report, one line per item, ending with a newline. `given` holds the
// merged settings with their origins; `elastic` is nullopt for static and
// one-node launches.
std::string DryRunReport(const LaunchOptions& options, const cli::ExtraOptions& extras,
                         const cli::RawSettings& given, const LaunchPlan& plan,
                         const std::optional<ElasticConfig>& elastic);

}  // namespace muster
