// HostedStore: the job's TCPStore-protocol store, served by this process on
// a thread of its own. Rank 0 runs one when no launcher hosts the store
// (`srun muster-train` per task; TORCHELASTIC_USE_AGENT_STORE=False), as
// torch's env:// rendezvous does; every rank, rank 0 included, then connects
// to it with StoreClient as usual.
//
// Contract:
//   - Start binds 0.0.0.0:port at once; a port in use is an error that
//     names it (no retry, no other port: the others cannot learn of one).
//   - The destructor waits until every client has disconnected, at most
//     `linger`, so peers still setting up are not cut off when rank 0
//     finishes first; then it stops the server and joins the thread.
//
// Thread-safety: construct and destroy on one thread; the server itself
// runs only on its own thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "common/status.h"

namespace muster::runtime {

class HostedStore {
 public:
  static Result<std::unique_ptr<HostedStore>> Start(
      uint16_t port, std::chrono::milliseconds linger = std::chrono::seconds(10));

  HostedStore(const HostedStore&) = delete;
  HostedStore& operator=(const HostedStore&) = delete;
  ~HostedStore();

  class Impl;

 private:
  explicit HostedStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace muster::runtime
