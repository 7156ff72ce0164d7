#include <catch2/catch.hpp>

#include "rendezvous/daemon/advertised_address.h"

using muster::rdzv::IsLoopbackHost;
using muster::rdzv::MasterAddrFor;
using muster::rdzv::PlainAddress;

TEST_CASE("loopback is recognised in every spelling", "[address]") {
  CHECK(IsLoopbackHost("127.0.0.1"));
  CHECK(IsLoopbackHost("127.0.1.1"));  // Debian's /etc/hosts entry for the hostname
  CHECK(IsLoopbackHost("127.255.0.9"));
  CHECK(IsLoopbackHost("::1"));
  CHECK(IsLoopbackHost("::ffff:127.0.1.1"));
  CHECK(IsLoopbackHost("localhost"));
  CHECK(IsLoopbackHost("LocalHost"));
  CHECK_FALSE(IsLoopbackHost("10.0.0.5"));
  CHECK_FALSE(IsLoopbackHost("::ffff:10.0.0.5"));
  CHECK_FALSE(IsLoopbackHost("fe80::1"));
  CHECK_FALSE(IsLoopbackHost("128.0.0.1"));
  CHECK_FALSE(IsLoopbackHost("node0"));
  CHECK_FALSE(IsLoopbackHost(""));
}

TEST_CASE("addresses have one spelling and names are not addresses", "[address]") {
  CHECK(PlainAddress("10.0.0.5") == "10.0.0.5");
  CHECK(PlainAddress("::ffff:10.0.0.5") == "10.0.0.5");
  CHECK(PlainAddress("FE80:0:0::1") == "fe80::1");
  CHECK_FALSE(PlainAddress("node0").has_value());
  CHECK_FALSE(PlainAddress("").has_value());
}

TEST_CASE("a member on another host is told the address it reached the daemon at", "[address]") {
  // The master's agent runs on the daemon's host and reached it over
  // loopback (its hostname resolves to 127.0.1.1 there).
  CHECK(MasterAddrFor("127.0.1.1", "10.0.0.12", "10.0.0.11") == "10.0.0.11");
  CHECK(MasterAddrFor("127.0.0.1", "10.0.0.12", "10.0.0.11") == "10.0.0.11");
  CHECK(MasterAddrFor("::1", "fd00::12", "fd00::11") == "fd00::11");
  CHECK(MasterAddrFor("localhost", "10.0.0.12", "10.0.0.11") == "10.0.0.11");
  // A dual-stack daemon sees IPv4 ends as ::ffff:a.b.c.d; workers get plain IPv4.
  CHECK(MasterAddrFor("::ffff:127.0.1.1", "::ffff:10.0.0.12", "::ffff:10.0.0.11") == "10.0.0.11");
  // A daemon with several interfaces: each member gets the one it used.
  CHECK(MasterAddrFor("127.0.1.1", "192.168.5.3", "192.168.5.1") == "192.168.5.1");
}

TEST_CASE("members on the daemon's host keep the loopback master address", "[address]") {
  CHECK(MasterAddrFor("127.0.1.1", "127.0.0.1", "127.0.0.1") == "127.0.1.1");
  CHECK(MasterAddrFor("127.0.1.1", "127.0.1.1", "127.0.1.1") == "127.0.1.1");
  CHECK(MasterAddrFor("127.0.0.1", "::1", "::1") == "127.0.0.1");
}

TEST_CASE("a routable master address is never changed", "[address]") {
  // --local-addr, or an agent that reached the daemon over the network.
  CHECK(MasterAddrFor("10.0.0.13", "10.0.0.12", "10.0.0.11") == "10.0.0.13");
  CHECK(MasterAddrFor("node3", "10.0.0.12", "10.0.0.11") == "node3");
  CHECK(MasterAddrFor("10.0.0.13", "127.0.0.1", "127.0.0.1") == "10.0.0.13");
}

TEST_CASE("unknown connection ends leave the master address alone", "[address]") {
  CHECK(MasterAddrFor("127.0.1.1", "", "10.0.0.11") == "127.0.1.1");
  CHECK(MasterAddrFor("127.0.1.1", "10.0.0.12", "") == "127.0.1.1");
}
