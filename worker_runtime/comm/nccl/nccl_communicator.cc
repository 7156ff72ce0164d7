#include "worker_runtime/comm/nccl/nccl_communicator.h"

#include <atomic>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "worker_runtime/comm/nccl/cuda_devices.h"

namespace muster::runtime {
namespace {

constexpr const char* kUniqueIdKey = "nccl/unique_id";

ncclDataType_t NcclType(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kBFloat16:
      return ncclBfloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAvg:
      return ncclAvg;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
  }
  return ncclSum;
}

// NCCL's asynchronous state once it leaves ncclInProgress, or ncclInProgress
// when `deadline` passes or `stop` is set first. Non-blocking communicators
// report progress of init and of enqueues only through this call.
ncclResult_t PollAsyncState(ncclComm_t comm, Time deadline,
                            const std::atomic<bool>* stop = nullptr) {
  while (true) {
    ncclResult_t state = ncclInProgress;
    if (ncclResult_t rc = ncclCommGetAsyncError(comm, &state); rc != ncclSuccess) return rc;
    if (state != ncclInProgress || Clock::now() >= deadline) return state;
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) return state;
    std::this_thread::yield();
  }
}

std::string NcclText(ncclComm_t comm, ncclResult_t rc) {
  std::string text = ncclGetErrorString(rc);
  if (const char* last = ncclGetLastError(comm); last && *last) text += std::string(": ") + last;
  return text;
}

#if MUSTER_NCCL_HAS_SHRINK
// Old rank `rank` in the communicator without `excluded`: ncclCommShrink
// keeps the order.
int ShrunkRank(int rank, const std::vector<int>& excluded) {
  int below = 0;
  for (int r : excluded) below += r < rank ? 1 : 0;
  return rank - below;
}

// Why a child whose init NCCL reported as done is not the expected one, or
// "" when it is: ready, `size` ranks, this rank `rank`. Cheap and local; it
// cannot see a half-made child (the parent's verdict does), but it stops a
// child of the wrong shape before any collective.
std::string CheckChild(ncclComm_t child, int rank, int size, Time deadline) {
  if (ncclResult_t state = PollAsyncState(child, deadline); state != ncclSuccess) {
    return "the new communicator is not ready: " + NcclText(child, state);
  }
  int count = -1;
  int user_rank = -1;
  if (ncclResult_t rc = ncclCommCount(child, &count); rc != ncclSuccess) {
    return "ncclCommCount: " + NcclText(child, rc);
  }
  if (ncclResult_t rc = ncclCommUserRank(child, &user_rank); rc != ncclSuccess) {
    return "ncclCommUserRank: " + NcclText(child, rc);
  }
  if (count != size || user_rank != rank) {
    return "the new communicator has rank " + std::to_string(user_rank) + " of " +
           std::to_string(count) + ", not " + std::to_string(rank) + " of " + std::to_string(size);
  }
  return "";
}
#endif

}  // namespace

Result<std::unique_ptr<Communicator>> NcclCommunicator::Create(const Context& ctx,
                                                               StoreClient* store,
                                                               const CommOptions& options) {
  const int visible = VisibleCudaDeviceCount();
  const int device =
      options.cuda_device >= 0 ? options.cuda_device : (visible == 1 ? 0 : ctx.local_rank);
  if (device >= visible) {
    return Status::InvalidArgument("nccl: device " + std::to_string(device) +
                                   " is not one of the " + std::to_string(visible) +
                                   " visible GPU(s)");
  }
  if (cudaError_t rc = cudaSetDevice(device); rc != cudaSuccess) {
    return Status::IoError("nccl: cudaSetDevice(" + std::to_string(device) +
                           "): " + cudaGetErrorString(rc));
  }

  if (store == nullptr && ctx.world_size > 1) {
    return Status::InvalidArgument("nccl: world size " + std::to_string(ctx.world_size) +
                                   " needs a store for the unique id");
  }
  ncclUniqueId id{};
  if (ctx.rank == 0) {
    if (ncclResult_t rc = ncclGetUniqueId(&id); rc != ncclSuccess) {
      return Status::IoError(std::string("nccl: ncclGetUniqueId: ") + ncclGetErrorString(rc));
    }
    if (ctx.world_size > 1) {
      Status set = store->Set(kUniqueIdKey, std::string_view(id.internal, sizeof(id.internal)));
      if (!set.ok()) return Status::IoError("nccl: publishing the unique id: " + set.message());
    }
  } else {
    Result<std::string> got = store->Get(kUniqueIdKey, options.timeout);
    if (!got.ok()) return Status::IoError("nccl: reading the unique id: " + got.status().message());
    if (got->size() != sizeof(id.internal)) {
      return Status::IoError("nccl: the unique id in the store has " + std::to_string(got->size()) +
                             " bytes, not " + std::to_string(sizeof(id.internal)));
    }
    std::copy(got->begin(), got->end(), id.internal);
  }

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const auto deadline = Clock::now() + options.timeout;
  ncclResult_t rc = ncclCommInitRankConfig(&comm, ctx.world_size, id, ctx.rank, &config);
  if (rc == ncclInProgress || rc == ncclSuccess) rc = PollAsyncState(comm, deadline);
  if (rc != ncclSuccess) {
    std::string why = rc == ncclInProgress
                          ? "not ready after " + std::to_string(options.timeout.count()) + " ms"
                          : NcclText(comm, rc);
    if (comm != nullptr) ncclCommAbort(comm);
    return Status::IoError("nccl: init of rank " + std::to_string(ctx.rank) + " of " +
                           std::to_string(ctx.world_size) + " on device " + std::to_string(device) +
                           ": " + why);
  }

  return Wrap(comm, device, ctx.rank, ctx.world_size, options.timeout, options.recoverable);
}

