#include "rendezvous/state/refusal.h"

#include <utility>

namespace muster::rdzv {

Actions Refusal(ConnId conn, ErrorCode code, std::string message, bool fatal) {
  Actions out;
  out.reserve(2);
  // Built in place: g++ 12 at -O2 warns (wrongly) that a moved-from Action
  // temporary may be uninitialized.
  out.emplace_back(std::in_place_type<SendAction>, conn, Error{code, std::move(message), fatal});
  if (fatal) out.emplace_back(std::in_place_type<CloseAction>, conn);
  return out;
}

}  // namespace muster::rdzv
