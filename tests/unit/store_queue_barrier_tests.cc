// KeyValueStore: queues (torch >= 2.8), LIST_KEYS (2.10) and BARRIER, as
// torch's server behaves (TCPStoreLibUvBackend.cpp: queuePush, queuePop,
// queueLen, checkKeys, listKeys, barrier).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "store/key_value_store.h"

namespace muster::store {
namespace {

using Owners = std::vector<KeyValueStore::Owner>;
using Keys = std::vector<std::string>;

TEST_CASE("a queue pops in push order and reports its length before the pop", "[store][queue]") {
  KeyValueStore s;
  CHECK(s.QueueLen("q") == 0);
  s.QueuePush("q", "a");
  s.QueuePush("q", std::string("b\0", 2));
  CHECK(s.QueueLen("q") == 2);
  KeyValueStore::Popped first = s.QueuePop("q");
  CHECK(first.length_before == 2);
  CHECK(first.value == std::optional<std::string>("a"));
  KeyValueStore::Popped second = s.QueuePop("q");
  CHECK(second.length_before == 1);
  CHECK(second.value == std::optional<std::string>(std::string("b\0", 2)));
  KeyValueStore::Popped empty = s.QueuePop("q");
  CHECK(empty.length_before == 0);
  CHECK_FALSE(empty.value.has_value());
  CHECK(s.QueueLen("q") == 0);
}

TEST_CASE("queues live beside the keys", "[store][queue]") {
  KeyValueStore s;
  s.QueuePush("q", "item");
  s.Set("k", "v");
  CHECK(s.NumKeys() == 1);
  CHECK(s.Get("q") == nullptr);
  CHECK(s.ListKeys() == Keys{"k"});
  CHECK_FALSE(s.Delete("q"));
  CHECK(s.QueueLen("q") == 1);
  SECTION("a key of the same name is another thing") {
    s.Set("q", "value");
    CHECK(*s.Get("q") == "value");
    CHECK(s.QueuePop("q").value == std::optional<std::string>("item"));
  }
}

TEST_CASE("check and wait count a non-empty queue as a present key", "[store][queue]") {
  KeyValueStore s;
  CHECK_FALSE(s.Check({"q"}));
  s.QueuePush("q", "item");
  CHECK(s.Check({"q"}));
  CHECK(s.Wait(1, {"q"}));
  s.QueuePop("q");
  CHECK_FALSE(s.Check({"q"}));
  CHECK_FALSE(s.Wait(1, {"q"}));
  CHECK(s.PendingWaits(1) == 1);
}

TEST_CASE("a push wakes one waiter, not all", "[store][queue]") {
  KeyValueStore s;
  REQUIRE_FALSE(s.Wait(1, {"q"}));
  REQUIRE_FALSE(s.Wait(2, {"q"}));
  s.QueuePush("q", "first");
  CHECK(s.TakeReadyWaiters() == Owners{1});
  CHECK(s.PendingWaits(2) == 1);
  s.QueuePush("q", "second");
  CHECK(s.TakeReadyWaiters() == Owners{2});
}

TEST_CASE("a push prefers a waiter it completes", "[store][queue]") {
  KeyValueStore s;
  REQUIRE_FALSE(s.Wait(1, {"q", "other"}));  // still misses "other" after a push
  REQUIRE_FALSE(s.Wait(2, {"q"}));
  s.QueuePush("q", "item");
  CHECK(s.TakeReadyWaiters() == Owners{2});
  CHECK(s.PendingWaits(1) == 1);
  s.Set("other", "x");
  CHECK(s.TakeReadyWaiters().empty());  // the item did not count for owner 1
  s.QueuePush("q", "item2");
  CHECK(s.TakeReadyWaiters() == Owners{1});
}

TEST_CASE("a set of a queue's name wakes every waiter on it", "[store][queue]") {
  KeyValueStore s;
  REQUIRE_FALSE(s.Wait(1, {"q"}));
  REQUIRE_FALSE(s.Wait(2, {"q"}));
  s.Set("q", "v");
  CHECK(s.TakeReadyWaiters() == Owners{1, 2});
}

TEST_CASE("clear drops queues with the keys", "[store][queue]") {
  KeyValueStore s;
  s.QueuePush("q", "item");
  s.Clear();
  CHECK(s.QueueLen("q") == 0);
  CHECK_FALSE(s.Check({"q"}));
}

TEST_CASE("list keys returns every key in byte order", "[store][list]") {
  KeyValueStore s;
  CHECK(s.ListKeys().empty());
  s.Set("/b", "1");
  s.Set("/a", "2");
  s.Set("init/", "1");
  CHECK(s.ListKeys() == Keys{"/a", "/b", "init/"});
}

TEST_CASE("a barrier completes when its count reaches the world size", "[store][barrier]") {
  KeyValueStore s;
  auto first = s.Barrier(1, "b", 3);
  REQUIRE(first.ok());
  CHECK_FALSE(*first);
  CHECK(*s.Get("b") == "1");
  CHECK(s.TakeReadyWaiters().empty());
  CHECK_FALSE(*s.Barrier(2, "b", 3));
  CHECK(s.TakeReadyWaiters().empty());  // an arrival that does not complete wakes nobody
  CHECK(*s.Barrier(3, "b", 3));
  CHECK(*s.Get("b") == "3");
  CHECK(s.TakeReadyWaiters() == Owners{1, 2});
  CHECK(s.TotalPendingWaits() == 0);
}

TEST_CASE("a barrier of one, or on a key already past the world size, returns at once",
          "[store][barrier]") {
  KeyValueStore s;
  CHECK(*s.Barrier(1, "solo", 1));
  CHECK(*s.Barrier(1, "solo", 1));  // the counter is never reset, as in torch
  CHECK(*s.Get("solo") == "2");
  CHECK(s.TotalPendingWaits() == 0);
}

TEST_CASE("a barrier waiter is woken by a write of its key and dropped by a cancel",
          "[store][barrier]") {
  KeyValueStore s;
  REQUIRE_FALSE(*s.Barrier(1, "b", 2));
  SECTION("cancel") {
    CHECK(s.CancelWaits(1) == 1);
    CHECK(*s.Barrier(2, "b", 2));
    CHECK(s.TakeReadyWaiters().empty());
  }
  SECTION("a set of the key, as in torch's server") {
    s.Set("b", "0");
    CHECK(s.TakeReadyWaiters() == Owners{1});
  }
}

TEST_CASE("a barrier on a value that is not a decimal fails and changes nothing",
          "[store][barrier]") {
  KeyValueStore s;
  s.Set("b", "abc");
  auto r = s.Barrier(1, "b", 2);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("BARRIER on a value that is not a decimal integer") !=
        std::string::npos);
  CHECK(*s.Get("b") == "abc");
  CHECK(s.TotalPendingWaits() == 0);
  s.Set("b", "9223372036854775807");
  CHECK_FALSE(s.Barrier(1, "b", 2).ok());
}

}  // namespace
}  // namespace muster::store
