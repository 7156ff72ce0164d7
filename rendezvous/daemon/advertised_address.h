// Advertised addresses: which master address a member of a run is told.
// Pure functions; the server shell (rendezvous_server.cc) supplies the two
// ends of each member's connection.
#pragma once

#include <string>
#include <string_view>

#include "common/ip_address.h"

namespace muster::rdzv {

// PlainAddress and IsLoopbackHost: common/ip_address.h.
using muster::IsLoopbackHost;
using muster::PlainAddress;

// The master_addr to send in `member`'s Assignment (PROTOCOL.md, "Loopback
// master addresses"). A loopback `master_addr` means the master's agent
// reached the daemon over loopback, so its store runs on the daemon's host;
// a member that connected from another host (`member_peer`, the remote
// address of its connection, is not loopback) cannot reach a loopback
// address, and is told `member_local` instead: the daemon's own address on
// that connection, the one the member already used to reach this host.
// Anything else comes back unchanged: a non-loopback master_addr, a member
// on this host, or an unknown (empty) local address.
std::string MasterAddrFor(std::string_view master_addr, std::string_view member_peer,
                          std::string_view member_local);

}  // namespace muster::rdzv
