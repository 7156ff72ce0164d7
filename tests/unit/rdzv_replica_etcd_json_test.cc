// etcd's JSON gateway bodies (etcd_json.h). The answers are as etcd 3.4.23
// (Debian 12's etcd-server) sent them to curl, headers shortened.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "rendezvous/replica/etcd_json.h"

using namespace muster::rdzv::replica;
using nlohmann::json;

namespace {

const std::string kHeader =
    R"("header":{"cluster_id":"324952591200643719","member_id":"3319814642761637952","revision":"7","raft_term":"2"})";

}  // namespace

TEST_CASE("base64 round-trips every byte and refuses what is not base64", "[replica][etcd]") {
  CHECK(Base64Encode("") == "");
  CHECK(Base64Encode("/muster/musterd") == "L211c3Rlci9tdXN0ZXJk");
  CHECK(Base64Encode("a") == "YQ==");
  CHECK(Base64Encode("ab") == "YWI=");
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  for (size_t n : {0, 1, 2, 3, 4, 255, 256}) {
    CHECK(Base64Decode(Base64Encode(all.substr(0, n))) == all.substr(0, n));
  }
  for (const char* bad : {"a", "YQ=", "Y===", "YQ=a", "=YQ=", "YQ==YQ==", "Y!Q="}) {
    CHECK_FALSE(Base64Decode(bad));
  }
}

TEST_CASE("a lease grant is read with its 64-bit ID intact", "[replica][etcd]") {
  CHECK(json::parse(LeaseGrantBody(2)) == json{{"TTL", "2"}});
  auto granted = ParseLeaseGrant("{" + kHeader + R"(,"ID":"2324035601773309960","TTL":"10"})");
  REQUIRE(granted.ok());
  CHECK(granted->id == 2324035601773309960);
  CHECK(granted->ttl_seconds == 10);
  auto bad = ParseLeaseGrant("{" + kHeader + "}");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(),
             Catch::StartsWith("etcd lease grant: no lease ID and TTL in '"));
}

TEST_CASE("a keepalive answer gives the TTL, or 0 for a lease etcd no longer knows",
          "[replica][etcd]") {
  CHECK(json::parse(LeaseKeepAliveBody(2324035601773309981)) ==
        json{{"ID", "2324035601773309981"}});
  auto renewed = ParseLeaseKeepAlive(
      R"({"result":{"header":{"revision":"3"},"ID":"2324035601773309981","TTL":"10"}})"
      "\n");
  REQUIRE(renewed.ok());
  CHECK(*renewed == 10);
  auto gone =
      ParseLeaseKeepAlive(R"({"result":{"header":{"revision":"3"},"ID":"4459023300198039047"}})");
  REQUIRE(gone.ok());
  CHECK(*gone == 0);
  auto no_leader = ParseLeaseKeepAlive(
      R"({"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader","http_status":"Service Unavailable"}})");
  REQUIRE_FALSE(no_leader.ok());
  CHECK(no_leader.status().message() == "etcd lease keepalive: etcdserver: no leader (code 14)");
}

TEST_CASE("the campaign creates the key with the lease only if it is absent", "[replica][etcd]") {
  json body = json::parse(CampaignBody("/muster/musterd", "10.0.0.1:29400", 42));
  const std::string key = Base64Encode("/muster/musterd");
  CHECK(body["compare"] ==
        json::parse(R"([{"key":")" + key +
                    R"(","target":"CREATE","result":"EQUAL","create_revision":"0"}])"));
  CHECK(body["success"][0]["request_put"] ==
        json{{"key", key}, {"value", Base64Encode("10.0.0.1:29400")}, {"lease", "42"}});
  CHECK(body["failure"][0]["request_range"] == json{{"key", key}});
}

