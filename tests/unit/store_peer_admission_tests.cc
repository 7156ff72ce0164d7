// PeerAdmission and the --store-allow CIDR list: who may connect to the
// worker store, by address.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "store/peer_admission.h"

namespace muster::store {
namespace {

namespace ip = boost::asio::ip;

ip::address A(const std::string& text) { return ip::make_address(text); }

// A connection that reached this host on an address of its own network.
const ip::address kLocal = ip::make_address("10.0.0.1");

TEST_CASE("CIDR lists parse with host bits, bare addresses and blanks", "[store][admission]") {
  struct Row {
    std::string text;
    std::vector<std::string> cidrs;
  };
  const std::vector<Row> rows = {
      {"10.0.0.0/8", {"10.0.0.0/8"}},
      {"10.1.2.3/8", {"10.0.0.0/8"}},
      {"10.1.2.3", {"10.1.2.3/32"}},
      {" 10.0.0.0/8 , fd00::/64", {"10.0.0.0/8", "fd00::/64"}},
      {"0.0.0.0/0,::/0", {"0.0.0.0/0", "::/0"}},
      {"::ffff:10.0.0.0/104", {"10.0.0.0/8"}},
      {"fd00::1", {"fd00::1/128"}},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    auto parsed = ParseCidrList(row.text);
    REQUIRE(parsed.ok());
    std::vector<std::string> texts;
    for (const Cidr& c : *parsed) texts.push_back(c.Text());
    CHECK(texts == row.cidrs);
  }
}

TEST_CASE("a bad CIDR entry is named in the error", "[store][admission]") {
  struct Row {
    std::string text;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"10.0.0.0/33",
       "--store-allow: '10.0.0.0/33' is not a CIDR (ADDRESS/BITS, BITS at most 32 for IPv4)"},
      {"10.0.0.0/8,fd00::/129",
       "--store-allow: 'fd00::/129' is not a CIDR (ADDRESS/BITS, BITS at most 128 for IPv6)"},
      {"node1/24",
       "--store-allow: 'node1/24' is not a CIDR (ADDRESS/BITS with an IPv4 or IPv6 ADDRESS)"},
      {"10.0.0.0/",
       "--store-allow: '10.0.0.0/' is not a CIDR (ADDRESS/BITS, BITS at most 32 for "
       "IPv4)"},
      {"10.0.0.0/8x",
       "--store-allow: '10.0.0.0/8x' is not a CIDR (ADDRESS/BITS, BITS at most 32 "
       "for IPv4)"},
      {"::ffff:10.0.0.0/8",
       "--store-allow: '::ffff:10.0.0.0/8' is not a CIDR (a v4-mapped block needs at least 96 "
       "bits)"},
      {"10.0.0.0/8,,",
       "--store-allow: empty entry in '10.0.0.0/8,,' (expected CIDR,CIDR,..., e.g. "
       "10.0.0.0/8)"},
      {"", "--store-allow: empty entry in '' (expected CIDR,CIDR,..., e.g. 10.0.0.0/8)"},
      // The error stays one printable line whatever the bytes (found by fuzz_cidr_list).
      {std::string("::\xff\xff\xff\0\n\xff\xff\xff", 10),
       "--store-allow: '::\\xff\\xff\\xff\\x00\\n\\xff\\xff\\xff' is not a CIDR "
       "(ADDRESS/BITS with an IPv4 or IPv6 ADDRESS)"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    auto parsed = ParseCidrList(row.text);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().message() == row.message);
  }
}

TEST_CASE("who each mode admits", "[store][admission]") {
  const PeerAdmission everyone = PeerAdmission::Everyone();
  const PeerAdmission members = PeerAdmission::Members({"10.0.0.2", "node3", "fd00::2"});
  const PeerAdmission override_list =
      PeerAdmission::Override(*ParseCidrList("192.168.0.0/16,fd00::/120"));
  const PeerAdmission open_list = PeerAdmission::Override(*ParseCidrList("0.0.0.0/0,::/0"));
  struct Row {
    std::string peer;
    bool everyone, members, override_list, open_list;
  };
  const std::vector<Row> rows = {
      // Loopback and this host's own address: always.
      {"127.0.0.1", true, true, true, true},
      {"127.8.9.1", true, true, true, true},
      {"::1", true, true, true, true},
      {"::ffff:127.0.0.1", true, true, true, true},
      {"10.0.0.1", true, true, true, true},
      {"::ffff:10.0.0.1", true, true, true, true},
      // A member, in both spellings.
      {"10.0.0.2", true, true, false, true},
      {"::ffff:10.0.0.2", true, true, false, true},
      {"fd00::2", true, true, true, true},
      // Nobody's member.
      {"10.0.0.3", true, false, false, true},
      {"192.168.4.5", true, false, true, true},
      {"::ffff:192.168.4.5", true, false, true, true},
      {"fd00::1:2", true, false, false, true},
  };
  for (const Row& row : rows) {
    CAPTURE(row.peer);
    CHECK(everyone.Admits(A(row.peer), kLocal) == row.everyone);
    CHECK(members.Admits(A(row.peer), kLocal) == row.members);
    CHECK(override_list.Admits(A(row.peer), kLocal) == row.override_list);
    CHECK(open_list.Admits(A(row.peer), kLocal) == row.open_list);
  }
}

TEST_CASE("a connection to this host's own address from that address is local",
          "[store][admission]") {
  const PeerAdmission members = PeerAdmission::Members({});
  CHECK(members.Admits(A("10.9.9.9"), A("10.9.9.9")));
  CHECK(members.Admits(A("::ffff:10.9.9.9"), A("10.9.9.9")));
  CHECK_FALSE(members.Admits(A("10.9.9.9"), A("10.9.9.8")));
}

TEST_CASE("the rule describes itself for logs", "[store][admission]") {
  CHECK(PeerAdmission::Everyone().Describe() == "everyone");
  CHECK(PeerAdmission::Members({"10.0.0.2", "::ffff:10.0.0.2", "node3"}).Describe() == "members=1");
  CHECK(PeerAdmission::Override(*ParseCidrList("10.0.0.0/8,::/0")).Describe() ==
        "store_allow=10.0.0.0/8,::/0");
  CHECK(PeerAdmission::Members({}).mode() == PeerAdmission::Mode::kMembers);
}

}  // namespace
}  // namespace muster::store
