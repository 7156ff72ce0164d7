// Counts the connections the worker store refused (PeerAdmission said no, the
// peer had no address to check, or the connection cap was reached)
// and decides which refusals get a warning line, so that a host that
// reconnects in a loop cannot flood the agent's log. Pure: `now` comes in.
//
// Rule:
//   - The first refusal of an address warns at once.
//   - Any other refusal warns only when no refusal warned in the last
//     kQuietFor (10 s), all addresses together; that line says how many
//     connections were refused since the previous warning.
//   - Addresses are remembered up to kMaxAddresses; past that, an address not
//     seen before is treated as seen (throttled), and counted only in total.
//
//   RefusalLog log;
//   if (auto line = log.OnRefused("10.0.0.3", now)) spdlog::warn("{}", *line);
//
// Thread-safety: none.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/clock.h"

namespace muster::store {

class RefusalLog {
 public:
  static constexpr std::chrono::seconds kQuietFor{10};
  static constexpr size_t kMaxAddresses = 1024;

  // Records one refused connection from `address`. Returns the warning line
  // to log, or nullopt when this refusal is throttled. E.g.
  //   "event=store_refused peer=10.0.0.3 refused_total=1 refused_since_last_warning=1
  //    admitted=members=2 (the store admits loopback, ...; see --store-allow)"
  // `reason` ends the line: AdmissionReason() for a peer the rule refused.
  std::optional<std::string> OnRefused(const std::string& address, const std::string& reason,
                                       Time now);
  // The reason of a refusal by the admission rule whose PeerAdmission::
  // Describe() is `admission`.
  static std::string AdmissionReason(const std::string& admission);

  uint64_t total() const { return total_; }
  // Refusals of `address` (0 when never refused, or not remembered).
  uint64_t RefusedFrom(const std::string& address) const;

 private:
  uint64_t total_ = 0;
  uint64_t since_warning_ = 0;  // refusals since the last warning, this one included
  std::optional<Time> last_warning_;
  std::map<std::string, uint64_t> by_address_;
};

}  // namespace muster::store
