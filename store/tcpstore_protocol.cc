#include "store/tcpstore_protocol.h"

#include <array>
#include <cstddef>

#include "store/dialect_rule.h"

namespace muster::store {
namespace {

// Index = query byte, each the QueryType enum of its torch version (cited in
// tests/unit/store_torch_wire_tables.txt, which checks them byte by byte).
constexpr std::array kLegacyOps = {Op::kSet,        Op::kCompareSet, Op::kGet,
                                   Op::kAdd,        Op::kCheck,      Op::kWait,
                                   Op::kGetNumKeys, Op::kWatchKey,   Op::kDeleteKey};
constexpr std::array kTorch21Ops = {Op::kSet,    Op::kCompareSet, Op::kGet,        Op::kAdd,
                                    Op::kCheck,  Op::kWait,       Op::kGetNumKeys, Op::kDeleteKey,
                                    Op::kAppend, Op::kMultiGet,   Op::kMultiSet,   Op::kCancelWait};
constexpr std::array kModernOps = {Op::kValidate,   Op::kSet,      Op::kCompareSet, Op::kGet,
                                   Op::kAdd,        Op::kCheck,    Op::kWait,       Op::kGetNumKeys,
                                   Op::kDeleteKey,  Op::kAppend,   Op::kMultiGet,   Op::kMultiSet,
                                   Op::kCancelWait, Op::kPing,     Op::kQueuePush,  Op::kQueuePop,
                                   Op::kQueueLen,   Op::kListKeys, Op::kBarrier};

// What a connection can do before torch 1.13 and 2.1 are told apart
// (dialect_rule.h) must mean the same in both tables.
constexpr bool SharedBytesAgree() {
  for (size_t wire = 0; wire < kSharedQueryBytes; ++wire) {
    if (kLegacyOps[wire] != kTorch21Ops[wire]) return false;
  }
  return true;
}
static_assert(SharedBytesAgree(), "query bytes 0..6 must mean the same in torch 1.13 and 2.1");

}  // namespace

std::optional<Op> OpFromWire(Dialect dialect, uint8_t wire) {
  const auto at = [wire](const auto& table) -> std::optional<Op> {
    if (wire < table.size()) return table[wire];
    return std::nullopt;
  };
  switch (dialect) {
    case Dialect::kLegacy:
      return at(kLegacyOps);
    case Dialect::kTorch21:
      return at(kTorch21Ops);
    case Dialect::kModern:
      return at(kModernOps);
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
    case Dialect::kTorch21:
      return find(kTorch21Ops);
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
    case Op::kQueuePush:
      return "QUEUE_PUSH";
    case Op::kQueuePop:
      return "QUEUE_POP";
    case Op::kQueueLen:
      return "QUEUE_LEN";
    case Op::kListKeys:
      return "LIST_KEYS";
    case Op::kBarrier:
      return "BARRIER";
  }
  return "UNKNOWN";
}

std::string_view DialectName(Dialect dialect) {
  switch (dialect) {
    case Dialect::kUnknown:
      return "unknown";
    case Dialect::kLegacy:
      return "legacy";
    case Dialect::kTorch21:
      return "torch-2.1";
    case Dialect::kModern:
      return "modern";
  }
  return "unknown";
}

}  // namespace muster::store
