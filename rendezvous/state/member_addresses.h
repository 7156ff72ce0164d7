// The member addresses a generation's master is sent for its worker store's
// admission rule (AssignmentMessage::member_addrs, store/peer_admission.h).
// Pure.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace muster::rdzv {

// The list may take at most this many bytes (addresses and their JSON
// quoting), well inside a 1 MiB frame: 10,000 members with one IPv4 address
// each take about 180 KB, with two (seen and advertised differ) 360 KB.
inline constexpr size_t kMaxMemberAddrBytes = 512 * 1024;

// From each member's (seen, advertised) pair: the connection address the
// rendezvous saw and the Join.store_addr it advertised. Keeps IP literals
// only (a host name says nothing about where a connection comes from), sorted
// and without repeats. Returns an empty list when the result would take more
// than kMaxMemberAddrBytes (the master then admits everyone and says so).
std::vector<std::string> MemberAddressList(
    const std::vector<std::pair<std::string, std::string>>& seen_and_advertised);

}  // namespace muster::rdzv
