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
// none; and TLS: --rdzv-conf's tls_ca, tls_cert and tls_key, else
// PET_RDZV_CONF's, else plain TCP.
//
// Thread-safety: pure functions; `env` is called.
#pragma once

#include <optional>
#include <string>

#include "common/env_lookup.h"
#include "common/status.h"
#include "rendezvous/net/tls_context.h"

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
// PET_RDZV_CONF does not parse: ChooseStatusTls refuses it then).
std::optional<std::string> ChooseStatusTokenFile(const std::string* flag, const EnvLookup& env);

// The TLS files to connect with: the tls_* keys of `conf_flag` (muster
// status --rdzv-conf) when given, else of PET_RDZV_CONF; none given: plain
// TCP. Each file's flag names where it came from ("--rdzv-conf tls_ca",
// "PET_RDZV_CONF tls_ca"). An unparsable --rdzv-conf or PET_RDZV_CONF is
// an error naming it and the bad pair, never a fall back to plain TCP:
//   "PET_RDZV_CONF: pair 'tls_ca' is not KEY=VALUE (expected 'key=value,key2=value2')"
Result<rdzv::TlsClientFiles> ChooseStatusTls(const std::string* conf_flag, const EnvLookup& env);

// A warning when the token file at `path` may be read by its group or by
// every user (`origin` names where the path came from: "--token-file"):
//   "--token-file '/home/u/token' is readable by users other than its owner
//    (mode 0640): whoever reads it joins the cluster; chmod go-rwx it"
// nullopt when only its owner may read it, or when it cannot be examined
// (reading it then fails with its own error).
std::optional<std::string> StatusTokenFileWarning(const std::string& origin,
                                                  const std::string& path);
// The rule on a mode alone (st_mode bits): a group or others bit is set.
bool TokenModeIsShared(unsigned mode);

}  // namespace muster
