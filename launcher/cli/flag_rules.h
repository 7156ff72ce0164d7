// Rules that tie several flags together, applied after every flag has been
// parsed on its own: exclusive run modes, --standalone, --node-rank against
// --nnodes, and the --python default.
#pragma once

#include "common/status.h"
#include "launcher/cli/env_source.h"
#include "launcher/cli/raw_settings.h"
#include "launcher/launch_options.h"

namespace muster::cli {

// `given` holds the merged settings (what the user set, from any source, with
// origins); `options` holds them parsed. On success completes `options`:
//   --standalone: rdzv_backend "c10d", rdzv_endpoint "localhost:0", and a
//     fresh random rdzv_id unless --rdzv-id was given;
//   python: --python, else $MUSTER_PYTHON (from `env`), else "python3".
// Fails (InvalidArgument, one line naming the flags as the user gave them)
// when more than one of -m/--no-python/--run-path is on, when --standalone
// meets an --nnodes other than 1, or when --node-rank >= the maximum nodes.
Status ApplyFlagRules(const RawSettings& given, const EnvLookup& env, LaunchOptions& options);

// A random version-4 UUID ("3f1c...-4...-..."), for --standalone's rdzv_id.
std::string RandomRunId();

}  // namespace muster::cli
