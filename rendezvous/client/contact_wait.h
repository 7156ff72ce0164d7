// ContactWait: an agent's wait for its first word from the rendezvous, as a
// pure object fed the outcome of each connection attempt.
//
// Before the first Welcome nothing runs on this node, so there is nothing to
// fence; what matters is that the user sees what the agent waits for and
// that the wait ends. The rules:
//   - each failed attempt is remembered with its cause, per endpoint;
//   - a warning naming the endpoints and their causes is due once the wait
//     has lasted `first_warning`, then at most every `warn_every`;
//   - at `limit` without contact the wait has failed: the agent ends with
//     one error line, GiveUpMessage(). The limit is the shorter of
//     read_timeout and join_timeout (settings.h): FirstContactLimit().
// Contact (a Welcome) ends the wait for good: later losses are the fence
// rule's business (fence_rule.h).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "rendezvous/client/endpoint_walk.h"
#include "rendezvous/state/settings.h"

namespace muster::rdzv {

class ContactWait {
 public:
  using Duration = std::chrono::milliseconds;

  static constexpr Duration kFirstWarning{2'000};
  static constexpr Duration kWarnEvery{5'000};

  // `limit_name` names the setting `limit` came from, for the messages.
  ContactWait(Duration limit, std::string limit_name, Time start,
              Duration first_warning = kFirstWarning, Duration warn_every = kWarnEvery);

  // An attempt at `endpoint` failed for `cause` ("connection refused", "no
  // answer within 2 s", ...). Returns the warning to log now, if one is due.
  std::optional<std::string> OnAttemptFailed(const Endpoint& endpoint, std::string cause, Time now);
  // The first Welcome: from now on nothing here is due any more.
  void OnContact() { contacted_ = true; }
  bool contacted() const { return contacted_; }
  // When the wait fails if no contact came by then.
  Time deadline() const { return start_ + limit_; }
  bool Expired(Time now) const { return !contacted_ && now >= deadline(); }
  // The one error line for a failed wait: every endpoint with its latest
  // cause (or "no attempt finished"), and the limit.
  std::string GiveUpMessage() const;

 private:
  std::string Causes() const;

  Duration limit_;
  std::string limit_name_;
  Time start_;
  Duration first_warning_;
  Duration warn_every_;
  bool contacted_ = false;
  std::optional<Time> warned_at_;
  std::vector<std::pair<Endpoint, std::string>> causes_;  // in the order first seen
};

// The bound on a first contact and the setting it comes from: read_timeout
// or join_timeout, whichever is shorter.
std::pair<std::chrono::milliseconds, std::string> FirstContactLimit(const Settings& settings);

}  // namespace muster::rdzv
