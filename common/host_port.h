// SplitEndpoint: HOST, HOST:PORT, [IPV6] or [IPV6]:PORT into its parts; the
// one parser of an endpoint's text for the launcher (--rdzv-endpoint,
// --master-addr, `muster status`) and musterd (--etcd).
//
// Errors are InvalidArgument quoting the text: "" (nothing to split), an
// unclosed '[', several ':' without brackets, characters no host name or
// address has, a port that is not a number from 0 to 65535.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace muster {

struct HostPort {
  std::string host;         // without IPv6 brackets
  std::optional<int> port;  // when one is given
};

Result<HostPort> SplitEndpoint(std::string_view text);

// A host and a port known: where a daemon or one of its replicas listens.
struct Endpoint {
  std::string host;
  uint16_t port = 0;
  // HOST:PORT, with brackets around an IPv6 address.
  std::string Text() const;
  bool operator==(const Endpoint&) const = default;
};

// "A,B,C": each item as SplitEndpoint reads it, in order. An empty item is
// an error quoting the whole text ("'a,,b' has an empty item").
Result<std::vector<HostPort>> SplitEndpointList(std::string_view text);

}  // namespace muster
