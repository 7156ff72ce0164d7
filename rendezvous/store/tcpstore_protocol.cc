#include "rendezvous/store/tcpstore_protocol.h"

#include <array>
#include <cstddef>

namespace muster::store {
namespace {

// Index = query byte. The legacy table was verified by capturing what torch
// 1.13's client sends (the literals in tests/unit/store_codec_tests.cc);
// WATCH_KEY's slot (no Python API) is implied by DELETE_KEY being 8.
constexpr std::array kLegacyOps = {Op::kSet,        Op::kCompareSet, Op::kGet,
                                   Op::kAdd,        Op::kCheck,      Op::kWait,
                                   Op::kGetNumKeys, Op::kWatchKey,   Op::kDeleteKey};
constexpr std::array kModernOps = {Op::kValidate,   Op::kSet,    Op::kCompareSet, Op::kGet,
                                   Op::kAdd,        Op::kCheck,  Op::kWait,       Op::kGetNumKeys,
                                   Op::kDeleteKey,  Op::kAppend, Op::kMultiGet,   Op::kMultiSet,
                                   Op::kCancelWait, Op::kPing};

}  // namespace

std::optional<Op> OpFromWire(Dialect dialect, uint8_t wire) {
  switch (dialect) {
    case Dialect::kLegacy:
      if (wire < kLegacyOps.size()) return kLegacyOps[wire];
      return std::nullopt;
    case Dialect::kModern:
      if (wire < kModernOps.size()) return kModernOps[wire];
      return std::nullopt;
    case Dialect::kUnknown:
      break;
  }
  return std::nullopt;
}

std::optional<uint8_t> OpToWire(Dialect dialect, Op op) {
  // The tables above are the one mapping; searching them keeps the two
  // directions from ever disagreeing.
  const auto find = [op](const auto& table) -> std::optional<uint8_t> {
    for (size_t wire = 0; wire < table.size(); ++wire) {
      if (table[wire] == op) return static_cast<uint8_t>(wire);
    }
    return std::nullopt;
  };
  switch (dialect) {
    case Dialect::kLegacy:
      return find(kLegacyOps);
    case Dialect::kModern:
      return find(kModernOps);
    case Dialect::kUnknown:
      break;
  }
  return std::nullopt;
}

std::string_view OpName(Op op) {
  switch (op) {
    case Op::kValidate:
      return "VALIDATE";
    case Op::kSet:
      return "SET";
    case Op::kCompareSet:
      return "COMPARE_SET";
    case Op::kGet:
      return "GET";
    case Op::kAdd:
      return "ADD";
    case Op::kCheck:
      return "CHECK";
    case Op::kWait:
      return "WAIT";
    case Op::kGetNumKeys:
      return "GETNUMKEYS";
    case Op::kWatchKey:
      return "WATCH_KEY";
    case Op::kDeleteKey:
      return "DELETE_KEY";
    case Op::kAppend:
      return "APPEND";
    case Op::kMultiGet:
      return "MULTI_GET";
    case Op::kMultiSet:
      return "MULTI_SET";
    case Op::kCancelWait:
      return "CANCEL_WAIT";
    case Op::kPing:
      return "PING";
  }
  return "UNKNOWN";
}

std::string_view DialectName(Dialect dialect) {
  switch (dialect) {
    case Dialect::kUnknown:
      return "unknown";
    case Dialect::kLegacy:
      return "legacy";
    case Dialect::kModern:
      return "modern";
  }
  return "unknown";
}

}  // namespace muster::store
