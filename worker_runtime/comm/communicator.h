// Communicator: collectives across the ranks of one generation, behind one
// interface for Gloo (CPU, host memory) and NCCL (GPU, device memory).
//
//   auto comm = CreateCommunicator(ctx, store.get(), {.backend = Backend::kGloo});
//   comm->AllReduce(grads.data(), grads.size(), DataType::kFloat32, ReduceOp::kAvg);
//
// Every collective has a deadline (CommOptions::timeout). When it passes, or
// a peer dies, the communicator is aborted (NCCL: ncclCommAbort) and the call
// throws CommError; the communicator is unusable afterwards. A worker that
// catches it should exit with kExitCommFailure. It never hangs. Invalid
// arguments (a bad root, a type the backend lacks) throw CommError
// kInvalidArgument and abort nothing; Gloo's communicator stays usable,
// NCCL's refuses later calls (nccl_communicator.h).
//
// Memory: Gloo and the one-rank communicator take host memory; NCCL takes
// device memory of its GPU. Every call returns once the result is in the
// output buffer. NCCL ordering: a collective starts after the work queued
// before the call on the legacy default stream (stream 0) of its device; work
// on the caller's other streams (non-blocking ones, or the per-thread default
// stream) must be synchronized by the caller before the call.
//
// Thread-safety: one thread at a time per communicator (collectives are
// issued in the same order on every rank).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker_runtime/bootstrap/context.h"
#include "worker_runtime/store/store_client.h"

namespace muster::runtime {

// The exit status of a worker whose collective failed or timed out (a peer
// died or hung, or the network did). It marks the failure as a communication
// one in logs; the agent restarts the job after any non-zero exit (within
// --max-restarts). 75 is EX_TEMPFAIL.
inline constexpr int kExitCommFailure = 75;

enum class Backend { kAuto, kGloo, kNccl };
enum class DataType { kFloat32, kFloat64, kFloat16, kBFloat16 };  // 16-bit: NCCL only
enum class ReduceOp { kSum, kAvg, kMax, kMin };

size_t DataTypeSize(DataType type);
const char* BackendName(Backend backend);
// "auto", "gloo" or "nccl"; the error quotes the bad value.
Result<Backend> ParseBackend(const std::string& text);

class CommError : public std::runtime_error {
 public:
  enum class Kind { kTimeout, kPeerFailed, kInvalidArgument, kInternal };
  CommError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// "timeout", "peer_failed", "invalid_argument" or "internal" (for logs).
const char* CommErrorKindName(CommError::Kind kind);

struct CommOptions {
  Backend backend = Backend::kAuto;  // auto: NCCL if built with it and a GPU is visible
  std::chrono::milliseconds timeout{300'000};
  int cuda_device = -1;  // -1: the context's local rank
  // Kept for a generation formed in place: a failure or Interrupt() stops
  // the operation in flight without freeing the communicator (NCCL:
  // ncclCommRevoke instead of ncclCommAbort), so that Shrink() can make the
  // next generation's from it. Backends that cannot shrink ignore it.
  bool recoverable = false;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual Backend backend() const = 0;
  // The CUDA device whose memory the collectives take; -1 for host memory.
  virtual int cuda_device() const { return -1; }

  // In place over `count` elements at `data`.
  virtual void AllReduce(void* data, size_t count, DataType type, ReduceOp op) = 0;
  virtual void Broadcast(void* data, size_t count, DataType type, int root) = 0;
  // `send` holds `count` elements; `recv` holds world_size * count, rank r's at r * count.
  virtual void AllGather(const void* send, void* recv, size_t count, DataType type) = 0;
  // `send` holds world_size * count elements; rank r receives the reduction of
  // every rank's block r in `recv` (count elements).
  virtual void ReduceScatter(const void* send, void* recv, size_t count, DataType type,
                             ReduceOp op) = 0;
  virtual void Barrier() = 0;
  // Stops every pending and future collective; idempotent.
  virtual void Abort() = 0;
  // Makes a collective blocked in this communicator, and every later one,
  // fail at once with CommError, from any thread. A worker leaving its
  // generation calls it when a collective may be waiting on a peer that will
  // never answer (a host whose link is down: no connection reset ever
  // comes). Gloo shuts its connections down (and gives up on its
  // shared-memory barriers); NCCL's waiting call revokes (recoverable) or
  // aborts the communicator at its next poll. The default does nothing, and
  // a blocked collective then ends at its timeout.
  virtual void Interrupt() {}

  // Whether Shrink() can be called: NCCL >= 2.27, built recoverable, and not
  // aborted (a failure or Interrupt() only revoked it).
  virtual bool CanShrink() const { return false; }
  // The communicator of this one's ranks minus `excluded` (ascending ranks of
  // this communicator, not this rank's), in the same order: old rank r gets
  // r minus the excluded ranks below it. Collective over the remaining
  // ranks, bounded by the timeout. Afterwards this communicator is spent:
  // every call throws, and destroying it frees it at once. Errors:
  // InvalidArgument when !CanShrink() or `excluded` is bad; IoError when the
  // backend fails (this communicator is then spent too).
  virtual Result<std::unique_ptr<Communicator>> Shrink(const std::vector<int>& excluded);
};

// The backend a request resolves to in this process (backend_choice.h, with
// this build and the GPUs this process sees).
Result<Backend> ResolveBackendHere(Backend requested);

// Builds the communicator of this generation: ranks and world size from
// `ctx`; rendezvous (Gloo addresses, NCCL unique id) through `store`, whose
// prefix is the generation's namespace. The backend request is resolved
// first (backend_choice.h), at every world size. A one-rank world whose
// backend is Gloo gets a SoloCommunicator (solo_communicator.h) and needs no
// store (`store` may be null); NCCL keeps a real one-rank communicator.
// Errors: InvalidArgument for a bad request (a non-positive timeout,
// "--backend nccl: no GPU is visible", a null store with world_size > 1);
// IoError when the rendezvous fails. Messages name the backend and why.
// REQUIRES: `store`, when given, outlives the call.
Result<std::unique_ptr<Communicator>> CreateCommunicator(const Context& ctx, StoreClient* store,
                                                         const CommOptions& options);

}  // namespace muster::runtime
