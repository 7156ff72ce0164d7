#include "common/ip_address.h"

#include <boost/algorithm/string/predicate.hpp>
#include <boost/asio/ip/address.hpp>

namespace muster {
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

}  // namespace muster
