// How the agent configures the worker store it hosts: which peers it admits
// (store/peer_admission.h) in each generation, and its bounds. Pure: the
// agent applies what these return.
//
// Admission:
//   - --store-allow given: its CIDRs (and loopback), in every run.
//   - Elastic, otherwise: the generation's member addresses, as the
//     rendezvous sends them to the master (AssignmentMessage::member_addrs).
//     With no list (an older musterd, or more members than a frame holds)
//     every host, with a warning that says why.
//   - Static (--nnodes N with --master-addr), otherwise: every host, since
//     a static run has no membership list. When the store listens on an
//     address other hosts can reach, a warning at start names --store-allow.
#pragma once

#include <string>
#include <vector>

#include "launcher/plan/launch_options.h"
#include "store/peer_admission.h"
#include "store/store_session.h"

namespace muster {

struct StoreAdmissionChoice {
  store::PeerAdmission admission;
  std::string warning;  // one line for the log; empty: nothing to say
};

// The master's admission for one generation. `member_addrs`: the list its
// assignment carried (empty when none).
StoreAdmissionChoice ElasticStoreAdmission(const LaunchOptions& options,
                                           const std::vector<std::string>& member_addrs);

// Node 0's admission in a static run whose store listens on `bind_host`
// (an address or a name) and `port`.
StoreAdmissionChoice StaticStoreAdmission(const LaunchOptions& options,
                                          const std::string& bind_host, int port);

// The store's limits: --store-max-keys and --store-max-bytes, else the
// store's defaults.
store::SessionLimits StoreLimits(const LaunchOptions& options);

}  // namespace muster
