#include "worker_runtime/comm/gloo/gloo_communicator.h"

#include <sys/socket.h>

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "worker_runtime/comm/gloo/interface_address.h"
#include "worker_runtime/comm/gloo/store_adapter.h"
#include "worker_runtime/comm/host_reduction.h"

namespace muster::runtime {
namespace {

template <typename T>
void RunAllreduce(const std::shared_ptr<gloo::Context>& context, T* data, size_t count,
                  ElementwiseReduction reduce, GlooAllreduce algorithm, uint32_t tag,
                  std::chrono::milliseconds timeout) {
  gloo::AllreduceOptions options(context);
  options.setOutput(data, count);
  options.setReduceFunction(reduce);
  // kRing leaves Gloo's default (UNSPECIFIED: its segmented ring, as torch
  // does) rather than naming RING. To compare the algorithms:
  // MUSTER_GLOO_ALLREDUCE=ring|bcube scripts/bench/allreduce.sh.
  if (algorithm == GlooAllreduce::kBcube) {
    options.setAlgorithm(gloo::AllreduceOptions::Algorithm::BCUBE);
  }
  options.setTag(tag);
  options.setTimeout(timeout);
  gloo::allreduce(options);
}

bool MentionsTimeout(const std::string& text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("timeout") != std::string::npos || lower.find("timed out") != std::string::npos;
}

// Gloo writes to its peers' sockets without MSG_NOSIGNAL: a write to a peer
// that just died would kill this process with SIGPIPE instead of raising a
// CommError. Ignore SIGPIPE, as Python (and so torch) does, unless the
// program installed a handler of its own.
void IgnoreSigpipeUnlessHandled() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
}

// This process's stream sockets (descriptors), for telling which ones Gloo's
// mesh opened: nothing else of this process opens one while it connects.
std::set<int> StreamSockets() {
  std::set<int> sockets;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    const std::string name = entry.path().filename().string();
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc()) continue;
    int type = 0;
    socklen_t length = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 && type == SOCK_STREAM) {
      sockets.insert(fd);
    }
  }
  return sockets;
}

}  // namespace

Result<std::unique_ptr<Communicator>> GlooCommunicator::Create(const Context& ctx,
                                                               StoreClient& store,
                                                               const CommOptions& options) {
  const char* forced_text = std::getenv("MUSTER_GLOO_ALLREDUCE");
  Result<std::optional<GlooAllreduce>> forced = ParseGlooAllreduce(forced_text ? forced_text : "");
  if (!forced.ok()) return forced.status();
  if (*forced == GlooAllreduce::kBcube && (ctx.world_size & (ctx.world_size - 1)) != 0) {
    return Status::InvalidArgument("MUSTER_GLOO_ALLREDUCE=bcube needs a power-of-two world, not " +
                                   std::to_string(ctx.world_size));
  }
  Result<std::string> address = LocalAddressToward(ctx.master_addr, ctx.master_port);
  if (!address.ok()) return address.status();
  IgnoreSigpipeUnlessHandled();

  auto context = std::make_shared<gloo::rendezvous::Context>(ctx.rank, ctx.world_size);
  // Set before connecting: the mesh copies it into every pair, and each
  // wait inside a collective is bounded by it.
  context->setTimeout(options.timeout);
  const std::set<int> sockets_before = StreamSockets();
  std::vector<int> mesh_sockets;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = *address;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    GlooStoreAdapter adapter(store, options.timeout);
    context->connectFullMesh(adapter, device);
    for (int fd : StreamSockets()) {
      if (!sockets_before.count(fd)) mesh_sockets.push_back(fd);
    }
  } catch (const std::exception& e) {
    return Status::IoError("gloo: rendezvous of rank " + std::to_string(ctx.rank) + " of " +
                           std::to_string(ctx.world_size) + " on " + *address +
                           " failed: " + e.what());
  }
  // Every rank learns the same outcome, so all reduce alike; a forced Gloo
  // algorithm needs no segment.
  std::unique_ptr<SharedMemoryAllreduce> shared_memory;
  if (!forced->has_value() || **forced == GlooAllreduce::kSharedMemory) {
    auto joined = SharedMemoryAllreduce::Join(store, ctx.rank, ctx.world_size, options.timeout);
    if (!joined.ok()) return joined.status();
    shared_memory = std::move(joined).value();
    if (shared_memory == nullptr && forced->has_value()) {
      return Status::InvalidArgument(
          "MUSTER_GLOO_ALLREDUCE=shm needs every rank on this host, at most " +
          std::to_string(SharedMemoryAllreduce::kMaxRanks) + " of them, and /dev/shm");
    }
  }
  spdlog::info("comm backend=gloo rank={} world={} addr={} timeout_ms={} allreduce={}{}", ctx.rank,
               ctx.world_size, *address, options.timeout.count(),
               forced->has_value() ? GlooAllreduceName(**forced) : "auto",
               shared_memory != nullptr ? " (shared memory: one host)" : "");
  return std::unique_ptr<Communicator>(
      new GlooCommunicator(std::move(context), ctx.rank, ctx.world_size, options.timeout, *forced,
                           std::move(shared_memory), std::move(mesh_sockets)));
}

GlooCommunicator::GlooCommunicator(std::shared_ptr<gloo::Context> context, int rank, int world_size,
                                   std::chrono::milliseconds timeout,
                                   std::optional<GlooAllreduce> forced,
                                   std::unique_ptr<SharedMemoryAllreduce> shared_memory,
                                   std::vector<int> mesh_sockets)
    : context_(std::move(context)),
      rank_(rank),
      world_size_(world_size),
      timeout_(timeout),
      forced_algorithm_(forced),
      shared_memory_(std::move(shared_memory)),
      mesh_sockets_(std::move(mesh_sockets)) {}