TEST_CASE("a won campaign gives the revision of the create", "[replica][etcd]") {
  auto won = ParseCampaign(
      "{" + kHeader +
      R"(,"succeeded":true,"responses":[{"response_put":{"header":{"revision":"7"}}}]})");
  REQUIRE(won.ok());
  CHECK(won->won);
  CHECK(won->revision == 7);
}

TEST_CASE("a lost campaign gives the key as it is held", "[replica][etcd]") {
  auto lost = ParseCampaign(
      "{" + kHeader +
      R"(,"responses":[{"response_range":{"header":{"revision":"7"},"kvs":[{"key":"L3N2Yy9sZWFkZXI=","create_revision":"7","mod_revision":"7","version":"1","value":"bm9kZS1hOjgwODA=","lease":"2324035601773310001"}],"count":"1"}}]})");
  REQUIRE(lost.ok());
  CHECK_FALSE(lost->won);
  REQUIRE(lost->held);
  CHECK(lost->held->value == "node-a:8080");
  CHECK(lost->held->create_revision == 7);
  CHECK(lost->held->lease == 2324035601773310001);
  // The key vanished between the compare and the read.
  auto vanished = ParseCampaign(
      "{" + kHeader + R"(,"responses":[{"response_range":{"header":{"revision":"8"}}}]})");
  REQUIRE(vanished.ok());
  CHECK_FALSE(vanished->held);
}

TEST_CASE("a campaign with an expired lease is etcd's error", "[replica][etcd]") {
  auto refused = ParseCampaign(
      R"({"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5})");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().IsIoError());
  CHECK(refused.status().message() ==
        "etcd campaign: etcdserver: requested lease not found (code 5)");
}

TEST_CASE("a range reads a key or its absence", "[replica][etcd]") {
  CHECK(json::parse(RangeBody("/a")) == json{{"key", "L2E="}});
  auto present = ParseRange(
      "{" + kHeader +
      R"(,"kvs":[{"key":"L2VsZWN0aW9uL2xlYWRlcg==","create_revision":"4","mod_revision":"4","version":"1","value":"aHR0cDovLzEwLjAuMC4xOjgwODA=","lease":"2324035601773309992"}],"count":"1"})");
  REQUIRE(present.ok());
  REQUIRE(*present);
  CHECK((*present)->value == "http://10.0.0.1:8080");
  CHECK((*present)->create_revision == 4);
  auto absent = ParseRange("{" + kHeader + "}");
  REQUIRE(absent.ok());
  CHECK_FALSE(*absent);
}

TEST_CASE("a range of a prefix reads every key under it, with its name", "[replica][etcd]") {
  // "/m/runs/" up to "/m/runs0": the last byte incremented.
  CHECK(json::parse(RangePrefixBody("/m/runs/")) ==
        json{{"key", "L20vcnVucy8="}, {"range_end", "L20vcnVuczA="}});
  // A trailing 0xff byte carries into the one before it.
  CHECK(json::parse(RangePrefixBody("a\xff")) == json{{"key", "Yf8="}, {"range_end", "Yg=="}});
  auto two = ParseRangePrefix(
      "{" + kHeader +
      R"(,"kvs":[{"key":"L20vcnVucy9qb2I=","create_revision":"2","mod_revision":"2","version":"1","value":"eyJnIjoxfQ=="},{"key":"L20vcnVucy9qb2Iy","create_revision":"3","mod_revision":"3","version":"1","value":"eA=="}],"count":"2"})");
  REQUIRE(two.ok());
  REQUIRE(two->size() == 2);
  CHECK((*two)[0].key == "/m/runs/job");
  CHECK((*two)[0].value == R"({"g":1})");
  CHECK((*two)[1].key == "/m/runs/job2");
  CHECK((*two)[1].value == "x");
  auto none = ParseRangePrefix("{" + kHeader + "}");
  REQUIRE(none.ok());
  CHECK(none->empty());
  CHECK_FALSE(ParseRangePrefix("{" + kHeader + R"(,"kvs":[{"key":"***"}]})").ok());
}

