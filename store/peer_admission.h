// Which peers may connect to the worker store, decided at accept from the
// peer's address alone (the TCPStore protocol has no field to authenticate
// with). Pure: no sockets, no clocks.
//
//   PeerAdmission admission = PeerAdmission::Members({"10.0.0.1", "10.0.0.2"});
//   admission.Admits(peer, local);   // true for 10.0.0.1, loopback, this host
//
// Rule, in every mode: loopback (127.0.0.0/8, ::1, and IPv4 written as
// v4-mapped IPv6, ::ffff:127.0.0.1) is admitted, and so is a connection whose
// peer address is the address it reached (a process of this host connecting
// to one of the host's own addresses). Beyond that:
//   - kEveryone: every peer (a static run, which has no membership list).
//   - kMembers: a peer whose address is one of the current generation's
//     member addresses (those the rendezvous saw and those the agents
//     advertised; entries that are not IP literals are ignored).
//   - kOverride: a peer inside one of the --store-allow CIDRs; the member
//     list plays no part. "0.0.0.0/0,::/0" admits everyone.
// A v4-mapped IPv6 address compares as the IPv4 address it carries, both as
// a peer and as a member or CIDR.
//
// Thread-safety: none needed for const use; copies are independent.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "common/status.h"

namespace muster::store {

// One CIDR block, e.g. 10.0.0.0/8 or fd00::/64. Host bits may be set
// ("10.1.2.3/8" is 10.0.0.0/8), as in `ip route`.
struct Cidr {
  boost::asio::ip::address network;  // v4-mapped forms are stored as IPv4
  int prefix_length = 0;             // 0..32 for IPv4, 0..128 for IPv6

  bool Contains(const boost::asio::ip::address& address) const;
  std::string Text() const;  // "10.0.0.0/8"
  bool operator==(const Cidr&) const = default;
};

// Parses "CIDR,CIDR,...". A bare address is a single host (/32 or /128).
// Blanks around entries are ignored; an empty list is an error.
// Error (InvalidArgument), naming `flag` (when not empty) and the bad entry:
//   "--store-allow: '10.0.0.0/33' is not a CIDR (ADDRESS/BITS, BITS at most 32 for IPv4)"
Result<std::vector<Cidr>> ParseCidrList(std::string_view text,
                                        std::string_view flag = "--store-allow");

// The IPv4 address a v4-mapped IPv6 address carries; any other address as is.
boost::asio::ip::address Unmapped(const boost::asio::ip::address& address);

// Loopback, v4-mapped loopback included.
bool IsLoopback(const boost::asio::ip::address& address);

class PeerAdmission {
 public:
  enum class Mode { kEveryone, kMembers, kOverride };

  // Admits everyone: what a store starts with.
  PeerAdmission() = default;
  static PeerAdmission Everyone() { return PeerAdmission(); }
  // Members by address; entries that do not parse as IP addresses (host
  // names) are skipped.
  static PeerAdmission Members(const std::vector<std::string>& addresses);
  static PeerAdmission Override(std::vector<Cidr> allowed);

  // Whether a connection from `peer` that reached this host at `local` (the
  // accepted socket's local address) is admitted.
  bool Admits(const boost::asio::ip::address& peer, const boost::asio::ip::address& local) const;

  Mode mode() const { return mode_; }
  // For logs: "everyone", "members=3", "store_allow=10.0.0.0/8,fd00::/64".
  std::string Describe() const;

 private:
  Mode mode_ = Mode::kEveryone;
  std::set<boost::asio::ip::address> members_;  // unmapped
  std::vector<Cidr> allowed_;
};

}  // namespace muster::store