Result<std::unique_ptr<Communicator>> NcclCommunicator::Wrap(ncclComm_t comm, int device, int rank,
                                                             int world_size,
                                                             std::chrono::milliseconds timeout,
                                                             bool recoverable) {
  // A blocking stream (cudaStreamDefault, not cudaStreamNonBlocking): its
  // work starts after what the caller queued before it on the legacy default
  // stream, so a collective sees the buffers the caller's kernels wrote there
  // (the ordering communicator.h promises).
  cudaStream_t stream = nullptr;
  float* barrier_word = nullptr;
  if (cudaError_t crc = cudaStreamCreateWithFlags(&stream, cudaStreamDefault);
      crc != cudaSuccess || (crc = cudaMalloc(&barrier_word, sizeof(float))) != cudaSuccess) {
    ncclCommAbort(comm);
    if (stream != nullptr) cudaStreamDestroy(stream);
    return Status::IoError(std::string("nccl: stream or buffer: ") + cudaGetErrorString(crc));
  }
  spdlog::info("comm backend=nccl rank={} world={} device={} timeout_ms={} recoverable={}", rank,
               world_size, device, timeout.count(), recoverable);
  return std::unique_ptr<Communicator>(new NcclCommunicator(
      comm, stream, barrier_word, device, rank, world_size, timeout, recoverable));
}

NcclCommunicator::NcclCommunicator(ncclComm_t comm, cudaStream_t stream, float* barrier_word,
                                   int device, int rank, int world_size,
                                   std::chrono::milliseconds timeout, bool recoverable)
    : comm_(comm),
      stream_(stream),
      barrier_word_(barrier_word),
      device_(device),
      rank_(rank),
      world_size_(world_size),
      timeout_(timeout),
      recoverable_(recoverable) {}

NcclCommunicator::~NcclCommunicator() {
  cudaSetDevice(device_);
  if (comm_ != nullptr && !latch_.aborted()) {
    // Finalize flushes outstanding work; a dead peer can stall it, so it is
    // bounded like a collective and falls back to abort.
    ncclResult_t rc = ncclCommFinalize(comm_);
    if (rc == ncclInProgress || rc == ncclSuccess) {
      rc = PollAsyncState(comm_, Clock::now() + timeout_);
    }
    if (rc == ncclSuccess) {
      ncclCommDestroy(comm_);
      comm_ = nullptr;
    }
  }
  // A failed, revoked or shrunk communicator has nothing left to flush.
  FreeComm();
  cudaFree(barrier_word_);
  cudaStreamDestroy(stream_);
}

void NcclCommunicator::FreeComm() {
  if (comm_ == nullptr) return;
  ncclCommAbort(comm_);
  comm_ = nullptr;
}

