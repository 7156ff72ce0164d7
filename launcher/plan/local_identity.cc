#include "launcher/plan/local_identity.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <utility>

namespace muster {
namespace {

// The numeric text of a socket address, or "" for other families.
std::string AddressText(const sockaddr* address) {
  if (address == nullptr || (address->sa_family != AF_INET && address->sa_family != AF_INET6)) {
    return "";
  }
  const socklen_t length =
      address->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  std::array<char, NI_MAXHOST> text{};
  if (getnameinfo(address, length, text.data(), text.size(), nullptr, 0, NI_NUMERICHOST) != 0) {
    return "";
  }
  // A link-local IPv6 address carries its interface ("fe80::1%eth0"); the
  // comparison is by address.
  std::string result(text.data());
  if (const auto percent = result.find('%'); percent != std::string::npos) result.resize(percent);
  return result;
}

// What `host` resolves to here (TCP, any family): its addresses as text
// and, when `canonical_name` is asked for, the canonical name(s) too.
struct Resolved {
  std::vector<std::string> names;
  std::vector<std::string> addresses;
};

Resolved Resolve(const std::string& host, bool canonical_name) {
  Resolved resolved;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (canonical_name) hints.ai_flags = AI_CANONNAME;
  addrinfo* results = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &results) != 0) return resolved;
  for (const addrinfo* r = results; r != nullptr; r = r->ai_next) {
    if (r->ai_canonname != nullptr) resolved.names.emplace_back(r->ai_canonname);
    if (std::string text = AddressText(r->ai_addr); !text.empty()) {
      resolved.addresses.push_back(std::move(text));
    }
  }
  freeaddrinfo(results);
  return resolved;
}

}  // namespace

std::vector<std::string> ResolveAddresses(const std::string& host) {
  return Resolve(host, /*canonical_name=*/false).addresses;
}

LocalIdentity ThisMachineIdentity() {
  LocalIdentity identity;
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) == 0 && name[0] != '\0') {
    const std::string hostname(name.data());
    // As torchrun does: the hostname's own addresses count as this
    // machine's, even one no interface holds (a NAT'ed public address).
    Resolved own = Resolve(hostname, /*canonical_name=*/true);
    identity.names.push_back(hostname);
    identity.names.insert(identity.names.end(), own.names.begin(), own.names.end());
    identity.addresses = std::move(own.addresses);
  }
  ifaddrs* interfaces = nullptr;
  if (getifaddrs(&interfaces) == 0) {
    for (const ifaddrs* i = interfaces; i != nullptr; i = i->ifa_next) {
      if (std::string text = AddressText(i->ifa_addr); !text.empty()) {
        identity.addresses.push_back(std::move(text));
      }
    }
    freeifaddrs(interfaces);
  }
  return identity;
}

bool EndpointIsThisMachine(const std::string& host) {
  return EndpointIsLocal(host, ResolveAddresses(host), ThisMachineIdentity());
}

}  // namespace muster
