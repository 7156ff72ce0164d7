#include "rendezvous/state/refusal.h"

#include <utility>

namespace muster::rdzv {

Actions Refusal(ConnId conn, ErrorCode code, std::string message, Refused how) {
  const bool fatal = how == Refused::kFatal;
  Actions out;
  out.reserve(2);
  // Each Action is built in the vector from its alternative: g++ 12 at -O2
  // warns (wrongly) that a moved-from Action temporary may be uninitialized.
  // (Not in_place_type with the fields: clang 14, which builds the fuzz
  // targets, cannot initialize an aggregate from parentheses.)
  out.emplace_back(SendAction{conn, Error{code, std::move(message), fatal}});
  if (fatal) out.emplace_back(CloseAction{conn});
  return out;
}

}  // namespace muster::rdzv
