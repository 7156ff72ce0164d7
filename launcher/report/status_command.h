// `muster status [--rdzv-endpoint HOST:PORT] [--run-id ID] [--json] [--token-file F]`:
// asks a rendezvous daemon (by default the one a job here would use,
// status_endpoint.h) for its runs and prints them — as the daemon's JSON
// document with --json, otherwise as a table per run: state, generation,
// restarts, its median steps per second and stragglers ("no step reports"
// when no worker reports steps), and per node host, group rank, global
// ranks, local world size, steps per second (stragglers marked) and
// heartbeat age.
#pragma once

#include <string>
#include <vector>

#include "common/env_lookup.h"
#include "launcher/report/status_table.h"  // FormatStatusTable

namespace muster {

// args: what follows "status"; env: where PET_RDZV_ENDPOINT and
// PET_RDZV_CONF are read. Returns the process exit code (0 ok, 1 daemon
// unreachable or refused, or its document unreadable or malformed, 2 bad
// arguments: one line naming the value);
// prints to stdout/stderr.
int RunStatusCommand(const std::vector<std::string>& args, const EnvLookup& env);

// `muster status --help` (no trailing newline).
std::string StatusHelpText();

}  // namespace muster
