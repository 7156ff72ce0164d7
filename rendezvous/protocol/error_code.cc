#include "rendezvous/protocol/error_code.h"

#include <array>
#include <utility>

namespace muster::rdzv {
namespace {

// The one place a code's wire string is written. kUnknown is not in it, so
// no string on the wire parses to kUnknown by name.
constexpr std::array<std::pair<ErrorCode, std::string_view>, 9> kWireNames{{
    {ErrorCode::kBadVersion, "bad_version"},
    {ErrorCode::kBadToken, "bad_token"},
    {ErrorCode::kBadFrame, "bad_frame"},
    {ErrorCode::kBadRequest, "bad_request"},
    {ErrorCode::kStaleGeneration, "stale_generation"},
    {ErrorCode::kUnknownNode, "unknown_node"},
    {ErrorCode::kUnknownRun, "unknown_run"},
    {ErrorCode::kNotLeader, "not_leader"},
    {ErrorCode::kNoLeader, "no_leader"},
}};

// Every known code appears once, with a name of its own: a code left out
// would be encoded as "unknown", and a repeated name would parse to only one.
constexpr bool TableIsComplete() {
  for (size_t i = 0; i < kWireNames.size(); ++i) {
    if (kWireNames[i].first == ErrorCode::kUnknown || kWireNames[i].second.empty()) return false;
    if (static_cast<size_t>(kWireNames[i].first) != i + 1) return false;  // enum order, no gap
    for (size_t j = i + 1; j < kWireNames.size(); ++j) {
      if (kWireNames[i].second == kWireNames[j].second) return false;
    }
  }
  // Holds while kNoLeader is the last enumerator. Not caught: a code added
  // after it with no row; whoever adds one must name it here instead.
  return static_cast<size_t>(ErrorCode::kNoLeader) == kWireNames.size();
}
static_assert(TableIsComplete(), "every ErrorCode but kUnknown needs one wire name of its own");

}  // namespace

std::string_view ErrorCodeName(ErrorCode code) {
  for (const auto& [known, name] : kWireNames) {
    if (known == code) return name;
  }
  return "unknown";
}

ErrorCode ParseErrorCode(std::string_view name) {
  for (const auto& [code, known] : kWireNames) {
    if (known == name) return code;
  }
  return ErrorCode::kUnknown;
}

}  // namespace muster::rdzv
