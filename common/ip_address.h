// IP addresses in text: one canonical spelling, and whether a host is
// loopback. Pure functions (no resolver: a name is not an address).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace muster {

// The IP address in `text` in one canonical spelling ("10.0.0.5",
// "fe80::1"; an IPv4-mapped IPv6 address as plain IPv4), so that addresses
// compare by value; nullopt when `text` is not an IP address (a name).
std::optional<std::string> PlainAddress(std::string_view text);

// True for a loopback IP address in any spelling (127.0.0.0/8, ::1,
// ::ffff:127.x.y.z) and for the name "localhost" (any case); false for
// other names and for text that is not an address.
bool IsLoopbackHost(std::string_view host);

}  // namespace muster
