// GlooCommunicator: the Communicator over Gloo's TCP transport, for host
// memory (float32 and float64; 16-bit types are rejected with
// CommError::kInvalidArgument).
//
// Creation: a TCP device on LocalAddressToward(master) and a full mesh
// connected through the store (GlooStoreAdapter), both bounded by
// CommOptions::timeout. Every wait for a peer inside a collective is bounded
// by the same timeout (passed to each Gloo call): a peer that stops
// answering fails the call after `timeout` without progress; a peer whose
// process died fails it at once (its sockets close).
//
// Errors: the first gloo exception aborts the communicator and is rethrown
// as CommError (kTimeout when Gloo reports a timeout, kPeerFailed for other
// I/O errors, kInternal for anything else); every later call throws the same
// kind, quoting the first failure. Invalid arguments throw kInvalidArgument
// and leave the communicator usable.
//
// Operations: every collective is one of Gloo's option-based calls
// (gloo::allreduce, broadcast, allgather, barrier) with unbound buffers, a
// tag that counts calls, and the timeout; AllReduce picks ring or bcube per
// size (allreduce_algorithm.h explains why Gloo's algorithm classes are not
// used), except in a world whose ranks share one host: there it reduces
// through a shared-memory segment set up at creation
// (shared_memory_allreduce.h), with the same timeout and failure rules. ReduceScatter is an
// AllReduce of a copy of `send` plus a copy of this rank's block (Gloo's
// ReduceScatterHalvingDoubling is a class with bound buffers); it moves about twice the bytes a
// dedicated one would.
//
// Thread-safety: one thread at a time (see Communicator), but Interrupt()
// from any. Abort() only marks the communicator: Gloo has no way to
// interrupt a running collective; Interrupt() shuts the mesh's sockets down
// (shutdown(2), so the descriptors stay Gloo's), which fails a collective
// blocked on them at once.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "worker_runtime/comm/abort_latch.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/comm/gloo/allreduce_algorithm.h"
#include "worker_runtime/comm/gloo/shared_memory_allreduce.h"

namespace gloo {
class Context;
}

namespace muster::runtime {

class GlooCommunicator final : public Communicator {
 public:
  // Connects the mesh; errors name the stage (address, device, rendezvous).
  // Sets SIGPIPE to ignored unless the program handles it: Gloo writes to
  // peers without MSG_NOSIGNAL, and a dead peer must raise CommError.
  static Result<std::unique_ptr<Communicator>> Create(const Context& ctx, StoreClient& store,
                                                      const CommOptions& options);
  ~GlooCommunicator() override;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  Backend backend() const override { return Backend::kGloo; }

  void AllReduce(void* data, size_t count, DataType type, ReduceOp op) override;
  void Broadcast(void* data, size_t count, DataType type, int root) override;
  void AllGather(const void* send, void* recv, size_t count, DataType type) override;
  void ReduceScatter(const void* send, void* recv, size_t count, DataType type,
                     ReduceOp op) override;
  void Barrier() override;
  void Abort() override;
  void Interrupt() override;

 private:
  GlooCommunicator(std::shared_ptr<gloo::Context> context, int rank, int world_size,
                   std::chrono::milliseconds timeout, std::optional<GlooAllreduce> forced,
                   std::unique_ptr<SharedMemoryAllreduce> shared_memory,
                   std::vector<int> mesh_sockets);

  // Throws when aborted, then runs `body`; a CommError from `body` (an
  // argument check) passes through, a Gloo exception aborts and becomes one.
  template <typename Body>
  void Guarded(const char* op, Body&& body);
  void RequireHostFloat(const char* op, DataType type) const;
  void AllReduceUnguarded(void* data, size_t count, DataType type, ReduceOp op);
  // Aborts with `kind` and throws the CommError that says so.
  [[noreturn]] void Fail(const char* op, CommError::Kind kind, const std::string& detail);

  std::shared_ptr<gloo::Context> context_;
  const int rank_;
  const int world_size_;
  const std::chrono::milliseconds timeout_;
  const std::optional<GlooAllreduce> forced_algorithm_;
  const std::unique_ptr<SharedMemoryAllreduce> shared_memory_;  // null: not all on one host
  // The sockets Gloo opened for the mesh (its device's and every pair's),
  // found when it was built; Interrupt() shuts them down. They stay open as
  // long as context_ lives.
  const std::vector<int> mesh_sockets_;
  uint32_t next_tag_ = 0;
  AbortLatch latch_{"gloo"};
};

}  // namespace muster::runtime
