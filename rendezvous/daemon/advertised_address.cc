#include "rendezvous/daemon/advertised_address.h"

#include <string>

namespace muster::rdzv {

std::string MasterAddrFor(std::string_view master_addr, std::string_view member_peer,
                          std::string_view member_local) {
  // Only a member on another host needs another address, and only the
  // address it reached us at is known to work from there.
  if (!IsLoopbackHost(master_addr) || member_peer.empty() || IsLoopbackHost(member_peer) ||
      member_local.empty() || IsLoopbackHost(member_local)) {
    return std::string(master_addr);
  }
  // Workers connect to it by name: the plain IPv4 form works with any
  // resolver, the v4-mapped one only where IPv6 is enabled.
  return PlainAddress(member_local).value_or(std::string(member_local));
}

}  // namespace muster::rdzv
