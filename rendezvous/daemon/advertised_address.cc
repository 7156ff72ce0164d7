#include "rendezvous/daemon/advertised_address.h"

#include <boost/algorithm/string/predicate.hpp>
#include <boost/asio/ip/address.hpp>
#include <optional>
#include <string>

namespace muster::rdzv {
namespace {

// A dual-stack socket shows an IPv4 peer as ::ffff:a.b.c.d: take the IPv4
// form, so that one address has one spelling.
std::optional<boost::asio::ip::address> ParseAddress(std::string_view text) {
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(std::string(text), ec);
  if (ec) return std::nullopt;
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    address = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6());
  }
  return address;
}

}  // namespace

std::optional<std::string> PlainAddress(std::string_view text) {
  const auto address = ParseAddress(text);
  if (!address) return std::nullopt;
  return address->to_string();
}

bool IsLoopbackHost(std::string_view host) {
  if (boost::algorithm::iequals(host, "localhost")) return true;
  const auto address = ParseAddress(host);
  return address && address->is_loopback();
}

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
