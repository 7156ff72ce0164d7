// Which rendezvous `muster status` asks when no --rdzv-endpoint is given:
// the one a job started from this shell on this host would use.
//
//   1. --rdzv-endpoint, when given;
//   2. else PET_RDZV_ENDPOINT (muster reads it as --rdzv-endpoint), when set
//      and not empty;
//   3. else localhost:29400: musterd's default port, and torchrun's c10d
//      default. (A --standalone job's rendezvous listens on a free loopback
//      port of its own; no default reaches it.)
// Likewise the token: --token-file, else PET_RDZV_CONF's token_file=, else
// none.
//
// Thread-safety: pure functions; `env` is called.
#pragma once

#include <optional>
#include <string>

#include "common/env_lookup.h"

namespace muster {

inline constexpr const char* kDefaultStatusEndpoint = "localhost:29400";

struct StatusEndpoint {
  std::string text;    // HOST[:PORT][,...], as given or the default
  std::string origin;  // "--rdzv-endpoint", "PET_RDZV_ENDPOINT" or "default"
};

// `flag`: the value of --rdzv-endpoint; nullptr when not given.
StatusEndpoint ChooseStatusEndpoint(const std::string* flag, const EnvLookup& env);

// The token file to present: `flag` (--token-file) when given, else the
// token_file key of PET_RDZV_CONF; nullopt when neither names one (or
// PET_RDZV_CONF does not parse: the job would refuse it anyway).
std::optional<std::string> ChooseStatusTokenFile(const std::string* flag, const EnvLookup& env);

}  // namespace muster
