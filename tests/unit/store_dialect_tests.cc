// How a connection without handshake is told apart as torch 1.13 or 2.1
// (store/dialect_rule.h): the rule as a table, then the decoder
// applying it to bytes.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "store/dialect_rule.h"
#include "store/tcpstore_codec.h"
#include "store_wire_bytes.h"

namespace muster::store {
namespace {

using namespace muster::store::testing;

// ---------------------------------------------------------------- the rule

TEST_CASE("an undecided connection's query byte is judged by the dialect table",
          "[store][dialect]") {
  struct Row {
    int query;
    bool wait_pending;
    Verdict want;
  };
  const std::vector<Row> rows = {
      // 0..6 mean the same in torch 1.13 and 2.1.
      {0, false, Verdict::kShared},
      {3, false, Verdict::kShared},
      {6, false, Verdict::kShared},
      // 1.13 WATCH_KEY or 2.1 DELETE_KEY: nothing tells them apart.
      {7, false, Verdict::kClose},
      // 1.13 DELETE_KEY or 2.1 APPEND: what follows the key decides.
      {8, false, Verdict::kReadKeyFirst},
      // Only 2.1 has MULTI_GET, MULTI_SET, CANCEL_WAIT.
      {9, false, Verdict::kTorch21},
      {10, false, Verdict::kTorch21},
      {11, false, Verdict::kTorch21},
      {12, false, Verdict::kClose},
      {255, false, Verdict::kClose},
      // After an unanswered WAIT a 2.1 client sends CANCEL_WAIT only.
      {11, true, Verdict::kTorch21},
      {0, true, Verdict::kTorch113},
      {3, true, Verdict::kTorch113},
      {7, true, Verdict::kTorch113},
      {8, true, Verdict::kTorch113},
      {9, true, Verdict::kClose},
  };
  for (const Row& row : rows) {
    INFO("query " << row.query << " wait_pending " << row.wait_pending);
    QueryVerdict v = ClassifyUndecidedQuery(static_cast<uint8_t>(row.query), row.wait_pending);
    CHECK(v.verdict == row.want);
    CHECK(v.reason.empty() == (row.want != Verdict::kClose));
  }
}

TEST_CASE("a close names the query byte and the dialects", "[store][dialect]") {
  CHECK(ClassifyUndecidedQuery(7, false).reason ==
        "query byte 7 is ambiguous before the dialect is known (torch 1.13 WATCH_KEY or 2.1 "
        "DELETE_KEY)");
  CHECK(ClassifyUndecidedQuery(12, false).reason ==
        "unknown query type query=12 dialect=legacy (no such query in torch 1.13 or 2.1)");
  CHECK(Query8AmbiguousReason(600).starts_with(
      "query byte 8 is ambiguous before the dialect is known (torch 1.13 DELETE_KEY or 2.1 "
      "APPEND"));
  CHECK(UnknownQueryReason(19, Dialect::kModern) == "unknown query type query=19 dialect=modern");
  CHECK(UnknownQueryReason(12, Dialect::kTorch21) ==
        "unknown query type query=12 dialect=torch-2.1");
}

TEST_CASE("query 8 is told apart by what follows its key", "[store][dialect]") {
  struct Row {
    uint64_t key_bytes;
    bool bytes_follow;
    bool quiet;
    Query8Verdict want;
  };
  const std::vector<Row> rows = {
      {3, true, false, Query8Verdict::kAppend},  // 2.1 sent the value with the key
      {3, true, true, Query8Verdict::kAppend},
      {3, false, false, Query8Verdict::kWait},  // too early to call it silence
      {3, false, true, Query8Verdict::kDeleteKey},
      {kQuietKeyLimit, false, true, Query8Verdict::kDeleteKey},
      {kQuietKeyLimit + 1, false, true, Query8Verdict::kClose},
      {kQuietKeyLimit + 1, true, false, Query8Verdict::kAppend},
  };
  for (const Row& row : rows) {
    INFO("key " << row.key_bytes << " follow " << row.bytes_follow << " quiet " << row.quiet);
    CHECK(ClassifyQuery8({row.key_bytes, row.bytes_follow, row.quiet}) == row.want);
  }
}

// ---------------------------------------------------------------- the decoder

struct Stream {
  RequestDecoder decoder;
  std::vector<Request> requests;
  DecodeResult::State last = DecodeResult::kNeedMore;
  std::string error;

