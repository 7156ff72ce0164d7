#include "store/dialect_rule.h"

namespace muster::store {

QueryVerdict ClassifyUndecidedQuery(uint8_t query, bool wait_pending) {
  constexpr uint8_t kCancelWait21 = 11;
  if (query == kCancelWait21) return {Verdict::kTorch21, {}};
  // Only 1.13 sends anything but CANCEL_WAIT after an unanswered WAIT; its
  // numbering then decodes every byte it has, 7 and 8 included.
  if (wait_pending) {
    if (query <= 8) return {Verdict::kTorch113, {}};
    return {Verdict::kClose, "query byte " + std::to_string(query) +
                                 " after an unanswered WAIT fits neither torch 1.13 nor 2.1"};
  }
  if (query < kSharedQueryBytes) return {Verdict::kShared, {}};
  if (query == 7) {
    return {Verdict::kClose,
            "query byte 7 is ambiguous before the dialect is known (torch 1.13 WATCH_KEY or 2.1 "
            "DELETE_KEY)"};
  }
  if (query == 8) return {Verdict::kReadKeyFirst, {}};
  if (query == 9 || query == 10) return {Verdict::kTorch21, {}};
  return {Verdict::kClose, "unknown query type query=" + std::to_string(query) +
                               " dialect=legacy (no such query in torch 1.13 or 2.1)"};
}

Query8Verdict ClassifyQuery8(const Query8Facts& facts) {
  // A 1.13 client sends nothing after DELETE_KEY's key before the reply, so
  // any byte there is APPEND's value length.
  if (facts.bytes_follow) return Query8Verdict::kAppend;
  if (!facts.quiet) return Query8Verdict::kWait;
  // APPEND's key and value length leave the client in one send(); in one
  // segment too when they fit a minimal one, so silence proves DELETE_KEY.
  if (facts.key_bytes <= kQuietKeyLimit) return Query8Verdict::kDeleteKey;
  return Query8Verdict::kClose;
}

std::string Query8AmbiguousReason(uint64_t key_bytes) {
  return "query byte 8 is ambiguous before the dialect is known (torch 1.13 DELETE_KEY or 2.1 "
         "APPEND; key of " +
         std::to_string(key_bytes) + " bytes, over " + std::to_string(kQuietKeyLimit) +
         ", and nothing after it)";
}

std::string UnknownQueryReason(uint8_t query, Dialect dialect) {
  return "unknown query type query=" + std::to_string(query) +
         " dialect=" + std::string(DialectName(dialect));
}

}  // namespace muster::store
