// StoreServer: the worker key-value store, a TCP server that speaks PyTorch's
// TCPStore protocol (torch 1.13, 2.1 and >= 2.2 clients, queues, LIST_KEYS
// and BARRIER included; see tcpstore_protocol.h and dialect_rule.h). The
// launcher hosts one on the master node and points every worker's
// MASTER_ADDR/MASTER_PORT at it.
//
//   auto server = StoreServer::Start(io, "0.0.0.0", 0);
//   if (!server.ok()) return server.status();
//   env["MASTER_PORT"] = std::to_string((*server)->port());
//
// Contract:
//   - Runs entirely on `io` (no threads of its own) and never blocks it.
//   - The listening socket is bound once and kept until Stop(): the port
//     handed to workers can not be taken by anyone else in between.
//   - A bad client (garbage, oversized or unsupported request) loses its own
//     connection, with one warning log line; everyone else is unaffected.
//   - A client's pending waits (WAITs, blocking queue pops, BARRIERs) are
//     dropped when it disconnects.
//   - Generations (Seal/Open): a store that serves one generation of workers
//     after another hands each a fresh namespace. Seal() ends a generation:
//     every connection is closed, every key dropped, and nothing new is
//     accepted, though the socket stays bound and listening, so a worker of
//     the next generation that connects early waits in the kernel's backlog
//     instead of being refused. Open() starts the next generation: keys are
//     dropped again, connections still open (from an unsealed generation) are
//     closed, and accepting resumes. No key, queue, pending wait or
//     connection of an earlier generation reaches a later one.
//   - Admission (peer_admission.h): a connection whose peer the current
//     PeerAdmission refuses is reset as soon as it is accepted, before a
//     byte is read, and counted (refused_connections()); the first refusal of
//     each address, and then at most one every 10 s, is a warning line
//     naming the address (refusal_log.h). The check is made at accept only:
//     requests cost nothing more. SetAdmission() affects connections
//     accepted after it; connections already open stay until the next
//     Open() or Seal() closes them, so the agent sets a generation's
//     admission before Open(generation).
//   - Bounds (request_handler.h): the store holds at most
//     limits.handler.max_keys keys and max_bytes bytes; a request past
//     either closes its connection with a warning naming the peer and the
//     limit, and the store and its other connections go on.
//   - Destroying the server stops it. Pending handlers on `io` then find it
//     gone and do nothing, so `io` may outlive the server.
//     REQUIRES: `io` is not destroyed before the server.
//
// Thread-safety: none. Every method, and `io.run()`, on one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>

#include "common/status.h"
#include "store/peer_admission.h"
#include "store/store_session.h"

namespace muster::store {

class StoreServer {
 public:
  // Binds host:port (port 0 = any free port; the bound socket is kept, never
  // closed and re-opened, so there is no port race) and starts accepting on
  // `io`. `host` is an IP address or a resolvable name. Errors (address in
  // use, bad host) come back as a Status whose message quotes host and port.
  static Result<std::unique_ptr<StoreServer>> Start(boost::asio::io_context& io,
                                                    const std::string& host, uint16_t port,
                                                    SessionLimits limits = {});

  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;
  ~StoreServer();

  // The bound port.
  uint16_t port() const;

  // Ends the current generation: closes every connection (dropping its
  // pending waits), drops every key and queue, stops accepting (connections
  // queue in the listen backlog). Idempotent.
  void Seal();
  // Starts generation `generation` (for logs): closes connections left from
  // an earlier one, drops every key, and accepts again. A server that was
  // never sealed is open already; Open() then only makes it fresh.
  void Open(uint64_t generation);

  // Closes the listener and every connection. Idempotent.
  void Stop();

  // Replaces the rule that decides which peers are accepted (at first:
  // PeerAdmission::Everyone()). Logs the new rule at info level when it
  // differs in mode or size from the old one.
  void SetAdmission(PeerAdmission admission);
  const PeerAdmission& admission() const;

  // Connections refused by the admission rule since Start, and those from
  // one address (0 for an address never refused; addresses past the first
  // 1024 refused are counted in the total only).
  uint64_t refused_connections() const;
  uint64_t refused_connections_from(const std::string& address) const;
  // What the store holds now (KeyValueStore::Bytes()).
  size_t num_bytes() const;

  // Failed accepts the listener waited after (out of descriptors:
  // common/accept_retry.h), since Start.
  uint64_t accept_pauses() const;

  size_t num_connections() const;
  size_t num_keys() const;
  size_t num_pending_waits() const;

  class Impl;

 private:
  explicit StoreServer(std::shared_ptr<Impl> impl);

  std::shared_ptr<Impl> impl_;
};

}  // namespace muster::store
