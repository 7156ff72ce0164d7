// KeyValueStore: TCPStore's server-side semantics without sockets.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "store/key_value_store.h"

namespace muster::store {
namespace {

using Owners = std::vector<KeyValueStore::Owner>;

TEST_CASE("set then get returns the bytes, binary included", "[store][kv]") {
  KeyValueStore s;
  CHECK(s.Get("k") == nullptr);
  s.Set("k", std::string("a\0b", 3));
  REQUIRE(s.Get("k") != nullptr);
  CHECK(*s.Get("k") == std::string("a\0b", 3));
  s.Set("k", "");
  CHECK(*s.Get("k") == "");
}

TEST_CASE("add on a missing key starts from zero and stores decimal ASCII", "[store][kv]") {
  KeyValueStore s;
  auto first = s.Add("n", 5);
  REQUIRE(first.ok());
  CHECK(*first == 5);
  CHECK(*s.Get("n") == "5");
  CHECK(*s.Add("n", -7) == -2);
  CHECK(*s.Get("n") == "-2");
  CHECK(*s.Add("n", 0) == -2);
}

TEST_CASE("add continues from a decimal value written by set", "[store][kv]") {
  KeyValueStore s;
  s.Set("n", "40");
  CHECK(*s.Add("n", 2) == 42);
}

TEST_CASE("add on a value that is not a decimal integer fails and keeps the value", "[store][kv]") {
  KeyValueStore s;
  for (const std::string& bad :
       std::vector<std::string>{"abc", "", "5x", " 5", std::string("\x05\0\0\0", 4)}) {
    s.Set("n", bad);
    auto r = s.Add("n", 1);
    INFO("value '" << bad << "'");
    CHECK_FALSE(r.ok());
    CHECK(r.status().IsInvalidArgument());
    CHECK(r.status().message().find("not a decimal integer") != std::string::npos);
    CHECK(*s.Get("n") == bad);
  }
}

TEST_CASE("add that overflows int64 fails", "[store][kv]") {
  KeyValueStore s;
  s.Set("n", "9223372036854775807");
  CHECK_FALSE(s.Add("n", 1).ok());
  CHECK(*s.Get("n") == "9223372036854775807");
}

TEST_CASE("compare_set follows torch's expected-empty semantics", "[store][kv]") {
  KeyValueStore s;
  SECTION("missing key and empty expected: created, reply is desired") {
    CHECK(s.CompareSet("k", "", "new") == "new");
    CHECK(*s.Get("k") == "new");
  }
  SECTION("missing key and non-empty expected: not created, reply is expected") {
    CHECK(s.CompareSet("k", "x", "new") == "x");
    CHECK(s.Get("k") == nullptr);
    CHECK(s.NumKeys() == 0);
  }
  SECTION("present and matching: replaced, reply is desired") {
    s.Set("k", "old");
    CHECK(s.CompareSet("k", "old", "new") == "new");
    CHECK(*s.Get("k") == "new");
  }
  SECTION("present and not matching: kept, reply is the current value") {
    s.Set("k", "cur");
    CHECK(s.CompareSet("k", "zzz", "new") == "cur");
    CHECK(*s.Get("k") == "cur");
  }
  SECTION("present with an empty value and empty expected: replaced") {
    s.Set("k", "");
    CHECK(s.CompareSet("k", "", "new") == "new");
  }
}

TEST_CASE("delete reports whether the key existed and num_keys follows", "[store][kv]") {
  KeyValueStore s;
  s.Set("a", "1");
  s.Set("b", "2");
  CHECK(s.NumKeys() == 2);
  CHECK(s.Delete("a"));
  CHECK_FALSE(s.Delete("a"));
  CHECK(s.NumKeys() == 1);
  CHECK(s.Get("a") == nullptr);
}

TEST_CASE("check is true only when every key exists", "[store][kv]") {
  KeyValueStore s;
  s.Set("a", "1");
  CHECK(s.Check({}));
  CHECK(s.Check({"a"}));
  CHECK_FALSE(s.Check({"a", "b"}));
}

TEST_CASE("append creates or extends a value", "[store][kv]") {
  KeyValueStore s;
  s.Append("k", "ab");
  s.Append("k", "cd");
  CHECK(*s.Get("k") == "abcd");
}

TEST_CASE("a wait on present keys is ready at once and registers nothing", "[store][kv]") {
  KeyValueStore s;
  s.Set("a", "1");
  CHECK(s.Wait(7, {"a"}));
  CHECK(s.Wait(7, {}));
  CHECK(s.PendingWaits(7) == 0);
  CHECK(s.TakeReadyWaiters().empty());
}

TEST_CASE("a wait is woken by set", "[store][kv]") {
  KeyValueStore s;
  CHECK_FALSE(s.Wait(7, {"a"}));
  CHECK(s.PendingWaits(7) == 1);
  s.Set("other", "x");
  CHECK(s.TakeReadyWaiters().empty());
  s.Set("a", "1");
  CHECK(s.TakeReadyWaiters() == Owners{7});
  CHECK(s.PendingWaits(7) == 0);
  CHECK(s.TotalPendingWaits() == 0);
  CHECK(s.TakeReadyWaiters().empty());
}

TEST_CASE("a wait is woken by add, append and a creating compare_set", "[store][kv]") {
  KeyValueStore s;
  CHECK_FALSE(s.Wait(1, {"n"}));
  CHECK_FALSE(s.Wait(2, {"t"}));
  CHECK_FALSE(s.Wait(3, {"c"}));
  REQUIRE(s.Add("n", 1).ok());
  s.Append("t", "x");
  CHECK(s.CompareSet("c", "nope", "v") == "nope");  // not created: nobody woken
  CHECK(s.TakeReadyWaiters() == Owners{1, 2});
  CHECK(s.CompareSet("c", "", "v") == "v");
  CHECK(s.TakeReadyWaiters() == Owners{3});
}

TEST_CASE("a wait on several keys completes only when all were written", "[store][kv]") {
  KeyValueStore s;
  s.Set("a", "1");
  CHECK_FALSE(s.Wait(9, {"a", "b", "c", "b"}));
  s.Set("b", "2");
  CHECK(s.TakeReadyWaiters().empty());
  s.Set("b", "again");
  CHECK(s.TakeReadyWaiters().empty());
  s.Set("c", "3");
  CHECK(s.TakeReadyWaiters() == Owners{9});
}

TEST_CASE("a key listed twice in one wait is satisfied by one write", "[store][kv]") {
  KeyValueStore s;
  CHECK_FALSE(s.Wait(9, {"b", "b"}));
  s.Set("b", "1");
  CHECK(s.TakeReadyWaiters() == Owners{9});
  CHECK(s.PendingWaits(9) == 0);
}

TEST_CASE("a key written and deleted while waited for still counts", "[store][kv]") {
  KeyValueStore s;
  CHECK_FALSE(s.Wait(1, {"a", "b"}));
  s.Set("a", "1");
  CHECK(s.Delete("a"));
  s.Set("b", "2");
  CHECK(s.TakeReadyWaiters() == Owners{1});
}

TEST_CASE("several owners waiting on one key are all woken in order", "[store][kv]") {
  KeyValueStore s;
  CHECK_FALSE(s.Wait(3, {"k"}));
  CHECK_FALSE(s.Wait(1, {"k"}));
  CHECK_FALSE(s.Wait(3, {"k", "z"}));
  s.Set("k", "v");
  CHECK(s.TakeReadyWaiters() == Owners{3, 1});
  CHECK(s.PendingWaits(3) == 1);
}

TEST_CASE("cancelled waits are never woken and leave nothing behind", "[store][kv]") {
  KeyValueStore s;
  CHECK_FALSE(s.Wait(5, {"a"}));
  CHECK_FALSE(s.Wait(5, {"b", "c"}));
  CHECK_FALSE(s.Wait(6, {"a"}));
  CHECK(s.CancelWaits(5) == 2);
  CHECK(s.CancelWaits(5) == 0);
  CHECK(s.PendingWaits(5) == 0);
  CHECK(s.TotalPendingWaits() == 1);
  s.Set("a", "1");
  s.Set("b", "1");
  s.Set("c", "1");
  CHECK(s.TakeReadyWaiters() == Owners{6});
}

TEST_CASE("cancel also drops a waiter that is ready but not yet delivered", "[store][kv]") {
  KeyValueStore s;
  CHECK_FALSE(s.Wait(5, {"a"}));
  s.Set("a", "1");
  CHECK(s.CancelWaits(5) == 1);
  CHECK(s.TakeReadyWaiters().empty());
}

TEST_CASE("clear drops every key but keeps pending waiters", "[store][kv]") {
  KeyValueStore s;
  s.Set("a", "1");
  s.Set("b", "2");
  CHECK_FALSE(s.Wait(1, {"c"}));
  s.Clear();
  CHECK(s.NumKeys() == 0);
  CHECK(s.Get("a") == nullptr);
  CHECK(s.PendingWaits(1) == 1);
  s.Set("c", "3");
  CHECK(s.TakeReadyWaiters() == Owners{1});
}

}  // namespace
}  // namespace muster::store
