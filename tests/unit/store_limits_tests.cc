// The store's bounds: KeyValueStore's byte accounting, and requests that
// would pass --store-max-keys or --store-max-bytes closing their connection.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "store/request_handler.h"
#include "store/store_session.h"

namespace muster::store {
namespace {

Request LimitsRequest(Op op, std::vector<std::string> keys = {},
                      std::vector<std::string> values = {}, int64_t delta = 0) {
  return Request{op, std::move(keys), std::move(values), delta, 0};
}

TEST_CASE("the store counts the bytes of names and values through every write", "[store][limits]") {
  KeyValueStore store;
  store.Set("ab", "1234");
  CHECK(store.Bytes() == 6);
  store.Set("ab", "1");
  CHECK(store.Bytes() == 3);
  store.Append("ab", "xy");
  store.Append("c", "z");
  CHECK(store.Bytes() == 7);
  CHECK(store.CompareSet("c", "z", "zzz") == "zzz");
  CHECK(store.Bytes() == 9);
  REQUIRE(store.Add("n", 12).ok());
  CHECK(store.Bytes() == 12);
  REQUIRE(store.Barrier(1, "b", 5).ok());
  CHECK(store.Bytes() == 14);
  store.QueuePush("q", "item");
  store.QueuePush("q", "it");
  CHECK(store.Bytes() == 21);
  CHECK(store.NumEntries() == 5);
  CHECK(store.NumKeys() == 4);
  store.QueuePop("q");
  CHECK(store.Bytes() == 17);
  store.QueuePop("q");
  CHECK(store.Bytes() == 14);
  CHECK(store.Delete("ab"));
  CHECK(store.Bytes() == 9);
  store.Clear();
  CHECK(store.Bytes() == 0);
  CHECK(store.NumEntries() == 0);
}

struct Limited {
  KeyValueStore store;
  HandlerLimits limits;
  Limited() {
    limits.max_keys = 3;
    limits.max_bytes = 40;
  }
  HandlerOutcome Do(Request r) {
    return HandleRequest(store, 1, Dialect::kModern, std::move(r), limits);
  }
};

TEST_CASE_METHOD(Limited, "a write past the key limit closes its connection and changes nothing",
                 "[store][limits]") {
  CHECK_FALSE(Do(LimitsRequest(Op::kSet, {"a"}, {"1"})).close);
  CHECK_FALSE(Do(LimitsRequest(Op::kAdd, {"b"}, {}, 1)).close);
  CHECK_FALSE(Do(LimitsRequest(Op::kQueuePush, {"q"}, {"x"})).close);
  struct Row {
    std::string name;
    Request request;
  };
  const std::vector<Row> rows = {
      {"SET", LimitsRequest(Op::kSet, {"c"}, {"1"})},
      {"ADD", LimitsRequest(Op::kAdd, {"c"}, {}, 1)},
      {"APPEND", LimitsRequest(Op::kAppend, {"c"}, {"1"})},
      {"COMPARE_SET", LimitsRequest(Op::kCompareSet, {"c"}, {"", "1"})},
      {"QUEUE_PUSH", LimitsRequest(Op::kQueuePush, {"q2"}, {"1"})},
      {"MULTI_SET", LimitsRequest(Op::kMultiSet, {"a", "c"}, {"1", "1"})},
      {"BARRIER", LimitsRequest(Op::kBarrier, {"c"}, {}, 2)},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    HandlerOutcome out = Do(row.request);
    CHECK(out.close);
    CHECK(out.close_reason == "store key limit reached keys=3 max_keys=3 (--store-max-keys)");
  }
  CHECK(store.NumEntries() == 3);
  // Existing keys may still be written, and reads go on.
  CHECK_FALSE(Do(LimitsRequest(Op::kSet, {"a"}, {"2"})).close);
  CHECK_FALSE(Do(LimitsRequest(Op::kAdd, {"b"}, {}, 1)).close);
  CHECK_FALSE(Do(LimitsRequest(Op::kQueuePush, {"q"}, {"y"})).close);
  CHECK(*store.Get("a") == "2");
  // Room again once a key is gone.
  CHECK_FALSE(Do(LimitsRequest(Op::kDeleteKey, {"a"})).close);
  CHECK_FALSE(Do(LimitsRequest(Op::kSet, {"c"}, {"1"})).close);
}

TEST_CASE_METHOD(Limited, "a write past the byte limit closes its connection and shrinking passes",
                 "[store][limits]") {
  CHECK_FALSE(Do(LimitsRequest(Op::kSet, {"k"}, {std::string(30, 'x')})).close);  // 31 bytes
  HandlerOutcome out = Do(LimitsRequest(Op::kSet, {"l"}, {std::string(9, 'x')}));
  CHECK(out.close);
  CHECK(out.close_reason ==
        "store size limit reached bytes=31 request_adds=10 max_bytes=40 (--store-max-bytes)");
  CHECK(Do(LimitsRequest(Op::kAppend, {"k"}, {std::string(10, 'x')})).close);
  CHECK(Do(LimitsRequest(Op::kQueuePush, {"q"}, {std::string(9, 'x')})).close);
  CHECK_FALSE(Do(LimitsRequest(Op::kSet, {"l"}, {std::string(8, 'x')})).close);  // exactly 40
  CHECK(store.Bytes() == 40);
  // Replacing with a shorter value, or deleting, always passes.
  CHECK_FALSE(Do(LimitsRequest(Op::kSet, {"k"}, {"y"})).close);
  CHECK(store.Bytes() == 11);
}

TEST_CASE_METHOD(Limited, "waits count their keys against the store's bounds", "[store][limits]") {
  // Waits on keys that are never written hold their names: they count like
  // stored keys, so 1,024 waits per connection can not grow the store.
  CHECK_FALSE(Do(LimitsRequest(Op::kWait, {"w1", "w2"})).close);
  CHECK(store.WaitedKeys() == 2);
  CHECK(store.WaitedKeyBytes() == 4);
  HandlerOutcome out = Do(LimitsRequest(Op::kWait, {"w3", "w4"}));
  CHECK(out.close);
  CHECK(out.close_reason == "store key limit reached keys=2 max_keys=3 (--store-max-keys)");
  CHECK(Do(LimitsRequest(Op::kSet, {"a"}, {"1"})).close == false);
  CHECK(Do(LimitsRequest(Op::kSet, {"b"}, {"1"})).close);  // 1 key + 2 waited
  // A long name counts its bytes.
  HandlerOutcome long_name = HandleRequest(store, 2, Dialect::kModern,
                                           LimitsRequest(Op::kWait, {std::string(40, 'n')}), [&] {
                                             HandlerLimits wide = limits;
                                             wide.max_keys = 100;
                                             return wide;
                                           }());
  CHECK(long_name.close);
  CHECK(long_name.close_reason ==
        "store size limit reached bytes=6 request_adds=40 max_bytes=40 (--store-max-bytes)");
  // The waiter's keys are released when it completes or is cancelled.
  store.Set("w1", "x");
  store.Set("w2", "x");
  CHECK(store.WaitedKeys() == 0);
  CHECK(store.WaitedKeyBytes() == 0);
  CHECK(store.TakeReadyWaiters().size() == 1);
  store.Clear();
  CHECK_FALSE(Do(LimitsRequest(Op::kWait, {"w5"})).close);
  CHECK(store.CancelWaits(1) == 1);
  CHECK(store.WaitedKeys() == 0);
}

TEST_CASE_METHOD(Limited, "every reply is sized before it is built", "[store][limits]") {
  limits.max_keys = 100;
  limits.max_bytes = 1 << 20;
  CHECK_FALSE(Do(LimitsRequest(Op::kSet, {"big"}, {std::string(1000, 'x')})).close);
  CHECK_FALSE(Do(LimitsRequest(Op::kQueuePush, {"q"}, {std::string(1000, 'x')})).close);
  limits.reply_room = 1008;  // exactly one value with its length
  limits.reply_bound = "max_queued_bytes=1008 (per connection)";
  CHECK(Do(LimitsRequest(Op::kGet, {"big"})).reply.size() == 1008);
  CHECK_FALSE(Do(LimitsRequest(Op::kQueuePush, {"q"}, {std::string(1000, 'y')})).close);

  limits.reply_room = 1007;
  struct Row {
    std::string name;
    Request request;
    size_t reply_bytes;
  };
  // One short MULTI_GET naming the same key 65,536 times asks for 66 MB: it
  // is refused at its first value past the room, before anything is built.
  const std::vector<Row> rows = {
      {"GET", LimitsRequest(Op::kGet, {"big"}), 1008},
      {"MULTI_GET", LimitsRequest(Op::kMultiGet, std::vector<std::string>(65536, "big")), 1008},
      {"COMPARE_SET", LimitsRequest(Op::kCompareSet, {"big"}, {"", std::string(1000, 'z')}), 1008},
      {"QUEUE_POP", LimitsRequest(Op::kQueuePop, {"q"}), 1016},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    HandlerOutcome out = Do(row.request);
    CHECK(out.close);
    CHECK(out.reply.empty());
    CHECK(out.close_reason == "reply too large bytes=" + std::to_string(row.reply_bytes) +
                                  " room=1007 max_queued_bytes=1008 (per connection)");
  }
  // A refused pop loses nothing; refused reads change nothing.
  CHECK(store.QueueLen("q") == 2);
  CHECK(store.Get("big")->size() == 1000);
  limits.reply_room = 18;
  CHECK(Do(LimitsRequest(Op::kListKeys)).close_reason ==
        "reply too large bytes=19 room=18 max_queued_bytes=1008 (per connection)");
}

TEST_CASE("the default bounds are the documented ones", "[store][limits]") {
  // docs/security.md, "What bounds each request", and the man page.
  const SessionLimits defaults;
  CHECK(defaults.handler.max_keys == 1'000'000);
  CHECK(defaults.handler.max_bytes == size_t{1} << 30);
  CHECK(defaults.handler.max_pending_waits == 1024);
  CHECK(defaults.handler.max_list_keys_reply_bytes == size_t{256} << 20);
  CHECK(defaults.decoder.max_string_bytes == uint64_t{64} << 20);
  CHECK(defaults.decoder.max_request_bytes == uint64_t{128} << 20);
  CHECK(defaults.max_queued_bytes == size_t{128} << 20);
  CHECK(defaults.max_buffered_bytes == size_t{256} << 20);
  CHECK(defaults.max_connections == 262'144);
  // Any one valid request fits the shared bound alone: its buffer and its
  // parsed fields.
  CHECK(defaults.max_buffered_bytes >= 2 * defaults.decoder.max_request_bytes);
}

}  // namespace
}  // namespace muster::store
