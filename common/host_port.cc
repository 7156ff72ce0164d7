#include "common/host_port.h"

#include "common/decimal.h"
#include "common/quote.h"

namespace muster {
namespace {

bool IsHostChar(char c, bool bracketed) {
  const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  if (bracketed) return alnum || c == ':' || c == '.' || c == '%';
  return alnum || c == '.' || c == '-' || c == '_';
}

bool IsHost(std::string_view host, bool bracketed) {
  if (host.empty()) return false;
  for (char c : host) {
    if (!IsHostChar(c, bracketed)) return false;
  }
  return true;
}

}  // namespace

Result<HostPort> SplitEndpoint(std::string_view text) {
  if (text.empty()) return Status::InvalidArgument("'' must be HOST[:PORT]");
  std::string_view host = text;
  std::string_view port;
  bool has_port = false;
  const bool bracketed = text.front() == '[';
  if (bracketed) {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) {
      return Status::InvalidArgument(Quote(text) + " has '[' without a closing ']'");
    }
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return Status::InvalidArgument(Quote(text) + " must be [IPV6] or [IPV6]:PORT");
      }
      port = rest.substr(1);
      has_port = true;
    }
  } else {
    const std::size_t colon = text.find(':');
    if (colon != std::string_view::npos && text.find(':', colon + 1) != std::string_view::npos) {
      return Status::InvalidArgument(Quote(text) +
                                     " has several ':'; write an IPv6 address in brackets, e.g. "
                                     "'[::1]:29400'");
    }
    if (colon != std::string_view::npos) {
      host = text.substr(0, colon);
      port = text.substr(colon + 1);
      has_port = true;
    }
  }
  if (!IsHost(host, bracketed)) {
    return Status::InvalidArgument(Quote(text) +
                                   " must be HOST[:PORT] with a host name or address");
  }
  HostPort parts{std::string(host), std::nullopt};
  if (has_port) {
    std::optional<uint64_t> number = ParseDecimal(port, 65535);
    if (!number) {
      return Status::InvalidArgument(Quote(text) +
                                     " has a port that is not a number from 0 to 65535");
    }
    parts.port = static_cast<int>(*number);
  }
  return parts;
}

Result<std::vector<HostPort>> SplitEndpointList(std::string_view text) {
  std::vector<HostPort> out;
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (item.empty()) return Status::InvalidArgument(Quote(text) + " has an empty item");
    auto parts = SplitEndpoint(item);
    if (!parts.ok()) return parts.status();
    out.push_back(std::move(*parts));
    if (comma == std::string_view::npos) return out;
    rest = rest.substr(comma + 1);
  }
}

std::string Endpoint::Text() const {
  std::string text;
  const bool v6 = host.find(':') != std::string::npos;
  if (v6) text += '[';
  text += host;
  if (v6) text += ']';
  text += ':';
  text += std::to_string(port);
  return text;
}

}  // namespace muster
