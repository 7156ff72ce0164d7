// Membership: a worker's place in one generation of a job that recovers in
// place, and how the agent's `join` moves it into the next
// (control/PROTOCOL.md).
//
//   Membership first = Membership::Initial(ctx);          // from the environment
//   Membership next = first.Joining(join);                // the agent said `join G ...`
//
// After a join, ctx's own `generation` (a restart count) is left as it was:
// nothing in the runtime reads it but StoreNamespace(), which
// `store_prefix` replaces; so is `local_world_size` (`join` does not carry
// it) and `run_id`.
//
// Thread-safety: a value type; pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "control/control_message.h"
#include "worker_runtime/bootstrap/context.h"

namespace muster::runtime {

struct Membership {
  // Rank, world size, local rank, master address and port of the generation.
  Context ctx;
  // The store namespace of the generation's keys; ends with '/'.
  std::string store_prefix;
  // Set when the agent told this worker to join this generation and it has
  // not answered `joined` yet; nullopt for the first generation.
  std::optional<uint64_t> joining;

  // The generation the process started in: `ctx` as read from the
  // environment, its StoreNamespace(), nothing to answer.
  static Membership Initial(const Context& ctx);
  // The generation `join` names: this membership with the join's rank,
  // world size, local rank, master address and port, store prefix, and
  // `joining` its generation. REQUIRES: `join` parsed (its fields in the
  // ranges control/control_message.h checks).
  Membership Joining(const control::Join& join) const;
};

}  // namespace muster::runtime
