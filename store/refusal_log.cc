#include "store/refusal_log.h"

namespace muster::store {

std::optional<std::string> RefusalLog::OnRefused(const std::string& address,
                                                 const std::string& reason, Time now) {
  ++total_;
  ++since_warning_;
  bool first_of_address = false;
  if (auto it = by_address_.find(address); it != by_address_.end()) {
    ++it->second;
  } else if (by_address_.size() < kMaxAddresses) {
    by_address_.emplace(address, 1);
    first_of_address = true;
  }
  const bool quiet_long_enough = !last_warning_ || now - *last_warning_ >= kQuietFor;
  if (!first_of_address && !quiet_long_enough) return std::nullopt;
  std::string line = "event=store_refused peer=" + address +
                     " refused_total=" + std::to_string(total_) +
                     " refused_since_last_warning=" + std::to_string(since_warning_) + " " + reason;
  last_warning_ = now;
  since_warning_ = 0;
  return line;
}

std::string RefusalLog::AdmissionReason(const std::string& admission) {
  return "admitted=" + admission +
         " (the store admits loopback, this host and the admitted hosts only; see --store-allow)";
}

uint64_t RefusalLog::RefusedFrom(const std::string& address) const {
  auto it = by_address_.find(address);
  return it == by_address_.end() ? 0 : it->second;
}

}  // namespace muster::store
