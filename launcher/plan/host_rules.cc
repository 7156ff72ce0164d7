#include "launcher/plan/host_rules.h"

#include <algorithm>
#include <boost/algorithm/string/predicate.hpp>
#include <optional>

#include "common/ip_address.h"

namespace muster {
namespace {

// An address that is loopback or held by this machine.
bool IsOwnAddress(std::string_view text, const std::vector<std::string>& own) {
  const std::optional<std::string> address = PlainAddress(text);
  if (!address) return false;
  if (IsLoopbackHost(*address)) return true;
  return std::ranges::any_of(
      own, [&](const std::string& mine) { return PlainAddress(mine) == address; });
}

}  // namespace

bool EndpointIsLocal(std::string_view host, const std::vector<std::string>& resolved,
                     const LocalIdentity& identity) {
  if (host.empty()) return false;
  if (IsLoopbackHost(host)) return true;
  if (std::ranges::any_of(identity.names, [&](const std::string& name) {
        return boost::algorithm::iequals(host, name);
      })) {
    return true;
  }
  if (IsOwnAddress(host, identity.addresses)) return true;
  // A name that is neither this machine's hostname nor its FQDN (an alias, a
  // CNAME, a second interface's name) still names it if it leads here. On
  // another host, this machine's name resolves to a routable address, which
  // is not one of that host's own.
  return std::ranges::any_of(resolved, [&](const std::string& address) {
    return IsOwnAddress(address, identity.addresses);
  });
}

RendezvousRole DecideRendezvousRole(const ElasticConfig& config, bool endpoint_is_local) {
  // An explicit is_host (or --standalone) wins, as in torchrun.
  if (config.is_host) return RendezvousRole::kServe;
  if (!config.host_if_local) return RendezvousRole::kJoin;
  // Several agents may share the endpoint's host: binding the port decides
  // which one serves, and a musterd already there wins the same way.
  return endpoint_is_local ? RendezvousRole::kServeIfFree : RendezvousRole::kJoin;
}

std::string DaemonBindHost(bool loopback_only, std::string_view endpoint_host) {
  const std::optional<std::string> address = PlainAddress(endpoint_host);
  const bool ipv6 = address && address->find(':') != std::string::npos;
  if (loopback_only) return ipv6 ? "::1" : "127.0.0.1";
  return ipv6 ? "::" : "0.0.0.0";
}

std::string StoreBindHost(bool loopback_only, const std::string& local_addr) {
  if (loopback_only) return "127.0.0.1";
  if (PlainAddress(local_addr)) return local_addr;
  return "0.0.0.0";
}

bool AllNodesOnThisMachine(const std::vector<std::string_view>& hosts,
                           std::string_view local_addr) {
  return std::all_of(hosts.begin(), hosts.end(), IsLoopbackHost) &&
         (local_addr.empty() || IsLoopbackHost(local_addr));
}

std::string StaticStoreBindHost(const std::string& master_addr, int nodes, bool all_here) {
  if (all_here && !PlainAddress(master_addr)) return "127.0.0.1";  // "localhost"
  return all_here || nodes == 1 ? master_addr : "0.0.0.0";
}

}  // namespace muster