void NcclCommunicator::Fail(const char* op, CommError::Kind kind, const std::string& detail) {
  // Recoverable: stop what is in flight but keep the communicator for
  // Shrink(); the destructor frees it if nobody shrinks it.
#if MUSTER_NCCL_HAS_REVOKE
  const ncclResult_t revoked =
      recoverable_ ? ncclCommRevoke(comm_, NCCL_REVOKE_DEFAULT) : ncclInternalError;
  if (revoked != ncclSuccess && revoked != ncclInProgress) FreeComm();
#else
  FreeComm();
#endif
  latch_.Latch(kind, std::string(op) + ": " + detail);
  throw CommError(kind, "nccl " + std::string(op) + " on rank " + std::to_string(rank_) + " of " +
                            std::to_string(world_size_) + " (timeout " +
                            std::to_string(timeout_.count()) + " ms): " + detail);
}

void NcclCommunicator::ThrowIfStopped(const char* op) {
  latch_.ThrowIfAborted(op);
  if (interrupted_.load(std::memory_order_relaxed)) {
    Fail(op, CommError::Kind::kPeerFailed, "interrupted (the generation is ending)");
  }
}

void NcclCommunicator::Complete(const char* op, ncclResult_t enqueued) {
  // NCCL checks arguments before it enqueues anything and returns the
  // verdict at once: nothing is in flight and no peer is at fault, so this
  // is not an abort (as with Gloo). A non-blocking communicator keeps the
  // error, though (ncclEnqueueCheck sets its async error): later calls are
  // refused the same way, each returning at once.
  if (enqueued == ncclInvalidArgument || enqueued == ncclInvalidUsage) {
    throw CommError(CommError::Kind::kInvalidArgument, "nccl " + std::string(op) + " on rank " +
                                                           std::to_string(rank_) + ": " +
                                                           NcclText(comm_, enqueued));
  }
  const auto deadline = Clock::now() + timeout_;
  if (enqueued == ncclInProgress) enqueued = PollAsyncState(comm_, deadline, &interrupted_);
  ThrowIfStopped(op);
  if (enqueued == ncclInProgress) Fail(op, CommError::Kind::kTimeout, "enqueue did not finish");
  if (enqueued != ncclSuccess) Fail(op, CommError::Kind::kPeerFailed, NcclText(comm_, enqueued));
  while (true) {
    const cudaError_t query = cudaStreamQuery(stream_);
    if (query == cudaSuccess) return;
    if (query != cudaErrorNotReady) {
      Fail(op, CommError::Kind::kInternal, std::string("CUDA: ") + cudaGetErrorString(query));
    }
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(comm_, &state);
    if (state != ncclSuccess && state != ncclInProgress) {
      Fail(op, CommError::Kind::kPeerFailed, NcclText(comm_, state));
    }
    if (Clock::now() >= deadline) {
      Fail(op, CommError::Kind::kTimeout, "not complete when the deadline passed");
    }
    ThrowIfStopped(op);
    std::this_thread::yield();
  }
}

void NcclCommunicator::AllReduce(void* data, size_t count, DataType type, ReduceOp op) {
  ThrowIfStopped("allreduce");
  Complete("allreduce",
           ncclAllReduce(data, data, count, NcclType(type), NcclOp(op), comm_, stream_));
}

void NcclCommunicator::Broadcast(void* data, size_t count, DataType type, int root) {
  ThrowIfStopped("broadcast");
  if (root < 0 || root >= world_size_) {
    throw CommError(CommError::Kind::kInvalidArgument,
                    "nccl broadcast: root " + std::to_string(root) + " is not a rank of " +
                        std::to_string(world_size_));
  }
  Complete("broadcast", ncclBroadcast(data, data, count, NcclType(type), root, comm_, stream_));
}

void NcclCommunicator::AllGather(const void* send, void* recv, size_t count, DataType type) {
  ThrowIfStopped("allgather");
  Complete("allgather", ncclAllGather(send, recv, count, NcclType(type), comm_, stream_));
}

void NcclCommunicator::ReduceScatter(const void* send, void* recv, size_t count, DataType type,
                                     ReduceOp op) {
  ThrowIfStopped("reduce_scatter");
  Complete("reduce_scatter",
           ncclReduceScatter(send, recv, count, NcclType(type), NcclOp(op), comm_, stream_));
}

void NcclCommunicator::Barrier() {
  ThrowIfStopped("barrier");
  Complete("barrier",
           ncclAllReduce(barrier_word_, barrier_word_, 1, ncclFloat32, ncclSum, comm_, stream_));
}

void NcclCommunicator::Abort() {
  FreeComm();
  latch_.Latch(CommError::Kind::kInternal, "Abort() was called");
}

void NcclCommunicator::Interrupt() { interrupted_.store(true, std::memory_order_relaxed); }