TEST_CASE("a put binds the key to a lease when given one", "[replica][etcd]") {
  CHECK(json::parse(PutBody("/r", "v", 0)) == json{{"key", "L3I="}, {"value", "dg=="}});
  CHECK(json::parse(PutBody("/r", "v", 7587888183838396966)) ==
        json{{"key", "L3I="}, {"value", "dg=="}, {"lease", "7587888183838396966"}});
  CHECK(ParsePut("{" + kHeader + "}").ok());
  const muster::Status lost = ParsePut(
      R"({"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5})");
  REQUIRE_FALSE(lost.ok());
  CHECK_THAT(lost.message(), Catch::Contains("requested lease not found"));
}

TEST_CASE("a guarded put commits only while the guard key is the one created then",
          "[replica][etcd]") {
  CHECK(json::parse(GuardedPutBody("/m/musterd/leader", 12, "/m/runs/job", "{}")) ==
        json{{"compare", json::array({{{"key", "L20vbXVzdGVyZC9sZWFkZXI="},
                                       {"target", "CREATE"},
                                       {"result", "EQUAL"},
                                       {"create_revision", "12"}}})},
             {"success",
              json::array({{{"request_put", {{"key", "L20vcnVucy9qb2I="}, {"value", "e30="}}}}})}});
  auto committed = ParseGuardedPut(
      "{" + kHeader +
      R"(,"succeeded":true,"responses":[{"response_put":{"header":{"revision":"4"}}}]})");
  REQUIRE(committed.ok());
  CHECK(*committed);
  auto refused = ParseGuardedPut("{" + kHeader + "}");  // etcd leaves a false out
  REQUIRE(refused.ok());
  CHECK_FALSE(*refused);
  CHECK_FALSE(ParseGuardedPut("{" + kHeader + R"(,"succeeded":"yes"})").ok());
}

TEST_CASE("bodies that are not etcd's are refused, quoted", "[replica][etcd]") {
  for (const char* body :
       {"", "[]", "not json", R"({"kvs":{}})", R"({"kvs":[{"value":"not base64!"}]})",
        R"({"kvs":[{"create_revision":"x"}]})"}) {
    auto read = ParseRange(body);
    REQUIRE_FALSE(read.ok());
    CHECK_THAT(read.status().message(), Catch::StartsWith("etcd range: "));
  }
  auto no_result = ParseLeaseKeepAlive(R"({"ID":"1"})");
  REQUIRE_FALSE(no_result.ok());
  CHECK_THAT(no_result.status().message(), Catch::Contains("no result"));
}

TEST_CASE("an error whose fields have other types is still an error, never a throw",
          "[replica][etcd]") {
  // Found by fuzz_etcd_json: a "message" that is a number threw from json::value.
  for (const char* body : {R"({"error":"etcdserver: down","message":4})",
                           R"({"error":{"message":[1],"grpc_code":"x"}})", R"({"error":7})"}) {
    const muster::Status put = ParsePut(body);
    REQUIRE_FALSE(put.ok());
    CHECK(put.IsIoError());
  }
  CHECK(ParsePut(R"({"error":"etcdserver: down","message":4})").message() ==
        "etcd put: etcdserver: down");
  CHECK(ParsePut(R"({"error":7})").message() == "etcd put: an error with no message");
  // And a campaign's "succeeded" that is no bool.
  auto campaign = ParseCampaign(R"({"header":{"revision":"7"},"succeeded":"yes"})");
  REQUIRE_FALSE(campaign.ok());
  CHECK_THAT(campaign.status().message(), Catch::StartsWith("etcd campaign: "));
  // Found by fuzz_etcd_json too: etcd's text stays on one line.
  CHECK(ParsePut(R"({"error":"lease\nnot found\u001b[2J","code":5})").message() ==
        "etcd put: lease\\nnot found\\x1b[2J (code 5)");
}
