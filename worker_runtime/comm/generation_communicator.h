// The communicator of a generation formed in place: shrunk from the one a
// rank kept from the last generation when every rank agrees it can be
// (communicator_agreement.h), else created anew (CreateCommunicator).
//
//   std::optional<KeptCommunicator> kept = ...;  // from the last generation
//   auto comm = FormGenerationCommunicator(ctx, store, options, plan, std::move(kept));
//   ...
//   kept = KeepForShrink(comm, store_prefix);    // leaving in place
//
// Thread-safety: one call per rank and generation.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/comm/communicator_plan.h"

namespace muster::runtime {

// A communicator that outlived its generation to be shrunk into the next one.
struct KeptCommunicator {
  std::unique_ptr<Communicator> comm;
  PreviousMembership membership;
};

// How a generation's communicator was formed, for the log.
struct FormedCommunicator {
  std::unique_ptr<Communicator> comm;
  CommunicatorPlan plan;
  std::chrono::milliseconds took{0};
};

// Whether communicators of the `requested` backend can shrink in this
// process (NCCL >= 2.27 resolved here); the ranks of a job must agree on
// the plan exactly when this holds.
bool BackendCanShrink(Backend requested);

// With `agree` (and world_size > 1) every rank of the generation takes part
// in the agreement on `store`, then shrinks `kept` or creates anew; without
// it, creates anew. After a shrink the ranks agree through `store` whether
// every rank got its child (AgreeOnShrinkOutcome); when one did not, every
// rank drops its child and creates anew (plan.kind is then kCreate, its why
// naming the refusing rank and reason). `kept` is freed either way unless
// it was shrunk, before a new communicator is created.
// Errors: the agreements' and the backend's, as IoError (a rendezvous
// failure, or a creation after a refused shrink, is the generation's, not
// the request's); CreateCommunicator's InvalidArgument for a bad request.
// REQUIRES: `store` outlives the call; when `agree`, every rank of ctx's
// generation calls it with `agree`.
Result<FormedCommunicator> FormGenerationCommunicator(const Context& ctx, StoreClient* store,
                                                      const CommOptions& options, bool agree,
                                                      std::optional<KeptCommunicator> kept);

// Takes `comm` to keep for the next generation when it can shrink (its
// membership: this rank and world size in the generation named by
// `generation_id`, e.g. its store prefix); leaves it in place otherwise.
std::optional<KeptCommunicator> KeepForShrink(std::unique_ptr<Communicator>& comm,
                                              const std::string& generation_id);

}  // namespace muster::runtime
