// ExtraOptions: what recent torchrun command lines carry beyond
// LaunchOptions. They are parsed and validated so a torchrun command line
// works unchanged; LaunchOptions (the shared contract) stays as it is.
#pragma once

#include <string>
#include <vector>

namespace muster::cli {

struct ExtraOptions {
  // --event-log-handler: accepted, no effect (muster has no Python event hooks).
  std::string event_log_handler = "null";
  // --numa-binding: "", node, socket, exclusive, core-complex. Accepted, not
  // yet applied; empty = no binding.
  std::string numa_binding;
  // --signals-to-handle: signals muster forwards to its workers, by name.
  std::vector<std::string> signals_to_handle = {"SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"};
};

}  // namespace muster::cli
