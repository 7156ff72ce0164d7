// Error codes on the wire: each ErrorCode has the string PROTOCOL.md names,
// and a code from a later version survives decoding as kUnknown.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "rendezvous/protocol/frame_codec.h"
#include "rendezvous/protocol/message_codec.h"

namespace muster::rdzv {
namespace {

constexpr uint8_t kError = static_cast<uint8_t>(MessageType::kError);

// The wire strings as PROTOCOL.md spells them ("Error.code is one of ..."):
// a deliberate copy of error_code.cc's table, so that changing a wire string
// fails here.
const std::vector<std::pair<ErrorCode, std::string>>& DocumentedCodes() {
  static const std::vector<std::pair<ErrorCode, std::string>> codes = {
      {ErrorCode::kBadVersion, "bad_version"},
      {ErrorCode::kBadToken, "bad_token"},
      {ErrorCode::kBadFrame, "bad_frame"},
      {ErrorCode::kBadRequest, "bad_request"},
      {ErrorCode::kStaleGeneration, "stale_generation"},
      {ErrorCode::kUnknownNode, "unknown_node"},
      {ErrorCode::kUnknownRun, "unknown_run"},
      {ErrorCode::kNotLeader, "not_leader"},
      {ErrorCode::kNoLeader, "no_leader"},
  };
  return codes;
}

TEST_CASE("every error code is sent as the string the protocol documents") {
  for (const auto& [code, wire] : DocumentedCodes()) {
    INFO(wire);
    CHECK(ErrorCodeName(code) == wire);
    CHECK(ParseErrorCode(wire) == code);
    CHECK(Encode(Error{.code = code, .message = "m", .fatal = true}) ==
          EncodeFrame(kError, R"({"code":")" + wire + R"(","fatal":true,"message":"m"})"));
  }
}

TEST_CASE("a code this version does not know decodes as unknown and keeps its string") {
  const std::string payload = R"({"code":"too_many_nodes","fatal":false,"message":"m"})";
  Result<Message> decoded = Decode(kError, payload);
  REQUIRE(decoded.ok());
  const Error& error = std::get<Error>(*decoded);
  CHECK(error.code == ErrorCode::kUnknown);
  CHECK(error.unknown_code == "too_many_nodes");
  CHECK(error.code_name() == "too_many_nodes");
  // Passed on unchanged: encoding writes the string it arrived with.
  CHECK(Encode(error) == EncodeFrame(kError, payload));
}

TEST_CASE("a known code keeps no copy of its string") {
  Result<Message> decoded =
      Decode(kError, R"({"code":"stale_generation","fatal":false,"message":"m"})");
  REQUIRE(decoded.ok());
  const Error& error = std::get<Error>(*decoded);
  CHECK(error.code == ErrorCode::kStaleGeneration);
  CHECK(error.unknown_code.empty());
  CHECK(error.code_name() == "stale_generation");
}

TEST_CASE("names match exactly: another case or the word unknown is not a known code") {
  CHECK(ParseErrorCode("Bad_Token") == ErrorCode::kUnknown);
  CHECK(ParseErrorCode("unknown") == ErrorCode::kUnknown);
  CHECK(ParseErrorCode("") == ErrorCode::kUnknown);
  CHECK(ErrorCodeName(ErrorCode::kUnknown) == "unknown");
}

TEST_CASE("an error code that is not a string is refused like any string field") {
  Result<Message> decoded = Decode(kError, R"({"code":7,"fatal":false,"message":"m"})");
  REQUIRE_FALSE(decoded.ok());
  CHECK(decoded.status().message() == "Error.code: expected a string, got 7");
}

}  // namespace
}  // namespace muster::rdzv
