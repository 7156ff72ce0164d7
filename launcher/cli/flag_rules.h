// Rules that tie several flags together, applied after every flag has been
// parsed on its own: exclusive run modes, --standalone, --node-rank against
// --nnodes, and the --python default.
#pragma once

#include "common/status.h"
#include "launcher/cli/command_mode.h"
#include "launcher/cli/env_source.h"
#include "launcher/cli/flag_table.h"
#include "launcher/cli/raw_settings.h"
#include "launcher/plan/launch_options.h"

namespace muster::cli {

// `given` holds the merged settings (what the user set, from any source, with
// origins); `options` holds them parsed. On success completes `options`:
//   --standalone: rdzv_backend "c10d", rdzv_endpoint "localhost:0", and a
//     fresh random rdzv_id unless --rdzv-id was given;
//   python: --python, else $MUSTER_PYTHON (from `env`), else "python3".
// Fails (InvalidArgument, one line naming the flags as the user gave them)
// when more than one of -m/--no-python/--run-path is on, when --standalone
// meets an --nnodes other than 1, when --node-rank >= the maximum nodes, or
// when --virtual-local-rank meets --gpu-visibility all.
Status ApplyFlagRules(const RawSettings& given, const EnvLookup& env, LaunchOptions& options);

// The rules of `mode` (see command_mode.h), which it records in
// parsed.extras.mode. kLaunch: sets
// parsed.options.local_rank_flag ("--local_rank" unless --local-rank-arg
// local-rank; "" with --use-env). Fails when --use-env meets --local-rank-arg,
// or --no-python comes without --use-env (as torch.distributed.launch). kRun:
// fails when a `muster launch` flag (--use-env, --local-rank-arg) is given.
Status ApplyCommandModeRules(const RawSettings& given, CommandMode mode, ParsedFlags& parsed);

// A random version-4 UUID ("3f1c...-4...-..."), for --standalone's rdzv_id.
std::string RandomRunId();

}  // namespace muster::cli
