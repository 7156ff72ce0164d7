// ElasticConfig: how this node reaches the elastic rendezvous, as
// MakeElasticConfig (launch_plan.h) reads it from the options. A value type
// of its own, so that the host rules (host_rules.h) read it without the
// launch plan.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/host_port.h"
#include "rendezvous/net/tls_context.h"
#include "rendezvous/protocol/messages.h"
#include "rendezvous/state/settings.h"

namespace muster {

using rdzv::kDefaultRendezvousPort;

// How this node reaches the elastic rendezvous (musterd, or one embedded in
// this agent with --rdzv-conf is_host=1, or by torchrun's c10d rule: see
// host_rules.h).

struct ElasticConfig {
  std::string host;                        // the daemon's address (--rdzv-endpoint's first)
  uint16_t port = kDefaultRendezvousPort;  // 0 (with is_host): the embedded daemon picks one
  // Every endpoint of --rdzv-endpoint in order, host:port first; more than
  // one: the replicas of a replicated musterd. Empty: host:port alone.
  std::vector<Endpoint> replicas;
  bool is_host = false;  // this agent runs the daemon itself
  // --rdzv-backend c10d without is_host: an agent on the endpoint's host
  // serves the rendezvous unless another agent or a daemon already does.
  bool host_if_local = false;
  // Every node is on this machine (--standalone, or every --rdzv-endpoint on
  // loopback): the daemon and the store listen on loopback only.
  bool loopback_only = false;
  std::string token;        // from --rdzv-conf token_file=PATH; empty: none
  rdzv::Settings settings;  // timeouts from --rdzv-conf
  // TLS to the rendezvous, from --rdzv-conf tls_ca, tls_cert and tls_key:
  // the client's context (null: plain TCP), and the server's for an agent
  // that serves the rendezvous (tls_cert and tls_key are its certificate,
  // tls_ca the CA its peers' certificates must chain to); null without
  // tls_cert.
  std::shared_ptr<const rdzv::TlsContext> tls_client;
  std::shared_ptr<const rdzv::TlsContext> tls_server;
  // Key and token files that others may read: warned about at start.
  std::vector<std::string> file_warnings;
};

}  // namespace muster
