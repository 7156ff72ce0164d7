// RendezvousLink: what the agent asks of its rendezvous client in an elastic
// run: the calls of rdzv::RendezvousClient it makes, and nothing else. The
// agent gets its link from a RendezvousLinkFactory: ConnectRendezvous (the
// default) makes a real client on the agent's io_context; unit tests give a
// fake that records the calls and drives the client's callbacks by hand.
//
// Same contract as RendezvousClient's calls (rendezvous_client.h): runs on
// the agent's one thread; the callbacks arrive on it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "rendezvous/client/rendezvous_client.h"

namespace muster {

class RendezvousLink {
 public:
  virtual ~RendezvousLink() = default;
  virtual void Start() = 0;
  virtual void Stop() = 0;
  virtual void SetCurrent(std::optional<rdzv::Assignment> current) = 0;
  // The node's progress in the current generation (Heartbeat::step): the
  // oldest of its workers' newest steps; the next heartbeats carry it.
  virtual void SetProgress(uint64_t step) = 0;
  // Its workers' compute times by local rank, in µs (Heartbeat::compute_us):
  // the next heartbeat carries them once.
  virtual void SetCompute(std::vector<uint64_t> compute_us) = 0;
  virtual void ReportWorkerFailure(uint64_t generation, int exit_code,
                                   const std::string& message) = 0;
  virtual void ReportSucceeded(uint64_t generation) = 0;
  virtual void Leave() = 0;
  // When the rendezvous last answered this agent; nullopt before its first
  // answer (RendezvousClient::last_heard).
  virtual std::optional<Time> last_heard() const = 0;
  // The silence after which the client fences the workers
  // (RendezvousClient::fence_after): the rendezvous's timing once welcomed,
  // which the health endpoint judges contact by.
  virtual std::chrono::milliseconds fence_after() const = 0;
  // Fault injection (--inject drop-heartbeats, delay-heartbeats).
  virtual void SuspendTraffic(std::chrono::milliseconds duration) = 0;
  virtual void DelayHeartbeats(std::chrono::milliseconds delay,
                               std::chrono::milliseconds window) = 0;
};

using RendezvousLinkFactory = std::function<std::unique_ptr<RendezvousLink>(
    boost::asio::io_context& io, rdzv::ClientOptions options,
    rdzv::RendezvousClient::Callbacks callbacks)>;

// A real rendezvous client on `io`, over TLS with `tls` (null: plain TCP).
std::unique_ptr<RendezvousLink> ConnectRendezvous(boost::asio::io_context& io,
                                                  rdzv::ClientOptions options,
                                                  rdzv::RendezvousClient::Callbacks callbacks,
                                                  std::shared_ptr<const rdzv::TlsContext> tls);

}  // namespace muster
