// HandleRequest: what each request replies and when a connection must close.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "store/request_handler.h"
#include "store_wire_bytes.h"

namespace muster::store {
namespace {

using namespace muster::store::testing;
using Owners = std::vector<KeyValueStore::Owner>;

Request HandlerRequest(Op op, std::vector<std::string> keys = {},
                       std::vector<std::string> values = {}, int64_t delta = 0, uint32_t word = 0) {
  return Request{op, std::move(keys), std::move(values), delta, word};
}

struct Fixture {
  KeyValueStore store;
  HandlerOutcome Do(Request r, Dialect dialect = Dialect::kLegacy, uint64_t owner = 1) {
    return HandleRequest(store, owner, dialect, std::move(r));
  }
};

TEST_CASE_METHOD(Fixture, "replies are encoded per query type", "[store][handler]") {
  CHECK(Do(HandlerRequest(Op::kSet, {"k"}, {"v1"})).reply.empty());
  CHECK(Do(HandlerRequest(Op::kGet, {"k"})).reply == Str("v1"));
  CHECK(Do(HandlerRequest(Op::kAdd, {"n"}, {}, 5)).reply == I64(5));
  CHECK(Do(HandlerRequest(Op::kCompareSet, {"c"}, {"", "new"})).reply == Str("new"));
  CHECK(Do(HandlerRequest(Op::kCompareSet, {"c"}, {"zzz", "q"})).reply == Str("new"));
  CHECK(Do(HandlerRequest(Op::kCheck, {"k", "n"})).reply == U8(kCheckReady));
  CHECK(Do(HandlerRequest(Op::kCheck, {"k", "missing"})).reply == U8(kCheckNotReady));
  CHECK(Do(HandlerRequest(Op::kWait, {"k"})).reply == U8(kStopWaiting));
  CHECK(Do(HandlerRequest(Op::kGetNumKeys)).reply == I64(3));
  CHECK(Do(HandlerRequest(Op::kDeleteKey, {"k"})).reply == I64(1));
  CHECK(Do(HandlerRequest(Op::kDeleteKey, {"k"})).reply == I64(0));
}

TEST_CASE_METHOD(Fixture, "modern-only requests reply as torch 2 expects", "[store][handler]") {
  const auto m = Dialect::kModern;
  CHECK(Do(HandlerRequest(Op::kValidate, {}, {}, 0, kValidationMagic), m).reply.empty());
  CHECK(Do(HandlerRequest(Op::kPing, {}, {}, 0, 0xabcd), m).reply == U32(0xabcd));
  CHECK(Do(HandlerRequest(Op::kMultiSet, {"a", "b"}, {"1", "2"}), m).reply.empty());
  CHECK(Do(HandlerRequest(Op::kAppend, {"a"}, {"x"}), m).reply.empty());
  CHECK(Do(HandlerRequest(Op::kMultiGet, {"b", "a"}), m).reply == Str("2") + Str("1x"));
  CHECK(Do(HandlerRequest(Op::kCancelWait), m).reply == U8(kWaitCanceled));
}

TEST_CASE_METHOD(Fixture, "queue, list and barrier requests reply as torch's clients expect",
                 "[store][handler]") {
  const auto m = Dialect::kModern;
  CHECK(Do(HandlerRequest(Op::kQueuePush, {"/q"}, {"item"}), m).reply.empty());
  CHECK(Do(HandlerRequest(Op::kQueueLen, {"/q"}), m).reply == I64(1));
  CHECK(Do(HandlerRequest(Op::kQueuePop, {"/q"}), m).reply == I64(1) + Str("item"));
  CHECK(Do(HandlerRequest(Op::kQueuePop, {"/q"}), m).reply == I64(0));  // empty: the length only
  CHECK(Do(HandlerRequest(Op::kQueueLen, {"/nope"}), m).reply == I64(0));
  Do(HandlerRequest(Op::kSet, {"/b"}, {"1"}), m);
  Do(HandlerRequest(Op::kSet, {"/a"}, {"2"}), m);
  CHECK(Do(HandlerRequest(Op::kListKeys), m).reply == I64(2) + Str("/a") + Str("/b"));
  CHECK(Do(HandlerRequest(Op::kBarrier, {"/solo"}, {}, 1), m).reply == U8(kStopWaiting));
}

TEST_CASE_METHOD(Fixture, "a barrier answers its earlier arrivals when the last one comes",
                 "[store][handler]") {
  const auto m = Dialect::kModern;
  CHECK(Do(HandlerRequest(Op::kBarrier, {"/b"}, {}, 2), m, /*owner=*/4).reply.empty());
  CHECK(store.TakeReadyWaiters().empty());
  CHECK(Do(HandlerRequest(Op::kBarrier, {"/b"}, {}, 2), m, /*owner=*/9).reply == U8(kStopWaiting));
  CHECK(store.TakeReadyWaiters() == Owners{4});
}

TEST_CASE_METHOD(Fixture, "a barrier timed out on the client is cancelled by CANCEL_WAIT",
                 "[store][handler]") {
  const auto m = Dialect::kModern;
  Do(HandlerRequest(Op::kBarrier, {"/b"}, {}, 3), m, 4);
  CHECK(Do(HandlerRequest(Op::kCancelWait), m, 4).reply == U8(kWaitCanceled));
  CHECK(store.PendingWaits(4) == 0);
}

TEST_CASE_METHOD(Fixture, "a blocking queue pop is a WAIT woken by a push", "[store][handler]") {
  const auto m = Dialect::kModern;
  CHECK(Do(HandlerRequest(Op::kWait, {"/q"}), m, 4).reply.empty());
  Do(HandlerRequest(Op::kQueuePush, {"/q"}, {"x"}), m, 9);
  CHECK(store.TakeReadyWaiters() == Owners{4});
  CHECK(Do(HandlerRequest(Op::kQueuePop, {"/q"}), m, 4).reply == I64(1) + Str("x"));
}

TEST_CASE_METHOD(Fixture, "a torch 2.1 connection keeps its wait until CANCEL_WAIT",
                 "[store][handler]") {
  const auto d = Dialect::kTorch21;
  Do(HandlerRequest(Op::kWait, {"late"}), d, 4);
  Do(HandlerRequest(Op::kMultiSet, {"a"}, {"1"}), d, 4);
  CHECK(store.PendingWaits(4) == 1);
  CHECK(Do(HandlerRequest(Op::kCancelWait), d, 4).reply == U8(kWaitCanceled));
  CHECK(store.PendingWaits(4) == 0);
}

TEST_CASE_METHOD(Fixture, "a pending wait replies later through the ready queue",
                 "[store][handler]") {
  HandlerOutcome wait = Do(HandlerRequest(Op::kWait, {"k"}), Dialect::kLegacy, /*owner=*/4);
  CHECK(wait.reply.empty());
  CHECK_FALSE(wait.close);
  CHECK(store.TakeReadyWaiters().empty());
  Do(HandlerRequest(Op::kSet, {"k"}, {"v"}), Dialect::kLegacy, /*owner=*/9);
  CHECK(store.TakeReadyWaiters() == Owners{4});
}

TEST_CASE_METHOD(Fixture, "a legacy client's next request drops the wait it abandoned",
                 "[store][handler]") {
  // torch 1.13 has one operation in flight per client: a request after an
  // unanswered WAIT means that WAIT timed out on the client side.
  Do(HandlerRequest(Op::kWait, {"late"}), Dialect::kLegacy, 4);
  REQUIRE(store.PendingWaits(4) == 1);
  CHECK(Do(HandlerRequest(Op::kSet, {"x"}, {"1"}), Dialect::kLegacy, 4).reply.empty());
  CHECK(store.PendingWaits(4) == 0);
  Do(HandlerRequest(Op::kSet, {"late"}, {"v"}), Dialect::kLegacy, 9);
  CHECK(store.TakeReadyWaiters().empty());  // no stray STOP_WAITING for owner 4
}

TEST_CASE_METHOD(Fixture, "a modern client keeps its wait until it sends CANCEL_WAIT",
                 "[store][handler]") {
  const auto m = Dialect::kModern;
  Do(HandlerRequest(Op::kWait, {"late"}), m, 4);
  Do(HandlerRequest(Op::kPing, {}, {}, 0, 1), m, 4);
  CHECK(store.PendingWaits(4) == 1);
  CHECK(Do(HandlerRequest(Op::kCancelWait), m, 4).reply == U8(kWaitCanceled));
  CHECK(store.PendingWaits(4) == 0);
}

TEST_CASE_METHOD(Fixture, "requests torch's server would die on close the connection",
                 "[store][handler]") {
  SECTION("GET of a missing key") {
    HandlerOutcome o = Do(HandlerRequest(Op::kGet, {"nope"}));
    CHECK(o.close);
    CHECK(o.close_reason.find("key='nope'") != std::string::npos);
  }
  SECTION("MULTI_GET with one missing key") {
    store.Set("a", "1");
    CHECK(Do(HandlerRequest(Op::kMultiGet, {"a", "nope"}), Dialect::kModern).close);
  }
  SECTION("ADD on a non-number") {
    store.Set("n", "abc");
    HandlerOutcome o = Do(HandlerRequest(Op::kAdd, {"n"}, {}, 1));
    CHECK(o.close);
    CHECK(o.close_reason.find("key='n'") != std::string::npos);
  }
  SECTION("ADD names a binary or huge key only in a bounded, printable form") {
    const std::string key = std::string("\x01\x02", 2) + std::string(100000, 'k');
    store.Set(key, "abc");
    HandlerOutcome o = Do(HandlerRequest(Op::kAdd, {key}, {}, 1));
    CHECK(o.close);
    CHECK(o.close_reason.find("key='??kkk") != std::string::npos);
    CHECK(o.close_reason.size() < 400);
  }
  SECTION("VALIDATE with a wrong magic") {
    HandlerOutcome o = Do(HandlerRequest(Op::kValidate, {}, {}, 0, 0x12345678), Dialect::kModern);
    CHECK(o.close);
    CHECK(o.close_reason.find("magic=305419896") != std::string::npos);
  }
  SECTION("BARRIER on a non-number") {
    store.Set("/b", "abc");
    HandlerOutcome o = Do(HandlerRequest(Op::kBarrier, {"/b"}, {}, 2), Dialect::kModern);
    CHECK(o.close);
    CHECK(o.close_reason.find("key='/b'") != std::string::npos);
  }
  SECTION("WATCH_KEY is not supported") {
    HandlerOutcome o = Do(HandlerRequest(Op::kWatchKey, {"w"}));
    CHECK(o.close);
    CHECK(o.close_reason.find("unsupported") != std::string::npos);
  }
}

TEST_CASE_METHOD(Fixture, "a connection may not pile up unbounded waits", "[store][handler]") {
  for (size_t i = 0; i < kMaxPendingWaitsPerConnection; ++i) {
    REQUIRE_FALSE(Do(HandlerRequest(Op::kWait, {std::to_string(i) + "k"}), Dialect::kModern).close);
  }
  HandlerOutcome o = Do(HandlerRequest(Op::kWait, {"one-more"}), Dialect::kModern);
  CHECK(o.close);
  CHECK(o.close_reason.find("too many pending waits") != std::string::npos);
}

TEST_CASE_METHOD(Fixture, "barriers count toward a connection's pending waits",
                 "[store][handler]") {
  const HandlerLimits limits{.max_pending_waits = 2};
  const auto m = Dialect::kModern;
  CHECK_FALSE(HandleRequest(store, 1, m, HandlerRequest(Op::kWait, {"w"}), limits).close);
  CHECK_FALSE(
      HandleRequest(store, 1, m, HandlerRequest(Op::kBarrier, {"b1"}, {}, 5), limits).close);
  HandlerOutcome o =
      HandleRequest(store, 1, m, HandlerRequest(Op::kBarrier, {"b2"}, {}, 5), limits);
  CHECK(o.close);
  CHECK(o.close_reason.find("too many pending waits") != std::string::npos);
}

TEST_CASE_METHOD(Fixture, "a LIST_KEYS reply over the limit closes instead of being built",
                 "[store][handler]") {
  store.Set("aaaa", "1");
  store.Set("bbbb", "2");
  const HandlerLimits fits{.max_list_keys_reply_bytes = 8 + 2 * 12};
  CHECK_FALSE(HandleRequest(store, 1, Dialect::kModern, HandlerRequest(Op::kListKeys), fits).close);
  const HandlerLimits tight{.max_list_keys_reply_bytes = 8 + 2 * 12 - 1};
  HandlerOutcome o =
      HandleRequest(store, 1, Dialect::kModern, HandlerRequest(Op::kListKeys), tight);
  CHECK(o.close);
  CHECK(o.reply.empty());
  CHECK(o.close_reason == "LIST_KEYS reply too large bytes=32 max=31");
}

}  // namespace
}  // namespace muster::store