  // Feeds `bytes`, then decodes everything with `facts`.
  Stream& Push(const std::string& bytes, StreamFacts facts = {}) {
    decoder.Feed(bytes);
    for (;;) {
      DecodeResult r = decoder.Next(facts);
      last = r.state;
      if (r.state != DecodeResult::kRequest) {
        error = r.error;
        return *this;
      }
      requests.push_back(std::move(r.request));
    }
  }
};

Request DialectRequest(Op op, std::vector<std::string> keys = {},
                       std::vector<std::string> values = {}) {
  return Request{op, std::move(keys), std::move(values), 0, 0};
}

const std::string kAddInit = U8(3) + Str("init/") + I64(1);  // both clients' constructor

TEST_CASE("queries 0..6 leave a connection undecided", "[store][dialect]") {
  Stream s;
  s.Push(kAddInit + U8(0) + Str("/k") + Str("v") + U8(5) + U64(1) + Str("/k") + U8(6));
  CHECK(s.requests.size() == 4);
  CHECK(s.decoder.dialect() == Dialect::kLegacy);
  CHECK_FALSE(s.decoder.dialect_settled());
  CHECK(s.decoder.dialect_label() == "undecided (torch 1.13 or 2.1)");
}

TEST_CASE("torch 2.1's MULTI_GET, MULTI_SET or CANCEL_WAIT settle the connection as 2.1",
          "[store][dialect]") {
  SECTION("MULTI_SET, then DELETE_KEY is 7 and APPEND is 8") {
    Stream s;
    s.Push(kAddInit + U8(10) + U64(1) + Str("/a") + Str("1") + U8(7) + Str("/a") + U8(8) +
           Str("/b") + Str("x"));
    REQUIRE(s.requests.size() == 4);
    CHECK(s.requests[1] == DialectRequest(Op::kMultiSet, {"/a"}, {"1"}));
    CHECK(s.requests[2] == DialectRequest(Op::kDeleteKey, {"/a"}));
    CHECK(s.requests[3] == DialectRequest(Op::kAppend, {"/b"}, {"x"}));
    CHECK(s.decoder.dialect() == Dialect::kTorch21);
    CHECK(s.decoder.dialect_settled());
  }
  SECTION("MULTI_GET") {
    Stream s;
    s.Push(U8(9) + U64(2) + Str("/a") + Str("/b"));
    REQUIRE(s.requests.size() == 1);
    CHECK(s.requests[0] == DialectRequest(Op::kMultiGet, {"/a", "/b"}));
    CHECK(s.decoder.dialect() == Dialect::kTorch21);
  }
  SECTION("CANCEL_WAIT after a WAIT timed out") {
    Stream s;
    s.Push(U8(5) + U64(1) + Str("/late"));
    s.Push(U8(11), {.wait_pending = true});
    REQUIRE(s.requests.size() == 2);
    CHECK(s.requests[1] == DialectRequest(Op::kCancelWait));
    CHECK(s.decoder.dialect() == Dialect::kTorch21);
  }
  SECTION("a 2.1 connection rejects bytes past CANCEL_WAIT") {
    Stream s;
    s.Push(U8(9) + U64(0) + U8(12));
    CHECK(s.last == DecodeResult::kError);
    CHECK(s.error == "unknown query type query=12 dialect=torch-2.1");
  }
}

TEST_CASE("a request after an unanswered WAIT settles the connection as torch 1.13",
          "[store][dialect]") {
  Stream s;
  s.Push(U8(5) + U64(1) + Str("/late"));
  // 1.13 gave up on its WAIT and asks something else; 8 is then DELETE_KEY
  // at once, whatever follows.
  s.Push(U8(8) + Str("/k"), {.wait_pending = true, .quiet = false});
  REQUIRE(s.requests.size() == 2);
  CHECK(s.requests[1] == DialectRequest(Op::kDeleteKey, {"/k"}));
  CHECK(s.decoder.dialect() == Dialect::kLegacy);
  CHECK(s.decoder.dialect_settled());
  s.Push(U8(7) + Str("/w"));
  CHECK(s.requests.back() == DialectRequest(Op::kWatchKey, {"/w"}));
}

TEST_CASE("query 7 before the dialect is known closes the connection", "[store][dialect]") {
  Stream s;
  s.Push(kAddInit + U8(7) + Str("/k"));
  CHECK(s.requests.size() == 1);
  CHECK(s.last == DecodeResult::kError);
  CHECK(s.error ==
        "query byte 7 is ambiguous before the dialect is known (torch 1.13 WATCH_KEY or 2.1 "
        "DELETE_KEY)");
}

TEST_CASE("an undecided query 8 is APPEND when bytes follow its key", "[store][dialect]") {
  Stream s;
  // As torch 2.1's SendBuffer writes it: the whole request at once.
  s.Push(kAddInit + U8(8) + Str("/a") + Str("x"), {.quiet = false});
  REQUIRE(s.requests.size() == 2);
  CHECK(s.requests[1] == DialectRequest(Op::kAppend, {"/a"}, {"x"}));
  CHECK(s.decoder.dialect() == Dialect::kTorch21);
}

TEST_CASE("an undecided query 8 with nothing after its key waits for the client to go quiet",
          "[store][dialect]") {
  SECTION("then it is torch 1.13's DELETE_KEY") {
    Stream s;
    s.Push(kAddInit + U8(8) + Str("/k"), {.quiet = false});
    CHECK(s.requests.size() == 1);
    CHECK(s.last == DecodeResult::kNeedMore);
    CHECK(s.decoder.awaiting_quiet());
    s.Push("", {.quiet = true});
    REQUIRE(s.requests.size() == 2);
    CHECK(s.requests[1] == DialectRequest(Op::kDeleteKey, {"/k"}));
    CHECK_FALSE(s.decoder.awaiting_quiet());
    CHECK(s.decoder.dialect() == Dialect::kLegacy);
    CHECK(s.decoder.dialect_settled());
  }
  SECTION("unless the value arrives late: then it is torch 2.1's APPEND") {
    Stream s;
    s.Push(U8(8) + Str("/a"), {.quiet = false});
    CHECK(s.decoder.awaiting_quiet());
    s.Push(U64(1), {.quiet = false});
    CHECK(s.decoder.dialect() == Dialect::kTorch21);
    CHECK(s.requests.empty());
    s.Push("x", {.quiet = false});
    REQUIRE(s.requests.size() == 1);
    CHECK(s.requests[0] == DialectRequest(Op::kAppend, {"/a"}, {"x"}));
  }
  SECTION("a key too long to prove it is closed as ambiguous") {
    Stream s;
    s.Push(U8(8) + Str(std::string(kQuietKeyLimit + 1, 'k')), {.quiet = true});
    CHECK(s.last == DecodeResult::kError);
    CHECK(s.error.starts_with("query byte 8 is ambiguous before the dialect is known"));
  }
}

TEST_CASE("a torch 2.1 stream split at every byte boundary decodes the same", "[store][dialect]") {
  const std::string stream = kAddInit + U8(10) + U64(2) + Str("/a") + Str("1") + Str("/b") +
                             Str("22") + U8(8) + Str("/a") + Str("+") + U8(7) + Str("/b") + U8(9) +
                             U64(1) + Str("/a") + U8(11);
  Stream whole;
  whole.Push(stream);
  REQUIRE(whole.last == DecodeResult::kNeedMore);
  REQUIRE(whole.requests.size() == 6);
  CHECK(whole.decoder.dialect() == Dialect::kTorch21);
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    Stream split;
    split.Push(stream.substr(0, cut), {.quiet = false});
    split.Push(stream.substr(cut), {.quiet = false});
    INFO("cut at " << cut);
    CHECK(split.requests == whole.requests);
  }
}

}  // namespace
}  // namespace muster::store