GlooCommunicator::~GlooCommunicator() = default;

void GlooCommunicator::RequireHostFloat(const char* op, DataType type) const {
  if (type != DataType::kFloat32 && type != DataType::kFloat64) {
    throw CommError(CommError::Kind::kInvalidArgument,
                    std::string("gloo ") + op + ": only float32 and float64 are supported");
  }
}

template <typename Body>
void GlooCommunicator::Guarded(const char* op, Body&& body) {
  latch_.ThrowIfAborted(op);
  const auto started = Clock::now();
  CommError::Kind kind;
  std::string detail;
  try {
    body();
    return;
  } catch (const CommError&) {
    throw;  // argument errors: the communicator stays usable
  } catch (const gloo::IoException& e) {
    const bool late = Clock::now() - started >= timeout_;
    kind = MentionsTimeout(e.what()) || late ? CommError::Kind::kTimeout
                                             : CommError::Kind::kPeerFailed;
    detail = e.what();
  } catch (const std::exception& e) {
    kind = CommError::Kind::kInternal;
    detail = e.what();
  }
  Fail(op, kind, detail);
}

void GlooCommunicator::Fail(const char* op, CommError::Kind kind, const std::string& detail) {
  latch_.Latch(kind, std::string(op) + " " + CommErrorKindName(kind) + ": " + detail);
  throw CommError(kind, "gloo " + std::string(op) + " on rank " + std::to_string(rank_) + " of " +
                            std::to_string(world_size_) + ": " + CommErrorKindName(kind) +
                            " (timeout " + std::to_string(timeout_.count()) + " ms): " + detail);
}

void GlooCommunicator::AllReduceUnguarded(void* data, size_t count, DataType type, ReduceOp op) {
  if (count == 0) return;
  const GlooAllreduce algorithm = forced_algorithm_.value_or(
      ChooseGlooAllreduce(count * DataTypeSize(type), world_size_, shared_memory_ != nullptr));
  const ElementwiseReduction reduce = ElementwiseFor(type, op);
  if (algorithm == GlooAllreduce::kSharedMemory) {
    if (auto failure = shared_memory_->AllReduce(data, count, type, reduce)) {
      Fail("allreduce", failure->kind, "shared memory: " + failure->detail);
    }
  } else if (type == DataType::kFloat32) {
    // Tags tell unbound operations apart; every rank counts its calls alike.
    RunAllreduce(context_, static_cast<float*>(data), count, reduce, algorithm, next_tag_++,
                 timeout_);
  } else {
    RunAllreduce(context_, static_cast<double*>(data), count, reduce, algorithm, next_tag_++,
                 timeout_);
  }
  if (op == ReduceOp::kAvg) DivideInPlace(data, count, type, world_size_);
}

void GlooCommunicator::AllReduce(void* data, size_t count, DataType type, ReduceOp op) {
  Guarded("allreduce", [&] {
    RequireHostFloat("allreduce", type);
    AllReduceUnguarded(data, count, type, op);
  });
}

void GlooCommunicator::Broadcast(void* data, size_t count, DataType type, int root) {
  Guarded("broadcast", [&] {
    RequireHostFloat("broadcast", type);
    if (root < 0 || root >= world_size_) {
      throw CommError(CommError::Kind::kInvalidArgument,
                      "gloo broadcast: root " + std::to_string(root) + " is not a rank of " +
                          std::to_string(world_size_));
    }
    const size_t bytes = count * DataTypeSize(type);
    if (bytes == 0) return;
    gloo::BroadcastOptions options(context_);
    options.setOutput(static_cast<char*>(data), bytes);
    options.setRoot(root);
    options.setTag(next_tag_++);
    options.setTimeout(timeout_);
    gloo::broadcast(options);
  });
}

void GlooCommunicator::AllGather(const void* send, void* recv, size_t count, DataType type) {
  Guarded("allgather", [&] {
    RequireHostFloat("allgather", type);
    const size_t bytes = count * DataTypeSize(type);
    if (bytes == 0) return;
    gloo::AllgatherOptions options(context_);
    options.setInput(const_cast<char*>(static_cast<const char*>(send)), bytes);
    options.setOutput(static_cast<char*>(recv), bytes * world_size_);
    options.setTag(next_tag_++);
    options.setTimeout(timeout_);
    gloo::allgather(options);
  });
}

void GlooCommunicator::ReduceScatter(const void* send, void* recv, size_t count, DataType type,
                                     ReduceOp op) {
  Guarded("reduce_scatter", [&] {
    RequireHostFloat("reduce_scatter", type);
    const size_t block_bytes = count * DataTypeSize(type);
    std::vector<char> whole(block_bytes * world_size_);
    std::memcpy(whole.data(), send, whole.size());
    AllReduceUnguarded(whole.data(), count * world_size_, type, op);
    std::memcpy(recv, whole.data() + block_bytes * rank_, block_bytes);
  });
}

void GlooCommunicator::Barrier() {
  Guarded("barrier", [&] {
    gloo::BarrierOptions options(context_);
    options.setTag(next_tag_++);
    options.setTimeout(timeout_);
    gloo::barrier(options);
  });
}

void GlooCommunicator::Interrupt() {
  // The peers see their connections end too, and fail at once as after a
  // crash of this rank.
  for (int fd : mesh_sockets_) shutdown(fd, SHUT_RDWR);
  if (shared_memory_) shared_memory_->Interrupt();
}

void GlooCommunicator::Abort() { latch_.Latch(CommError::Kind::kInternal, "Abort() was called"); }

}  // namespace muster::runtime