bool NcclCommunicator::CanShrink() const {
#if MUSTER_NCCL_HAS_SHRINK
  return recoverable_ && comm_ != nullptr;
#else
  return false;
#endif
}

Result<std::unique_ptr<Communicator>> NcclCommunicator::Shrink(const std::vector<int>& excluded) {
  if (!CanShrink()) return Communicator::Shrink(excluded);
  for (size_t i = 0; i < excluded.size(); ++i) {
    if (excluded[i] < 0 || excluded[i] >= world_size_ || excluded[i] == rank_ ||
        (i > 0 && excluded[i] <= excluded[i - 1])) {
      return Status::InvalidArgument(
          "nccl shrink: bad excluded rank " + std::to_string(excluded[i]) + " of " +
          std::to_string(world_size_) + " (this is rank " + std::to_string(rank_) + ")");
    }
  }
#if MUSTER_NCCL_HAS_SHRINK
  cudaSetDevice(device_);
  const auto deadline = Clock::now() + timeout_;
  const int new_size = world_size_ - static_cast<int>(excluded.size());
  const int new_rank = ShrunkRank(rank_, excluded);
  const std::string which = "nccl shrink of rank " + std::to_string(rank_) + " of " +
                            std::to_string(world_size_) + " to " + std::to_string(new_size) +
                            " ranks: ";
  // A revoked communicator reports ncclInProgress until it is quiescent;
  // only then may it be shrunk (nccl.h). One that failed without a revoke
  // keeps its error: NCCL_SHRINK_ABORT ends its operations first.
  const ncclResult_t before = PollAsyncState(comm_, deadline);
  if (before == ncclInProgress) {
    FreeComm();
    latch_.Latch(CommError::Kind::kTimeout, "shrink: not quiescent in time");
    return Status::IoError("nccl shrink: rank " + std::to_string(rank_) +
                           " was not quiescent after " + std::to_string(timeout_.count()) + " ms");
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  // NCCL stores the child into this slot from its init thread when the init
  // ends, failed or not. On the timeout path that thread may outlive this
  // call, so the slot is on the heap and then left to it.
  auto* slot = new ncclComm_t(nullptr);
  std::vector<int> list = excluded;  // NCCL takes a non-const pointer
  ncclResult_t rc = ncclCommShrink(comm_, list.data(), static_cast<int>(list.size()), slot, &config,
                                   before == ncclSuccess ? NCCL_SHRINK_DEFAULT : NCCL_SHRINK_ABORT);
  // The child's init runs as a job of a group NCCL forms on the parent, and
  // NCCL reports that job's progress and verdict on the parent only: the
  // child's own async state stays ncclSuccess even when its init failed half
  // way (a child without channels, whose first collective divides by zero
  // inside NCCL). So the parent is polled until the job is over, and its
  // verdict alone decides. The parent must not be freed before: that aborts
  // the job and closes the bootstrap the other survivors are connecting to.
  if (rc == ncclInProgress || rc == ncclSuccess) rc = PollAsyncState(comm_, deadline);
  const bool job_over = rc != ncclInProgress;
  ncclComm_t child = job_over ? __atomic_load_n(slot, __ATOMIC_ACQUIRE) : nullptr;
  std::string why;
  if (!job_over) {
    why = "not ready after " + std::to_string(timeout_.count()) + " ms";
  } else if (rc != ncclSuccess) {
    // A parent that held an error before (its proxy's, which NCCL keeps)
    // reports it again after a good shrink: then the child is not proved
    // good either, and is refused all the same.
    why = NcclText(comm_, rc) + (rc == before ? " (the parent's error before the shrink)" : "");
  } else if (child == nullptr) {
    why = "NCCL reported success but gave no communicator";
  } else {
    why = CheckChild(child, new_rank, new_size, deadline);
  }
  // The parent is spent either way: its ranks live on in the child. Freeing
  // it also ends a shrink still in progress (its abort reaches the child's
  // init), after which the child, if NCCL made one, is freed too.
  FreeComm();
  latch_.Latch(CommError::Kind::kInternal, "shrunk into a new communicator");
  if (!job_over) child = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (job_over) delete slot;
  if (!why.empty()) {
    if (child != nullptr) ncclCommAbort(child);
    return Status::IoError(which + why);
  }
  return Wrap(child, device_, new_rank, new_size, timeout_, recoverable_);
#else
  return Communicator::Shrink(excluded);
#endif
}

}  // namespace muster::runtime
