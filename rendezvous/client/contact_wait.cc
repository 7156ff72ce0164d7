#include "rendezvous/client/contact_wait.h"

#include <algorithm>

#include "common/clock.h"

namespace muster::rdzv {

ContactWait::ContactWait(Duration limit, std::string limit_name, Time start, Duration first_warning,
                         Duration warn_every)
    : limit_(limit),
      limit_name_(std::move(limit_name)),
      start_(start),
      first_warning_(first_warning),
      warn_every_(warn_every) {}

std::optional<std::string> ContactWait::OnAttemptFailed(const Endpoint& endpoint, std::string cause,
                                                        Time now) {
  if (contacted_) return std::nullopt;
  auto known = std::find_if(causes_.begin(), causes_.end(),
                            [&](const auto& entry) { return entry.first == endpoint; });
  if (known == causes_.end()) {
    causes_.emplace_back(endpoint, std::move(cause));
  } else {
    known->second = std::move(cause);
  }
  // Agents often start before whoever serves the rendezvous: a short wait is
  // normal and says nothing; a long one says what it waits for, now and then.
  if (now - start_ < first_warning_) return std::nullopt;
  if (warned_at_ && now - *warned_at_ < warn_every_) return std::nullopt;
  warned_at_ = now;
  // To a tenth of a second: "giving up in 2.8 s".
  const auto left = std::chrono::round<std::chrono::duration<int64_t, std::deci>>(deadline() - now);
  return "waiting for the rendezvous: " + Causes() + "; giving up in " +
         SecondsText(std::max(Duration(left), Duration(0))) + " s" + " (" + limit_name_ + " " +
         SecondsText(limit_) + " s)";
}

std::string ContactWait::GiveUpMessage() const {
  return "the rendezvous was not reached within " + limit_name_ + " " + SecondsText(limit_) + " s" +
         ": " + (causes_.empty() ? std::string("no connection attempt finished") : Causes());
}

std::string ContactWait::Causes() const {
  std::string text;
  for (const auto& [endpoint, cause] : causes_) {
    if (!text.empty()) text += ", ";
    text += endpoint.Text() + " " + cause;
  }
  return text;
}

std::pair<std::chrono::milliseconds, std::string> FirstContactLimit(const Settings& settings) {
  if (settings.read_timeout <= settings.join_timeout) {
    return {settings.read_timeout, "read_timeout"};
  }
  return {settings.join_timeout, "join_timeout"};
}

}  // namespace muster::rdzv
