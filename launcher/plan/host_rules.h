// Host rules: pure decisions about this machine's place in a multi-node job —
// whether the rendezvous endpoint names this machine, who serves the elastic
// rendezvous when nobody was told to, and where the worker store listens.
// The facts they read (hostname, interface addresses, DNS answers) are
// gathered by local_identity.h; nothing here touches the network.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "launcher/plan/elastic_config.h"

namespace muster {

// What this machine calls itself and the addresses it holds.
struct LocalIdentity {
  // gethostname() and the canonical name (FQDN) it resolves to; compared
  // without regard to case.
  std::vector<std::string> names;
  // Interface addresses (getifaddrs) and the hostname's resolved addresses,
  // as text ("10.0.0.5", "fe80::1"); loopback ones may be among them.
  std::vector<std::string> addresses;
};

// True when the endpoint host `host` (as written in --rdzv-endpoint, IPv6
// without brackets) is this machine: "localhost"; a loopback address; one of
// identity.names; one of identity.addresses; or a name that resolved
// (`resolved`: its addresses, empty when it did not resolve) to a loopback
// address or one of identity.addresses. Addresses compare by value, so
// "::ffff:10.0.0.5" is "10.0.0.5".
bool EndpointIsLocal(std::string_view host, const std::vector<std::string>& resolved,
                     const LocalIdentity& identity);

// How this agent takes part in the elastic rendezvous.
enum class RendezvousRole {
  kJoin,         // connect to a rendezvous served elsewhere (musterd, or another agent)
  kServe,        // serve it embedded (is_host=1, --standalone); a failed bind is an error
  kServeIfFree,  // serve it if the endpoint port is free; in use: another agent or a
                 // daemon serves it, so join as a client
};

// torchrun's c10d rule: an explicit is_host decides; otherwise, with
// `--rdzv-backend c10d` (config.host_if_local), the agents whose machine the
// endpoint names race to serve it and the losers join. `--rdzv-backend
// muster` always joins a daemon. `endpoint_is_local` is read only when
// config.host_if_local is set.
RendezvousRole DecideRendezvousRole(const ElasticConfig& config, bool endpoint_is_local);

// Whether every node of a job is on this machine: every host the nodes meet
// at (`hosts`: the rendezvous endpoints, or the static MASTER_ADDR) is a
// loopback address or "localhost", and --local-addr (`local_addr`) is unset
// or loopback too (a routable one says other machines take part).
bool AllNodesOnThisMachine(const std::vector<std::string_view>& hosts, std::string_view local_addr);

// The address a static run's store binds on node 0: MASTER_ADDR when every
// node is on this machine (`all_here`; 127.0.0.1 for "localhost") or there is
// one node, every interface otherwise, since other nodes' workers connect to
// MASTER_ADDR, whatever interface that names.
std::string StaticStoreBindHost(const std::string& master_addr, int nodes, bool all_here);

// The address an embedded rendezvous daemon binds: loopback when every node
// is on this machine (--standalone, or every --rdzv-endpoint on loopback:
// `loopback_only`), ::1 for an IPv6 endpoint, 127.0.0.1 otherwise; every
// interface otherwise, IPv6 ones too ("::", which also accepts IPv4 on
// Linux) when the endpoint host is an IPv6 address, since clients connect to
// exactly that address, and the others reach this host by whatever address
// their DNS, routes or NAT give them.
std::string DaemonBindHost(bool loopback_only, std::string_view endpoint_host);

// The address the agent's worker store binds: 127.0.0.1 when every node is on
// this machine (`loopback_only`, as above);
// --local-addr when it is an IP address (the user chose the interface);
// otherwise every interface ("0.0.0.0"), since other nodes connect to
// whatever address they resolve, and a name such as this machine's own
// hostname may resolve to 127.0.1.1 here.
std::string StoreBindHost(bool loopback_only, const std::string& local_addr);

}  // namespace muster
