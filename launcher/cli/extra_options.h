// ExtraOptions: what recent torchrun command lines carry beyond
// LaunchOptions. They are parsed and validated so a torchrun command line
// works unchanged; LaunchOptions (the shared contract) stays as it is.
#pragma once

#include <string>
#include <vector>

#include "launcher/cli/command_mode.h"

namespace muster::cli {

struct ExtraOptions {
  // --event-log-handler: accepted, no effect (muster has no Python event hooks).
  std::string event_log_handler = "null";
  // --numa-binding: "", node, socket, exclusive, core-complex. Accepted, not
  // yet applied; empty = no binding.
  std::string numa_binding;
  // --signals-to-handle: signals muster forwards to its workers, by name.
  std::vector<std::string> signals_to_handle = {"SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"};
  // --logs-specs: the name of a torchrun LogsSpecs plugin (a Python entry
  // point). Accepted, no effect; "" when not given.
  std::string logs_specs;
  // Which command the line was: `muster` or `muster launch`.
  CommandMode mode = CommandMode::kRun;
  // `muster launch` only. --use-env: pass no --local_rank argument (workers
  // read LOCAL_RANK). --local-rank-arg: which spelling to pass otherwise.
  bool use_env = false;
  std::string local_rank_arg = "local_rank";  // "local_rank" or "local-rank"
  // --dry-run: print the resolved plan and where each value came from, start nothing.
  bool dry_run = false;
  // --slurm: "auto" derives unset flags from an srun step's variables, "off" ignores them.
  std::string slurm = "auto";
  // Values set by a rule rather than by a source, for --dry-run:
  // "rdzv-conf is_host=1 (SLURM_NODEID=0: this node hosts the rendezvous)".
  std::vector<std::string> derived;
};

}  // namespace muster::cli
